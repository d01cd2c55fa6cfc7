"""Issue 24: a learned method whose forward pass would not fit in the time left, or
would exceed the memory cap, is not started; its classical counterpart runs instead
with a ``"fell back to ..."`` record.  No timing-sensitive assertions: the per-unit
costs are patched, or the limit is zero."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from heuristics.kahn import kahn_order
from heuristics.neural import forward_budget
from heuristics.neural.inference import topoformer_order
from heuristics.neural.objectives import Bottleneck, PeakMemory
from mtpp import partition, schedule
from mtpp.core.memory import peak_memory
from mtpp.generators import layered_graph
from tests.oracle import is_topological


def test_a_topoformer_pass_past_the_time_left_is_skipped_for_kahn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forward_budget, "TOPOFORMER_SECONDS_PER_PAIR", 1.0)  # 1,600 s on 40 ops
    g = layered_graph(40, seed=3)
    res = schedule(g, method="topoformer", time_limit=60)
    stage = next(s for s in res.stages if s.method == "topoformer")
    assert "fell back to Kahn priorities" in stage.detail and "forward pass would take" in stage.detail
    np.testing.assert_array_equal(res.index_order, kahn_order(g))  # equal priorities: Kahn by index
    assert res.peak == peak_memory(g, res.index_order)


def test_a_forward_pass_within_the_limit_runs() -> None:
    g = layered_graph(40, seed=3)
    found = topoformer_order(g, PeakMemory(), "topoformer-peak", "greedy", 1, 0, time_limit=60)
    assert found.note == "" and np.ptp(found.priorities) > 0


def test_a_regal_pass_over_the_memory_cap_is_skipped_for_plain_brkga(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTPP_MAX_MODEL_GB", "1e-6")  # 1 kB: below any forward pass
    g = layered_graph(40, seed=5)
    sol = partition(g, 4, orderer="regal-brkga-200", time_limit=None)
    assert sol.note.startswith("fell back to uniform mutants (plain BRKGA)") and "memory cap" in sol.note
    assert sol.note in sol.steps[0].detail and sol.evaluations > 0
    assert is_topological(g, sol.index_order)


def test_scoring_orders_stops_at_the_limit() -> None:
    """With no time left the forward pass is skipped and only the greedy order is
    scored (a bottleneck order costs a SliceGraph DP: 0.64 s at 10,000 ops)."""
    g = layered_graph(60, seed=6)
    found = topoformer_order(g, Bottleneck(4), "topoformer-mtpp", "sample", 16, 0, time_limit=0.0)
    assert found.evaluations == 1 and found.note.startswith("fell back to Kahn priorities")
    np.testing.assert_array_equal(found.order, kahn_order(g))


def test_the_estimates_grow_as_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTPP_MAX_MODEL_GB", "8")
    assert forward_budget.topoformer_skip(10_000, 4, 10.0)  # 34 s estimated; 36.5 s measured
    assert not forward_budget.topoformer_skip(1_000, 4, 10.0)
    assert forward_budget.regal_skip(10_000, 219_920, 3, 10.0)  # 20.7 s estimated; 18.6-43 s measured
    assert not forward_budget.regal_skip(2_000, 21_123, 3, 10.0)
    assert not forward_budget.topoformer_skip(10_000, 4, None)  # no limit, 4.8 GB: under the 8 GB cap
