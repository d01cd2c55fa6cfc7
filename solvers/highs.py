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
    """``mip_feasibility_tolerance`` one decade above its near-minimum: at 1e-9 HiGHS 1.16
    called a ten-op exact MIP "optimal" 4% above its optimum (seed 0, presolve on; any
    of 1e-8, another seed or no presolve gave the optimum), the same pattern as Gurobi
    and SCIP at their minimum tolerances (tests/soundness/test_regressions.py)."""
    robust_tolerances = Tolerances(feasibility=1e-9, optimality=1e-9, integrality=1e-7, abs_gap=1e-9)
    """For :attr:`SolveOptions.robust` solves, which also run without presolve: HiGHS 1.16
    called pigeonhole MIPs of mixed-scale graphs (coefficients of ``1e-11 .. 1e-5`` next to
    ``O(1)``) "optimal" 9-200% above their optimum, where Gurobi and SCIP agreed with brute
    force (``tests/formulations/test_pigeonhole.py``): at ``mip_feasibility_tolerance`` 1e-8
    (1e-7 mended two of three), and with presolve on at any tolerance (HiGHS's defaults
    included) for the third; without presolve it agreed on all.  The pigeonhole MIPs of
    REGAL-style graphs took 1.2-5 times longer without presolve (1.3-26 s at 57-190 ops); 1e-7
    widens the margin to a few ``1e-6`` of the bound."""
    robust_range = 1e7
    """Mixed-scale models are solved robustly whatever the caller asked: HiGHS 1.16 called the
    bottleneck MIP of a seven-op graph with weights from 1e-3 to 7e15 (matrix coefficients
    from 2e-19 to 0.75 after scaling, ``tests/data/soundness/highs_wide_range.json``)
    "optimal" at one op's work (2.6e-7 of the scaled optimum) above its optimum, past the
    margin of the tight tolerances (8e-8), with presolve on at integrality 1e-8 or 1e-7; without
    presolve it agreed with Gurobi, SCIP and CP-SAT.  Models of graphs whose weights span
    less than seven decades keep presolve."""
    PRESOLVE_RULES_OFF = 1 << 19
    """HiGHS 1.16's presolve rule 19, column stuffing, is off: it made the bottleneck MIP of
    a three-op mixed-scale graph (``tests/data/soundness/highs_column_stuffing.json``)
    "optimal" 2.7e-6 above its true optimum, far past the margin of the tolerances above;
    with only that rule off (or presolve off), HiGHS agrees with Gurobi, SCIP and CP-SAT."""
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
