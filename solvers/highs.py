"""HiGHS adapter (the default backend): the whole model goes in at once as CSC
arrays through ``passModel``; the dual bound is ``info.mip_dual_bound``."""

from __future__ import annotations

import math
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from solvers.base import Backend, RawResult, SolveOptions, Tolerances
from solvers.model import Model, ObjSense
from solvers.result import Status

if TYPE_CHECKING:  # imported lazily at run time
    import highspy


class HighsBackend(Backend):
    """HiGHS through ``highspy`` (embedded, open source, no licence)."""

    name = "highs"
    package = "highspy"
    uses_mip_start = False
    tolerances = Tolerances(feasibility=1e-9, optimality=1e-9, integrality=1e-8, abs_gap=1e-9)
    """``mip_feasibility_tolerance`` one decade above its near-minimum, where HiGHS called a
    MIP "optimal" above its optimum (tests/soundness/test_regressions.py)."""
    robust_tolerances = Tolerances(feasibility=1e-9, optimality=1e-9, integrality=1e-7, abs_gap=1e-9)
    """For :attr:`SolveOptions.robust` solves, which also run without presolve: tighter, or
    with presolve, HiGHS called mixed-scale pigeonhole MIPs "optimal" above their optimum
    (``tests/formulations/test_pigeonhole.py``); 1e-7 widens the margin to a few ``1e-6``
    of the bound."""
    robust_range = 1e7
    """Mixed-scale models are solved robustly whatever the caller asked: with presolve HiGHS
    called such a MIP "optimal" above its optimum, past the margin of the tight tolerances
    (``tests/data/soundness/highs_wide_range.json``).  Models of graphs whose weights span
    less than seven decades keep presolve."""
    PRESOLVE_RULES_OFF = 1 << 19
    """HiGHS's presolve rule 19, column stuffing, is off: it made a mixed-scale MIP "optimal"
    far past the margin of the tolerances above its true optimum
    (``tests/data/soundness/highs_column_stuffing.json``)."""
    STATUS_MAP: ClassVar[dict[str, Status]] = {  # HighsModelStatus member names
        "kOptimal": Status.OPTIMAL,
        "kInfeasible": Status.INFEASIBLE,
        "kUnbounded": Status.UNBOUNDED,
        "kUnboundedOrInfeasible": Status.INFEASIBLE,
        "kTimeLimit": Status.TIME_LIMIT,
        "kInterrupt": Status.INTERRUPTED,
        "kIterationLimit": Status.INTERRUPTED,
        "kSolutionLimit": Status.INTERRUPTED,
        "kObjectiveBound": Status.BOUND_REACHED,
        "kObjectiveTarget": Status.INTERRUPTED,
    }

    @classmethod
    def _import(cls) -> ModuleType:
        import highspy

        return highspy

    def version(self) -> str:
        h = self.module.Highs()
        return f"{h.version()}"

    def _solve(self, model: Model, opts: SolveOptions) -> RawResult:
        hs = self.module
        h = hs.Highs()
        h.setOptionValue("output_flag", bool(opts.verbose))
        h.setOptionValue("random_seed", int(opts.seed))
        tol = self.tolerances_for(opts)
        h.setOptionValue("mip_rel_gap", float(opts.rel_gap))
        h.setOptionValue("mip_abs_gap", tol.abs_gap)
        h.setOptionValue("primal_feasibility_tolerance", tol.feasibility)
        h.setOptionValue("dual_feasibility_tolerance", tol.optimality)
        h.setOptionValue("mip_feasibility_tolerance", tol.integrality)
        h.setOptionValue("presolve_rule_off", self.PRESOLVE_RULES_OFF)
        if opts.robust:
            h.setOptionValue("presolve", "off")
        if opts.time_limit is not None:
            h.setOptionValue("time_limit", float(opts.time_limit))
        if opts.threads > 1:
            h.setOptionValue("threads", int(opts.threads))

        a = model.matrix("csc")
        integrality = model.is_integer.astype(np.int32)
        is_mip = bool(integrality.any())
        status = h.passModel(
            model.num_vars,
            model.num_rows,
            int(a.nnz),
            1,
            1 if model.sense is ObjSense.MINIMIZE else -1,
            model.obj_offset,
            model.objective,
            model.lower,
            model.upper,
            model.row_lower,
            model.row_upper,
            a.indptr.astype(np.int32),
            a.indices.astype(np.int32),
            a.data.astype(np.float64),
            integrality,
        )
        if status == hs.HighsStatus.kError:
            return RawResult(Status.ERROR, math.nan, message="HiGHS rejected the model (passModel)")
        # opts.mip_start is not passed on: with setSolution, HiGHS 1.12 and 1.16 both returned
        # "optimal" above the true optimum (tests/soundness/test_regressions.py)
        stopped_at_target = False
        if opts.dual_bound_target is not None and is_mip:

            def stop_at_target(event: highspy.HighsCallbackEvent) -> None:
                nonlocal stopped_at_target
                if opts.target_reached(event.data_out.mip_dual_bound, model.sense):
                    stopped_at_target = True
                    event.interrupt()

            h.cbMipInterrupt.subscribe(stop_at_target)
        h.run()

        ms = h.getModelStatus()
        st = self.neutral_status(ms.name)
        if st is Status.INTERRUPTED and stopped_at_target:
            st = Status.BOUND_REACHED
        info = h.getInfo()
        has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
        solution = np.array(h.getSolution().col_value, dtype=np.float64) if has_sol else None
        if is_mip:
            dual = float(info.mip_dual_bound)
            nodes = int(info.mip_node_count)
        else:  # an LP solved to optimality: its optimum is its own proven bound
            dual = float(info.objective_function_value) if st is Status.OPTIMAL else math.nan
            nodes = 0
        if math.isnan(dual):
            dual = -math.inf if model.sense is ObjSense.MINIMIZE else math.inf
        message = "" if st is not Status.ERROR else f"HiGHS model status {h.modelStatusToString(ms)}"
        return RawResult(st, dual, None, solution, nodes, message)
