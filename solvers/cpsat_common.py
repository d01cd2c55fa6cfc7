"""What every CP-SAT use in mtpp shares: the solver's parameters and the map from its
statuses to the neutral :class:`~solvers.result.Status`."""

from __future__ import annotations

from typing import Any

from solvers.result import Status


def cp_solver(time_limit: float | None, threads: int, seed: int, verbose: bool = False, rel_gap: float = 0.0) -> Any:
    """A ``CpSolver`` with mtpp's settings (imports ortools lazily)."""
    from ortools.sat.python import cp_model as cp

    solver = cp.CpSolver()
    prm = solver.parameters
    prm.num_workers = max(1, int(threads))
    prm.random_seed = int(seed)
    prm.relative_gap_limit = float(rel_gap)
    prm.log_search_progress = bool(verbose)
    if time_limit is not None:
        prm.max_time_in_seconds = max(0.0, float(time_limit))
    return solver


def neutral_status(status: Any, time_limit: float | None) -> Status:
    """CP-SAT's status as a neutral one: ``FEASIBLE`` means stopped early with an
    incumbent, ``UNKNOWN`` stopped with none (by the time limit if one was set)."""
    from ortools.sat.python import cp_model as cp

    return {
        cp.OPTIMAL: Status.OPTIMAL,
        cp.FEASIBLE: Status.TIME_LIMIT,
        cp.INFEASIBLE: Status.INFEASIBLE,
        cp.UNKNOWN: Status.TIME_LIMIT if time_limit is not None else Status.INTERRUPTED,
        cp.MODEL_INVALID: Status.ERROR,
    }[status]
