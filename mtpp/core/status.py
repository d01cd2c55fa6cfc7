"""How a call, one step of it, or one solve ended: the one status vocabulary of mtpp.

:class:`ResultStatus` is the status of every result (:mod:`mtpp.core.result`) and of
every solve (:class:`solvers.result.SolveResult`, where it is also named
``solvers.Status``).  A backend ends a solve with one of :data:`SOLVER_STATUSES`:

* ``OPTIMAL``: proven optimal; the objective is attained by the solution and the
  dual bound matches it up to the solver's gap tolerance.
* ``TIME_LIMIT``: stopped by the time limit; the dual bound is still proven.
* ``BOUND_REACHED``: stopped because the proven dual bound reached the requested
  ``dual_bound_target`` (it cannot improve a bound capped by that target); the
  solver's own test may stop a hair short of the target, so the dual bound is what
  was proven, not the target.
* ``RELAXED_OPTIMAL``: the backend solved a sound relaxation of the model to
  optimality (CP-SAT with rounded coefficients) but its optimum does not map back to
  a solution of the original model; the dual bound is valid, the objective may be
  missing.
* ``INFEASIBLE``, ``UNBOUNDED``: what the solver claims; a caller that knows its
  model has solutions must treat ``INFEASIBLE`` as a solver failure;
  ``INTERRUPTED``: another limit stopped it (the dual bound is still proven);
  ``ERROR``: the solver failed (the result's ``message`` says why).

The calls add ``FEASIBLE`` (a valid result, the gap still open), ``BOUND`` (a step
that proves a bound and finds no solution, finished), ``SKIPPED`` (a step that did not
run, e.g. the result was already proven), ``TOO_WIDE`` (the ideal DP's lattice is over
its cap) and ``NO_IMPROVEMENT`` (the ideal DP proved that no partition beats the known
one).  A string compares equal to its status (``status == "optimal"``) and ``str()``
gives the value.
"""

from __future__ import annotations

from enum import Enum


class ResultStatus(str, Enum):
    """How a call, one step of it, or one solve ended (module docstring)."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    TIME_LIMIT = "time_limit"
    BOUND_REACHED = "bound_reached"
    RELAXED_OPTIMAL = "relaxed_optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INTERRUPTED = "interrupted"
    ERROR = "error"
    BOUND = "bound"
    SKIPPED = "skipped"
    TOO_WIDE = "too_wide"
    NO_IMPROVEMENT = "no_improvement"

    def __str__(self) -> str:
        return self.value


SOLVER_STATUSES = frozenset(
    {
        ResultStatus.OPTIMAL,
        ResultStatus.TIME_LIMIT,
        ResultStatus.BOUND_REACHED,
        ResultStatus.RELAXED_OPTIMAL,
        ResultStatus.INFEASIBLE,
        ResultStatus.UNBOUNDED,
        ResultStatus.INTERRUPTED,
        ResultStatus.ERROR,
    }
)
"""The statuses a solver backend ends a solve with (module docstring)."""
