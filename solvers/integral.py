"""A sound all-integer relaxation of a MILP, for solvers that need integer data (CP-SAT).

Problem.  CP-SAT accepts only integer variables and integer coefficients.  A MILP
``min c.x  s.t.  lo <= A x <= hi,  l <= x <= u`` with real data and continuous
variables must be turned into an integer program whose optimum, mapped back, is a
*lower bound* of the original optimum: a bound reported from it must never exceed
the true optimum.  Rounding coefficients or forcing continuous variables onto a
grid in the naive way can cut off the optimum and overstate the bound, so we
build a **relaxation** and account for every rounding error.

The data are read as what they are: every float is the binary rational it
represents, nothing else (see "The flaw that was fixed" below).

Construction (``minimise``; a maximisation is negated first).

1. Every variable ``j`` gets an integer image ``z_j``.  An integer variable is its
   own image (``D_j = 1``).  A continuous variable with finite bounds is written
   ``x_j = z_j / D_j + theta_j`` with ``z_j = floor(D_j x_j)`` and
   ``0 <= theta_j < 1 / D_j``; so ``z_j`` ranges over ``[floor(D_j l_j), floor(D_j u_j)]``
   (computed in exact rational arithmetic).  ``D_j`` is a power of two chosen so
   that the rows stay exact where the data allow (``_grids``); any ``D_j > 0`` is sound.
2. Row ``r`` is multiplied by a power of two ``S_r > 0`` and its coefficients on the
   images, ``e_rj = a_rj / D_j``, are rounded: ``a~_rj = round(S_r e_rj)``, error
   ``d_rj = a~_rj - S_r e_rj`` (exact: multiplying by powers of two is exact in
   floating point, and ``round`` of a float is exact).  Then for every ``x``, exactly,
   ``S_r a_r.x = a~_r.z + R_r`` with
   ``R_r = sum_j (-d_rj z_j) + sum_{j continuous} S_r a_rj theta_j``.
   Over the variable domains ``R_r`` lies in ``[Rmin_r, Rmax_r]``, and strictly below
   ``Rmax_r`` (above ``Rmin_r``) as soon as some continuous ``j`` has ``a_rj > 0``
   (``< 0``), because ``theta_j < 1/D_j`` strictly.
3. The integer row is ``a~_r.z >= S_r lo_r - Rmax_r`` (``>`` in the strict case,
   i.e. ``>= floor(S_r lo_r - Rmax_r) + 1``) and ``a~_r.z <= S_r hi_r - Rmin_r``
   (``<``: ``<= ceil(.) - 1``), each rounded to the integers inward, which is valid
   because the left-hand side is an integer.  Exact rows (``d = 0``) get these
   right-hand sides in exact rational arithmetic; rounded rows are moved in the
   weaker direction by ``(nnz_r + 4) 2 eps (|S_r lo_r| + sum |terms of R_r|)``, a bound on
   the floating-point error of computing ``S_r lo_r - Rmax_r`` (one rounding per
   product, one per addition).  Every ``x`` feasible for the original model therefore
   maps to a ``z`` feasible for the integer model: **the integer model is a
   relaxation.**
4. The objective is scaled by ``S_0`` and rounded the same way:
   ``S_0 c.x = c~.z + R_0`` with ``R_0 >= R0min``.  For an optimal ``x*`` and its
   image ``z*``, any proven CP-SAT bound ``beta`` satisfies
   ``beta <= c~.z* = S_0 OPT - R_0(x*) <= S_0 OPT - R0min``, hence

       OPT >= (beta + R0min) / S_0 + offset,

   which is the bound we report (:meth:`IntegerRelaxation.bound`, whose last
   floating-point operations are rounded down by a few ulps).  Infeasibility of the
   relaxation proves infeasibility of the original model.
5. CP-SAT computes in 64-bit integers, but its presolve is not reliable with large
   coefficients: on the bottleneck MIP of ``cert_crash_1001_16`` (OPT 18.713) it
   returns "optimal" 24.82 with row activities of ``2**40`` (and 18.713 with
   presolve off or activities of ``2**30``).  Every integer row therefore keeps
   ``sum_j |a~_rj| max|z_j| <= 2**ACTIVITY_BITS`` with 30 bits, every domain
   ``|z_j| <= 2**DOMAIN_BITS``: an exact row that would exceed this is rounded at a
   smaller power of two instead, which step 2 accounts for.  The price is a relative
   rounding loss of about ``2**-30`` per row.

When the data are dyadic (integers, or integers times a power of two, as after
:mod:`formulations`' power-of-two normalisation) with bandwidth 1, every row becomes
integral at a power-of-two scale with ``d = 0``, ``R`` has only the ``theta`` part,
``Rmax <= 1`` with strict inequality, and the rounding in step 3 loses nothing: the
relaxation is exact and CP-SAT's bound is the model's optimum.  Otherwise the loss
is of relative order ``2**-30`` per row.

The flaw that was fixed.  The earlier version read each coefficient "as a rational
with a small denominator" (``Fraction.limit_denominator``), so ``fl(7/3) =
2.3333333333333335`` became exactly 7/3, while bounds and right-hand sides kept
their float values.  The integer model was then a relaxation of neither the float
model nor the rational one: with ``B = 3`` the overflow variable's upper bound
``fl(4/3) < 4/3`` cut off the overflow ``4/3`` that the rational rows demanded, and
CP-SAT proved the exact MIP of ``cpsat_exact_infeasible.json`` infeasible (OPT is
12.33).  It also scaled approximate rows up to activities of ``2**52`` (coefficients
``2**50``), beyond what CP-SAT's presolve handles correctly: on the bottleneck MIP of
``cert_lb_gt_opt_1001_28`` CP-SAT returned "optimal" 27.39 with presolve and 19.18
without (the truth).  Both reproducers are regression tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from solvers.errors import UnsupportedModelError
from solvers.model import Model, ObjSense

ACTIVITY_BITS = 30  # every integer row's activity stays below 2**30 (see step 5 of the module docstring)
DOMAIN_BITS = 30  # largest |z| CP-SAT may see is 2**30
COEF_BITS = 15  # bits of precision kept on a continuous variable's non-dyadic coefficient
GRID_BITS = 20  # fallback grid of a continuous variable: about 2**30 steps over its range
MAX_EXPONENT = 60  # largest power-of-two scale considered for an exact row
TOL = 1e-9
EPS = 2.0**-52


def dyadic_exponents(values: np.ndarray) -> np.ndarray:
    """For each float ``v`` the smallest ``p >= 0`` with ``v * 2**p`` an integer: a
    float is the binary rational ``mantissa * 2**(e - 53)``, read exactly."""
    v = np.abs(np.asarray(values, dtype=np.float64))
    out = np.zeros(v.shape, dtype=np.int64)
    nz = (v != 0) & np.isfinite(v)
    m, e = np.frexp(v[nz])  # v = m 2**e with 0.5 <= m < 1
    mant = np.ldexp(m, 53).astype(np.int64)  # v = mant 2**(e - 53), mant < 2**53 exactly
    tz = np.round(np.log2((mant & -mant).astype(np.float64))).astype(np.int64)  # trailing zero bits
    out[nz] = np.maximum(0, 53 - e - tz)
    return out


def row_exponents(csr: sp.csr_matrix, zmag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, ``(need, room)``: ``2**need`` is the smallest power of two making the
    row's coefficients integers, ``2**room`` the largest keeping its scaled activity
    ``sum_j |e_rj| zmag_j`` within ``2**ACTIVITY_BITS``."""
    nrows = csr.shape[0]
    rows_of = np.repeat(np.arange(nrows), np.diff(csr.indptr))
    need = np.zeros(nrows, dtype=np.int64)
    np.maximum.at(need, rows_of, dyadic_exponents(csr.data))
    act = np.bincount(rows_of, weights=np.abs(csr.data) * zmag[csr.indices], minlength=nrows)
    with np.errstate(divide="ignore"):
        room = np.floor(ACTIVITY_BITS - np.log2(np.maximum(act, 1e-300)))
    return need, np.minimum(room, MAX_EXPONENT).astype(np.int64)


def row_scales(csr: sp.csr_matrix, zmag: np.ndarray) -> np.ndarray:
    """Power-of-two scale ``S_r`` per row: ``2**need`` when that fits in ``2**room``
    (an exact row), else ``2**room`` (a rounded row, step 2 of the module
    docstring).  Vectorised."""
    need, room = row_exponents(csr, zmag)
    return np.ldexp(1.0, np.where(need <= room, need, room))


def _scale_rows(csr: sp.csr_matrix, zmag: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix]:
    """Per-row scale ``S_r`` and integer matrix ``round(S_r e_r)`` (as float64)."""
    scale = row_scales(csr, zmag)
    rows_of = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    scaled = sp.csr_matrix((np.round(csr.data * scale[rows_of]), csr.indices, csr.indptr), shape=csr.shape)
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
        b = (beta + self.obj_shift) / self.obj_scale + self.offset
        b -= 8 * EPS * (abs(beta + self.obj_shift) / self.obj_scale + abs(self.offset))  # rounded down
        return -b if self.negated else b

    def to_original(self, z: np.ndarray) -> np.ndarray:
        """Map integer values back (``x = z / D``); check the result against the model."""
        return np.asarray(z, dtype=np.float64) / self.grid

    def to_integer(self, x: np.ndarray) -> np.ndarray:
        """Image ``z = floor(D x)`` of an original point (NaN stays NaN), for hints."""
        x = np.asarray(x, dtype=np.float64)
        z = np.floor(x * self.grid + TOL)
        return np.clip(z, self.z_lower, self.z_upper)


def _grids(model: Model, csr: sp.csr_matrix, c: np.ndarray, cont: np.ndarray) -> np.ndarray:
    """Grid ``D_j`` per variable (1 for integers): for a continuous ``j`` the power of
    two ``2**g_j`` with ``g_j = min_r (room_r - need_rj)`` over its rows and the
    objective, where ``2**room_r`` is the largest scale row ``r`` allows
    (:func:`row_exponents`; the activity is the same in terms of ``x`` as of ``z``)
    and ``2**need_rj`` makes ``a_rj`` an integer.  Then ``a_rj 2**room_r / D_j`` is an
    integer: ``z_j`` adds no rounding error ``d``, and its ``theta`` part is about one
    unit of the row's resolution ``2**-room_r``, which step 3 absorbs.  A coefficient
    that no allowed scale makes integral keeps ``COEF_BITS`` bits of precision on
    ``z_j`` instead.  Soundness does
    not depend on the grid, only tightness does."""
    grid = np.ones(model.num_vars)
    if not cont.any():
        return grid
    full = sp.vstack([csr, sp.csr_matrix(c[None, :])]).tocsr()
    full.sum_duplicates()
    full.eliminate_zeros()
    xmag = np.maximum(1.0, np.maximum(np.abs(model.lower), np.abs(model.upper)))
    xmag = np.where(np.isfinite(xmag), xmag, 1.0)
    room = row_exponents(full, xmag)[1][np.repeat(np.arange(full.shape[0]), np.diff(full.indptr))]
    need = dyadic_exponents(full.data)
    coarse = room + np.floor(np.log2(np.abs(full.data))) - COEF_BITS
    cand = np.where(need <= room, room - need, coarse)
    d_exp = np.full(model.num_vars, np.inf)
    np.minimum.at(d_exp, full.indices, cand)
    d_exp = np.where(np.isfinite(d_exp), d_exp, np.floor(GRID_BITS - np.log2(xmag)))
    d_exp = np.minimum(d_exp, np.floor(DOMAIN_BITS - np.log2(xmag)))
    grid[cont] = np.ldexp(1.0, d_exp.astype(np.int64))[cont]
    return grid


def _round_side(
    side: np.ndarray,
    scale: np.ndarray,
    rext: np.ndarray,
    strict: np.ndarray,
    exact_row: np.ndarray,
    err: np.ndarray,
    lower: bool,
) -> np.ndarray:
    """Integer right-hand sides of step 3: ``a~.z >= S lo - Rmax`` (``>`` if strict) for
    ``lower``, ``a~.z <= S hi - Rmin`` (``<``) otherwise, always rounded so that the
    row is *weaker* than the exact one.  Exact rows (no coefficient rounding, integer
    ``S``, so ``R`` is an exact integer) are computed in exact rational arithmetic,
    which keeps the strict case (the source of tightness) exact; rounded rows move by
    ``err``, a bound on the float error of ``S side - R``, in the safe direction."""
    out = np.full(side.shape, -math.inf)  # in the orientation  sgn * a~.z >= out
    finite = np.isfinite(side)
    sgn = 1.0 if lower else -1.0
    side0 = np.where(finite, side, 0.0)
    v = sgn * (side0 * scale - rext)  # the row reads  sgn * a~.z  (>= or >)  v
    fast = finite & exact_row & (side0 == np.round(side0)) & (np.abs(side0 * scale) < 2.0**52)
    res = np.where(strict, np.floor(v) + 1, np.ceil(v))
    out[fast] = res[fast]
    for r in np.flatnonzero(finite & exact_row & ~fast).tolist():
        fv = sgn * (Fraction(float(side[r])) * Fraction(float(scale[r])) - Fraction(float(rext[r])))
        out[r] = math.floor(fv) + 1 if strict[r] else math.ceil(fv)
    rest = finite & ~exact_row
    vr = np.where(rest, v - err, 0.0)
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
        raise UnsupportedModelError(f"variable {j} has an infinite bound; CP-SAT needs finite bounds on every variable")
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
    if np.any(np.abs(z_lo) > 2.0**DOMAIN_BITS) or np.any(np.abs(z_hi) > 2.0**DOMAIN_BITS):
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
    # float error of S lo - Rmax: each term of R is one product, summed with nnz roundings
    nnz = np.diff(e.indptr).astype(np.float64)
    r_abs = np.bincount(rows_of, weights=np.abs(rmax) + np.abs(rmin), minlength=nrows)
    err_lo = (nnz + 4) * 2 * EPS * (np.abs(np.nan_to_num(model.row_lower * scale, posinf=0, neginf=0)) + r_abs)
    err_hi = (nnz + 4) * 2 * EPS * (np.abs(np.nan_to_num(model.row_upper * scale, posinf=0, neginf=0)) + r_abs)
    row_lo = _round_side(model.row_lower, scale, Rmax, strict_max, exact_row, err_lo, lower=True)
    row_hi = _round_side(model.row_upper, scale, Rmin, strict_min, exact_row, err_hi, lower=False)

    # objective
    ec = c / grid
    s0 = float(row_scales(sp.csr_matrix(ec[None, :]), zmag)[0])
    c_int = np.round(ec * s0)
    dc = c_int - ec * s0
    r0 = np.minimum(-dc * z_lo, -dc * z_hi) + np.where(cont, np.minimum(s0 * c / grid, 0.0), 0.0)
    r0_sum = float(r0.sum()) - 4 * EPS * float(np.abs(r0).sum())  # rounded down: R0min is a lower bound
    exact = bool(np.all(d == 0) and np.all(dc == 0))
    return IntegerRelaxation(
        z_lower=z_lo,
        z_upper=z_hi,
        grid=grid,
        matrix=a_int,
        row_lower=row_lo,
        row_upper=row_hi,
        objective=c_int,
        obj_scale=float(s0),
        obj_shift=r0_sum,
        offset=offset,
        negated=negated,
        exact=exact,
    )


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
    res = linprog(
        c, A_ub=a_ub if a_ub.shape[0] else None, b_ub=b_ub if a_ub.shape[0] else None, bounds=bounds, method="highs"
    )
    if res.status != 0:
        return None
    x[cont] = res.x
    return x
