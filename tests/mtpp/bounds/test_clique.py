import itertools
import math
from dataclasses import replace
from fractions import Fraction

import numpy as np

import mtpp
from mtpp import Graph, Problem
from mtpp.bounds.clique import clique_lower_bounds, disperse
from mtpp.bounds.cut import cut_lower_bound
from tests.mtpp.bounds.test_cut import random_problem
from tests.oracle import exact_optimum, mixed_scale_problem, naive_block_cost, rational_optimum


def hull_cost_reference(problem, u, v):
    """``min f(S)`` over every S holding the hull of ``u`` and ``v`` (brute force, float),
    without overflow, plus the larger own overflow of the hull: what c(u, v) bounds."""
    g = problem.graph
    free = Problem(g, problem.k, bandwidth=problem.bandwidth)
    desc = [set(nx_desc) | {x} for x, nx_desc in enumerate(_descendants(g))]
    if v in desc[u]:
        hull = {x for x in desc[u] if v in desc[x]}
    elif u in desc[v]:
        hull = {x for x in desc[v] if u in desc[x]}
    else:
        hull = {u, v}
    others = [x for x in range(g.n) if x not in hull]
    cheapest = min(
        naive_block_cost(free, hull | set(c)) for r in range(len(others) + 1) for c in itertools.combinations(others, r)
    )
    own = max(max(float(g.size_param[x]) - problem.param_budget, 0.0) for x in hull) / problem.bandwidth
    return cheapest + own


def _descendants(g):
    import networkx as nx

    nxg = g.to_networkx()
    return [{g.index(y) for y in nx.descendants(nxg, g.ids[x])} for x in range(g.n)]


def test_clique_bound_never_exceeds_the_exact_optimum_at_any_k():
    rng = np.random.default_rng(2311)
    above_simple = 0
    for trial in range(150):
        problem = random_problem(rng, 5 if trial % 3 == 0 else 6, peak_aware=trial % 3 == 0)
        ks = list(range(1, problem.graph.n + 1))
        res = clique_lower_bounds(problem, ks)
        assert res.complete
        for k, bound in res.bounds.items():
            at_k = replace(problem, k=k)
            assert Fraction(bound) <= rational_optimum(at_k), (k, bound)
            assert len(set(res.cliques[k].tolist())) == k + 1
            above_simple += bound > max(mtpp.simple_lower_bound(at_k), cut_lower_bound(at_k)[0]) * (1 + 1e-9)
    assert above_simple > 10  # the bound adds something over Lemma 3.3 and the cut bound


def test_mixed_scales_and_non_unit_bandwidth():
    rng = np.random.default_rng(2312)
    for trial in range(60):
        problem = mixed_scale_problem(rng, trial, p=0.4)
        res = clique_lower_bounds(problem, [1, 2, 3])
        for k, bound in res.bounds.items():
            assert Fraction(bound) <= exact_optimum(replace(problem, k=k))


def test_pair_costs_are_the_hull_minima_from_below():
    rng = np.random.default_rng(2313)
    for _ in range(25):
        problem = random_problem(rng, 5)
        n = problem.graph.n
        if n < 2:
            continue
        res = clique_lower_bounds(problem, [1])
        u, v = (int(x) for x in res.cliques[1])
        ref = hull_cost_reference(problem, u, v)
        assert res.bounds[1] <= ref * (1 + 1e-12) + 1e-12
        assert math.isclose(res.bounds[1], ref, rel_tol=1e-8, abs_tol=1e-9)


def test_three_independent_ops_cannot_share_two_blocks_for_free():
    # no edges, work 1 each: with k = 2 two ops share a block (OPT 2); Lemma 3.3 gives 1.5, the cut bound 1
    g = Graph.from_arrays([1.0, 1.0, 1.0], [0, 0, 0], [0, 0, 0], [])
    res = clique_lower_bounds(Problem(g, 2), [2])
    assert res.bounds[2] == 2.0
    assert mtpp.simple_lower_bound(Problem(g, 2)) <= 1.5


def test_a_path_is_cut_into_runs():
    # a -> b -> c -> d, work 5 each, unit tensors: four ops in three blocks, so some block holds
    # two neighbours: {a, b} or {c, d} costs 10 + 1, {b, c} 10 + 2; the cut bound sees one op (7)
    g = Graph.from_arrays([5.0] * 4, [0] * 4, [1.0, 1.0, 1.0, 0.0], [(0, 1), (1, 2), (2, 3)])
    problem = Problem(g, 3)
    res = clique_lower_bounds(problem, [3])
    assert res.bounds[3] == 11.0 == float(exact_optimum(problem))
    assert cut_lower_bound(problem)[0] == 7.0


def test_time_limit_leaves_a_valid_partial_bound():
    g = mtpp.layered_graph(200, seed=91)
    full = clique_lower_bounds(Problem(g, 2), [2, 4, 8])
    none = clique_lower_bounds(Problem(g, 2), [2, 4, 8], time_limit=0.0)
    assert full.complete and not none.complete and none.pairs == 0
    assert none.bounds == {}  # no pair computed: no conflict, no bound
    some = clique_lower_bounds(Problem(g, 2), [2, 4, 8], time_limit=0.2)
    for k, bound in some.bounds.items():
        assert bound <= full.bounds[k] * (1 + 1e-12) or some.pairs < full.pairs


def test_dispersion_returns_sets_whose_cheapest_pair_is_the_bound():
    rng = np.random.default_rng(5)
    costs = rng.random((12, 12))
    costs = np.triu(costs, 1) + np.triu(costs, 1).T
    found = disperse(costs, [1, 2, 3, 5])
    for k, (value, members) in found.items():
        assert len(members) == k + 1
        assert value == min(costs[a, b] for a, b in itertools.combinations(members.tolist(), 2))
        best = max(
            min(costs[a, b] for a, b in itertools.combinations(s, 2)) for s in itertools.combinations(range(12), k + 1)
        )
        assert value <= best
    assert found[1][0] == costs.max()  # the dearest pair is found from its own start


def test_certify_reports_the_clique_bound():
    g = mtpp.layered_graph(250, seed=8101)
    certs = mtpp.certify(g, k=[2, 4], bounds="simple,cut,clique", orderer="kahn", time_limit=30)
    for cert in certs:
        rec = cert.bound("clique")
        assert rec is not None and rec.status in ("optimal", "time_limit", "skipped")
        if rec.bound is not None:
            assert rec.bound <= cert.upper_bound
    four = certs[1]
    assert four.bound("clique").bound > max(four.bound("simple").bound, four.bound("cut").bound)
