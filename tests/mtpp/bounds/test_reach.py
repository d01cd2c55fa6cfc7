"""The reach bound (mtpp/bounds/reach.py): never above the exact optimum, at any k, scale,
bandwidth or memory; exact on a chain; what it adds; its time limit; its place in certify."""

import itertools
import math
from dataclasses import replace
from fractions import Fraction

import numpy as np

import mtpp
from mtpp import Graph, Problem
from mtpp.bounds.clique import clique_lower_bounds
from mtpp.bounds.crossing import crossing_lower_bounds
from mtpp.bounds.cut import cut_lower_bound
from mtpp.bounds.hull_cuts import HullCuts, contract_banned, hull_cut
from mtpp.bounds.reach import RTOL, _Sweeps, _window, reach_lower_bound
from mtpp.partitioner import partition
from tests.mtpp.bounds.test_cut import random_problem
from tests.oracle import exact_optimum, mixed_scale_problem, naive_block_cost, rational_optimum


def _check_at_every_k(problem: Problem, opt_of) -> tuple[int, int]:
    """The bound, and the sweeps with and without shaving at the optimum, at every k; how
    many ks the bound beat the other combinatorial bounds at, and at how many shaving
    refuted ``(1 - 1e-3) OPT`` where the sweeps alone did not."""
    above = shaved = 0
    for k in range(1, problem.graph.n + 1):
        at_k = replace(problem, k=k)
        opt = opt_of(at_k)
        upper = partition(at_k, orderer="kahn").bottleneck  # a real partition's cost, as certify passes
        res = reach_lower_bound(at_k, 0.0, upper)
        assert res.complete
        at_opt = float(opt) if Fraction(float(opt)) >= opt else float(np.nextafter(float(opt), math.inf))
        sweeps = _Sweeps(at_k, math.inf)
        assert not sweeps.refutes(at_opt, k) and not sweeps.shaves(at_opt, k), (k, at_opt)
        below = float(opt) * (1 - 1e-3)
        alone, shaving = sweeps.refutes(below, k), sweeps.shaves(below, k)
        assert shaving or not alone  # shaving starts from the sweeps' sets
        shaved += shaving and not alone
        if res.bound is not None:
            assert Fraction(res.bound) <= opt, (k, res.bound, float(opt))
            more = reach_lower_bound(at_k, res.bound, upper, sweeps_first=False)  # shaving alone, as certify
            assert more.tried == more.shaved and (more.bound is None or res.bound < more.bound <= opt)
            others = max(
                mtpp.simple_lower_bound(at_k),
                cut_lower_bound(at_k)[0],
                crossing_lower_bounds(at_k, [k]).bounds[k],
                clique_lower_bounds(at_k, [k]).bounds.get(k, 0.0),
            )
            above += res.bound > others * (1 + 1e-9)
    return above, shaved


def test_reach_bound_never_exceeds_the_exact_optimum_at_any_k():
    rng = np.random.default_rng(2351)
    above = shaved = 0
    for trial in range(120):
        problem = random_problem(rng, 5 if trial % 3 == 0 else 6, peak_aware=trial % 3 == 0)
        counts = _check_at_every_k(problem, rational_optimum)
        above, shaved = above + counts[0], shaved + counts[1]
    assert above >= 3  # the bound adds something over the other combinatorial bounds (5 of these tiny cases)
    assert shaved >= 3  # and shaving over the sweeps alone


def test_shaving_finds_the_window_that_trying_every_block_finds():
    """Shaving tries blocks from each end of an op's window until one stands; the window
    it keeps is the first and last block that trying every block leaves."""
    rng = np.random.default_rng(2353)
    tried = shrunk = 0
    for _ in range(60):
        problem = random_problem(rng, 8)
        n = problem.graph.n
        for k in (2, 3, 4):
            at_k = replace(problem, k=min(k, n))
            upper = partition(at_k, orderer="kahn").bottleneck
            sweeps = _Sweeps(at_k, math.inf)
            for threshold in (0.7 * upper, 0.85 * upper, upper):
                sets = sweeps.fixpoint(threshold, at_k.k, *sweeps._start(at_k.k))
                if sets is None:
                    continue
                up, down = sets
                for v in range(n):
                    first = int(np.argmax([u[v] for u in up]))
                    last = at_k.k + 1 - int(np.argmax([d[v] for d in down]))
                    every = [
                        t
                        for t in range(first, last + 1)
                        if sweeps.fixpoint(threshold, at_k.k, *_window(v, t, t, at_k.k, up, down)) is not None
                    ]
                    ends = sweeps._ends(threshold, at_k.k, v, first, last, up, down)
                    assert ends == ((every[0], every[-1]) if every else None)
                    tried += first < last
                    shrunk += every != list(range(first, last + 1))
    assert tried >= 100 and shrunk >= 10  # windows to shave, and blocks refuted in them


def test_shaving_that_stands_leaves_every_window_standing_at_both_ends():
    """Shaving repeats its passes until one shrinks no window: where it stands, forcing any op
    into either end of its window leaves sets that stand.  One pass left two ends here that
    the sweeps refute (an op tried early met wider sets than the pass left)."""
    k = 6
    problem = Problem(mtpp.layered_graph(90, seed=2365), k=k)
    upper = partition(problem, orderer="kahn").bottleneck
    lower = crossing_lower_bounds(problem, [k]).bounds[k]
    bound = reach_lower_bound(problem, lower, upper, sweeps_first=False).bound
    assert bound is not None
    threshold = 1.002 * bound
    sweeps = _Sweeps(problem, math.inf)
    assert not sweeps.shaves(threshold, k)
    up, down = sweeps.stood[k][1]
    windows = 0
    for v in range(problem.graph.n):
        first = int(np.argmax([u[v] for u in up]))
        last = k + 1 - int(np.argmax([d[v] for d in down]))
        windows += first < last
        for t in {first, last}:
            assert sweeps.fixpoint(threshold, k, *_window(v, t, t, k, up, down)) is not None, (v, t)
    assert windows >= 10  # windows left to check


def test_shaving_below_a_threshold_that_stood_starts_from_its_sets_and_never_refutes_the_optimum():
    # thresholds from the partition's cost down past the optimum on one _Sweeps, as the bisection
    # tests them: each pass below one that stood starts from the sets that pass left
    rng = np.random.default_rng(2358)
    reused = refuted_below = spared = 0
    for trial in range(60):
        problem = random_problem(rng, 6, peak_aware=trial % 4 == 0)
        for k in range(2, problem.graph.n + 1):
            at_k = replace(problem, k=k)
            opt = rational_optimum(at_k)
            at_opt = float(opt) if Fraction(float(opt)) >= opt else float(np.nextafter(float(opt), math.inf))
            upper = partition(at_k, orderer="kahn").bottleneck
            sweeps = _Sweeps(at_k, math.inf)
            for threshold in (upper, 0.5 * (upper + at_opt), at_opt):
                assert not sweeps.shaves(threshold, k), (k, threshold, float(opt))
            reused += sweeps.stood[k][0] == at_opt < upper
            refuted_below += sweeps.shaves(float(opt) * (1 - 1e-3), k)
            spared += int(sweeps.refusals.spared[0])  # refusals kept at a higher threshold, or this one
    assert reused > 20 and refuted_below > 20 and spared > 20


def test_kept_refusals_spare_cuts_and_the_bound_is_the_one_without_them(monkeypatch):
    problem = Problem(mtpp.layered_graph(90, seed=2361), k=6)
    upper = partition(problem, orderer="kahn").bottleneck
    lower = max(crossing_lower_bounds(problem, [6]).bounds[6], cut_lower_bound(problem)[0])
    with_them = reach_lower_bound(problem, lower, upper, sweeps_first=False, stood={})
    monkeypatch.setattr("mtpp.bounds.reach_sweeps.REFUSAL_SLOTS", 0)
    without = reach_lower_bound(problem, lower, upper, sweeps_first=False, stood={})
    assert with_them.bound is not None and with_them.bound > lower
    assert with_them.bound == without.bound and with_them.tried == without.tried
    assert with_them.spared > 0 and without.spared == 0  # the same answers with fewer cuts


def test_mixed_scales_and_non_unit_bandwidth():
    rng = np.random.default_rng(2352)
    for trial in range(60):
        problem = mixed_scale_problem(rng, trial)
        _check_at_every_k(problem, exact_optimum)


def test_a_hull_cut_with_banned_ops_is_at_most_the_cheapest_block_without_them():
    # the sweeps' minimum cut over the sets that hold H and none of the banned ops: brute force
    # over every such set (without overflow, plus the largest own overflow in H, as the cut bound)
    rng = np.random.default_rng(2356)
    lifted = 0
    for _ in range(150):
        problem = random_problem(rng, 6)
        g = problem.graph
        free = Problem(g, 1, bandwidth=problem.bandwidth)
        cut = HullCuts(problem)
        hull = np.flatnonzero(rng.random(g.n) < 0.4)
        rest = np.setdiff1d(np.arange(g.n), hull)
        banned = rest[rng.random(rest.size) < 0.5]
        if hull.size == 0:
            continue
        own = max(max(float(g.size_param[v]) - problem.param_budget, 0.0) / problem.bandwidth for v in hull)
        others = [x for x in range(g.n) if x not in hull and x not in banned]
        cheapest = min(
            naive_block_cost(free, set(hull) | set(extra))
            for r in range(len(others) + 1)
            for extra in itertools.combinations(others, r)
        )
        value = cut(hull, banned)
        assert Fraction(value) <= Fraction(cheapest) + Fraction(own), (value, cheapest, own)
        assert math.isclose(value, cheapest + own, rel_tol=1e-9, abs_tol=1e-12)  # and the cut is tight
        lifted += value > cut(hull) * (1 + 1e-9)
    assert lifted > 10  # banning ops raises the minimum


def test_merging_the_banned_ops_into_the_sink_keeps_the_minimum_cut():
    # the sweeps cut on the network with the banned ops merged into its sink (contract_banned):
    # the same minimum as tying them to the sink, and a source side that holds the hull and no
    # banned op, on graphs large enough to merge whole nets
    rng = np.random.default_rng(2361)
    for trial in range(80):
        problem = random_problem(rng, int(rng.integers(4, 40)))
        g, cut = problem.graph, HullCuts(problem)
        hull = np.flatnonzero(rng.random(g.n) < 0.2)[:4]
        rest = np.setdiff1d(np.arange(g.n), hull)
        banned = rest[rng.random(rest.size) < rng.uniform(0.2, 0.9)]
        if hull.size == 0 or banned.size == 0:
            continue
        ptr, head = np.empty_like(cut.ptr), np.empty_like(cut.head)
        rev, cap = np.empty_like(cut.rev), np.empty_like(cut.cap)
        tie, ops = np.empty_like(cut.tie), np.empty_like(cut.tie)
        nodes, arcs, source, sink, kept = contract_banned(
            cut.ptr, cut.head, cut.rev, cut.cap, cut.tie, cut.source, cut.sink, banned, ptr, head, rev, cap, tie, ops
        )  # fmt: skip
        assert sorted(ops[:kept]) == sorted(set(range(g.n)) - set(banned.tolist()))
        assert arcs < cut.head.size and (tie[banned] == -1).all()
        level = np.empty(nodes, dtype=np.int64)
        value = hull_cut(
            ptr[: nodes + 1], head[:arcs], rev[:arcs], cap[:arcs], tie, cut.ban, source, sink,
            cut.upper_banned, cut.upper_banned, cut.own, level, hull, np.empty(0, dtype=np.int64), np.inf,
        )  # fmt: skip
        assert math.isclose(value, cut(hull, banned), rel_tol=1e-9, abs_tol=1e-12), trial
        side = set(ops[np.flatnonzero(level[:kept] >= 0)].tolist())
        assert set(hull.tolist()) <= side and not side & set(banned.tolist())


def test_exact_on_a_chain_of_heavy_ops():
    # a path whose tensors are cheap next to its work: no block is cheaper for holding more,
    # so the forward sweep is the greedy min-max segmentation and the bound meets the optimum
    rng = np.random.default_rng(2353)
    n = 9
    work = rng.integers(5, 40, n).astype(float)
    g = Graph.from_arrays(work, [0.0] * n, [1.0] * n, [(i, i + 1) for i in range(n - 1)])
    for k in (2, 3, 4):
        problem = Problem(g, k)
        opt = float(exact_optimum(problem))
        upper = partition(problem, orderer="kahn").bottleneck
        res = reach_lower_bound(problem, 0.0, upper)
        assert res.bound is not None and res.bound < opt and res.bound >= opt * (1 - 2 * RTOL)
        # a target just below the partition's cost, tried after the bisection, proves it optimal
        target = upper * (1 - 1e-9)
        assert reach_lower_bound(problem, 0.0, upper, target=target).bound == target < opt


def test_time_limit_keeps_what_it_proved():
    problem = Problem(mtpp.layered_graph(150, seed=2354), 8)
    upper = partition(problem, orderer="kahn").bottleneck
    reach_lower_bound(problem, 0.0, upper, shave=False)  # compiles the kernels outside the limits below
    none = reach_lower_bound(problem, 0.0, upper, time_limit=0.0)
    assert none.bound is None and not none.complete and none.tried == 0
    some = reach_lower_bound(problem, 0.0, upper, time_limit=3.0)  # the sweeps' bisection takes 0.3 s
    assert some.bound is not None and some.tried > 0


def test_certify_reports_the_reach_bound():
    g = mtpp.layered_graph(200, seed=2355)
    certs = mtpp.certify(g, k=[4, 8], bounds="simple,cut,crossing,clique,reach", orderer="kahn", time_limit=10)
    for cert in certs:
        rec = cert.bound("reach")
        assert rec is not None and rec.bound is not None and rec.bound <= cert.upper_bound
        others = max(cert.bound(m).bound or 0.0 for m in ("simple", "cut", "crossing", "clique") if cert.bound(m))
        assert rec.bound > others  # on wide layered graphs at small k the reach bound leads
        assert cert.lower_bound == rec.bound and cert.lower_bound_method.startswith("reach")
        assert ", 0 with shaving" in rec.message  # no budget: the sweeps' bisection only


def test_with_a_budget_certify_shaves_where_the_sweeps_lead():
    g = mtpp.layered_graph(150, seed=9505)
    bounds = "simple,cut,crossing,reach"
    plain = mtpp.certify(g, k=8, bounds=bounds, orderer="kahn")
    shaved = mtpp.certify(g, k=8, bounds=bounds, orderer="kahn", budget=30, fill_budget=False)
    assert plain.bound("reach").bound > plain.bound("crossing").bound  # the sweeps lead here
    assert ", 0 with shaving" not in shaved.bound("reach").message
    assert shaved.bound("reach").bound > plain.bound("reach").bound


def test_a_spent_time_limit_or_a_costly_set_up_starts_nothing(monkeypatch):
    """Issue 76: with its time spent, or where building the sweeps' network would take longer
    than it has (10^6-op chain: seconds before any deadline could be looked at), the bound
    builds nothing and tests nothing."""
    import mtpp.bounds.reach as reach

    problem = Problem(mtpp.layered_graph(150, seed=2354), 8)
    upper = partition(problem, orderer="kahn").bottleneck

    def refused(*args, **kwargs):
        raise AssertionError("the sweeps were built")

    monkeypatch.setattr(reach, "_Sweeps", refused)
    for limit in (0.0, -1.0):
        res = reach_lower_bound(problem, 0.0, upper, time_limit=limit)
        assert res.bound is None and res.tried == 0 and not res.complete
    monkeypatch.setattr(reach, "SETUP_SECONDS_PER_ELEMENT", 1.0)  # 150 ops: an estimate of minutes
    res = reach_lower_bound(problem, 0.0, upper, time_limit=3.0)
    assert res.bound is None and res.tried == 0 and not res.complete


def test_a_set_up_that_ends_past_the_deadline_tests_no_threshold(monkeypatch):
    import time

    import mtpp.bounds.reach as reach

    problem = Problem(mtpp.layered_graph(150, seed=2354), 8)
    upper = partition(problem, orderer="kahn").bottleneck
    tested = []

    class Slow(_Sweeps):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            time.sleep(0.3)  # the set-up outlasts the 0.1 s the bound has

        def refutes(self, threshold, k):
            tested.append(threshold)
            return super().refutes(threshold, k)

    monkeypatch.setattr(reach, "_Sweeps", Slow)
    res = reach_lower_bound(problem, 0.0, upper, time_limit=0.1)
    assert res.bound is None and res.tried == 0 and not res.complete and tested == []
