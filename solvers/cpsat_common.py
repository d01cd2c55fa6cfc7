"""What every CP-SAT use in mtpp shares: the solver's parameters and the map from its
statuses to the neutral :class:`~solvers.result.Status`."""

from __future__ import annotations

import math
from typing import Any

from solvers.result import Status


def cp_solver(time_limit: float | None, threads: int, seed: int, verbose: bool = False, rel_gap: float = 0.0) -> Any:
    """A ``CpSolver`` with mtpp's settings (imports ortools lazily).  CP-SAT's seed is a
    32-bit signed integer: mtpp's seeds (any non-negative int) are taken modulo ``2^31``."""
    from ortools.sat.python import cp_model as cp

    solver = cp.CpSolver()
    prm = solver.parameters
    prm.num_workers = max(1, int(threads))
    prm.random_seed = int(seed) % 2**31
    prm.relative_gap_limit = float(rel_gap)
    prm.log_search_progress = bool(verbose)
    if time_limit is not None:
        prm.max_time_in_seconds = max(0.0, float(time_limit))
    return solver


STATUS_MAP = {  # CpSolverStatus names; UNKNOWN depends on the time limit (neutral_status)
    "OPTIMAL": Status.OPTIMAL,
    "FEASIBLE": Status.TIME_LIMIT,
    "INFEASIBLE": Status.INFEASIBLE,
    "MODEL_INVALID": Status.ERROR,
}


def neutral_status(status: Any, time_limit: float | None) -> Status:
    """CP-SAT's status as a neutral one (:data:`STATUS_MAP`): ``FEASIBLE`` means
    stopped early with an incumbent, ``UNKNOWN`` stopped with none (by the time limit
    if one was set)."""
    name = getattr(status, "name", str(status))  # a CpSolverStatus member
    if name == "UNKNOWN":
        return Status.TIME_LIMIT if time_limit is not None else Status.INTERRUPTED
    return STATUS_MAP.get(name, Status.ERROR)


def proven_bound(solver: Any, status: Any) -> float:
    """CP-SAT's proven objective bound (minimisation: a lower bound), or ``-inf`` when
    it proved nothing: with status ``UNKNOWN`` (stopped before any solution) the
    response's ``best_objective_bound`` is not a bound (0 has been seen on models
    whose optimum is negative), and ``INFEASIBLE`` gives ``+inf``."""
    from ortools.sat.python import cp_model as cp

    if status in (cp.OPTIMAL, cp.FEASIBLE):
        return float(solver.best_objective_bound)
    return math.inf if status == cp.INFEASIBLE else -math.inf
