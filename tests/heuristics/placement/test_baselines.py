"""Placement baselines: single-device and HEFT."""

from __future__ import annotations

import numpy as np
import pytest

from heuristics.placement.baselines import all_single_devices, heft, upward_rank
from mtpp.core.device_sets import Device, DeviceSet
from mtpp.core.graph import Graph
from mtpp.core.presets import DEVICE_SETS as PRESETS
from mtpp.core.simulator import PlacementContext, simulate


def random_dag(rng: np.random.Generator, n: int, p: float = 0.3) -> Graph:
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < p]
    return Graph.from_arrays(rng.integers(1, 9, n), rng.integers(0, 4, n), rng.integers(1, 9, n), edges)


def test_single_devices_sum_the_work() -> None:
    g = random_dag(np.random.default_rng(0), 12)
    ds = DeviceSet.uniform([Device(name="a"), Device(name="b", speed=4.0)], 2.0, 1.0)
    cands = all_single_devices(PlacementContext(g, ds))
    assert [c.sim.makespan for c in cands] == pytest.approx([g.work.sum(), g.work.sum() / 4])
    assert [c.method for c in cands] == ["single:a", "single:b"]


def test_heft_picks_fast_device_for_a_chain_and_splits_a_fork() -> None:
    """A chain on a fast and a slow device with costly links: HEFT keeps it all on the
    fast device.  Two independent ops on equal devices with free links: one each."""
    chain = Graph.from_arrays([4, 4, 4], [0, 0, 0], [100, 100, 100], [(0, 1), (1, 2)])
    ds = DeviceSet.uniform([Device(name="slow"), Device(name="fast", speed=2.0)], 1.0, 5.0)
    c = heft(PlacementContext(chain, ds))
    assert c.place.tolist() == [1, 1, 1] and c.sim.makespan == 6.0
    pair = Graph.from_arrays([3, 3], [0, 0], [1, 1], [])
    eq = DeviceSet.uniform([Device(name="a"), Device(name="b")], float("inf"), 0.0)
    c = heft(PlacementContext(pair, eq))
    assert sorted(c.place.tolist()) == [0, 1] and c.sim.makespan == 3.0


def test_heft_result_is_rechecked_and_rank_decreases_along_edges() -> None:
    rng = np.random.default_rng(1)
    for _ in range(10):
        g = random_dag(rng, 30, 0.15)
        ctx = PlacementContext(g, PRESETS["cpu-igpu-dgpu"])
        c = heft(ctx)
        r = simulate(g, PRESETS["cpu-igpu-dgpu"], c.place, c.order)
        assert r.makespan == c.sim.makespan
        rank = upward_rank(ctx)
        assert np.all(rank[g.edge_src] > rank[g.edge_dst])
        assert c.sim.makespan <= min(s.sim.makespan for s in all_single_devices(ctx)) * 1.5
