"""Bound records: what one lower-bound method proved, and the rules every record
passes before a certificate reports it (core: the formulations and the API both use
them).

:class:`BoundRecord` is one method's outcome; :func:`closes` is the optimality test
(``LB >= (1 - OPTIMALITY_TOLERANCE) UB``, the upper bound with the evaluator's rounding
error added by the caller); :func:`checked` drops a bound above the cost of a
re-checked partition (then the method failed); :func:`skipped` and :func:`failed`
record a method that did not run or broke.  :class:`PresolveRecord` says what presolve
removed.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict

OPTIMALITY_TOLERANCE = 5e-7

MIP_METHODS = ("bottleneck", "guess", "exact")
"""The MIP lower bounds of Section 3 (:mod:`formulations.bounds`): three-superblock (Section
3.2), guess-the-bottleneck (3.3) and the exact MIP (Fig. 3)."""
COMBINATORIAL_METHODS = ("simple", "cut", "crossing", "clique", "reach", "ideal-dp")
"""The bounds that need no solver: Lemma 3.3, the cut, crossing, clique and reach bounds, the ideal DP."""
SOLVER_METHODS = ("pigeonhole", *MIP_METHODS)
"""The bounds that need a MIP solver: the weighted pigeonhole bound (:mod:`formulations.pigeonhole`,
one small MIP per weighting) and the MIPs of Section 3."""
BOUND_METHODS = (*COMBINATORIAL_METHODS, *SOLVER_METHODS)
"""Every lower-bound method of :func:`mtpp.certify` and ``mtpp batch``, cheapest first:
the one list of their names."""


class BoundRecord(BaseModel):
    """One lower bound: which method, how it ended, and what it proved."""

    model_config = ConfigDict(frozen=True)

    method: str
    bound: float | None
    status: str
    proven_optimal: bool
    solver: str | None = None
    solver_version: str | None = None
    wall_time: float = 0.0
    message: str = ""
    from_k: int | None = None
    """The k whose run proved this bound, when it was shared from a larger k (``None``: this k)."""
    margin: float = 0.0
    """What the solver's tolerances took off its dual bound to make ``bound`` safe (MIP methods)."""
    ideals: int | None = None
    """The ideals the ideal DP enumerated (``ideal-dp`` only; ``None``: not counted)."""


class PresolveRecord(BaseModel):
    """What presolve (:mod:`heuristics.partition.presolve`) removed before the search:
    ops and edges before and after, and the ops removed per rule.  The optimum of the
    reduced graph is the original's; its partitions are lifted back and re-checked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ops_before: int
    ops_after: int
    edges_before: int
    edges_after: int
    removed: dict[str, int]
    ideals_after: int | None = None
    """Ideals of the reduced graph, where the ideal DP counted them (the original's are
    not counted: on the graphs presolve helps they run past any cap)."""


def closes(lb: float, ub: float) -> bool:
    """Whether ``lb`` proves ``ub`` optimal to the relative ``OPTIMALITY_TOLERANCE``."""
    return lb >= ub * (1 - OPTIMALITY_TOLERANCE)


def checked(record: BoundRecord, ub: float) -> BoundRecord:
    """``record``, or an ``error`` record if its bound exceeds the re-checked upper
    bound ``ub`` (the cost of a real partition, its rounding error added): then the
    solver failed."""
    if record.bound is None or record.bound <= ub * (1 + 1e-12):
        return record
    return record.model_copy(
        update={
            "bound": None,
            "status": "error",
            "proven_optimal": False,
            "message": f"solver failure: its bound {record.bound!r} exceeds the cost {ub!r} of a re-checked partition; "
            "the bound was dropped",
        }
    )


def skipped(method: str, why: str) -> BoundRecord:
    """A method that did not run, and why."""
    return BoundRecord(method=method, bound=None, status="skipped", proven_optimal=False, message=why)


def failed(method: str, solver: str, t0: float, status: str, message: str) -> BoundRecord:
    """A method that broke (``status`` ``error`` or ``interrupted``), timed from ``t0``."""
    return BoundRecord(
        method=method,
        bound=None,
        status=status,
        proven_optimal=False,
        solver=solver,
        wall_time=time.perf_counter() - t0,
        message=message,
    )
