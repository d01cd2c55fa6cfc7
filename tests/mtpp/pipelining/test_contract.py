"""The unit graph: acyclic, exact on split-point plans, never under-priced."""

from __future__ import annotations

import numpy as np
import pytest

from heuristics.kahn import kahn_order
from mtpp import Problem, evaluate
from mtpp.pipelining.contract import unit_graph
from mtpp.pipelining.units import Units
from tests.mtpp.pipelining.test_segmentation import ordered_dag


def random_units(rng: np.random.Generator, n: int) -> Units:
    starts = [0, *sorted(rng.choice(np.arange(1, n), size=int(rng.integers(0, n)), replace=False).tolist()), n]
    scopes = tuple((f"m{int(np.searchsorted(starts, p, side='right'))}",) for p in range(n))
    return Units(tuple(starts), tuple(() for _ in starts[:-1]), scopes)


@pytest.mark.parametrize("seed", range(20))
def test_unit_graph_prices_plans_exactly_and_never_under_prices(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    g = ordered_dag(rng, n)
    units = random_units(rng, n)
    ug, owner = unit_graph(g, units)  # a CycleError here would mean contraction broke acyclicity
    unit_of = np.repeat(np.arange(units.count), np.diff(units.starts))
    assert ug.work.sum() == pytest.approx(g.work.sum()) and ug.size_param.sum() == pytest.approx(g.size_param.sum())
    k = int(rng.integers(1, 5))
    # a segmentation at unit starts, output nodes with their unit: the same cost as on the op graph
    cuts = np.sort(rng.choice(np.arange(1, units.count + 1), size=min(k - 1, units.count), replace=True))
    stage = np.searchsorted(cuts, np.arange(units.count), side="right")
    plan_ug = evaluate(Problem(ug, k), stage[owner]).block_costs
    plan_ops = evaluate(Problem(g, k), stage[unit_of]).block_costs
    assert np.allclose(plan_ug, plan_ops)
    # any acyclic partition of the unit graph (contiguous pieces of a random topological order)
    order = kahn_order(ug, rng.random(ug.n))
    blocks = np.empty(ug.n, dtype=np.int64)
    blocks[order] = np.sort(rng.integers(0, k, ug.n))
    induced = blocks[[int(np.flatnonzero(owner == unit_of[v])[0]) for v in range(n)]]  # each op with its unit node
    assert np.all(evaluate(Problem(ug, k), blocks).block_costs >= evaluate(Problem(g, k), induced).block_costs - 1e-9)
