"""Peak-memory heuristics (orders, state DP) and the peak-aware segment costs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from heuristics.brkga import BrkgaParams
from heuristics.kahn import kahn_order
from heuristics.partition.segment_peaks import (
    peak_column,
    peak_segment_table,
    prefix_peaks,
)
from heuristics.partition.segments import segment_cost_table
from heuristics.peak_memory.orders import (
    brkga_order,
    decode_peaks,
    order_peak,
    random_orders,
    traversal_order,
)
from heuristics.peak_memory.state_dp import state_dp
from mtpp import Graph, Problem
from mtpp.core.memory import block_peak
from tests.oracle import (
    brute_force_peak,
    is_topological,
    naive_block_cost,
    naive_block_peak,
    random_dag,
    reference_profile,
    shared_graph,
)


def random_cases(seed: int, count: int, n_max: int):
    rng = np.random.default_rng(seed)
    for it in range(count):
        yield rng, random_dag(rng, int(rng.integers(1, n_max + 1)), p=float(rng.random() * 0.6), integral=it % 2 == 0)


# ---------------------------------------------------------------- evaluator kernel
def test_compiled_peak_equals_reference_and_respects_upper_bound():
    for rng, g in random_cases(0, 100, 14):
        keys = rng.random((3, g.n))
        peaks = decode_peaks(g, keys)
        for row, value in zip(keys, peaks):
            order = kahn_order(g, row)
            ref = max(reference_profile(g, order))
            assert value == pytest.approx(ref) and order_peak(g, order) == pytest.approx(ref)
            assert order_peak(g, order, upper_bound=value) == math.inf  # at or above the bound: inf
            assert order_peak(g, order, upper_bound=value + 1) == value


# ---------------------------------------------------------------- orders
def test_every_heuristic_returns_a_valid_topological_order():
    for rng, g in random_cases(1, 25, 12):
        results = [
            traversal_order(g, "dfs"),
            traversal_order(g, "bfs"),
            random_orders(g, 10, seed=int(rng.integers(100))),
            brkga_order(g, BrkgaParams(population=8, generations=4), seed=1),
        ]
        for res in results:
            assert is_topological(g, res.order)
            assert res.peak == pytest.approx(max(reference_profile(g, res.order)))
        for width in (1, 2, 7, None):
            dp = state_dp(g, beam_width=width)
            assert is_topological(g, dp.order)
            assert dp.peak == pytest.approx(max(reference_profile(g, dp.order)))


def test_brkga_never_loses_its_seed_orders():
    g = shared_graph(100)
    greedy = state_dp(g, beam_width=1)
    res = brkga_order(g, BrkgaParams(population=10, generations=3), seed=0, initial_orders=[greedy.order])
    assert res.peak <= greedy.peak and res.evaluations > 10


def test_state_dp_is_exact_and_its_bounds_hold():
    for _, g in random_cases(2, 60, 8):
        opt = brute_force_peak(g)
        exact = state_dp(g)
        assert exact.exact and exact.peak == pytest.approx(opt) and exact.lower_bound == pytest.approx(opt)
        for width in (1, 2, 3):
            beam = state_dp(g, beam_width=width)
            assert beam.lower_bound <= opt + 1e-9 <= beam.peak + 2e-9
            assert beam.exact == (beam.truncated_at < 0)
            if beam.exact:
                assert beam.peak == pytest.approx(opt)
        # pruned by a known order: still exact; when that order is optimal, it comes back
        upper = state_dp(g, beam_width=1).order
        pruned = state_dp(g, upper_order=upper)
        assert pruned.exact and pruned.peak == pytest.approx(opt) and pruned.lower_bound == pytest.approx(opt)
        tiny = state_dp(g, upper_order=upper, max_states=1)
        assert tiny.lower_bound <= opt + 1e-9 <= tiny.peak + 2e-9


def test_state_dp_on_the_shared_graphs():
    g = shared_graph(100)
    res = state_dp(g)
    assert res.exact and res.peak == 36790 and res.lower_bound == 36790
    big = shared_graph(1000)
    greedy = state_dp(big, beam_width=1)  # greedy methods stay fast at n = 1000
    dfs = traversal_order(big, "dfs")
    stopped = state_dp(big, beam_width=None, upper_order=dfs.order, time_limit=0.0)
    assert stopped.stopped_by_time and not stopped.exact and is_topological(big, stopped.order)
    assert stopped.lower_bound <= min(stopped.peak, greedy.peak)


def test_state_dp_does_not_start_a_level_it_cannot_finish():
    """The clock was looked at between levels only, and one level of 200,000 states
    takes seconds: schedule --method exact-dp --time-limit 10 took 16 s on 2,000 ops,
    this call 2.5 s for a 0.5 s limit.  A level that would end past the limit at the
    last level's pace expands only its best states."""
    import time

    from mtpp.generators import layered_graph

    g = layered_graph(600, seed=2424)
    state_dp(layered_graph(20, seed=1), beam_width=None, time_limit=1.0)  # the kernels loaded
    t = time.perf_counter()
    res = state_dp(g, beam_width=None, time_limit=0.5)
    assert time.perf_counter() - t < 1.5
    assert res.stopped_by_time and not res.exact and is_topological(g, res.order)
    assert res.lower_bound <= res.peak


def test_state_dp_bound_holds_when_a_stop_drops_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """States dropped unexpanded at a stop count as cut off with their peak so far."""
    import heuristics.peak_memory.state_dp as module

    class Clock:  # one second per look, so a stop comes at a level chosen by time_limit
        t = 0.0

        def perf_counter(self) -> float:
            self.t += 1.0
            return self.t

    monkeypatch.setattr(module, "TIMEOUT_WIDTH", 1)
    dropped = 0
    for _, g in random_cases(5, 40, 9):
        opt = brute_force_peak(g)
        for limit in (2.5, 4.5, 6.5, 8.5):
            monkeypatch.setattr(module, "time", Clock())
            res = state_dp(g, time_limit=limit)
            assert is_topological(g, res.order)
            assert res.lower_bound <= opt + 1e-9 <= res.peak + 2e-9
            dropped += res.stopped_by_time and not res.exact
    assert dropped > 10


def test_bad_widths_are_rejected():
    from mtpp import InvalidParameterError

    g = random_dag(np.random.default_rng(0), 4)
    with pytest.raises(InvalidParameterError, match="beam_width"):
        state_dp(g, beam_width=0)
    with pytest.raises(InvalidParameterError, match="count"):
        random_orders(g, 0)
    with pytest.raises(InvalidParameterError, match="dfs"):
        traversal_order(g, "sideways")


# ---------------------------------------------------------------- peak-aware segments
def test_peak_segment_table_equals_naive_per_segment_computation():
    for rng, g in random_cases(3, 50, 9):
        order = kahn_order(g, rng.random(g.n))
        problem = Problem(g, 2, bandwidth=float(rng.uniform(0.5, 3)), memory=float(rng.uniform(1, 40)), peak_aware=True)
        table = peak_segment_table(problem, order)
        costs = segment_cost_table(problem, order)
        plain = Problem(g, 2, bandwidth=problem.bandwidth)  # no overflow: IO + work only
        for l in range(g.n):
            for r in range(l, g.n):
                ref = naive_block_peak(g, order[l : r + 1])
                assert table[l, r] == pytest.approx(ref, abs=1e-9)
                assert block_peak(g, order[l : r + 1]) == pytest.approx(ref, abs=1e-9)
                block = {int(v) for v in order[l : r + 1]}
                params = sum(float(g.size_param[v]) for v in block)
                expected = naive_block_cost(plain, block) + max(params + ref - problem.memory, 0) / problem.bandwidth
                assert costs[l, r] == pytest.approx(expected, rel=1e-9, abs=1e-9)
            assert np.all(np.isnan(table[l + 1 :, l]))
        # a column is what a DP sweep sees; peak never decreases as l moves left
        r = g.n - 1
        column = peak_column(problem, order, r)
        np.testing.assert_allclose(column, table[r::-1, r])
        assert np.all(np.diff(column) >= -1e-12)
        np.testing.assert_allclose(prefix_peaks(problem, order), table[0])


def test_peak_columns_on_a_large_order():
    g = shared_graph(1000)
    problem = Problem(g, 8)
    order = g.topological_order
    rng = np.random.default_rng(0)
    for r in rng.integers(0, g.n, 3).tolist():
        column = peak_column(problem, order, r, stop=max(0, r - 60))
        for l in (r, max(0, r - 30), max(0, r - 60)):
            assert column[r - l] == pytest.approx(block_peak(g, order[l : r + 1]))


# ---------------------------------------------------------------- order-independent bounds
def naive_forced_live(g: Graph, v: int) -> float:
    """Memory live at v's step in every order: ancestors with a consumer in desc*(v)."""
    import networkx as nx

    h = g.to_networkx()
    ids = g.ids
    anc = {g.index(a) for a in nx.ancestors(h, ids[v])}
    down = {g.index(d) for d in nx.descendants(h, ids[v])} | {v}
    forced = {u for u in anc if set(g.successors(u).tolist()) & down}
    return float(g.size_out[v] + g.size_param[v] + sum(g.size_out[u] for u in forced))


def test_forced_live_bound_is_valid_and_beats_the_local_bound():
    from mtpp.bounds.peak_memory import forced_live_bound, forced_live_memory
    from mtpp.core.memory import local_lower_bound

    for _, g in random_cases(4, 40, 7):
        per_node = forced_live_memory(g)
        np.testing.assert_allclose(per_node, [naive_forced_live(g, v) for v in range(g.n)])
        assert local_lower_bound(g) - 1e-9 <= forced_live_bound(g) <= brute_force_peak(g) + 1e-9
    big = shared_graph(500)
    assert forced_live_bound(big) == 225220 > local_lower_bound(big)
