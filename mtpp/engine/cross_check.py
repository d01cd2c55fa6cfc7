"""The cross-check: a MIP's claim of optimality re-proved with the exact MIP on a
second backend, where the model is small enough to be cheap (defence in depth: two
solvers rarely fail on the same model in the same way)."""

from __future__ import annotations

from collections.abc import Callable

from formulations.bounds import bound_record
from mtpp.core.problem import Problem
from mtpp.core.records import BoundRecord, checked, closes

CROSS_CHECK_MAX_VARIABLES = 1500
"""Largest exact model (``y`` variables, ``n k``) whose optimality claim is re-proved on a second backend."""
CROSS_CHECK_TIME = 10.0


def cross_check(
    problem: Problem,
    records: list[BoundRecord],
    claim: BoundRecord,
    solver: str,
    ub: float,
    seed: int,
    say: Callable[[str], None],
    time_limit: float = CROSS_CHECK_TIME,
) -> tuple[list[BoundRecord], list[str]]:
    """Re-prove a MIP's claim of optimality with the exact MIP on a second backend,
    where the model is small enough to be cheap (``ub``: the upper bound with the
    evaluator's rounding added, as :func:`mtpp.core.records.closes` takes it).

    The second proof agrees when its dual bound *before* its own tolerance margin
    closes ``ub`` by the optimality test: both backends then prove the optimum to
    their tolerances, and the reported bound stays the first proof's (already lowered
    by its own margin), so a disagreement smaller than the second backend's margin is
    not called one.  If the second proof, margin included, stops below that, both
    bounds are kept, the smaller one is reported (the claim's record is lowered to
    it) and a note says so."""
    from solvers.registry import AUTO_ORDER, backend_class

    if problem.graph.n * problem.k > CROSS_CHECK_MAX_VARIABLES:
        return records, []
    others = [b for b in AUTO_ORDER if b != claim.solver and backend_class(b).available()]
    if not others:
        return records, []
    for other in others:  # the first backend whose licence takes the model
        record, _ = bound_record(problem, "exact", other, time_limit, 1, 1, ub, None, seed)
        if "SolverLicenseError" not in record.message:
            break
    record = checked(record, ub)
    if record.bound is None:
        return records, [f"cross-check of {claim.method} ({claim.solver}) by {other} failed: {record.message}"]
    claimed = float(claim.bound or 0.0)
    if closes(record.bound + record.margin, ub):
        say(f"cross-check: {other} agrees, bound {record.bound:.6g}")
        return records, [
            f"optimality of {claim.method} ({claim.solver}) cross-checked by the exact MIP on "
            f"{other}: bound {record.bound!r}"
        ]
    if record.status not in ("optimal", "relaxed_optimal", "bound_reached"):
        return records, [
            f"cross-check of {claim.method} ({claim.solver}) by {other} inconclusive "
            f"({record.status}, bound {record.bound!r})"
        ]
    say(f"cross-check: {other} disagrees: {record.bound:.6g} < {claimed:.6g}; reporting the smaller bound")
    lowered = [
        r
        if r.bound is None or r.bound <= record.bound
        else r.model_copy(
            update={
                "bound": record.bound,
                "message": (r.message + "; " if r.message else "") + f"lowered to the {other} cross-check's bound",
            }
        )
        for r in records
    ]
    note = (
        f"proofs disagree: {claim.method} ({claim.solver}) proved {claimed!r}, the exact MIP on {other} "
        f"only {record.bound!r}; the smaller bound is reported"
    )
    return lowered, [note]
