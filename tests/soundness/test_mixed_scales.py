"""The exact oracle and the instance families of the soundness fuzz (issue 20: weights
from 1e-3 to 1e15 in one graph): the rational optimum agrees with the float oracles
where floats are exact enough, stays exact where they cancel, and the harness flags a
claim above it."""

from __future__ import annotations

import math
import random
import time
from fractions import Fraction
from types import SimpleNamespace

import numpy as np

from mtpp import Graph, Problem
from tests.oracle import (
    ExactCosts,
    brute_force_optimum,
    down_set_optimum,
    down_sets,
    exact_optimum,
    naive_block_cost,
    random_dag,
)
from tests.soundness.instances import (
    BANDWIDTHS,
    FAMILIES,
    MAX_IDEALS,
    MAX_N,
    NOT_TIGHT,
    _check_certificate,
    _check_ideal_dp,
    make_case,
    make_instance,
)


def test_exact_oracle_agrees_with_the_float_oracles() -> None:
    rng = random.Random(20)
    for _ in range(150):
        problem = make_instance(rng, "classic")
        assert math.isclose(float(exact_optimum(problem)), down_set_optimum(problem), rel_tol=1e-9, abs_tol=0.0)
    nrng = np.random.default_rng(20)
    for _ in range(40):
        g = random_dag(nrng, int(nrng.integers(1, 7)), integral=False)
        problem = Problem(g, int(nrng.integers(1, 4)), bandwidth=0.7, memory=9.0, reserve=1.5)
        costs = ExactCosts(problem)
        assert math.isclose(float(exact_optimum(problem)), brute_force_optimum(problem)[0], rel_tol=1e-9)
        for _ in range(5):
            block = {v for v in range(g.n) if nrng.random() < 0.5}
            assert math.isclose(float(costs.cost(block)), naive_block_cost(problem, block), rel_tol=1e-12)


def test_exact_oracle_is_exact_where_floats_cancel() -> None:
    # a zero-work op with a 1e12 tensor, consumed by an op of work 1e-3: OPT keeps them together
    g = Graph.from_arrays([0.0, 1e-3], [0.0, 0.0], [1e12, 0.0], [(0, 1)], ids=["h", "c"])
    assert exact_optimum(Problem(g, 2, bandwidth=0.7)) == Fraction(1e-3)
    assert ExactCosts(Problem(g, 2, bandwidth=0.7)).cost({1}) == Fraction(1e12) / Fraction(0.7) + Fraction(1e-3)
    # a 1e15 parameter and one of 3e-3, the memory exactly 1e15: the overflow is 3e-3 / B
    g = Graph.from_arrays([0.0, 0.0], [1e15, 3e-3], [0.0, 0.0], [], ids=["x", "y"])
    problem = Problem(g, 1, bandwidth=3.0, memory=1e15)
    assert exact_optimum(problem) == Fraction(3e-3) / 3
    assert (1e15 + 3e-3) - 1e15 != 3e-3  # what a float sum would have made of it
    # a reserve: M - R taken exactly
    problem = Problem(g, 1, memory=1e15 + 2.0, reserve=2.0)
    assert exact_optimum(problem) == Fraction(1e15) + Fraction(3e-3) - (Fraction(1e15 + 2.0) - 2)


def test_families_are_what_they_say() -> None:
    rng = random.Random(7)
    for family in FAMILIES:
        sizes, huge, tiny, leaves, not_in_order = [], 0, 0, 0, 0
        for _ in range(80):
            problem = make_instance(rng, family)
            g = problem.graph
            sizes.append(g.n)
            pred = [0] * g.n
            for u, v in zip(g.edge_src.tolist(), g.edge_dst.tolist()):
                pred[v] |= 1 << u
            assert down_sets(pred, MAX_IDEALS) is not None
            assert problem.bandwidth in BANDWIDTHS
            if math.isfinite(problem.memory):  # M - R is exact in floats: the oracle and mtpp share the budget
                assert Fraction(problem.memory) - Fraction(problem.reserve) == Fraction(problem.param_budget)
            weights = np.concatenate([g.work, g.size_param, g.size_out])
            huge += bool(weights.max() >= 1e6)
            tiny += bool(((weights > 0) & (weights < 1e-1)).any())
            degree = np.diff(g.succ_ptr) + np.diff(g.pred_ptr)
            leaves += bool(((g.work == 0) & (g.size_param == 0) & (degree == 1)).any())
            not_in_order += list(g.topological_order) != list(range(g.n))
        assert max(sizes) <= (7 if family == "classic" else MAX_N)
        assert not_in_order > 20
        if family == "needle":
            assert huge == tiny == 80
        if family == "mixed":
            assert huge > 40 and tiny > 40
        if family == "zero":
            assert leaves == 80


def test_exact_oracle_is_fast_at_n12() -> None:
    rng = random.Random(12)
    problems = [make_instance(rng, family, MAX_N) for family in FAMILIES[1:] for _ in range(60)]
    problems = [p for p in problems if p.graph.n >= 10][:12]
    start = time.perf_counter()
    for p in problems:
        exact_optimum(p)
    assert time.perf_counter() - start < 6.0  # typically ~0.1 s in all on one core


def test_the_harness_flags_a_claim_above_the_optimum() -> None:
    g = Graph.from_arrays([1e-3, 2e-3], [0.0, 0.0], [1e9, 0.0], [(0, 1)], ids=["h", "c"])
    case = make_case(Problem(g, 2, memory=0.00644), "needle")
    assert case.opt == Fraction(1e-3) + Fraction(2e-3)
    value = float(case.opt)
    above = math.nextafter(value * (1 + 2e-9), math.inf)
    dp = SimpleNamespace(status="optimal", value=above, lower_bound=None, assignment=None, rounding=0.0)
    assert any("> OPT" in f for f in _check_ideal_dp(case, dp, value))
    dp = SimpleNamespace(status="no_improvement", value=None, lower_bound=None, assignment=None)
    assert any("> OPT" in f for f in _check_ideal_dp(case, dp, above))  # "nothing beats the UB" with UB > OPT
    dp = SimpleNamespace(status="optimal", value=value * 0.9, lower_bound=value * 0.9, assignment=None, rounding=0.0)
    assert [NOT_TIGHT in f for f in _check_ideal_dp(case, dp, value)] == [True]
    cert = SimpleNamespace(
        lower_bound=value,
        lower_bound_method="ideal-dp",
        bounds=[],
        optimal=True,
        upper_bound=5e8,
        assignment={"h": 0, "c": 1},
    )
    found = _check_certificate(case, cert)
    assert any("claims optimal" in f for f in found) and any("re-evaluate" in f for f in found)
