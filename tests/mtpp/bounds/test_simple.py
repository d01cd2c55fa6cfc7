import math

import numpy as np

from mtpp import Graph, Problem, simple_lower_bound
from tests.oracle import brute_force_optimum, random_dag


def test_paper_formula_without_overflow():
    g = Graph.from_arrays([5, 1, 1, 1], [0] * 4, [0] * 4, [])
    assert simple_lower_bound(Problem(g, 2)) == 5  # max node
    total = simple_lower_bound(Problem(g, 1))  # total / k, lowered by its rounding bound only
    assert total <= 8 and math.isclose(total, 8, rel_tol=1e-13)
    assert simple_lower_bound(Problem(g, 4)) == 5


def test_overflow_extension():
    g = Graph.from_arrays([1, 1], [10, 10], [0, 0], [])
    # budget 4 per block: each node alone overflows by 6; the total 20 - 2*4 = 12 spread over 2
    bound = simple_lower_bound(Problem(g, 2, memory=4))
    assert bound <= max(1 + 6, (2 + 12) / 2) and math.isclose(bound, 7, rel_tol=1e-13)


def test_overflow_rounding_is_bounded_against_the_budget_not_the_result():
    # parameters of 1e15 against a budget of 1e15 - 1: the overflow of 1 carries a rounding
    # error of about u * 1e15 = 0.1, and the bound is lowered by (at least) that much
    g = Graph.from_arrays([0.0], [1e15], [0.0], [])
    bound = simple_lower_bound(Problem(g, 1, memory=1e15 - 1))
    assert 0.5 < bound <= 1.0


def test_never_exceeds_brute_force_optimum():
    rng = np.random.default_rng(3)
    for _ in range(60):
        n, k = int(rng.integers(1, 7)), int(rng.integers(1, 4))
        g = random_dag(rng, n, p=float(rng.random()))
        memory = math.inf if rng.random() < 0.5 else float(rng.integers(1, 15))
        problem = Problem(g, k, memory=memory)
        opt, _ = brute_force_optimum(problem)
        assert simple_lower_bound(problem) <= opt + 1e-9
