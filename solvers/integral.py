"""A sound all-integer relaxation of a MILP, for solvers that need integer data (CP-SAT).

Problem.  CP-SAT accepts only integer variables and integer coefficients.  A MILP
``min c.x  s.t.  lo <= A x <= hi,  l <= x <= u`` with real data and continuous
variables must be turned into an integer program whose optimum, mapped back, is a
*lower bound* of the original optimum: a bound reported from it must never exceed
the true optimum.  Rounding coefficients or forcing continuous variables onto a
grid in the naive way can cut off the optimum and overstate the bound, so we
build a **relaxation** and account for every rounding error.

Construction (``minimise``; a maximisation is negated first).

1. Every variable ``j`` gets an integer image ``z_j``.  An integer variable is its
   own image (``D_j = 1``).  A continuous variable with finite bounds is written
   ``x_j = z_j / D_j + theta_j`` with ``z_j = floor(D_j x_j)`` and
   ``0 <= theta_j < 1 / D_j``; so ``z_j`` ranges over ``[floor(D_j l_j), floor(D_j u_j)]``.
   The grid ``D_j`` is chosen so that the model stays exact when its data are
   rationals with small denominators (see ``_grids``); any ``D_j > 0`` is sound.
2. Row ``r`` is multiplied by ``S_r > 0`` and its coefficients on the images,
   ``e_rj = a_rj / D_j``, are rounded: ``a~_rj = round(S_r e_rj)``, error
   ``d_rj = a~_rj - S_r e_rj``.  Then for every ``x``, exactly,
   ``S_r a_r.x = a~_r.z + R_r`` with
   ``R_r = sum_j (-d_rj z_j) + sum_{j continuous} S_r a_rj theta_j``.
   Over the variable domains ``R_r`` lies in ``[Rmin_r, Rmax_r]``, and strictly below
   ``Rmax_r`` (above ``Rmin_r``) as soon as some continuous ``j`` has ``a_rj > 0``
   (``< 0``), because ``theta_j < 1/D_j`` strictly.
3. The integer row is ``a~_r.z >= S_r lo_r - Rmax_r`` (``>`` in the strict case,
   i.e. ``>= floor(S_r lo_r - Rmax_r) + 1``) and ``a~_r.z <= S_r hi_r - Rmin_r``
   (``<``: ``<= ceil(.) - 1``), each rounded to the integers inward, which is valid
   because the left-hand side is an integer.  Every ``x`` feasible for the original
   model therefore maps to a ``z`` feasible for the integer model: **the integer
   model is a relaxation.**
4. The objective is scaled by ``S_0`` and rounded the same way:
   ``S_0 c.x = c~.z + R_0`` with ``R_0 >= R0min``.  For an optimal ``x*`` and its
   image ``z*``, any proven CP-SAT bound ``beta`` satisfies
   ``beta <= c~.z* = S_0 OPT - R_0(x*) <= S_0 OPT - R0min``, hence

       OPT >= (beta + R0min) / S_0 + offset,

   which is the bound we report (:meth:`IntegerRelaxation.bound`).  Infeasibility of
   the relaxation proves infeasibility of the original model.

When all coefficients become integers without rounding (``d = 0``), e.g. MTPP with
integral weights, bandwidth 1 and the bottleneck variable on the grid ``D = 1``,
``R`` has only the ``theta`` part, ``Rmax <= 1`` with strict inequality, and the
rounding in step 3 loses nothing: the relaxation is then exact and CP-SAT's bound is
the true optimum.  Otherwise we scale by a power of two so that the largest
coefficient of a row is about ``2**30`` and the loss is of that relative order.

Floating point: rows whose coefficients became integers exactly get their integer
right-hand sides in exact rational arithmetic; rows that had to be rounded give up
a relative ``1e-9`` of their activity in the safe (weaker) direction.  The domains
``floor(D l), floor(D u)`` are computed in exact arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from solvers.errors import UnsupportedModelError
from solvers.model import Model, ObjSense

MAX_DENOMINATOR = 10_000  # largest denominator accepted when reading a float as a rational
MAX_SCALE = 10**9  # largest exact row scale / grid
MAX_COEF = 2.0**40  # largest integer coefficient magnitude after exact scaling
ACTIVITY_BITS = 52  # a rounded row's activity stays below 2**52 (int64 headroom for CP-SAT)
GRID_BITS = 30  # fallback grid of a continuous variable: about 2**30 steps over its range
MAX_DOMAIN = 2.0**50  # largest |z| CP-SAT may see
TOL = 1e-9


def rational_scale(values: np.ndarray) -> int | None:
    """Smallest integer ``S`` with ``S * values`` integral (each value read as a
    rational with denominator ``<= MAX_DENOMINATOR``), or None if there is none
    within :data:`MAX_SCALE` / :data:`MAX_COEF`."""
    vals = np.unique(np.abs(values[values != 0]))
    if vals.size == 0:
        return 1
    if np.all(vals == np.round(vals)):
        return 1 if vals.max() <= MAX_COEF else None
    scale = 1
    for v in vals.tolist():
        f = Fraction(v).limit_denominator(MAX_DENOMINATOR)
        if abs(float(f) - v) > 1e-12 * max(1.0, v):
            return None
        scale = math.lcm(scale, f.denominator)
        if scale > MAX_SCALE:
            return None
    if float(vals.max()) * scale > MAX_COEF:
        return None
    return scale


def approx_scale(coefs: np.ndarray, zmag: np.ndarray) -> float:
    """Power of two ``S`` for a row that cannot be made integral exactly: as large as
    int64 allows with headroom, ``S * sum_j |coef_j| max|z_j| <= 2**ACTIVITY_BITS``,
    so that the rounding errors ``d_rj`` are as small as they can be."""
    act = float(np.sum(np.abs(coefs) * zmag))
    return 2.0 ** math.floor(math.log2(2.0**ACTIVITY_BITS / max(act, 1e-300)))


def _scale_rows(csr: sp.csr_matrix, zmag: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix]:
    """Per-row scale ``S_r`` and integer matrix ``round(S_r e_r)`` (as float64)."""
    nrows = csr.shape[0]
    scale = np.ones(nrows)
    data = csr.data
    rows_of = np.repeat(np.arange(nrows), np.diff(csr.indptr))
    frac = (np.abs(data - np.round(data)) > 0) | (np.abs(data) > MAX_COEF)
    for r in np.unique(rows_of[frac]).tolist():
        lo, hi = csr.indptr[r], csr.indptr[r + 1]
        s = rational_scale(data[lo:hi])
        scale[r] = s if s is not None else approx_scale(data[lo:hi], zmag[csr.indices[lo:hi]])
    scaled = sp.csr_matrix((np.round(data * scale[rows_of]), csr.indices, csr.indptr), shape=csr.shape)
    return scale, scaled


@dataclass(frozen=True)
class IntegerRelaxation:
    """The integer model of the module docstring, ready for CP-SAT.

    ``z_lower``/``z_upper``: integer domains; ``matrix`` (CSR, integer-valued) with
    ``row_lower``/``row_upper`` (integers or +-inf); ``objective`` (integer-valued);
    ``grid`` ``D``; ``obj_scale`` ``S_0``; ``obj_shift`` ``R0min``.  Objective is
    always to be *minimised*; ``negated`` records that the original maximised."""

    z_lower: np.ndarray
    z_upper: np.ndarray
    grid: np.ndarray
    matrix: sp.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    objective: np.ndarray
    obj_scale: float
    obj_shift: float
    offset: float
    negated: bool
    exact: bool

    def bound(self, beta: float) -> float:
        """Valid bound on the original optimum from a proven integer bound ``beta``."""
        if not math.isfinite(beta):
            return -beta if self.negated else beta
        b = (beta + self.obj_shift) / self.obj_scale
        return -(b + self.offset) if self.negated else b + self.offset

    def to_original(self, z: np.ndarray) -> np.ndarray:
        """Map integer values back (``x = z / D``); check the result against the model."""
        return np.asarray(z, dtype=np.float64) / self.grid

    def to_integer(self, x: np.ndarray) -> np.ndarray:
        """Image ``z = floor(D x)`` of an original point (NaN stays NaN), for hints."""
        x = np.asarray(x, dtype=np.float64)
        z = np.floor(x * self.grid + TOL)
        return np.clip(z, self.z_lower, self.z_upper)


def _row_scales(csr: sp.csr_matrix) -> np.ndarray:
    """Exact integral scale of each row (0 where there is none); rows that are already
    integral are recognised without a Python loop."""
    nrows = csr.shape[0]
    rows_of = np.repeat(np.arange(nrows), np.diff(csr.indptr))
    scale = np.ones(nrows, dtype=np.int64)
    frac = (np.abs(csr.data - np.round(csr.data)) > 0) | (np.abs(csr.data) > MAX_COEF)
    for r in np.unique(rows_of[frac]).tolist():
        s = rational_scale(csr.data[csr.indptr[r] : csr.indptr[r + 1]])
        scale[r] = 0 if s is None else s
    return scale


def _grids(model: Model, csr: sp.csr_matrix, c: np.ndarray, cont: np.ndarray) -> np.ndarray:
    """Grid ``D_j`` per variable (1 for integers).  For a continuous ``j`` it is the
    lcm over its rows (and the objective) of ``S0_r |a_rj|``, where ``S0_r`` makes row
    ``r`` integral; with that grid the row's coefficient on ``z_j`` becomes ``1/m`` for
    an integer ``m`` and rescaling by ``m`` makes ``Rmax <= 1``: no loss (module
    docstring).  Falls back to a power of two near ``2**30 / max|x_j|``.  Soundness
    does not depend on the grid, only tightness does."""
    grid = np.ones(model.num_vars)
    if not cont.any():
        return grid
    full = sp.vstack([csr, sp.csr_matrix(c[None, :])]).tocsr()
    full.sum_duplicates()
    full.eliminate_zeros()
    row_scale = _row_scales(full)
    csc = full.tocsc()
    cols_of = np.repeat(np.arange(csc.shape[1]), np.diff(csc.indptr))
    q = np.abs(csc.data) * row_scale[csc.indices]
    qi = np.round(q)
    ok = (row_scale[csc.indices] > 0) & (np.abs(q - qi) <= 1e-9 * np.maximum(1.0, qi)) & (qi >= 1) & (qi <= MAX_SCALE)
    col_ok = np.ones(csc.shape[1], dtype=bool)
    np.logical_and.at(col_ok, cols_of, ok)
    qi = np.where(ok, qi, 1).astype(np.int64)
    nonempty = np.flatnonzero(np.diff(csc.indptr) > 0)
    d = np.ones(csc.shape[1], dtype=np.int64)
    if nonempty.size:
        d[nonempty] = np.lcm.reduceat(qi, csc.indptr[nonempty])
    mag = np.maximum(1.0, np.maximum(np.abs(model.lower), np.abs(model.upper)))
    mag = np.where(np.isfinite(mag), mag, 1.0)
    fallback = 2.0 ** np.floor(np.log2(2.0**GRID_BITS / mag))
    good = col_ok & (d >= 1) & (d <= MAX_SCALE) & (d * mag <= MAX_DOMAIN)
    grid[cont] = np.where(good, d.astype(np.float64), fallback)[cont]
    return grid


def _round_side(
    side: np.ndarray, scale: np.ndarray, rext: np.ndarray, strict: np.ndarray, exact_row: np.ndarray,
    mag: np.ndarray, lower: bool,
) -> np.ndarray:
    """Integer right-hand sides of step 3: ``a~.z >= S lo - Rmax`` (``>`` if strict) for
    ``lower``, ``a~.z <= S hi - Rmin`` (``<``) otherwise, always rounded so that the
    row is *weaker* than the exact one.  Exact rows (no coefficient rounding, integer
    ``S``, so ``R`` is an exact integer) are computed in exact rational arithmetic,
    which keeps the strict case (the source of tightness) exact; rounded rows give up
    a relative ``1e-9`` of their activity in the safe direction."""
    out = np.full(side.shape, -math.inf)  # in the orientation  sgn * a~.z >= out
    finite = np.isfinite(side)
    sgn = 1.0 if lower else -1.0
    side0 = np.where(finite, side, 0.0)
    v = sgn * (side0 * scale - rext)  # the row reads  sgn * a~.z  (>= or >)  v
    fast = finite & exact_row & (side0 == np.round(side0)) & (np.abs(side0 * scale) < 2.0**52)
    res = np.where(strict, np.floor(v) + 1, np.ceil(v))
    out[fast] = res[fast]
    for r in np.flatnonzero(finite & exact_row & ~fast).tolist():
        fv = sgn * (Fraction(float(side[r])) * int(scale[r]) - Fraction(float(rext[r])))
        out[r] = math.floor(fv) + 1 if strict[r] else math.ceil(fv)
    rest = finite & ~exact_row
    tol = TOL * (np.abs(side0 * scale) + mag + np.abs(rext) + 1.0)
    vr = np.where(rest, v - tol, 0.0)
    out[rest] = np.where(strict, np.floor(vr) + 1, np.ceil(vr))[rest]
    return sgn * out


def integer_relaxation(model: Model) -> IntegerRelaxation:
    """Build the sound integer relaxation of ``model`` (module docstring).

    Raises :class:`UnsupportedModelError` if a variable has an infinite bound (CP-SAT
    needs finite domains and the rounding errors are bounded through them)."""
    lo, hi = model.lower.copy(), model.upper.copy()
    is_int = model.is_integer
    lo[is_int] = np.ceil(lo[is_int] - TOL)
    hi[is_int] = np.floor(hi[is_int] + TOL)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        j = int(np.flatnonzero(~(np.isfinite(lo) & np.isfinite(hi)))[0])
        raise UnsupportedModelError(
            f"variable {j} has an infinite bound; CP-SAT needs finite bounds on every variable"
        )
    negated = model.sense is ObjSense.MAXIMIZE
    c = -model.objective if negated else model.objective.copy()
    offset = -model.obj_offset if negated else model.obj_offset
    cont = ~is_int
    a = model.matrix("csr")
    grid = _grids(model, a, c, cont)
    z_lo, z_hi = lo.copy(), hi.copy()
    for j in np.flatnonzero(cont).tolist():  # floor(D l), floor(D u) in exact arithmetic
        d_j = Fraction(float(grid[j]))
        z_lo[j] = math.floor(d_j * Fraction(float(lo[j])))
        z_hi[j] = math.floor(d_j * Fraction(float(hi[j])))
    if np.any(np.abs(z_lo) > MAX_DOMAIN) or np.any(np.abs(z_hi) > MAX_DOMAIN):
        raise UnsupportedModelError("a variable's domain is too large for an integer solver")

    # rows: e = a / D, then per-row scaling and rounding
    e = sp.csr_matrix(a.multiply(1.0 / grid[None, :]))
    e.sum_duplicates()
    e.eliminate_zeros()
    zmag = np.maximum(1.0, np.maximum(np.abs(z_lo), np.abs(z_hi)))
    scale, a_int = _scale_rows(e, zmag)
    rows_of = np.repeat(np.arange(e.shape[0]), np.diff(e.indptr))
    cols = e.indices
    d = a_int.data - e.data * scale[rows_of]  # rounding error d_rj (same sparsity)
    # -d z over the domain of z
    t1, t2 = -d * z_lo[cols], -d * z_hi[cols]
    rmin = np.minimum(t1, t2)
    rmax = np.maximum(t1, t2)
    # theta part: S_r a_rj theta_j in [0, S_r a_rj / D_j) (or reversed for a_rj < 0)
    a_data = e.data * grid[cols]  # back to a_rj (same sparsity as e)
    is_cont = cont[cols]
    th = np.where(is_cont, scale[rows_of] * a_data / grid[cols], 0.0)
    rmax = rmax + np.maximum(th, 0.0)
    rmin = rmin + np.minimum(th, 0.0)
    nrows = e.shape[0]
    Rmax = np.bincount(rows_of, weights=rmax, minlength=nrows)
    Rmin = np.bincount(rows_of, weights=rmin, minlength=nrows)
    strict_max = np.bincount(rows_of, weights=(is_cont & (a_data > 0)).astype(float), minlength=nrows) > 0
    strict_min = np.bincount(rows_of, weights=(is_cont & (a_data < 0)).astype(float), minlength=nrows) > 0

    exact_row = np.bincount(rows_of, weights=(d != 0).astype(float), minlength=nrows) == 0
    exact_row &= scale == np.round(scale)
    mag = np.bincount(rows_of, weights=np.abs(a_int.data) * zmag[cols], minlength=nrows)
    row_lo = _round_side(model.row_lower, scale, Rmax, strict_max, exact_row, mag, lower=True)
    row_hi = _round_side(model.row_upper, scale, Rmin, strict_min, exact_row, mag, lower=False)

    # objective
    ec = c / grid
    exact_s0 = rational_scale(ec)
    s0 = float(exact_s0) if exact_s0 is not None else approx_scale(ec, zmag)
    c_int = np.round(ec * s0)
    dc = c_int - ec * s0
    r0 = np.minimum(-dc * z_lo, -dc * z_hi) + np.where(cont, np.minimum(s0 * c / grid, 0.0), 0.0)
    exact = bool(np.all(d == 0) and np.all(dc == 0))
    return IntegerRelaxation(
        z_lower=z_lo, z_upper=z_hi, grid=grid, matrix=a_int, row_lower=row_lo, row_upper=row_hi,
        objective=c_int, obj_scale=float(s0), obj_shift=float(r0.sum()), offset=offset,
        negated=negated, exact=exact,
    )  # fmt: skip


def complete_continuous(model: Model, x: np.ndarray) -> np.ndarray | None:
    """Keep the integer variables of ``x`` and re-optimise the continuous ones over
    the original model (an LP, solved with scipy).  The integer relaxation drops the
    fractional parts ``theta``, so its solution mapped back may violate rows that
    involve continuous variables; this repairs it.  None if the LP is infeasible."""
    from scipy.optimize import linprog

    is_int = model.is_integer
    x = np.asarray(x, dtype=np.float64).copy()
    x[is_int] = np.round(x[is_int])
    cont = np.flatnonzero(~is_int)
    if cont.size == 0:
        return x
    a = model.matrix("csc")
    a_i, a_c = a[:, np.flatnonzero(is_int)], a[:, cont]
    fixed = a_i @ x[is_int]
    lo, hi = model.row_lower - fixed, model.row_upper - fixed
    up, dn = np.isfinite(hi), np.isfinite(lo)
    a_ub = sp.vstack([a_c[up], -a_c[dn]]).tocsr()
    b_ub = np.r_[hi[up], -lo[dn]]
    c = model.objective[cont]
    if model.sense is ObjSense.MAXIMIZE:
        c = -c
    bounds = np.c_[model.lower[cont], model.upper[cont]]
    bounds = [(None if not np.isfinite(lo_) else lo_, None if not np.isfinite(hi_) else hi_) for lo_, hi_ in bounds]
    res = linprog(c, A_ub=a_ub if a_ub.shape[0] else None, b_ub=b_ub if a_ub.shape[0] else None,
                  bounds=bounds, method="highs")
    if res.status != 0:
        return None
    x[cont] = res.x
    return x
