"""The cross-check's agreement test is the optimality test applied to the second
backend's dual bound before its own tolerance margin (mtpp/engine/cross_check.py): a
difference inside that margin is no disagreement, one beyond it lowers the bound."""

from __future__ import annotations

import pytest

import mtpp.engine.cross_check as cc
from mtpp import Graph, Problem
from mtpp.core.records import BoundRecord
from solvers.registry import AUTO_ORDER, backend_class

UB = 127708.0


def _second_proof(monkeypatch: pytest.MonkeyPatch, bound: float, margin: float) -> None:
    record = BoundRecord(
        method="exact", bound=bound, status="optimal", proven_optimal=True, solver="other", margin=margin
    )
    monkeypatch.setattr(cc, "bound_record", lambda *args, **kwargs: (record, None))


@pytest.mark.parametrize(("margin", "agrees"), [(0.1, True), (0.0, False)])
def test_a_difference_inside_the_second_margin_is_no_disagreement(
    monkeypatch: pytest.MonkeyPatch, margin: float, agrees: bool
) -> None:
    if sum(backend_class(b).available() for b in AUTO_ORDER) < 2:
        pytest.skip("needs two backends")
    problem = Problem(Graph.from_arrays([UB], [0.0], [0.0], []), 1)
    claim = BoundRecord(method="bottleneck", bound=UB, status="optimal", proven_optimal=True, solver=AUTO_ORDER[0])
    second = UB * (1 - 6.7e-7)  # the "scip disagrees: 127708 < 127708"
    _second_proof(monkeypatch, second, margin)
    records, notes = cc.cross_check(problem, [claim], claim, AUTO_ORDER[0], UB, 0, lambda _: None)
    if agrees:
        assert records[0].bound == UB and "cross-checked" in notes[0]
    else:
        assert records[0].bound == second and "proofs disagree" in notes[0]
