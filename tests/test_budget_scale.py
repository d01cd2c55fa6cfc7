"""The caps behind issue 24's budgets at scale: a SliceGraph DP stops at its deadline and
falls back to a feasible equal-work split, a search keeps its best slicing, and certify
skips (with a record) what cannot finish in what is left.  No timings are asserted
here: a deadline already passed makes the cut-offs deterministic (speed is measured in
``benchmarks/scale.py``)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import mtpp.engine.solver_bounds as solver_bounds
from heuristics.kahn import kahn_order
from heuristics.partition.orderers import get_orderer
from heuristics.partition.segments import prepare
from heuristics.partition.slicegraph import (
    equal_work_split,
    equal_work_starts,
    slice_order,
    sort_and_slice,
    split_value,
)
from mtpp import Problem, certify, evaluate, partition
from mtpp.engine.partitions import Search
from mtpp.generators import layered_graph
from tests.oracle import random_dag

PAST = -math.inf  # a deadline long gone


def problems(seed: int, count: int) -> list[Problem]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        g = random_dag(rng, int(rng.integers(1, 40)), p=float(rng.random() * 0.3))
        memory = math.inf if rng.random() < 0.5 else float(rng.integers(1, 30))
        out.append(Problem(g, int(rng.integers(1, 9)), memory=memory, peak_aware=bool(rng.integers(2))))
    return out


def test_a_dp_past_its_deadline_returns_the_equal_work_split_and_it_is_feasible() -> None:
    for problem in problems(2401, 60):
        order = kahn_order(problem.graph)
        exact = slice_order(problem, order)
        cut = slice_order(problem, order, deadline=PAST)
        assert exact is not None and exact.exact and cut is not None and not cut.exact
        checked = evaluate(problem, cut.assignment, order)  # contiguous in the order, at most k blocks
        assert checked.bottleneck == pytest.approx(cut.bottleneck, rel=1e-9, abs=1e-9)
        assert cut.assignment.max() < problem.k
        assert cut.bottleneck >= exact.bottleneck - 1e-9  # the DP's optimum is never worse
        again = slice_order(problem, order, deadline=math.inf)  # no deadline: the DP as before
        assert again is not None and again.bottleneck == exact.bottleneck
        np.testing.assert_array_equal(again.starts, exact.starts)


def test_the_equal_work_split_is_the_best_of_its_piece_counts() -> None:
    for problem in problems(2402, 40):
        order = kahn_order(problem.graph)
        arrays = prepare(problem, order)
        k = min(problem.k, problem.graph.n)
        params = (problem.param_budget, 1.0 / problem.bandwidth, problem.peak_aware)
        value, starts = equal_work_split(arrays, k, *params)
        assert value == split_value(arrays, starts, *params)
        for j in {1, k, max(1, k // 2)}:
            assert value <= split_value(arrays, equal_work_starts(arrays.work, j), *params) + 1e-12
        assert starts[0] == 0 and np.all(np.diff(starts) > 0) and len(starts) <= k


def test_decodes_past_the_deadline_are_inf_and_keep_no_split() -> None:
    problem = Problem(layered_graph(60, seed=3), 4)
    keys = np.random.default_rng(0).random((5, 60))
    fit, best = sort_and_slice(problem, keys, deadline=PAST)
    assert np.isinf(fit).all() and best is None
    fit, best = sort_and_slice(problem, keys)
    again = slice_order(problem, best.order) if best is not None else None
    assert best is not None and again is not None and np.isfinite(fit).all()
    assert best.bottleneck == fit.min() == again.bottleneck


@pytest.mark.parametrize("name", ["brkga-100", "random-20"])
def test_a_search_keeps_the_slicing_of_its_best_order(name: str) -> None:
    problem = Problem(layered_graph(80, seed=5), 4)
    found = get_orderer(name)(problem, seed=1, time_limit=None, progress=None)
    assert found.split is not None and found.split.exact
    np.testing.assert_array_equal(found.order, found.split.order)
    assert found.split.bottleneck == min(found.history)
    again = slice_order(problem, found.order)
    assert again is not None and found.split.bottleneck == pytest.approx(again.bottleneck, rel=1e-12)
    sol = partition(problem, orderer=name, seed=1, presolve=False)
    assert sol.bottleneck == pytest.approx(found.split.bottleneck, rel=1e-12)


def test_partition_with_a_spent_time_limit_still_returns_a_checked_partition() -> None:
    for name in ("kahn", "brkga-100"):
        for problem in problems(2403, 10):
            sol = partition(problem, orderer=name, time_limit=1e-9)
            assert evaluate(problem, sol.assignment, sol.index_order).bottleneck == sol.bottleneck
            assert sol.lower_bound <= sol.bottleneck + 1e-9
            single = partition(problem, orderer="kahn")
            assert sol.stopped_by_time or sol.bottleneck == single.bottleneck


def test_certify_skips_a_mip_the_solver_could_not_stop_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(solver_bounds.Mips, "STOP_SECONDS_PER_NONZERO", 1.0)  # every model "too slow to stop"
    g = layered_graph(30, seed=2)
    cert = certify(g, 3, bounds="simple,bottleneck,exact", solver="highs", budget=20, orderer="kahn")
    assert not cert.optimal  # (else the MIPs are skipped for that reason)
    for method in ("bottleneck", "exact"):
        record = cert.bound(method)
        assert record is not None and record.status == "skipped" and "past its time limit" in record.message
    assert (
        solver_bounds.solver_lateness(Problem(g, 8), "exact")
        > solver_bounds.solver_lateness(Problem(g, 8), "bottleneck")
        > 0
    )


def test_certify_skips_a_search_whose_dps_do_not_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Search, "MIN_DECODES", 10**9)
    g = layered_graph(40, seed=4)
    cert = certify(g, 4, bounds="simple", budget=30, orderer="brkga-100")
    if not cert.optimal:
        assert any("partition search (brkga-100) skipped" in note for note in cert.notes)
    assert evaluate(Problem(g, 4), np.array([cert.assignment[str(i)] for i in g.ids])).bottleneck == cert.upper_bound


def test_a_dp_deadline_is_looked_at_while_it_runs() -> None:
    """A deadline a moment away stops a DP that takes far longer (not a timing bound:
    only that it stops before finishing)."""
    problem = Problem(layered_graph(5000, seed=6), 8)
    order = kahn_order(problem.graph)
    t0 = time.perf_counter()
    full = slice_order(problem, order)
    took = time.perf_counter() - t0
    cut = slice_order(problem, order, deadline=time.perf_counter() + took / 20)
    assert full is not None and full.exact and cut is not None and not cut.exact
    assert evaluate(problem, cut.assignment, order).bottleneck == pytest.approx(cut.bottleneck)


def test_certify_with_a_spent_budget_skips_every_mip_with_a_record() -> None:
    g = layered_graph(30, seed=2)
    for ks in ([3], [2, 3, 5]):
        certs = certify(g, ks, bounds="simple,bottleneck,exact,guess", solver="highs", budget=1e-3, orderer="kahn")
        for cert in certs:
            for method in ("bottleneck", "exact", "guess"):
                record = cert.bound(method)
                assert record is not None and record.status == "skipped"
            assert cert.lower_bound <= cert.upper_bound
