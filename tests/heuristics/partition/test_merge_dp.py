"""The multi-order DP (:mod:`heuristics.partition.merge_dp`): SliceGraph with one
order, the ideal DP with every order, and never a partition its evaluation disowns."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from heuristics.kahn import kahn_order
from heuristics.partition.merge_dp import RTOL, merge_orders
from heuristics.partition.slicegraph import slice_order
from mtpp import Problem, evaluate, layered_graph
from tests.heuristics.partition.test_slicegraph import random_problem
from tests.oracle import topological_orders
from tests.soundness.instances import FAMILIES, _check_partition, make_case, make_instance


def _orders(problem: Problem, count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [kahn_order(problem.graph, rng.random(problem.graph.n)) for _ in range(count)]


def test_one_order_gives_its_slicing() -> None:
    rng = np.random.default_rng(31)
    for _ in range(60):
        problem = random_problem(rng, n_max=9, k_max=4)
        order = _orders(problem, 1, int(rng.integers(1 << 30)))[0]
        sliced = slice_order(problem, order)
        assert sliced is not None
        merged = merge_orders(problem, [order], sliced.bottleneck * 1.5 + 1.0)
        assert merged is not None
        assert merged.bottleneck == pytest.approx(sliced.bottleneck, rel=2 * RTOL, abs=1e-9)
        ev = evaluate(problem, merged.assignment, merged.order)
        assert ev.bottleneck == pytest.approx(merged.bottleneck, rel=1e-9, abs=1e-9)


def test_every_order_gives_the_optimum_at_every_scale() -> None:
    """The prefixes of all topological orders are all the ideals: the ideal DP's optimum
    (within the threshold search's tolerance) where one graph has one weight scale
    (1e-3..1e12, B != 1, finite memory); on every family of the soundness fuzz (scales
    mixed up to 1e15, where float sums cancel) a partition the exact oracle accepts."""
    rng = random.Random(2311)
    tried = 0
    while tried < 50:
        family = FAMILIES[tried % len(FAMILIES)]
        problem = make_instance(rng, family, max_n=7)
        orders = [np.array(o) for o in topological_orders(problem.graph)]
        if len(orders) > 400:
            continue
        tried += 1
        case = make_case(problem, family)
        first = slice_order(problem, orders[0])
        assert first is not None
        merged = merge_orders(problem, orders, first.bottleneck * (1 + 1e-9), max_orders=len(orders))
        if merged is None:
            if family == "classic":  # the first order's slicing is already optimal
                assert Fraction(first.bottleneck) <= case.opt * (1 + 2 * Fraction(RTOL)), case.describe()
            continue
        assert not _check_partition(case, "merge", merged.assignment), case.describe()
        if family == "classic":
            assert case.exact_bottleneck(merged.assignment) <= case.opt * (1 + 2 * Fraction(RTOL)), case.describe()


def test_merging_beats_or_keeps_the_best_of_its_orders() -> None:
    problem = Problem(layered_graph(120, seed=9907), 8, bandwidth=0.7)
    orders = _orders(problem, 12, 5)
    values = [slice_order(problem, o).bottleneck for o in orders]  # type: ignore[union-attr]
    best = min(values)
    merged = merge_orders(problem, orders, best)
    assert merged is not None  # 12 random orders of a 120-op graph: blocks from several of them do better
    assert merged.bottleneck < best
    ev = evaluate(problem, merged.assignment, merged.order)
    assert ev.bottleneck == pytest.approx(merged.bottleneck, rel=1e-9)
    assert len(set(merged.assignment.tolist())) <= problem.k
    again = slice_order(problem, merged.order)  # the concatenated blocks are an order SliceGraph slices as well
    assert again is not None and again.bottleneck <= merged.bottleneck * (1 + 1e-12)


def test_no_partition_below_a_bound_it_cannot_reach() -> None:
    problem = Problem(layered_graph(60, seed=9908), 4)
    orders = _orders(problem, 4, 6)  # work / k: no block pays no IO on a layered graph
    assert merge_orders(problem, orders, float(problem.graph.work.sum()) / problem.k) is None


def test_a_passed_deadline_keeps_what_it_has() -> None:
    problem = Problem(layered_graph(200, seed=9909), 8)
    orders = _orders(problem, 8, 7)
    best = min(slice_order(problem, o).bottleneck for o in orders)  # type: ignore[union-attr]
    assert merge_orders(problem, orders, best, deadline=0.0) is None
