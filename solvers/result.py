"""What a backend returns: a neutral, immutable record of one solve."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from solvers.model import ObjSense


class Status(str, Enum):
    """Why the solver stopped.

    * ``OPTIMAL``: proven optimal; ``objective`` is attained by ``solution`` and
      ``dual_bound`` matches it up to the solver's gap tolerance.
    * ``TIME_LIMIT``: stopped by the time limit; ``dual_bound`` is still proven.
    * ``BOUND_REACHED``: stopped because the proven dual bound reached the requested
      ``dual_bound_target`` (it cannot improve a bound capped by that target); the
      solver's own test may stop a hair short of the target, so ``dual_bound`` is
      what was proven, not the target.
    * ``RELAXED_OPTIMAL``: the backend solved a sound relaxation of the model to
      optimality (CP-SAT with rounded coefficients) but its optimum does not map back
      to a solution of the original model; ``dual_bound`` is valid, ``objective`` may
      be missing.
    * ``INFEASIBLE``, ``UNBOUNDED``: what the solver claims; a caller that knows its
      model has solutions must treat ``INFEASIBLE`` as a solver failure;
      ``INTERRUPTED``: another limit stopped it (the dual bound is still proven);
      ``ERROR``: the solver failed (``message`` says why).
    """

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"
    BOUND_REACHED = "bound_reached"
    RELAXED_OPTIMAL = "relaxed_optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INTERRUPTED = "interrupted"
    ERROR = "error"


@dataclass(frozen=True)
class SolveResult:
    """One solve.  ``dual_bound`` is the solver's *proven* bound on the optimum
    (a lower bound when minimising, an upper bound when maximising), never an
    incumbent; it is ``-inf`` (``+inf`` for maximisation) when nothing was proven,
    and ``+inf`` (``-inf``) when the model was proven infeasible."""

    status: Status
    objective: float | None
    dual_bound: float
    solution: np.ndarray | None = field(default=None, repr=False)
    wall_time: float = 0.0
    node_count: int | None = None
    solver: str = ""
    version: str = ""
    message: str = ""
    margin: float = 0.0
    """How far past ``dual_bound`` the model's true optimum may lie through the
    solver's tolerances (:meth:`solvers.base.Tolerances.margin`)."""
    sense: ObjSense = ObjSense.MINIMIZE

    @property
    def safe_bound(self) -> float:
        """``dual_bound`` moved by ``margin`` in the safe direction (down when
        minimising, up when maximising): a bound on the model's exact optimum, not
        only on the optimum the solver saw."""
        if not math.isfinite(self.dual_bound):
            return self.dual_bound
        return self.dual_bound - self.margin if self.sense is ObjSense.MINIMIZE else self.dual_bound + self.margin

    @property
    def has_solution(self) -> bool:
        return self.solution is not None and self.objective is not None

    @property
    def proven_optimal(self) -> bool:
        return self.status is Status.OPTIMAL

    @property
    def gap(self) -> float:
        """Relative gap ``|primal - dual| / max(1, |primal|)`` (``inf`` without both)."""
        if self.objective is None or not math.isfinite(self.dual_bound):
            return math.inf
        return abs(self.objective - self.dual_bound) / max(1.0, abs(self.objective))
