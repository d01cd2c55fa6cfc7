"""The crossing bound (mtpp/crossing_bound.py): never above the exact optimum, at any k,
scale, bandwidth or memory; what it adds; its time limit; its place in certify."""

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np

import mtpp
from mtpp import Graph, Problem
from mtpp.crossing_bound import crossing_lower_bounds, net_costs
from mtpp.cut_bound import cut_lower_bound
from tests.mtpp.test_clique_bound import optimum
from tests.mtpp.test_cut_bound import random_problem
from tests.oracle import exact_optimum, random_dag


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
            assert Fraction(bound) <= optimum(at_k), (k, bound)
            above += bound > max(mtpp.simple_lower_bound(at_k), cut_lower_bound(at_k)[0]) * (1 + 1e-9)
    assert above > 10  # the bound adds something over Lemma 3.3 and the cut bound


def test_mixed_scales_and_non_unit_bandwidth():
    rng = np.random.default_rng(2322)
    for trial in range(80):
        n = int(rng.integers(2, 7))
        g = random_dag(rng, n, p=0.5, integral=False)
        scales = 10.0 ** rng.integers(-3, 13, size=(3, n))
        g = Graph.from_arrays(g.work * scales[0], g.size_param * scales[1], g.size_out * scales[2], g.edges())
        memory = math.inf if trial % 2 else float(np.median(g.size_param)) * 1.5
        problem = Problem(g, 2, bandwidth=float(rng.choice([0.3, 1.0, 7.0])), memory=memory)
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


def test_net_costs_are_the_cheapest_blocks_holding_each_net():
    # a -> b -> c and a -> c: a's net {a, c} has hull {a, b, c}; b's net {b, c}
    g = Graph.from_arrays([1.0, 2.0, 4.0], [0.0] * 3, [8.0, 16.0, 0.0], [(0, 1), (1, 2), (0, 2)])
    c, o, done, total = net_costs(Problem(g, 2))
    assert (done, total) == (2, 2)
    assert c.tolist() == [7.0, 7.0, 0.0]  # {b, c} alone would read a's tensor: {a, b, c} is cheaper
    assert o.tolist() == [8.0, 16.0, 0.0]


def test_time_limit_leaves_a_valid_partial_bound():
    g = mtpp.layered_graph(200, seed=92)
    full = crossing_lower_bounds(Problem(g, 2), [2, 4, 8])
    none = crossing_lower_bounds(Problem(g, 2), [2, 4, 8], time_limit=0.0)
    assert full.complete and not none.complete and none.nets == 0
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
