"""SCIP adapter (``pyscipopt``).  SCIP has no matrix interface for sparse rows, so
rows are built as linear expressions and added in one ``addConss`` call; the dual
bound is ``getDualbound()``, and ``limits/dual`` stops the solve at a target bound."""

from __future__ import annotations

import math
import time
from types import ModuleType
from typing import ClassVar

import numpy as np

from solvers.base import Backend, RawResult, SolveOptions, Tolerances
from solvers.model import Model, ObjSense
from solvers.result import Status


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


class ScipBackend(Backend):
    """SCIP through ``pyscipopt`` (single-threaded: ``threads`` is ignored)."""

    name = "scip"
    package = "pyscipopt"
    tolerances = Tolerances(feasibility=1e-8, optimality=1e-8, integrality=1e-8, abs_gap=0.0)
    """1e-8: with ``feastol`` at SCIP's ``epsilon`` (1e-9) SCIP 10 returned a wrong optimum
    on a four-node exact MIP (tests/soundness/test_regressions.py)."""
    STATUS_MAP: ClassVar[dict[str, Status]] = {  # Model.getStatus() names
        "optimal": Status.OPTIMAL,
        "gaplimit": Status.OPTIMAL,
        "infeasible": Status.INFEASIBLE,
        "inforunbd": Status.INFEASIBLE,
        "unbounded": Status.UNBOUNDED,
        "timelimit": Status.TIME_LIMIT,
        "duallimit": Status.BOUND_REACHED,
        "userinterrupt": Status.INTERRUPTED,
        "nodelimit": Status.INTERRUPTED,
        "memlimit": Status.INTERRUPTED,
    }

    @classmethod
    def _import(cls) -> ModuleType:
        import pyscipopt

        return pyscipopt

    def version(self) -> str:
        return str(self.module.Model().version())

    BUILD_SECONDS_PER_NONZERO = 7e-6  # the slowest build rate seen on large exact MIPs

    def _solve(self, model: Model, opts: SolveOptions) -> RawResult:
        ps = self.module
        t0 = time.perf_counter()
        m = ps.Model(model.name)
        m.hideOutput(not opts.verbose)
        m.setParam("randomization/randomseedshift", int(opts.seed))
        m.setParam("limits/gap", float(opts.rel_gap))
        tol = self.tolerances_for(opts)
        m.setParam("limits/absgap", tol.abs_gap)
        m.setParam("numerics/feastol", tol.feasibility)
        m.setParam("numerics/dualfeastol", tol.optimality)
        if opts.dual_bound_target is not None and model.is_integer.any():
            m.setParam("limits/dual", float(opts.dual_bound_target))

        is_int = model.is_integer
        binary = is_int & (model.lower >= 0) & (model.upper <= 1)
        vtypes = np.where(binary, "B", np.where(is_int, "I", "C"))
        xs = [
            m.addVar(name=f"x{j}", vtype=vt, lb=_finite(lo), ub=_finite(hi))
            for j, (vt, lo, hi) in enumerate(zip(vtypes.tolist(), model.lower.tolist(), model.upper.tolist()))
        ]
        a = model.matrix("csr")
        indptr, indices, data = a.indptr.tolist(), a.indices.tolist(), a.data.tolist()
        conss = []
        for r, (lo, hi) in enumerate(zip(model.row_lower.tolist(), model.row_upper.tolist())):
            s, e = indptr[r], indptr[r + 1]
            if not (math.isfinite(lo) or math.isfinite(hi)):
                continue  # a free row constrains nothing, and SCIP asserts against it
            expr = ps.quicksum(c * xs[j] for j, c in zip(indices[s:e], data[s:e]))
            conss.append(ps.scip.ExprCons(expr, lhs=_finite(lo), rhs=_finite(hi)))
        if conss:
            m.addConss(conss)
        c = model.objective
        nz = np.flatnonzero(c).tolist()
        sense = "minimize" if model.sense is ObjSense.MINIMIZE else "maximize"
        m.setObjective(ps.quicksum(float(c[j]) * xs[j] for j in nz), sense)
        if model.obj_offset:
            m.addObjoffset(model.obj_offset)
        if opts.mip_start is not None:
            sol = m.createPartialSol()
            for j in np.flatnonzero(~np.isnan(opts.mip_start)).tolist():
                m.setSolVal(sol, xs[j], float(opts.mip_start[j]))
            m.addSol(sol)
        if opts.time_limit is not None:  # the limit covers the call: building 10^5 rows in Python takes seconds
            m.setParam("limits/time", max(0.01, float(opts.time_limit) - (time.perf_counter() - t0)))
        m.optimizeNogil()  # the interpreter lock is free for other threads (certify's background annealing)

        raw = m.getStatus()
        st = self.neutral_status(raw)
        solution = None
        if m.getNSols() > 0 and st not in (Status.INFEASIBLE, Status.ERROR):
            best = m.getBestSol()
            solution = np.array([m.getSolVal(best, v) for v in xs], dtype=np.float64)
        dual = float(m.getDualbound())
        if abs(dual) >= m.infinity():
            dual = -math.inf if model.sense is ObjSense.MINIMIZE else math.inf
        message = "" if st is not Status.ERROR else f"SCIP status {raw}"
        return RawResult(st, dual, None, solution, int(m.getNNodes()), message)
