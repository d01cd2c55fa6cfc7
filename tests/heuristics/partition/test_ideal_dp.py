import math
import time

import numpy as np

import heuristics.partition.ideal_dp as dp_module
from heuristics.kahn import kahn_order
from heuristics.partition.ideal_dp import ideal_dp, ideal_dp_all
from heuristics.partition.ideals import enumerate_ideals, widest_level
from heuristics.partition.slicegraph import slice_order
from mtpp import Graph, Problem, evaluate
from tests.oracle import brute_force_optimum, exact_optimum, ideals, naive_block_cost, random_dag


def random_problem(rng, n_max, k):
    n = int(rng.integers(1, n_max + 1))
    g = random_dag(rng, n, p=float(rng.random()), integral=bool(rng.integers(2)))
    memory = math.inf if rng.random() < 0.4 else float(rng.integers(1, 20))
    reserve = 0.0 if math.isinf(memory) else float(rng.integers(0, int(memory) + 1))
    return Problem(g, k, bandwidth=float(rng.choice([0.5, 1.0, 3.0])), memory=memory, reserve=reserve)


def test_lattice_holds_every_ideal_once_with_its_weights():
    rng = np.random.default_rng(20)
    for _ in range(60):
        g = random_problem(rng, 8, 1).graph
        lattice = enumerate_ideals(g)
        found = [frozenset(lattice.members(s).tolist()) for s in range(lattice.count)]
        assert sorted(found, key=sorted) == sorted(ideals(g), key=sorted)
        assert found[0] == frozenset() and found[-1] == frozenset(range(g.n))
        for s, ideal in enumerate(found):
            leaving = [u for u in ideal if set(g.successors(u).tolist()) - ideal]
            assert math.isclose(lattice.work[s], sum(g.work[v] for v in ideal), abs_tol=1e-9)
            assert math.isclose(lattice.boundary[s], sum(g.size_out[u] for u in leaving), abs_tol=1e-9)
            for e in range(lattice.cover_ptr[s], lattice.cover_ptr[s + 1]):
                assert found[lattice.cover_to[e]] == ideal | {int(lattice.cover_node[e])}
                assert lattice.cover_to[e] > s


def test_dp_equals_brute_force_for_every_k():
    rng = np.random.default_rng(21)
    for trial in range(120):
        k = 1 + trial % 4
        problem = random_problem(rng, 6 if k < 4 else 5, k)
        opt, _ = brute_force_optimum(problem)
        result = ideal_dp(problem)
        assert result.status == "optimal"
        assert math.isclose(result.value, opt, rel_tol=1e-9, abs_tol=1e-9)
        assert math.isclose(evaluate(problem, result.assignment).bottleneck, opt, rel_tol=1e-9, abs_tol=1e-9)


def test_pruning_by_known_bounds_keeps_the_optimum():
    rng = np.random.default_rng(22)
    for trial in range(80):
        problem = random_problem(rng, 6, 2 + trial % 2)
        opt, _ = brute_force_optimum(problem)
        at_lb = ideal_dp(problem, lower_bound=opt, upper_bound=opt * 2 + 1)
        assert at_lb.status in ("bound_reached", "optimal")
        assert math.isclose(evaluate(problem, at_lb.assignment).bottleneck, opt, rel_tol=1e-9, abs_tol=1e-9)
        at_ub = ideal_dp(problem, upper_bound=opt, lower_bound=opt / 2)
        assert at_ub.status in ("optimal", "no_improvement")
        if at_ub.assignment is not None:
            assert math.isclose(evaluate(problem, at_ub.assignment).bottleneck, opt, rel_tol=1e-9, abs_tol=1e-9)


def test_dp_is_never_worse_than_slicing_any_order():
    rng = np.random.default_rng(23)
    for _ in range(15):
        g = random_dag(rng, 24, p=0.3)
        problem = Problem(g, int(rng.integers(2, 6)), bandwidth=2.0, memory=40.0, reserve=5.0)
        order = kahn_order(g, rng.random(g.n))
        sliced = evaluate(problem, slice_order(problem, order).assignment).bottleneck
        result = ideal_dp(problem, upper_bound=sliced)
        value = sliced if result.status == "no_improvement" else result.value
        assert value <= sliced * (1 + 1e-9)
        if result.assignment is not None:
            assert math.isclose(evaluate(problem, result.assignment).bottleneck, value, rel_tol=1e-9)


def test_ids_out_of_index_order():
    # the chain x -> y -> z listed backwards, plus a branch x -> w
    g = Graph.from_nodes(
        [
            {"id": "z", "work": 5, "size_out": 1},
            {"id": "y", "work": 1, "size_out": 4},
            {"id": "x", "work": 3, "size_out": 2},
            {"id": "w", "work": 2, "size_out": 1},
        ],
        [("x", "y"), ("y", "z"), ("x", "w")],
    )
    for k in (1, 2, 3):
        problem = Problem(g, k, bandwidth=2.0)
        opt, _ = brute_force_optimum(problem)
        assert math.isclose(ideal_dp(problem).value, opt)


def test_peak_aware_value_is_a_lower_bound():
    rng = np.random.default_rng(24)
    for _ in range(40):
        base = random_problem(rng, 5, 2)
        memory = float(rng.integers(5, 30))
        problem = Problem(base.graph, 2, bandwidth=base.bandwidth, memory=memory, peak_aware=True)
        opt, _ = brute_force_optimum(problem)
        result = ideal_dp(problem)
        assert result.value <= opt + 1e-9
        assert evaluate(problem, result.assignment).bottleneck >= opt - 1e-9


def test_a_wide_level_is_an_antichain_whose_subsets_are_ideals():
    """2^widest_level(g) ideals at least (brute force), and a cap below that answers at once."""
    rng = np.random.default_rng(21)
    for _ in range(80):
        g = random_problem(rng, 8, 1).graph
        width = widest_level(g.n, g.pred_ptr, g.pred_idx, np.asarray(g.topological_order))
        count = sum(1 for _ in ideals(g))
        assert 2**width <= count and (g.n == 0 or width >= 1)
        assert enumerate_ideals(g, max_ideals=2**width - 1) is None
        assert enumerate_ideals(g, max_ideals=count).count == count  # a cap at the count still enumerates
    chains = Graph.from_arrays(np.ones(60), np.zeros(60), np.ones(60), [(i, i + 20) for i in range(40)])
    assert widest_level(chains.n, chains.pred_ptr, chains.pred_idx, np.asarray(chains.topological_order)) == 20


def test_wide_graph_reports_too_wide():
    g = Graph.from_arrays(np.ones(40), np.zeros(40), np.ones(40), [])  # 2^40 ideals
    result = ideal_dp(Problem(g, 4), max_ideals=10_000)
    assert result.status == "too_wide" and result.value is None and "ideals" in result.message


def test_single_block_cost_matches_oracle():
    rng = np.random.default_rng(25)
    problem = random_problem(rng, 6, 1)
    assert math.isclose(ideal_dp(problem).value, naive_block_cost(problem, set(range(problem.graph.n))))


def scaled_problem(rng, n_max):
    """A fresh random tiny graph whose weights span 1e-3..1e12, with B != 1 and, half
    the time, finite memory with a reserve."""
    n = int(rng.integers(2, n_max + 1))
    g = random_dag(rng, n, p=float(rng.random()), integral=False)
    scale = lambda: 10.0 ** rng.integers(-3, 13, n)  # noqa: E731
    g = Graph.from_arrays(
        g.work * scale(), g.size_param * scale(), g.size_out * scale(), list(zip(g.edge_src, g.edge_dst))
    )
    memory, reserve = math.inf, 0.0
    if rng.random() < 0.5:
        memory = float(g.size_param.sum()) * float(rng.uniform(0.2, 1.5))
        reserve = memory * float(rng.uniform(0.0, 0.5))
    return Problem(g, 1, bandwidth=float(rng.choice([0.25, 3.0, 1e3])), memory=memory, reserve=reserve)


def test_all_k_matches_the_exact_optimum_at_mixed_scales():
    rng = np.random.default_rng(26)
    ks = [1, 2, 3, 4]
    for _ in range(40):
        base = scaled_problem(rng, 6)
        results = ideal_dp_all(base, ks)
        for k, res in zip(ks, results):
            problem = Problem(base.graph, k, bandwidth=base.bandwidth, memory=base.memory, reserve=base.reserve)
            opt = exact_optimum(problem)
            assert res.status == "optimal" and res.lower_bound is not None
            assert res.lower_bound <= opt  # never above the true optimum
            assert math.isclose(res.value, float(opt), rel_tol=1e-9)
            assert math.isclose(evaluate(problem, res.assignment).bottleneck, float(opt), rel_tol=1e-9)


def test_all_k_matches_the_per_k_path_under_known_bounds():
    rng = np.random.default_rng(27)
    ks = [2, 3, 5]
    for _ in range(30):
        base = scaled_problem(rng, 7)
        per_k = [
            ideal_dp(Problem(base.graph, k, bandwidth=base.bandwidth, memory=base.memory, reserve=base.reserve))
            for k in ks
        ]
        opts = [r.value for r in per_k]
        ubs = [o * float(rng.uniform(1.0, 1.5)) for o in opts]
        lbs = [o * float(rng.uniform(0.5, 1.0)) for o in opts]
        together = ideal_dp_all(base, ks[::-1], upper_bounds=ubs[::-1], lower_bounds=lbs[::-1])[::-1]
        for k, alone, res, opt, ub, lb in zip(ks, per_k, together, opts, ubs, lbs):
            assert res.status in ("optimal", "bound_reached", "no_improvement")
            assert res.lower_bound is not None and res.lower_bound <= opt * (1 + 1e-12)
            if res.status == "bound_reached":
                assert res.value <= lb * (1 + 1e-9) and res.lower_bound <= lb
            if res.status == "optimal":
                assert math.isclose(res.value, alone.value, rel_tol=1e-9)
            if res.assignment is not None:
                problem = Problem(base.graph, k, bandwidth=base.bandwidth, memory=base.memory, reserve=base.reserve)
                assert evaluate(problem, res.assignment).bottleneck <= ub * (1 + 1e-9)


def test_all_k_with_no_time_left_says_so():
    rng = np.random.default_rng(28)
    base = scaled_problem(rng, 6)
    results = ideal_dp_all(base, [2, 3], upper_bounds=[math.inf, math.inf], time_limit=0.0)
    assert all(r.status in ("time_limit", "optimal", "bound_reached") for r in results)
    assert all(r.lower_bound is None for r in results if r.status == "time_limit")


def test_a_pass_whose_progress_shows_it_would_not_end_in_time_gives_up(monkeypatch):
    """A pass that extends one ideal per 20 ms (a simulated kernel) of a lattice of 59,049
    would take 20 minutes: with 30 s left it gives up after PROBE_SECONDS, as a time limit,
    with no bound; without a deadline it is never stopped this way."""
    g = Graph.from_arrays(np.ones(20), np.zeros(20), np.ones(20), [(i, i + 1) for i in range(0, 20, 2)])
    assert enumerate_ideals(g).count == 3**10  # ten independent pairs

    def slow(nxt, *args):
        time.sleep(0.02)
        return nxt + 1

    monkeypatch.setattr(dp_module, "dp_chunk", slow)
    monkeypatch.setattr(dp_module, "greedy_chain", lambda *args: math.inf)  # no chain: a DP pass decides
    monkeypatch.setattr(dp_module, "PROBE_SECONDS", 0.3)
    t0 = time.perf_counter()
    res, *larger = ideal_dp_all(Problem(g, 2), [2, 4, 3], upper_bounds=[math.inf] * 3, time_limit=30.0)
    assert time.perf_counter() - t0 < 5.0  # one probe: the larger ks are not tried
    assert res.status == "time_limit" and res.lower_bound is None and "would not end in time" in res.message
    for other in larger:
        assert other.status == "time_limit" and other.lower_bound is None and other.wall_time == 0.0
        assert "skipped: a pass at k = 2" in other.message
    assert not dp_module._hopeless(time.perf_counter() - 100.0, 0.0, None)
    assert dp_module._hopeless(time.perf_counter() - 1.0, 0.001, time.perf_counter() + 30.0)
    assert not dp_module._hopeless(time.perf_counter() - 1.0, 0.2, time.perf_counter() + 30.0)
