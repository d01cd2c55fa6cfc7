"""Split-point segmentation and the baseline rules against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mtpp import Graph, Problem
from mtpp.core.errors import InvalidParameterError
from mtpp.pipelining.baselines import balanced_parts, block_partition_parts, uniform_parts
from mtpp.pipelining.segmentation import (
    additive_costs,
    expressible_segmentation,
    min_max_segmentation,
    unit_costs,
)
from mtpp.pipelining.units import SplitPointError, Units, module_units
from tests.oracle import brute_force_units, naive_block_cost


def ordered_dag(rng: np.random.Generator, n: int) -> Graph:
    """A random DAG whose index order is topological (edges i -> j with i < j)."""
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.35]
    w, p, o = (rng.integers(0, 10, n).astype(float) for _ in range(3))
    return Graph.from_arrays(w, p, o, edges)


@pytest.mark.parametrize("seed", range(25))
def test_split_point_dp_is_optimal_among_split_point_plans(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 10))
    memory = math.inf if seed % 2 else float(rng.integers(1, 30))
    problem = Problem(
        ordered_dag(rng, n), int(rng.integers(1, 5)), bandwidth=float(rng.choice([0.5, 2.0])), memory=memory
    )
    starts = [0, *sorted(rng.choice(np.arange(1, n), size=int(rng.integers(0, n)), replace=False).tolist()), n]
    cost = unit_costs(problem, starts)
    for a, b in itertools.combinations_with_replacement(range(len(starts) - 1), 2):
        assert cost[a, b] == pytest.approx(naive_block_cost(problem, set(range(starts[a], starts[b + 1]))))
    firsts, value = min_max_segmentation(cost, problem.k)
    assert value == pytest.approx(brute_force_units(problem, starts))
    assert firsts[0] == 0 and len(firsts) <= problem.k and firsts == sorted(set(firsts))
    bounds = [*firsts, len(starts) - 1]
    assert max(cost[a, b - 1] for a, b in itertools.pairwise(bounds)) == pytest.approx(value)


def test_uniform_parts_follow_deepspeed() -> None:
    assert uniform_parts(10, 3) == [0, 4, 7, 10]  # the first 10 mod 3 stages get one more
    assert uniform_parts(8, 4) == [0, 2, 4, 6, 8]
    assert uniform_parts(2, 4) == [0, 1, 2]  # fewer layers than stages: one layer each
    with pytest.raises(InvalidParameterError, match="k must be"):
        uniform_parts(3, 0)


@pytest.mark.parametrize("seed", range(10))
def test_balanced_parts_minimise_the_heaviest_part(seed: int) -> None:
    rng = np.random.default_rng(seed)
    weights = rng.integers(0, 20, int(rng.integers(1, 9))).astype(float).tolist()
    k = int(rng.integers(1, 5))
    parts = balanced_parts(weights, k)
    heaviest = max(sum(weights[a:b]) for a, b in itertools.pairwise(parts))
    brute = min(
        max(sum(weights[a:b]) for a, b in itertools.pairwise([0, *cuts, len(weights)]))
        for j in range(min(k, len(weights)))
        for cuts in itertools.combinations(range(1, len(weights)), j)
    )
    assert heaviest == brute and parts[0] == 0 and parts[-1] == len(weights)
    assert additive_costs(weights)[0, len(weights) - 1] == sum(weights)


def test_block_partition_follows_torchgpipe() -> None:
    # torchgpipe's own examples (tests/test_balance.py): [1..6] in 2 -> [1, 2, 3, 4], [5, 6]
    assert block_partition_parts([1, 2, 3, 4, 5, 6], 2) == [0, 4, 6]
    assert block_partition_parts([0, 0], 2) == [0, 1, 2]
    rng = np.random.default_rng(0)
    for _ in range(20):
        costs = rng.random(int(rng.integers(1, 12))).tolist()
        k = int(rng.integers(1, 6))
        parts = block_partition_parts(costs, k)
        assert parts[0] == 0 and parts[-1] == len(costs) and len(parts) == min(k, len(costs)) + 1
        assert all(b > a for a, b in itertools.pairwise(parts))


def random_scopes(rng: np.random.Generator, n: int) -> list[tuple[str, ...]]:
    """Nested module calls over ``n`` ops: a random walk of a call stack, names drawn
    from a small pool so that some modules are called twice (no split point)."""
    scopes: list[tuple[str, ...]] = []
    stack: list[str] = []
    seen: dict[str, int] = {}
    for _ in range(n):
        stack = stack[: int(rng.integers(0, len(stack) + 1))]
        for _ in range(int(rng.integers(0, 3 if len(stack) < 4 else 1))):
            name = f"m{int(rng.integers(0, 2 * n))}"
            seen[name] = seen.get(name, 0) + 1
            stack.append(f"{name}@{seen[name]}" if seen[name] > 1 else name)
        scopes.append(tuple(stack))
    return scopes


def expressible(units: Units, parts: list[int]) -> bool:
    try:
        units.split_points(parts)
    except SplitPointError:
        return False
    return True


@pytest.mark.parametrize("seed", range(60))
def test_expressible_dp_is_optimal_among_expressible_plans(seed: int) -> None:
    """Against every cut set that distinct split points can make (Kuhn's matching)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    units = module_units(random_scopes(rng, n))
    count = units.count
    cost = additive_costs(rng.integers(1, 10, count).astype(float).tolist()) + rng.integers(0, 4, (count, count))
    cost[np.tril_indices(count, -1)] = np.inf
    k = int(rng.integers(1, count + 2))
    result = expressible_segmentation(cost, k, units)
    assert result is not None
    firsts, value = result
    parts = [*firsts, count]
    assert firsts[0] == 0 and len(firsts) <= k and expressible(units, parts)
    assert value == pytest.approx(max(cost[a, b - 1] for a, b in itertools.pairwise(parts)))
    best = min(
        max(cost[a, b - 1] for a, b in itertools.pairwise([0, *cuts, count]))
        for j in range(min(k, count))
        for cuts in itertools.combinations(range(1, count), j)
        if expressible(units, [0, *cuts, count])
    )
    assert value == pytest.approx(best)


def test_a_module_between_glue_ops_cannot_be_cut_on_both_sides() -> None:
    units = module_units([(), ("x",), ()])  # only x can make either cut
    cost = additive_costs([1.0, 5.0, 1.0])
    firsts, _ = min_max_segmentation(cost, 3)
    assert firsts == [0, 1, 2] and not expressible(units, [*firsts, 3])
    result = expressible_segmentation(cost, 3, units)
    assert result == ([0, 1], 6.0) or result == ([0, 2], 6.0)


def test_too_many_open_markers_hand_over_to_dropping_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_OPEN_MARKERS the exact search declines and the plan drops cuts instead."""
    import mtpp.pipelining.segmentation as segmentation
    from mtpp.pipelining.plan import _expressible

    units = module_units([(), ("x",), ("y",), ("y", "z"), ()])  # y and z are open at the cut before z
    cost = additive_costs([1.0, 5.0, 1.0, 1.0, 1.0])[: units.count, : units.count]
    assert expressible_segmentation(cost, 4, units) is not None
    monkeypatch.setattr(segmentation, "MAX_OPEN_MARKERS", 0)
    assert expressible_segmentation(cost, 4, units) is None
    assert not expressible(units, [0, 1, 2, 3, 4, 5])
    parts = _expressible(units, [0, 1, 2, 3, 4, 5])
    assert expressible(units, parts) and len(parts) == 5
