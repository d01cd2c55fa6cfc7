"""A solver-neutral mixed-integer linear model, built in bulk with numpy.

The model is what every formulation emits and every backend adapter consumes::

    min / max   c^T x + offset
    s.t.        row_lower <= A x <= row_upper
                lower <= x <= upper,   x_j integer for j in integer_vars

Variables are added in blocks (:meth:`Model.add_variables` returns their
indices as an array) and constraints as sparse rows, either in COO form
(:meth:`Model.add_rows_coo`) or as a dense ``(rows, terms)`` table of variable
indices and coefficients (:meth:`Model.add_rows`), which is how the MIP
formulations write their ``O(mk)`` constraints without a Python loop per row.
Nothing here knows which solver will run the model, nor what it means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

INF = math.inf


class VarType(str, Enum):
    """Domain of a variable."""

    CONTINUOUS = "continuous"
    INTEGER = "integer"
    BINARY = "binary"


class ObjSense(str, Enum):
    """Direction of optimisation."""

    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"


@dataclass(frozen=True)
class VarBlock:
    """A contiguous range of variables added by one :meth:`Model.add_variables` call."""

    name: str
    start: int
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def indices(self) -> np.ndarray:
        """Variable indices, shaped like the block."""
        return np.arange(self.start, self.start + self.size, dtype=np.int64).reshape(self.shape)


class Model:
    """A neutral MILP.  Build it with the ``add_*`` methods, then read the frozen
    arrays (``lower``, ``upper``, ``vtype``, ``objective``, :meth:`matrix`,
    ``row_lower``, ``row_upper``) that the adapters hand to the solvers.

    All building methods are vectorised; the constraint matrix is assembled once,
    on first use, from the COO chunks (duplicate entries in one row are summed).
    """

    def __init__(self, name: str = "model") -> None:
        self.name = name
        self._lower: list[np.ndarray] = []
        self._upper: list[np.ndarray] = []
        self._vtype: list[np.ndarray] = []  # int8 codes: 0 continuous, 1 integer (binaries carry bounds 0..1)
        self.blocks: dict[str, VarBlock] = {}
        self.num_vars = 0
        self._rows: list[np.ndarray] = []
        self._cols: list[np.ndarray] = []
        self._vals: list[np.ndarray] = []
        self._rlo: list[np.ndarray] = []
        self._rhi: list[np.ndarray] = []
        self.num_rows = 0
        self._obj_idx: np.ndarray = np.zeros(0, dtype=np.int64)
        self._obj_val: np.ndarray = np.zeros(0)
        self.obj_offset = 0.0
        self.sense = ObjSense.MINIMIZE
        self._vec_cache: dict[str, np.ndarray] = {}  # objective and row bounds, assembled on first use
        self._mat_cache: dict[str, sp.spmatrix] = {}  # the constraint matrix in COO / CSR / CSC

    # ------------------------------------------------------------------ variables
    def add_variables(
        self,
        shape: int | Sequence[int],
        vtype: VarType | str = VarType.CONTINUOUS,
        lower: float | np.ndarray = 0.0,
        upper: float | np.ndarray = INF,
        name: str | None = None,
    ) -> np.ndarray:
        """Add a block of variables and return their indices, shaped ``shape``.

        Binary variables get bounds ``[0, 1]`` intersected with ``lower``/``upper``
        (so a binary can be fixed by its bounds)."""
        shape_t = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        size = int(np.prod(shape_t, dtype=np.int64))
        vt = VarType(vtype)
        lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), shape_t).reshape(-1).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), shape_t).reshape(-1).copy()
        if vt is VarType.BINARY:
            lo = np.maximum(lo, 0.0)
            hi = np.minimum(hi, 1.0)
        if np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
            raise ValueError("variable bounds must not be NaN")
        start = self.num_vars
        self._lower.append(lo)
        self._upper.append(hi)
        self._vtype.append(np.full(size, 0 if vt is VarType.CONTINUOUS else 1, dtype=np.int8))
        self.num_vars += size
        key = name or f"x{len(self.blocks)}"
        if key in self.blocks:
            raise ValueError(f"variable block {key!r} exists already")
        self.blocks[key] = VarBlock(key, start, shape_t)
        self._invalidate()
        return np.arange(start, start + size, dtype=np.int64).reshape(shape_t)

    def set_bounds(
        self, idx: np.ndarray, lower: float | np.ndarray | None = None, upper: float | np.ndarray | None = None
    ) -> None:
        """Tighten (overwrite) bounds of existing variables ``idx``."""
        self._flatten_vars()
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        if lower is not None:
            self._lower[0][idx] = np.broadcast_to(np.asarray(lower, dtype=np.float64).reshape(-1), idx.shape)
        if upper is not None:
            self._upper[0][idx] = np.broadcast_to(np.asarray(upper, dtype=np.float64).reshape(-1), idx.shape)
        self._invalidate()

    # ------------------------------------------------------------------ constraints
    def add_rows(
        self,
        idx: np.ndarray,
        coef: np.ndarray | float,
        lower: float | np.ndarray = -INF,
        upper: float | np.ndarray = INF,
    ) -> np.ndarray:
        """Add ``r`` rows ``lower <= sum_t coef[i, t] * x[idx[i, t]] <= upper``.

        ``idx`` is an ``(r, t)`` integer table (entries ``< 0`` are absent terms),
        ``coef`` broadcasts to it.  Returns the new row indices."""
        idx = np.asarray(idx, dtype=np.int64)
        if idx.ndim == 1:
            idx = idx[:, None]
        r = idx.shape[0]
        coef_a = np.broadcast_to(np.asarray(coef, dtype=np.float64), idx.shape)
        rows = np.broadcast_to(np.arange(r, dtype=np.int64)[:, None], idx.shape)
        keep = idx >= 0
        return self.add_rows_coo(rows[keep], idx[keep], coef_a[keep], r, lower, upper)

    def add_rows_coo(
        self,
        rows: np.ndarray,
        cols: np.ndarray,
        vals: np.ndarray,
        num_rows: int,
        lower: float | np.ndarray = -INF,
        upper: float | np.ndarray = INF,
    ) -> np.ndarray:
        """Add ``num_rows`` rows given as COO triplets with row numbers local to this
        call (``0..num_rows-1``).  Returns the new row indices."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        cols = np.asarray(cols, dtype=np.int64).reshape(-1)
        vals = np.asarray(vals, dtype=np.float64).reshape(-1)
        if not (rows.shape == cols.shape == vals.shape):
            raise ValueError("rows, cols and vals must have the same length")
        if cols.size and (cols.min() < 0 or cols.max() >= self.num_vars):
            raise IndexError("constraint refers to a variable that does not exist")
        if rows.size and (rows.min() < 0 or rows.max() >= num_rows):
            raise IndexError("row number outside 0..num_rows-1")
        lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (num_rows,)).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (num_rows,)).copy()
        start = self.num_rows
        self._rows.append(rows + start)
        self._cols.append(cols)
        self._vals.append(vals)
        self._rlo.append(lo)
        self._rhi.append(hi)
        self.num_rows += num_rows
        self._invalidate()
        return np.arange(start, start + num_rows, dtype=np.int64)

    # ------------------------------------------------------------------ objective
    def set_objective(
        self,
        idx: np.ndarray,
        coef: np.ndarray | float,
        sense: ObjSense | str = ObjSense.MINIMIZE,
        offset: float = 0.0,
    ) -> None:
        """Objective ``sum coef * x[idx] + offset`` (replaces any previous one)."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        self._obj_idx = idx
        self._obj_val = np.broadcast_to(np.asarray(coef, dtype=np.float64).reshape(-1), idx.shape).copy()
        self.sense = ObjSense(sense)
        self.obj_offset = float(offset)
        self._invalidate()

    # ------------------------------------------------------------------ frozen views
    def _invalidate(self) -> None:
        self._vec_cache.clear()
        self._mat_cache.clear()

    def _flatten_vars(self) -> None:
        if len(self._lower) != 1:
            for lst in (self._lower, self._upper, self._vtype):
                merged = np.concatenate(lst) if lst else np.zeros(0)
                lst.clear()
                lst.append(merged)
            if self.num_vars == 0:
                self._vtype[0] = self._vtype[0].astype(np.int8)

    @property
    def lower(self) -> np.ndarray:
        self._flatten_vars()
        return self._lower[0]

    @property
    def upper(self) -> np.ndarray:
        self._flatten_vars()
        return self._upper[0]

    @property
    def is_integer(self) -> np.ndarray:
        """Boolean mask of integer (including binary) variables."""
        self._flatten_vars()
        return self._vtype[0].astype(bool)

    @property
    def objective(self) -> np.ndarray:
        """Dense objective vector ``c`` (length ``num_vars``)."""
        if "obj" not in self._vec_cache:
            c = np.zeros(self.num_vars)
            np.add.at(c, self._obj_idx, self._obj_val)
            self._vec_cache["obj"] = c
        return self._vec_cache["obj"]

    @property
    def row_lower(self) -> np.ndarray:
        if "rlo" not in self._vec_cache:
            self._vec_cache["rlo"] = np.concatenate(self._rlo) if self._rlo else np.zeros(0)
        return self._vec_cache["rlo"]

    @property
    def row_upper(self) -> np.ndarray:
        if "rhi" not in self._vec_cache:
            self._vec_cache["rhi"] = np.concatenate(self._rhi) if self._rhi else np.zeros(0)
        return self._vec_cache["rhi"]

    def matrix(self, fmt: str = "csr") -> sp.csr_matrix | sp.csc_matrix:
        """The constraint matrix ``A`` (``num_rows x num_vars``) in ``csr`` or ``csc``."""
        if fmt not in ("csr", "csc"):
            raise ValueError(f"matrix format must be 'csr' or 'csc', got {fmt!r}")
        if fmt not in self._mat_cache:
            import scipy.sparse as sp  # 0.1-0.2 s: only a model handed to a solver pays for it

            if "coo" not in self._mat_cache:
                rows = np.concatenate(self._rows) if self._rows else np.zeros(0, dtype=np.int64)
                cols = np.concatenate(self._cols) if self._cols else np.zeros(0, dtype=np.int64)
                vals = np.concatenate(self._vals) if self._vals else np.zeros(0)
                self._mat_cache["coo"] = sp.coo_matrix((vals, (rows, cols)), shape=(self.num_rows, self.num_vars))
            coo = self._mat_cache["coo"]
            mat = coo.tocsr() if fmt == "csr" else coo.tocsc()
            mat.sum_duplicates()
            mat.eliminate_zeros()
            self._mat_cache[fmt] = mat
        return self._mat_cache[fmt]

    # ------------------------------------------------------------------ checks
    def objective_value(self, x: np.ndarray) -> float:
        """``c^T x + offset``."""
        return float(self.objective @ np.asarray(x, dtype=np.float64)) + self.obj_offset

    def magnitudes(self) -> tuple[float, float]:
        """``(M, A)``: the largest activity magnitude ``sum_j |a_rj| max(|l_j|, |u_j|)``
        over the rows and the objective, and the largest ``sum_{j integer} |a_rj|`` over
        the rows (``inf`` if a variable with a non-zero coefficient is unbounded).
        :meth:`solvers.base.Tolerances.margin` turns them into an error bound."""
        xmag = np.maximum(np.abs(self.lower), np.abs(self.upper))
        a = abs(self.matrix("csr"))
        obj = float(np.abs(self.objective) @ np.where(self.objective != 0, xmag, 0.0))
        if a.nnz == 0:
            return obj, 0.0
        a.eliminate_zeros()
        act = a @ xmag  # only stored (non-zero) entries multiply, so 0 * inf never arises
        integral = a @ self.is_integer.astype(np.float64)
        return float(max(np.max(act), obj)), float(np.max(integral))

    def coefficient_range(self) -> float:
        """The largest non-zero magnitude of the matrix over its smallest (``1`` when empty)."""
        a = np.abs(self.matrix("csr").data)
        a = a[a > 0]
        return float(a.max() / a.min()) if a.size else 1.0

    def violation(self, x: np.ndarray) -> float:
        """Largest absolute violation of a bound, a row or integrality by ``x``."""
        x = np.asarray(x, dtype=np.float64)
        ax = self.matrix() @ x if self.num_rows else np.zeros(0)
        parts = [
            np.maximum(self.lower - x, 0.0),
            np.maximum(x - self.upper, 0.0),
            np.abs(x - np.round(x))[self.is_integer],
            np.maximum(self.row_lower - ax, 0.0),
            np.maximum(ax - self.row_upper, 0.0),
        ]
        return float(max((p.max() if p.size else 0.0) for p in parts))

    def is_feasible(self, x: np.ndarray, tol: float = 1e-6) -> bool:
        """Whether ``x`` satisfies every bound, row and integrality to ``tol``
        (relative to the size of the row's right-hand side)."""
        x = np.asarray(x, dtype=np.float64)
        ax = self.matrix() @ x if self.num_rows else np.zeros(0)
        scale_r = 1.0 + np.maximum(
            np.abs(np.where(np.isfinite(self.row_lower), self.row_lower, 0.0)),
            np.abs(np.where(np.isfinite(self.row_upper), self.row_upper, 0.0)),
        )
        ok_rows = np.all(ax >= self.row_lower - tol * scale_r) and np.all(ax <= self.row_upper + tol * scale_r)
        scale_v = 1.0 + np.abs(x)
        ok_bounds = np.all(x >= self.lower - tol * scale_v) and np.all(x <= self.upper + tol * scale_v)
        ok_int = np.all(np.abs(x - np.round(x))[self.is_integer] <= tol)
        return bool(ok_rows and ok_bounds and ok_int)

    def __repr__(self) -> str:
        nint = int(self.is_integer.sum())
        return f"<Model {self.name!r}: {self.num_vars} vars ({nint} integer), {self.num_rows} rows>"
