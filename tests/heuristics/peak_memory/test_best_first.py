"""Best-first search, graph splitting and the min-cut live bound against brute force."""

from __future__ import annotations

import itertools
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

from heuristics.peak_memory.best_first import best_first_search
from heuristics.peak_memory.split import cut_nodes, split_graph
from mtpp import Graph
from mtpp.bounds.peak_cut import cut_live_memory
from mtpp.bounds.peak_memory import forced_live_memory
from mtpp.core.memory import peak_memory
from mtpp.generators import layered_graph
from tests.oracle import brute_force_peak, chain_of_blocks, is_topological, random_dag, topological_orders


def random_cases(seed: int, count: int, n_max: int):
    rng = np.random.default_rng(seed)
    for it in range(count):
        n = int(rng.integers(1, n_max + 1))
        yield it, random_dag(rng, n, p=float(rng.uniform(0.1, 0.7)), integral=it % 2 == 0)


def test_search_equals_brute_force_and_interrupted_bounds_hold():
    for _, g in random_cases(0, 60, 7):
        opt = brute_force_peak(g)
        res = best_first_search(g)
        # the bound is lowered for rounding (a relative 8 (n + 2) u at most), not at all on integer sizes
        assert res.optimal and res.peak * (1 - 1e-13) <= res.lower_bound <= res.peak
        assert res.lower_bound == res.peak or not np.all(g.size_out == np.round(g.size_out))
        assert res.peak == peak_memory(g, res.order) and abs(res.peak - opt) <= 1e-9 * max(1.0, opt)
        assert is_topological(g, res.order)
        # a cap of two states stops it at once: the bound must stay below the optimum
        small = best_first_search(g, memory_mb=1e-4, static_bound=forced_live_memory(g))
        assert small.lower_bound <= opt + 1e-9 <= small.peak + 2e-9
        assert small.memory_hit or small.optimal
        assert is_topological(g, small.order)


def test_interrupted_search_on_a_larger_graph_keeps_a_valid_rising_bound():
    rng = np.random.default_rng(5)
    g = random_dag(rng, 24, p=0.25)
    exact = best_first_search(g)
    assert exact.optimal
    bounds = []
    for mb in (0.01, 0.05, 0.2):
        res = best_first_search(g, memory_mb=mb, static_bound=forced_live_memory(g))
        assert res.lower_bound <= exact.peak + 1e-9 <= res.peak + 2e-9
        bounds.append(res.lower_bound)
    assert bounds == sorted(bounds)  # more memory, never a weaker bound


def test_target_stops_once_an_order_is_good_enough():
    from heuristics.peak_memory.orders import order_peak, traversal_order

    rng = np.random.default_rng(2)
    for _ in range(20):
        g = random_dag(rng, 12, p=0.3)
        exact = best_first_search(g)
        if exact.expanded > 0:  # the bounds alone did not prove the start order optimal
            break
    dfs = traversal_order(g, "dfs").order
    loose = best_first_search(g, target=order_peak(g, dfs))
    assert loose.target_reached and loose.expanded == 0 and np.array_equal(loose.order, dfs)
    assert loose.lower_bound <= exact.peak <= loose.peak


def test_cut_nodes_are_comparable_to_every_op():
    for _, g in random_cases(1, 40, 9):
        h = g.to_networkx()
        ids = g.ids
        topo = g.topological_order
        expected = [
            p
            for p, v in enumerate(topo.tolist())
            if len(nx.ancestors(h, ids[v])) + len(nx.descendants(h, ids[v])) == g.n - 1
        ]
        assert cut_nodes(g).tolist() == expected


def test_splitting_keeps_the_optimum_and_concatenates_orders():
    rng = np.random.default_rng(4)
    cases = [g for _, g in random_cases(3, 40, 7)] + [chain_of_blocks(rng, 3) for _ in range(6)]
    split = 0
    for g in cases:
        parts = split_graph(g)
        split += len(parts) > 1
        assert sorted(np.concatenate([p.ops for p in parts]).tolist()) == list(range(g.n))
        opt = brute_force_peak(g) if g.n <= 8 else best_first_search(g).peak
        part_opt = [brute_force_peak(p.graph) if p.graph.n <= 8 else best_first_search(p.graph).peak for p in parts]
        assert max(part_opt) == pytest.approx(opt, rel=1e-12)
        whole = np.concatenate([p.lift(best_first_search(p.graph).order) for p in parts])
        assert is_topological(g, whole) and peak_memory(g, whole) == pytest.approx(opt, rel=1e-12)
        # any order of the whole graph restricted to a part has the same step memories there
        for p in parts:
            local = p.restrict(g.topological_order)
            assert is_topological(p.graph, local)
            assert peak_memory(p.graph, local) <= peak_memory(g, g.topological_order)
    assert split >= 6


def naive_cut_live(g: Graph, v: int, scheduled: frozenset[int] = frozenset()) -> float:
    """min over ideals S with anc(v) + scheduled <= S, S cap desc*(v) = {} of I(S), plus
    v's own step."""
    h = g.to_networkx()
    anc = {g.index(a) for a in nx.ancestors(h, g.ids[v])} | set(scheduled)
    down = {g.index(a) for a in nx.descendants(h, g.ids[v])} | {v}
    free = [u for u in range(g.n) if u not in anc and u not in down]
    best = np.inf
    for pick in itertools.product((0, 1), repeat=len(free)):
        s = anc | {u for u, x in zip(free, pick) if x}
        if any(set(g.predecessors(z).tolist()) - s for z in s):
            continue
        best = min(best, sum(g.size_out[u] for u in s if set(g.successors(u).tolist()) - s))
    return float(best + g.size_out[v] + g.size_param[v])


def test_cut_live_bound_is_the_min_over_ideals_and_below_the_optimum():
    for it, g in random_cases(6, 30, 7):
        values, done, resid = cut_live_memory(g, every_op=True)
        naive = np.array([naive_cut_live(g, v) for v in range(g.n)])
        if it % 2 == 0:  # integral sizes: exact
            np.testing.assert_array_equal(values[done], naive[done])
        assert np.all(values <= naive + 1e-9)
        # relative to a scheduled ideal: the residual paths of the search's bound
        h = g.to_networkx()
        for size in range(g.n):
            ideal = frozenset(g.topological_order[:size].tolist())
            for v in set(range(g.n)) - ideal:
                down = {g.index(a) for a in nx.descendants(h, g.ids[v])} | {v}
                feeds = [u for u in ideal if set(g.successors(u).tolist()) & down]
                relative = values[v] + sum(resid[v, u] for u in feeds)
                assert relative <= naive_cut_live(g, v, ideal) + 1e-9
        forced = forced_live_memory(g)
        assert np.all(values >= forced - 1e-9)
        assert values.max() <= brute_force_peak(g) + 1e-9


def test_cut_live_bound_beats_forced_live_on_a_layered_graph():
    g = layered_graph(100, 100, param_costs=True)
    opt = best_first_search(g, static_bound=forced_live_memory(g), time_limit=30)
    assert opt.optimal
    assert forced_live_memory(g).max() < cut_live_memory(g)[0].max() <= opt.peak


def exact_live(g: Graph, done: frozenset[int]) -> Fraction:
    """``I(S)`` in rationals: the outputs in ``S`` with a consumer outside ``S``."""
    return sum(
        (Fraction(float(g.size_out[u])) for u in done if set(g.successors(u).tolist()) - done),
        Fraction(0),
    )


def best_rest(g: Graph, orders: list[tuple[int, ...]]) -> dict[frozenset[int], Fraction]:
    """Per ideal ``S``: the smallest peak over the steps after ``S`` of any order that
    runs ``S`` first (exact)."""
    best: dict[frozenset[int], Fraction] = {}
    own = [Fraction(float(g.size_out[v])) + Fraction(float(g.size_param[v])) for v in range(g.n)]
    for order in orders:
        steps = [exact_live(g, frozenset(order[:t])) + own[order[t]] for t in range(g.n)]
        rest = Fraction(0)
        for t in range(g.n, -1, -1):
            key = frozenset(order[:t])
            best[key] = min(best.get(key, rest), rest)
            if t > 0:
                rest = max(rest, steps[t - 1])
    return best


@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e12, "mixed"])
def test_a_free_move_never_makes_a_completion_worse(scale):
    """The free-move lemma of :mod:`heuristics.peak_memory.best_first`: if ``v`` is ready at
    ``S`` and ``I(S + v) <= I(S)``, moving ``v`` to the front of any completion of ``S``
    raises no later step, so ``max(step(S, v), best(S + v)) <= max(step(S, v), best(S))``."""
    rng = np.random.default_rng(11)
    checked = 0
    for it in range(40):
        g = random_dag(rng, int(rng.integers(2, 7)), p=float(rng.uniform(0.2, 0.6)), integral=it % 2 == 0)
        factor = 10.0 ** rng.uniform(-3, 12, g.n) if scale == "mixed" else np.full(g.n, scale)
        edges = list(zip(g.edge_src.tolist(), g.edge_dst.tolist()))
        g = Graph.from_arrays(g.work, g.size_param * factor, g.size_out * factor, edges)
        orders = list(topological_orders(g))
        best = best_rest(g, orders)
        for done in best:
            for v in range(g.n):
                if v in done or set(g.predecessors(v).tolist()) - done:
                    continue
                if exact_live(g, done | {v}) > exact_live(g, done):
                    continue
                step = exact_live(g, done) + Fraction(float(g.size_out[v])) + Fraction(float(g.size_param[v]))
                assert max(step, best[done | {v}]) <= max(step, best[done])
                checked += 1
    assert checked > 100


@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e12, "mixed"])
def test_a_free_pair_never_makes_a_completion_worse(scale):
    """The free-pair lemma (:func:`heuristics.peak_memory.best_first.pair_move`): ``v`` ready
    at ``S``, a consumer ``w`` of ``v`` ready at ``S + v``, ``I(S + v + w) <= min(I(S),
    I(S + v))``: moving ``v, w`` to the front of any completion raises no later step."""
    rng = np.random.default_rng(12)
    checked = 0
    for it in range(40):
        g = random_dag(rng, int(rng.integers(2, 7)), p=float(rng.uniform(0.3, 0.7)), integral=it % 2 == 0)
        factor = 10.0 ** rng.uniform(-3, 12, g.n) if scale == "mixed" else np.full(g.n, scale)
        edges = list(zip(g.edge_src.tolist(), g.edge_dst.tolist()))
        g = Graph.from_arrays(g.work, g.size_param * factor, g.size_out * factor, edges)
        best = best_rest(g, list(topological_orders(g)))
        own = [Fraction(float(g.size_out[v])) + Fraction(float(g.size_param[v])) for v in range(g.n)]
        for done in best:
            for v in range(g.n):
                if v in done or set(g.predecessors(v).tolist()) - done:
                    continue
                for w in g.successors(v).tolist():
                    if set(g.predecessors(w).tolist()) - done - {v}:
                        continue
                    after = exact_live(g, done | {v, w})
                    if after > exact_live(g, done) or after > exact_live(g, done | {v}):
                        continue
                    steps = max(exact_live(g, done) + own[v], exact_live(g, done | {v}) + own[w])
                    assert max(steps, best[done | {v, w}]) <= max(steps, best[done])
                    checked += 1
    assert checked > 50


@pytest.mark.parametrize(("free_moves", "backward"), [(True, False), (False, False), (True, True), (False, True)])
def test_search_in_both_directions_is_exact_at_every_scale(free_moves, backward):
    from tests.heuristics.peak_memory.test_mixed_scales import cases
    from tests.oracle import exact_peak, exact_peak_optimum

    for g in cases(44, 40):
        opt = exact_peak_optimum(g)
        for mb in (None, 1e-4, 2e-4):
            kw = {"free_moves": free_moves, "backward": backward}
            res = best_first_search(g, memory_mb=512 if mb is None else mb, **kw)
            assert Fraction(res.lower_bound) <= opt <= exact_peak(g, res.order)
            if res.optimal:
                assert exact_peak(g, res.order) <= opt * (1 + Fraction(1, 10**9))


def test_backward_search_equals_brute_force_and_interrupted_bounds_hold():
    for it, g in random_cases(7, 80, 7):
        opt = brute_force_peak(g)
        res = best_first_search(g, backward=True, upper_order=None if it % 2 else g.topological_order)
        assert res.optimal and abs(res.peak - opt) <= 1e-9 * max(1.0, opt)
        assert res.peak == peak_memory(g, res.order) and is_topological(g, res.order)
        assert res.lower_bound <= opt * (1 + 1e-12)
        small = best_first_search(g, memory_mb=1e-4, backward=True, static_bound=forced_live_memory(g))
        assert small.lower_bound <= opt + 1e-9 <= small.peak + 2e-9 and is_topological(g, small.order)


def test_backward_search_proves_a_layered_graph_with_a_late_peak():
    # the critical op has many more ancestors than descendants: forward, every set before
    # it keeps the root's key; backward, only the few sets after it do
    from mtpp.scheduling import _backward_first

    g = layered_graph(120, 3)
    assert _backward_first(g)
    back = best_first_search(g, backward=True, time_limit=60)
    assert back.optimal
    fwd = best_first_search(g, time_limit=60, memory_mb=float(back.memory_bytes) / 2**20)
    assert fwd.lower_bound <= back.peak <= fwd.peak


def naive_cut_live_before(g: Graph, v: int, later: frozenset[int]) -> float:
    """min over ideals S with anc(v) <= S, S cap (desc*(v) + later) = {} of I(S), plus v's
    own step: v's step memory when the ops ``later`` run after it."""
    h = g.to_networkx()
    anc = {g.index(a) for a in nx.ancestors(h, g.ids[v])}
    down = {g.index(a) for a in nx.descendants(h, g.ids[v])} | {v} | set(later)
    free = [u for u in range(g.n) if u not in anc and u not in down]
    best = np.inf
    for pick in itertools.product((0, 1), repeat=len(free)):
        s = anc | {u for u, x in zip(free, pick) if x}
        if any(set(g.predecessors(z).tolist()) - s for z in s):
            continue
        best = min(best, sum(g.size_out[u] for u in s if set(g.successors(u).tolist()) - s))
    return float(best + g.size_out[v] + g.size_param[v])


def test_backward_relative_bounds_stay_below_the_step_given_the_ops_run_last():
    """The backward search's ``h_v(T)``: ``F(v)`` plus the ancestors of ``v`` outside
    ``P(v)`` that feed ``T``, and ``B(v)`` plus their residuals, never exceed ``v``'s
    step over the ideals that leave ``T`` for later."""
    from mtpp.bounds.peak_cut import bits_to_bool
    from mtpp.bounds.peak_memory import ancestor_bits, needed_bits

    for _, g in random_cases(8, 30, 7):
        values, _, resid = cut_live_memory(g, every_op=True)
        forced = forced_live_memory(g)
        anc = ancestor_bits(g.topological_order, g.pred_ptr, g.pred_idx)
        reach = needed_bits(g.topological_order, g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx)
        q = bits_to_bool(anc & ~reach, g.n)
        for size in range(g.n):
            later = frozenset(g.topological_order[g.n - size :].tolist())
            feeds = {u for z in later for u in g.predecessors(z).tolist()}
            for v in set(range(g.n)) - later:
                us = [u for u in feeds if q[v, u]]
                truth = naive_cut_live_before(g, v, later)
                assert forced[v] + sum(g.size_out[u] for u in us) <= truth + 1e-9
                assert values[v] + sum(resid[v, u] for u in us) <= truth + 1e-9


def test_precomputed_cut_values_and_residuals_give_the_same_search():
    for _, g in random_cases(9, 30, 8):
        static, _, resid = cut_live_memory(g, every_op=True)
        for backward in (False, True):
            own = best_first_search(g, backward=backward)
            given = best_first_search(g, backward=backward, static_bound=static, residuals=resid)
            assert (own.peak, own.lower_bound, own.expanded) == (given.peak, given.lower_bound, given.expanded)
