"""The crossing bound (mtpp/bounds/crossing.py): never above the exact optimum, at any k,
scale, bandwidth or memory; what it adds; its time limit; its place in certify."""

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
from scipy.optimize import linprog

import mtpp
from mtpp import Graph, Problem
from mtpp.bounds.crossing import clique_counts, crossing_lower_bounds, least_cover_below
from mtpp.bounds.cut import cut_lower_bound
from tests.mtpp.bounds.test_cut import random_problem
from tests.oracle import exact_optimum, mixed_scale_problem, rational_optimum


def test_crossing_bound_never_exceeds_the_exact_optimum_at_any_k():
    rng = np.random.default_rng(2321)
    above = 0
    for trial in range(150):
        problem = random_problem(rng, 5 if trial % 3 == 0 else 6, peak_aware=trial % 3 == 0)
        ks = list(range(1, problem.graph.n + 1))
        res = crossing_lower_bounds(problem, ks)
        assert res.complete
        for k, bound in res.bounds.items():
            at_k = replace(problem, k=k)
            assert Fraction(bound) <= rational_optimum(at_k), (k, bound)
            above += bound > max(mtpp.simple_lower_bound(at_k), cut_lower_bound(at_k)[0]) * (1 + 1e-9)
    assert above > 10  # the bound adds something over Lemma 3.3 and the cut bound


def test_mixed_scales_and_non_unit_bandwidth():
    rng = np.random.default_rng(2322)
    for trial in range(80):
        problem = mixed_scale_problem(rng, trial)
        for k, bound in crossing_lower_bounds(problem, [1, 2, 3]).bounds.items():
            assert Fraction(bound) <= exact_optimum(replace(problem, k=k))


def test_a_fan_out_must_cross_and_is_counted_twice():
    # s (no work) sends one unit tensor to four ops of work 10: at k = 2 no block under 40 holds
    # the whole net, so the tensor leaves s's block and enters another: 2 T >= 40 + 2, OPT 21
    # ({s, c1, c2} and {c3, c4}); Lemma 3.3 gives 20 and the cut bound 11
    g = Graph.from_arrays([0.0] + [10.0] * 4, [0.0] * 5, [1.0] + [0.0] * 4, [(0, i) for i in range(1, 5)])
    problem = Problem(g, 2)
    bound = crossing_lower_bounds(problem, [2]).bounds[2]
    assert bound <= 21.0 == float(exact_optimum(problem)) and math.isclose(bound, 21.0, rel_tol=1e-14)
    assert mtpp.simple_lower_bound(problem) <= 20.0 and cut_lower_bound(problem)[0] <= 11.0


def test_members_that_pairwise_conflict_count_once_per_block():
    # s (no work) sends one unit tensor to three ops of work 10, k = 3: OPT 11 ({s, c1}, {c2}, {c3}).
    # The net alone says the tensor crosses: (30 + 2) / 3; two consumers together cost 21 > 11,
    # so the three consumers meet three blocks and the tensor counts three times: (30 + 3) / 3
    g = Graph.from_arrays([0.0] + [10.0] * 3, [0.0] * 4, [1.0] + [0.0] * 3, [(0, i) for i in range(1, 4)])
    problem = Problem(g, 3)
    assert float(exact_optimum(problem)) == 11.0
    nets_only = crossing_lower_bounds(problem, [3], max_members=1)
    with_pairs = crossing_lower_bounds(problem, [3])
    assert nets_only.paired == with_pairs.paired == with_pairs.total_nets == 1
    assert math.isclose(nets_only.bounds[3], 32 / 3, rel_tol=1e-14) and nets_only.bounds[3] <= 32 / 3
    assert math.isclose(with_pairs.bounds[3], 11.0, rel_tol=1e-14) and with_pairs.bounds[3] <= 11.0


def test_pairs_of_nets_never_exceed_the_optimum_and_lift_the_bound():
    # two nets that share an op and both stay inside blocks share the block: the pairs whose
    # union cannot fit lift the bound (module docstring, "Pairs of nets"), never above OPT
    rng = np.random.default_rng(2323)
    lifted = 0
    for trial in range(150):
        problem = random_problem(rng, 6, peak_aware=trial % 4 == 0)
        ks = list(range(2, problem.graph.n))
        without = crossing_lower_bounds(problem, ks, net_pairs=False)
        with_pairs = crossing_lower_bounds(problem, ks)
        assert with_pairs.complete and without.net_pairs == 0
        for k in ks:
            assert Fraction(with_pairs.bounds[k]) <= rational_optimum(replace(problem, k=k)), (trial, k)
            assert with_pairs.bounds[k] >= without.bounds[k]
        lifted += any(with_pairs.bounds[k] > without.bounds[k] * (1 + 1e-9) for k in ks)
    assert lifted > 3


def test_on_a_layered_graph_overlapping_nets_that_cannot_share_a_block_lift_the_bound():
    g = mtpp.layered_graph(120, seed=8131)
    without = crossing_lower_bounds(Problem(g, 2), [4, 8], net_pairs=False)
    with_pairs = crossing_lower_bounds(Problem(g, 2), [4, 8])
    assert with_pairs.net_pairs == with_pairs.total_net_pairs > 100
    assert with_pairs.bounds[4] > 1.05 * without.bounds[4]
    assert with_pairs.bounds[8] >= without.bounds[8]


def test_least_cover_is_the_vertex_cover_lp_from_below():
    # on a path of four unit nets the greedy dual that took the middle edge first gave 1 (it
    # used up both middle nets); the least fractional cover is 2 ({1, 2}, or x = 1/2 each)
    a, b = np.array([1, 0, 2]), np.array([2, 1, 3])
    assert least_cover_below(np.ones(4), a, b) == 2.0
    assert least_cover_below(np.ones(3), np.array([0, 1, 2]), np.array([1, 2, 0])) == 1.5  # odd cycle: 1/2 each
    rng = np.random.default_rng(2324)
    for trial in range(60):
        n = int(rng.integers(2, 9))
        edges = np.array([(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.4], dtype=np.int64)
        if not edges.size:
            continue
        scale = 10.0 ** rng.uniform(-3, 12)
        weights = rng.random(n) * scale * (rng.random(n) < 0.85)  # some nets already crossed: weight 0
        rows = np.zeros((edges.shape[0], n))
        rows[np.arange(edges.shape[0]), edges[:, 0]] = rows[np.arange(edges.shape[0]), edges[:, 1]] = -1.0
        lp = linprog(weights / scale, A_ub=rows, b_ub=-np.ones(edges.shape[0]), bounds=(0, None), method="highs")
        cover = least_cover_below(weights, edges[:, 0], edges[:, 1])
        assert cover <= lp.fun * scale * (1 + 1e-9) + 1e-300, trial
        assert math.isclose(cover, lp.fun * scale, rel_tol=1e-7, abs_tol=1e-12 * scale), trial


def test_clique_counts_fall_as_the_threshold_rises():
    pairs = np.array([[0.0, 5.0, 9.0], [5.0, 0.0, 7.0], [9.0, 7.0, 0.0]])
    values = np.array([5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    # b <= 5: all three conflict; up to 7: 0-2 and 1-2; up to 9: 0-2; the net (cost 8) crosses up to 8
    assert clique_counts(8.0, pairs, values).tolist() == [3, 2, 2, 2, 2, 0]


def test_time_limit_leaves_a_valid_partial_bound():
    g = mtpp.layered_graph(200, seed=92)
    full = crossing_lower_bounds(Problem(g, 2), [2, 4, 8])
    none = crossing_lower_bounds(Problem(g, 2), [2, 4, 8], time_limit=0.0)
    assert full.complete and not none.complete and none.nets == none.paired == none.net_pairs == 0
    for k in (2, 4, 8):  # no net cut: Lemma 3.3's work(V) / k, lowered by its rounding
        simple = float(g.work.sum()) / k
        assert none.bounds[k] <= simple and math.isclose(none.bounds[k], simple, rel_tol=1e-12)
        assert none.bounds[k] < full.bounds[k]


def test_certify_reports_the_crossing_bound():
    g = mtpp.layered_graph(250, seed=8102)
    certs = mtpp.certify(g, k=[2, 4, 8], bounds="simple,cut,crossing", orderer="kahn", time_limit=30)
    for cert in certs:
        rec = cert.bound("crossing")
        assert rec is not None and rec.status == "optimal" and rec.bound is not None
        assert rec.bound <= cert.upper_bound
    eight = certs[2]
    assert eight.bound("crossing").bound > max(eight.bound("simple").bound, eight.bound("cut").bound)
