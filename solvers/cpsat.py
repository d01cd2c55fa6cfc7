"""CP-SAT adapter (OR-Tools).  CP-SAT needs integer data, so the model is first
turned into the sound integer relaxation of :mod:`solvers.integral` (scaled and
rounded so that the reported bound stays a valid bound of the original model), then
written straight into a ``CpModelProto`` in bulk."""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np

from solvers.base import Backend, RawResult, SolveOptions, Tolerances
from solvers.cpsat_common import STATUS_MAP, cp_solver, neutral_status, proven_bound
from solvers.integral import complete_continuous, integer_relaxation
from solvers.model import Model
from solvers.result import Status

INT_LIMIT = 2**62
GAP_TOL = 1e-6  # CP-SAT's OPTIMAL on a rounded model counts as optimal when mapped back within this gap


class CpSatBackend(Backend):
    """CP-SAT through ``ortools``.  ``threads`` sets ``num_workers`` (CP-SAT's
    portfolio is much stronger with 8 or more)."""

    name = "cpsat"
    package = "ortools"
    tolerances = Tolerances(feasibility=0.0, optimality=0.0, integrality=0.0, abs_gap=0.0)
    STATUS_MAP = STATUS_MAP
    """CP-SAT is exact on the integer model; the rounding into it is accounted for by
    :mod:`solvers.integral`, whose bound is already valid for the original model."""
    integral_data = True

    @classmethod
    def _import(cls) -> ModuleType:
        from ortools.sat.python import cp_model

        return cp_model

    def version(self) -> str:
        from importlib.metadata import version

        return version("ortools")

    def _solve(self, model: Model, opts: SolveOptions) -> RawResult:
        cp = self.module
        relax = integer_relaxation(model)
        cpm = cp.CpModel()
        proto = cpm.proto
        for lo, hi in zip(relax.z_lower.astype(np.int64).tolist(), relax.z_upper.astype(np.int64).tolist()):
            proto.variables.add().domain.extend([lo, hi])
        a = relax.matrix
        indptr, indices = a.indptr.tolist(), a.indices.tolist()
        coefs = a.data.astype(np.int64).tolist()
        rlo = np.clip(np.nan_to_num(relax.row_lower, neginf=-INT_LIMIT), -INT_LIMIT, INT_LIMIT).astype(np.int64)
        rhi = np.clip(np.nan_to_num(relax.row_upper, posinf=INT_LIMIT), -INT_LIMIT, INT_LIMIT).astype(np.int64)
        for r, (lo, hi) in enumerate(zip(rlo.tolist(), rhi.tolist())):
            s, e = indptr[r], indptr[r + 1]
            if s == e:
                if lo > 0 or hi < 0:  # an empty row that cannot hold: infeasible
                    proto.constraints.add().bool_or.literals.extend([])
                continue
            lin = proto.constraints.add().linear
            lin.vars.extend(indices[s:e])
            lin.coeffs.extend(coefs[s:e])
            lin.domain.extend([lo, hi])
        nz = np.flatnonzero(relax.objective)
        proto.objective.vars.extend(nz.tolist())
        proto.objective.coeffs.extend(relax.objective[nz].astype(np.int64).tolist())
        if opts.mip_start is not None:
            z = relax.to_integer(opts.mip_start)
            given = np.flatnonzero(~np.isnan(z))
            proto.solution_hint.vars.extend(given.tolist())
            proto.solution_hint.values.extend(z[given].astype(np.int64).tolist())

        solver = cp_solver(opts.time_limit, opts.threads, opts.seed, opts.verbose, opts.rel_gap)
        stopped_at_target = False
        if opts.dual_bound_target is not None:

            def stop_at_target(beta: float) -> None:
                nonlocal stopped_at_target
                if opts.target_reached(relax.bound(beta), model.sense):
                    stopped_at_target = True
                    solver.stop_search()

            solver.best_bound_callback = stop_at_target
        status = solver.solve(cpm)

        st = neutral_status(status, opts.time_limit)
        if stopped_at_target and st in (Status.TIME_LIMIT, Status.INTERRUPTED):
            st = Status.BOUND_REACHED
        message = "" if st is not Status.ERROR else f"CP-SAT: model invalid: {cpm.validate()}"
        solution = None
        if status in (cp.OPTIMAL, cp.FEASIBLE):
            z = np.array(solver.response_proto.solution, dtype=np.float64)
            solution = relax.to_original(z)
            if not model.is_feasible(solution, tol=1e-6):
                solution = complete_continuous(model, solution)
        dual = relax.bound(proven_bound(solver, status)) if st is not Status.ERROR else math.nan
        if st is Status.OPTIMAL and solution is not None:
            obj = model.objective_value(solution)
            if abs(obj - dual) > GAP_TOL * max(1.0, abs(obj)):
                st, message = Status.RELAXED_OPTIMAL, "optimum of the rounded integer relaxation"
        return RawResult(st, dual, None, solution, int(solver.num_branches), message)
