"""Decoders of Topoformer Section 4.2 (greedy, sampling, beam search with state collapsing)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from heuristics.kahn import kahn_order
from heuristics.neural.decoding import BeamResult, beam_search, greedy_order, sample_orders
from heuristics.peak_memory.orders import order_peak
from heuristics.peak_memory.state_dp import state_dp
from mtpp import Graph
from mtpp.core.errors import InvalidParameterError
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph
from tests.oracle import brute_force_peak, is_topological, random_dag, topological_orders


# ---------------------------------------------------------------- naive references
def naive_ready(graph: Graph, placed: set[int]) -> list[int]:
    """The schedulable set of Eq. 8: unplaced ops whose producers are all placed."""
    return [v for v in range(graph.n) if v not in placed and set(graph.predecessors(v).tolist()) <= placed]


def naive_log_prob(graph: Graph, priorities: np.ndarray, order) -> float:
    """log p(order) under Eq. 6 and 8, one step at a time (``-inf`` if not topological)."""
    placed: set[int] = set()
    total = 0.0
    for v in [int(x) for x in order]:
        ready = naive_ready(graph, placed)
        if v not in ready:
            return -math.inf
        top = max(float(priorities[j]) for j in ready)
        lse = top + math.log(sum(math.exp(float(priorities[j]) - top) for j in ready))
        total += float(priorities[v]) - lse
        placed.add(v)
    return total


def chain(n: int) -> Graph:
    return Graph.from_arrays([1] * n, [0] * n, [1.0 + i for i in range(n)], [(i, i + 1) for i in range(n - 1)])


def no_edges(n: int) -> Graph:
    return Graph.from_arrays([1] * n, [1] * n, [2.0] * n, [])


def graph_zoo() -> list[Graph]:
    """40 graphs: layered, REGAL, random DAGs and edge cases."""
    rng = np.random.default_rng(11)
    graphs = [chain(1), chain(2), chain(9), no_edges(1), no_edges(7)]
    graphs += [layered_graph(n, seed=s) for n, s in [(5, 0), (12, 1), (25, 2), (40, 3), (70, 4), (130, 5)]]
    graphs += [layered_graph(60, seed=6, param_costs=True)]
    graphs += [regal_graph(n, seed=s) for n, s in [(10, 0), (20, 1), (35, 2), (60, 3)]]
    graphs += [random_dag(rng, int(rng.integers(2, 40)), p=float(rng.random() * 0.4)) for _ in range(20)]
    graphs += [Graph.from_arrays([0, 0, 0], [0, 0, 0], [0, 0, 0], [(0, 2), (1, 2)])]  # zero sizes
    graphs += [Graph.from_arrays([1] * 70, [0] * 70, [1] * 70, [(0, v) for v in range(1, 70)])]  # two words wide
    return graphs


def priorities_for_test(rng: np.random.Generator, n: int, kind: int) -> np.ndarray:
    if kind == 0:
        return rng.normal(size=n)
    if kind == 1:
        return rng.integers(0, 3, n).astype(float)  # many ties
    return rng.normal(size=n) * 300.0  # steps of probability ~0 and ~1


# ---------------------------------------------------------------- validity
def test_every_decoded_order_is_topological_with_consistent_scores():
    rng = np.random.default_rng(0)
    zoo = graph_zoo()
    assert len(zoo) >= 30
    for i, g in enumerate(zoo):
        y = priorities_for_test(rng, g.n, i % 3)
        assert is_topological(g, greedy_order(g, y))
        samples = sample_orders(g, y, 5, seed=i)
        assert samples.shape == (5, g.n) and samples.dtype == np.int64
        assert all(is_topological(g, o) for o in samples)
        for collapse in ("peak", "logp", "none"):
            for width in (1, 3, 8):
                r = beam_search(g, y, width, collapse)
                assert isinstance(r, BeamResult)
                assert r.orders.shape[1] == g.n and 1 <= r.orders.shape[0] <= width
                for o, lp, pk in zip(r.orders, r.log_probs, r.peaks):
                    assert is_topological(g, o)
                    assert pk == pytest.approx(order_peak(g, o), rel=1e-12, abs=1e-9)
                    if g.n <= 40 and i % 3 != 2:
                        assert lp == pytest.approx(naive_log_prob(g, y, o), rel=1e-9, abs=1e-9)
                np.testing.assert_array_equal(r.order, r.orders[0])
                assert r.peak == r.peaks[0] and r.log_prob == r.log_probs[0]
                if collapse == "peak":
                    assert np.all(np.diff(r.peaks) >= 0)
                else:
                    assert np.all(np.diff(r.log_probs) <= 0)


def test_greedy_is_the_stepwise_argmax_of_eq8():
    rng = np.random.default_rng(1)
    for i in range(40):
        g = random_dag(rng, int(rng.integers(1, 20)), p=float(rng.random() * 0.5))
        y = priorities_for_test(rng, g.n, i % 2)
        placed: set[int] = set()
        expected = []
        for _ in range(g.n):
            ready = naive_ready(g, placed)
            z = sum(math.exp(y[j]) for j in ready)
            probs = {j: math.exp(y[j]) / z for j in ready}
            best = max(probs.values())
            v = min(j for j in ready if probs[j] == best)  # ties to the smaller index
            expected.append(v)
            placed.add(v)
        assert greedy_order(g, y).tolist() == expected
        np.testing.assert_array_equal(greedy_order(g, y), kahn_order(g, y))


def test_sampling_is_seeded_and_varies():
    g = layered_graph(40, seed=3)
    y = np.random.default_rng(2).normal(size=g.n) * 0.1
    a = sample_orders(g, y, 8, seed=5)
    np.testing.assert_array_equal(a, sample_orders(g, y, 8, seed=5))
    np.testing.assert_array_equal(a, sample_orders(g, y, 8, seed=np.random.default_rng(5)))
    assert not np.array_equal(a, sample_orders(g, y, 8, seed=6))
    assert len({tuple(o) for o in a}) > 1
    # a dominant priority gap makes sampling greedy
    np.testing.assert_array_equal(sample_orders(g, np.arange(g.n) * -50.0, 1)[0], greedy_order(g, -np.arange(g.n)))


def test_sampling_first_step_frequencies():
    """Without edges the first op is drawn with probability softmax(y)."""
    g = no_edges(4)
    y = np.array([0.0, 1.0, -1.0, 0.5])
    first = sample_orders(g, y, 20000, seed=0)[:, 0]
    freq = np.bincount(first, minlength=4) / first.size
    p = np.exp(y) / np.exp(y).sum()
    assert np.all(np.abs(freq - p) < 4 * np.sqrt(p * (1 - p) / first.size))


# ---------------------------------------------------------------- beam search
def test_width_one_is_greedy():
    rng = np.random.default_rng(3)
    for i, g in enumerate(graph_zoo()):
        y = priorities_for_test(rng, g.n, i % 3)
        greedy = greedy_order(g, y)
        for collapse in ("peak", "logp", "none"):
            r = beam_search(g, y, 1, collapse)
            assert r.orders.shape[0] == 1
            np.testing.assert_array_equal(r.order, greedy)


def test_unbounded_peak_beam_is_optimal_on_tiny_graphs():
    rng = np.random.default_rng(4)
    for i in range(45):
        n = int(rng.integers(1, 8)) if i % 5 else 8
        g = random_dag(rng, n, p=float(rng.random() * 0.6) if n < 8 else 0.35)
        y = rng.normal(size=n)
        r = beam_search(g, y, None, "peak")
        assert not r.truncated
        assert r.peak == pytest.approx(brute_force_peak(g))
        assert r.peak == pytest.approx(order_peak(g, r.order))


def test_unbounded_peak_beam_matches_state_dp():
    rng = np.random.default_rng(5)
    graphs = [layered_graph(n, seed=s) for n, s in [(20, 0), (25, 1), (30, 2)]]
    graphs += [regal_graph(24, seed=3), random_dag(rng, 22, p=0.2), random_dag(rng, 26, p=0.3, integral=False)]
    for g in graphs:
        dp = state_dp(g, max_states=None)
        assert dp.exact
        r = beam_search(g, rng.normal(size=g.n), None, "peak")
        assert r.peak == pytest.approx(dp.peak, rel=1e-12)


def test_unbounded_logp_beam_finds_the_most_likely_order():
    rng = np.random.default_rng(6)
    for _ in range(30):
        n = int(rng.integers(1, 7))
        g = random_dag(rng, n, p=float(rng.random() * 0.6))
        y = rng.normal(size=n) * 1.5
        best = max(naive_log_prob(g, y, o) for o in topological_orders(g))
        r = beam_search(g, y, None, "logp")
        assert r.log_prob == pytest.approx(best, abs=1e-9)
        assert r.log_prob >= naive_log_prob(g, y, greedy_order(g, y)) - 1e-9
        for w in (1, 2, 4):
            assert beam_search(g, y, w, "logp").log_prob <= r.log_prob + 1e-9


def test_unbounded_plain_beam_enumerates_every_order():
    rng = np.random.default_rng(7)
    for _ in range(15):
        n = int(rng.integers(1, 7))
        g = random_dag(rng, n, p=float(rng.random() * 0.5))
        y = rng.normal(size=n)
        r = beam_search(g, y, None, "none")
        assert {tuple(o) for o in r.orders.tolist()} == set(topological_orders(g))
        assert len(r.orders) == len({tuple(o) for o in r.orders.tolist()})
        assert np.exp(r.log_probs).sum() == pytest.approx(1.0)


def test_width_beyond_the_level_sizes_is_the_unbounded_search():
    rng = np.random.default_rng(8)
    for _ in range(10):
        g = random_dag(rng, int(rng.integers(2, 12)), p=0.3)
        y = rng.normal(size=g.n)
        for collapse in ("peak", "logp"):
            a, b = beam_search(g, y, None, collapse), beam_search(g, y, 10**9, collapse)
            assert not b.truncated
            np.testing.assert_array_equal(a.orders, b.orders)
            np.testing.assert_array_equal(a.log_probs, b.log_probs)


def test_beam_is_not_monotone_in_width():
    """Why no test asserts that a wider beam does better: here width 3 loses the greedy
    prefix to three partial orders that are more likely at the cut and ends with a less
    likely order than width 1, even with log-prob state collapsing."""
    g = Graph.from_arrays([1] * 9, [0] * 9, [1] * 9, [(1, 5), (2, 5)])
    y = np.array([-0.469, -0.226, 0.194, -0.205, -0.214, 0.573, -0.298, -0.055, -0.345])
    one, three = beam_search(g, y, 1, "logp"), beam_search(g, y, 3, "logp")
    assert three.log_prob < one.log_prob - 0.1
    assert beam_search(g, y, None, "logp").log_prob >= one.log_prob


def test_collapsing_merges_same_sets():
    """Two independent chains: every scheduled set is a pair of chain prefixes, so with
    collapsing a level has at most (its size + 1) states."""
    g = Graph.from_arrays([1] * 8, [0] * 8, [1] * 8, [(0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (6, 7)])
    y = np.zeros(8)
    for collapse in ("peak", "logp"):
        r = beam_search(g, y, None, collapse)
        assert r.max_level == 5  # sets of 4 ops: (0,4) ... (4,0) chain prefixes
        assert r.states == 1 + sum(min(t, 4) - max(0, t - 4) + 1 for t in range(1, 8)) + r.orders.shape[0]
    plain = beam_search(g, y, None, "none")
    assert plain.orders.shape[0] == math.comb(8, 4)


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("call", "word"),
    [
        (lambda g: greedy_order(g, np.zeros(g.n + 1)), "priorities"),
        (lambda g: greedy_order(g, np.zeros((g.n, 1))), "priorities"),
        (lambda g: sample_orders(g, np.full(g.n, np.nan), 2, 0), "priorities"),
        (lambda g: beam_search(g, np.r_[np.zeros(g.n - 1), np.inf], 2), "priorities"),
        (lambda g: beam_search(g, ["a"] * g.n, 2), "priorities"),  # type: ignore[arg-type]
        (lambda g: sample_orders(g, np.zeros(g.n), 0, 0), "count"),
        (lambda g: sample_orders(g, np.zeros(g.n), 2.0, 0), "count"),  # type: ignore[arg-type]
        (lambda g: beam_search(g, np.zeros(g.n), 0), "width"),
        (lambda g: beam_search(g, np.zeros(g.n), -3), "width"),
        (lambda g: beam_search(g, np.zeros(g.n), True), "width"),
        (lambda g: beam_search(g, np.zeros(g.n), 2, "best"), "collapse"),
    ],
)
def test_bad_inputs_raise(call, word):
    with pytest.raises(InvalidParameterError, match=word):
        call(chain(4))
