"""Gurobi adapter (``gurobipy``): variables with ``addMVar``, all rows at once with
``addMConstr`` from the scipy sparse matrix; the dual bound is ``ObjBound`` and
``BestBdStop`` stops at a target bound.

The pip wheel carries a size-limited licence (at most 2000 variables and 2000
linear constraints; larger models fail at ``optimize`` with errno 10010).  The
adapter detects it once per process with a tiny probe and raises
:class:`~solvers.errors.SolverLicenseError` before building a model that is too
large, so that ``solver="auto"`` can fall back to the next backend.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import scipy.sparse as sp

from solvers.base import Backend, RawResult, SolveOptions, Tolerances
from solvers.errors import SolverLicenseError
from solvers.model import Model, ObjSense
from solvers.result import Status

if TYPE_CHECKING:  # gurobipy ships type stubs; at run time it is imported lazily
    import gurobipy

SIZE_LIMIT = 2000
ERR_SIZE_LIMIT = 10010
ERR_NO_LICENSE = 10009


class GurobiBackend(Backend):
    """Gurobi through ``gurobipy``."""

    name = "gurobi"
    package = "gurobipy"
    tolerances = Tolerances(feasibility=1e-8, optimality=1e-9, integrality=1e-9, abs_gap=1e-10)
    STATUS_MAP: ClassVar[dict[str, Status]] = {  # GRB status constant names
        "OPTIMAL": Status.OPTIMAL,
        "INFEASIBLE": Status.INFEASIBLE,
        "INF_OR_UNBD": Status.INFEASIBLE,
        "UNBOUNDED": Status.UNBOUNDED,
        "TIME_LIMIT": Status.TIME_LIMIT,
        "INTERRUPTED": Status.INTERRUPTED,
        "USER_OBJ_LIMIT": Status.BOUND_REACHED,  # BestBdStop: the dual target, possibly a hair short
        "NODE_LIMIT": Status.INTERRUPTED,
        "SOLUTION_LIMIT": Status.INTERRUPTED,
    }
    """``FeasibilityTol`` one decade above its minimum, where Gurobi's presolve returned
    "optimal" above the optimum of a MIP with a start (tests/soundness/test_regressions.py).
    SCIP has the same rule."""
    _size_limited: ClassVar[bool | None] = None

    @classmethod
    def _import(cls) -> ModuleType:
        import gurobipy

        return gurobipy

    def version(self) -> str:
        return ".".join(str(v) for v in self.module.gurobi.version())

    def _env(self) -> gurobipy.Env:
        gp = self.module
        try:
            env = gp.Env(empty=True)
            env.setParam("OutputFlag", 0)
            env.start()
        except gp.GurobiError as exc:
            raise SolverLicenseError(self.name, f"no usable licence ({exc})") from exc
        return env

    def size_limited(self) -> bool:
        """Whether the licence is the size-limited one (probed once per process)."""
        cls = type(self)
        if cls._size_limited is None:
            gp = self.module
            with self._env() as env, gp.Model(env=env) as m:
                m.addMVar(SIZE_LIMIT + 1, ub=1.0)
                try:
                    m.optimize()
                    cls._size_limited = False
                except gp.GurobiError as exc:
                    if exc.errno != ERR_SIZE_LIMIT:
                        raise SolverLicenseError(self.name, str(exc)) from exc
                    cls._size_limited = True
        return bool(cls._size_limited)

    def takes(self, variables: int, rows: int) -> bool:
        return not ((variables > SIZE_LIMIT or rows > SIZE_LIMIT) and self.size_limited())

    def _check_size(self, nvars: int, nrows: int) -> None:
        if not self.takes(nvars, nrows):
            raise SolverLicenseError(
                self.name,
                f"model has {nvars} variables and {nrows} constraints; the size-limited licence "
                f"(pip gurobipy) allows at most {SIZE_LIMIT} of each",
            )

    def _solve(self, model: Model, opts: SolveOptions) -> RawResult:
        gp = self.module
        grb = gp.GRB
        a = model.matrix("csr")
        lo, hi = model.row_lower, model.row_upper
        eq = lo == hi
        ge = np.isfinite(lo) & ~eq
        le = np.isfinite(hi) & ~eq
        nrows = int(eq.sum() + ge.sum() + le.sum())
        self._check_size(model.num_vars, nrows)

        env = self._env()
        try:
            m = gp.Model(model.name, env=env)
            p = m.Params
            p.Threads = int(opts.threads)
            p.Seed = int(opts.seed)
            p.MIPGap = float(opts.rel_gap)
            tol = self.tolerances_for(opts)
            p.MIPGapAbs = tol.abs_gap
            p.FeasibilityTol = tol.feasibility
            p.OptimalityTol = tol.optimality
            p.IntFeasTol = tol.integrality
            if opts.time_limit is not None:
                p.TimeLimit = float(opts.time_limit)
            if opts.dual_bound_target is not None:
                p.BestBdStop = float(opts.dual_bound_target)
            is_int = model.is_integer
            vtype = np.where(is_int, grb.INTEGER, grb.CONTINUOUS)
            x = m.addMVar(model.num_vars, lb=model.lower, ub=model.upper, obj=model.objective, vtype=vtype)
            m.ObjCon = model.obj_offset
            m.ModelSense = grb.MINIMIZE if model.sense is ObjSense.MINIMIZE else grb.MAXIMIZE
            stacked = sp.vstack([a[eq], a[ge], a[le]]).tocsr()
            senses = np.array(["="] * int(eq.sum()) + [">"] * int(ge.sum()) + ["<"] * int(le.sum()))
            rhs = np.r_[lo[eq], lo[ge], hi[le]]
            if nrows:
                m.addMConstr(stacked, x, senses, rhs)
            if opts.mip_start is not None:
                x.Start = np.where(np.isnan(opts.mip_start), grb.UNDEFINED, opts.mip_start)
            try:
                m.optimize()
            except gp.GurobiError as exc:
                if exc.errno == ERR_SIZE_LIMIT:
                    msg = f"model too large for the size-limited licence ({exc})"
                    raise SolverLicenseError(self.name, msg) from exc
                raise
            return self._read(m, model, bool(is_int.any()))
        finally:
            env.dispose()

    def _read(self, m: gurobipy.Model, model: Model, is_mip: bool) -> RawResult:
        grb = self.module.GRB
        code = m.Status
        st = self.neutral_status(next((name for name in self.STATUS_MAP if getattr(grb, name) == code), ""))
        nosol = -math.inf if model.sense is ObjSense.MINIMIZE else math.inf
        solution = None
        if m.SolCount > 0 and st not in (Status.INFEASIBLE, Status.ERROR):
            solution = np.array(m.getAttr("X", m.getVars()), dtype=np.float64)
        if is_mip:
            dual = float(m.ObjBound) if st not in (Status.INFEASIBLE, Status.ERROR) else nosol
            nodes = int(m.NodeCount)
        else:
            dual = float(m.ObjVal) if st is Status.OPTIMAL else nosol
            nodes = 0
        return RawResult(st, dual, None, solution, nodes, "" if st is not Status.ERROR else f"Gurobi status {code}")
