"""What a backend returns: a neutral, immutable record of one solve.

``Status`` is :class:`mtpp.core.status.ResultStatus` (one vocabulary for solves and
results); a backend ends a solve with one of its
:data:`~mtpp.core.status.SOLVER_STATUSES`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mtpp.core.status import ResultStatus as Status
from solvers.model import ObjSense


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
