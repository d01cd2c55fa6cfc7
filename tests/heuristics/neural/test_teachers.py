"""Imitation teachers and their targets (heuristics.neural.teachers)."""

from __future__ import annotations

import numpy as np
import pytest

from heuristics.neural.objectives import Bottleneck, PeakMemory
from heuristics.neural.regal import DEFAULT_CHOICES
from heuristics.neural.teachers import beta_targets, positions, teacher_order
from heuristics.traversal import bfs_order, dfs_order
from mtpp.generators.regal import regal_graph
from tests.oracle import is_topological


@pytest.mark.parametrize("objective", [PeakMemory(), Bottleneck(3)])
def test_teacher_orders(objective: PeakMemory | Bottleneck) -> None:
    g = regal_graph(40, seed=4)
    teacher = teacher_order(g, objective, 32, seed=0)
    assert is_topological(g, teacher)
    classic = min(objective.order_costs(g, o(g))[0] for o in (dfs_order, bfs_order))
    assert objective.order_costs(g, teacher)[0] <= classic + 1e-9  # both teachers start from dfs / bfs


@pytest.mark.parametrize("seed", range(5))
def test_beta_targets_follow_the_order(seed: int) -> None:
    order = np.random.default_rng(seed).permutation(30)
    ia, ib = beta_targets(order, DEFAULT_CHOICES)
    c = np.asarray(DEFAULT_CHOICES)
    mean = c[ia.numpy()] / (c[ia.numpy()] + c[ib.numpy()])
    by_step = mean[order]
    assert np.all(np.diff(by_step) <= 1e-12)  # earlier in the order: a higher mutant mean
    assert by_step[0] == pytest.approx(c.max() / (c.max() + c.min()))  # the sharpest early pair
    assert by_step[-1] == pytest.approx(c.min() / (c.max() + c.min()))
    want = 1 - positions(order) / 29
    candidates = np.array([a / (a + b) for a in c for b in c])
    assert np.all(np.abs(mean - want) <= np.abs(want[:, None] - candidates[None, :]).min(axis=1) + 1e-12)
