import itertools
import math

import numpy as np

from mtpp import Problem
from mtpp.cut_bound import cut_lower_bound
from tests.oracle import brute_force_optimum, naive_block_cost, random_dag


def random_problem(rng, n_max, peak_aware=False):
    n = int(rng.integers(1, n_max + 1))
    g = random_dag(rng, n, p=float(rng.random()), integral=bool(rng.integers(2)))
    memory = math.inf if rng.random() < 0.4 else float(rng.integers(1, 20))
    reserve = 0.0 if math.isinf(memory) or peak_aware else float(rng.integers(0, int(memory) + 1))
    k = int(rng.integers(1, 4))
    return Problem(g, k, bandwidth=float(rng.choice([0.5, 1.0, 3.0])), memory=memory, reserve=reserve,
                   peak_aware=peak_aware and not math.isinf(memory))  # fmt: skip


def reference_bound(problem):
    """max_v min over every set S containing v of f(S) without overflow, plus overflow({v})."""
    g = problem.graph
    free = Problem(g, problem.k, bandwidth=problem.bandwidth)
    best = 0.0
    for v in range(g.n):
        cheapest = min(
            naive_block_cost(free, set(s))
            for r in range(1, g.n + 1)
            for s in itertools.combinations(range(g.n), r)
            if v in s
        )
        own = max(float(g.size_param[v]) - problem.param_budget, 0.0) / problem.bandwidth
        best = max(best, cheapest + own)
    return best


def test_cut_bound_is_the_minimum_cut_of_every_op():
    rng = np.random.default_rng(30)
    for _ in range(120):
        problem = random_problem(rng, 6)
        bound, _ = cut_lower_bound(problem)
        ref = reference_bound(problem)
        assert bound <= ref
        assert math.isclose(bound, ref, rel_tol=1e-8, abs_tol=1e-9)


def test_cut_bound_never_exceeds_the_optimum():
    rng = np.random.default_rng(31)
    tight = 0
    for trial in range(150):
        problem = random_problem(rng, 5, peak_aware=trial % 3 == 0)
        opt, _ = brute_force_optimum(problem)
        bound, _ = cut_lower_bound(problem)
        assert bound <= opt
        tight += math.isclose(bound, opt, rel_tol=1e-6)
    assert tight > 10  # the bound is not trivially low


def test_heavy_op_with_big_tensors_is_bound_by_its_cheapest_block():
    # a -> h -> b: h must either pay both tensors (1 + 10 + 10) or take a neighbour's work
    from mtpp import Graph

    g = Graph.from_arrays([4.0, 1.0, 3.0], [0, 0, 0], [10.0, 10.0, 0.0], [(0, 1), (1, 2)])
    bound, _ = cut_lower_bound(Problem(g, 3))
    # {a, h, b} costs 8, {a, h} 4 + 1 + 10, {h, b} 1 + 3 + 10, {h} 21: the minimum is 8 for h (and every op)
    assert math.isclose(bound, 8.0, rel_tol=1e-8)
    opt, _ = brute_force_optimum(Problem(g, 3))
    assert opt == 8.0
