"""BRKGA with the REGAL chromosome."""

from __future__ import annotations

import numpy as np
import pytest

from heuristics.brkga import BrkgaParams
from heuristics.placement.baselines import all_single_devices, heft
from heuristics.placement.brkga import decode, encode, fitness, infeasible_offset, placement_brkga
from mtpp.core.device_sets import Device, DeviceSet
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.simulator import PlacementContext, simulate
from tests.heuristics.placement.test_baselines import random_dag

SMALL = BrkgaParams(population=20, generations=15)


def test_encode_decode_round_trip() -> None:
    rng = np.random.default_rng(0)
    g = random_dag(rng, 15)
    ctx = PlacementContext(g, DeviceSet.uniform([Device(name=c) for c in "abc"], 1.0))
    c = heft(ctx)
    place, order = decode(ctx, encode(ctx, c.place, c.order))
    assert place.tolist() == c.place.tolist() and order.tolist() == c.order.tolist()


def test_brkga_never_worse_than_its_seeds_and_is_rechecked() -> None:
    rng = np.random.default_rng(2)
    g = random_dag(rng, 25, 0.15)
    ds = DeviceSet.uniform([Device(name="a"), Device(name="b", speed=1.5)], 4.0, 1.0)
    ctx = PlacementContext(g, ds)
    seeds = [heft(ctx), *all_single_devices(ctx)]
    res = placement_brkga(ctx, params=SMALL, seeds=seeds, seed=1)
    assert res.best.sim.makespan <= min(s.sim.makespan for s in seeds)
    assert simulate(g, ds, res.best.place, res.best.order).makespan == res.best.sim.makespan
    again = placement_brkga(ctx, params=SMALL, seeds=seeds, seed=1)
    assert again.fitness == res.fitness


def test_every_feasible_ranks_above_every_infeasible() -> None:
    """Chain 0 -> 1, outputs 10 bytes; device a (15 bytes) is fast, b (25 bytes) is 100x
    slower; link 1 B/unit, no latency.  Both on a: 101 time units but peak 20 > 15,
    infeasible.  0 on a, 1 on b: 1 + 10 + 10000 = 10011, a holds 10, b holds 20:
    feasible and the best feasible (both on b takes 10100; 1 on a overflows a)."""
    g = Graph.from_arrays([1, 100], [0, 0], [10, 10], [(0, 1)])
    ds = DeviceSet.uniform([Device(name="a", memory=15), Device(name="b", memory=25, speed=0.01)], 1.0)
    ctx = PlacementContext(g, ds)
    off = infeasible_offset(ctx, "runtime")
    both_a = ctx.run(np.array([0, 0]), np.array([0, 1]))
    split = ctx.run(np.array([0, 1]), np.array([0, 1]))
    assert not both_a.memory_feasible and both_a.makespan == 101 and split.memory_feasible
    assert fitness(split, "runtime", off) == 10011.0 < off < fitness(both_a, "runtime", off)
    res = placement_brkga(ctx, params=SMALL)
    assert res.best.sim.memory_feasible and res.best.place.tolist() == [0, 1]


def test_mutant_beta_passes_through_and_is_checked() -> None:
    g = random_dag(np.random.default_rng(4), 8)
    ctx = PlacementContext(g, DeviceSet.uniform([Device(name="a"), Device(name="b")], 1.0))
    n_genes = 8 * 3
    res = placement_brkga(ctx, params=SMALL, mutant_beta=(np.full(n_genes, 2.0), np.full(n_genes, 5.0)))
    assert res.run.evaluations > 0
    with pytest.raises(InvalidParameterError, match="n \\* \\(d \\+ 1\\) = 24"):
        placement_brkga(ctx, params=SMALL, mutant_beta=(np.ones(3), np.ones(3)))
    with pytest.raises(InvalidParameterError, match="objective"):
        placement_brkga(ctx, objective="energy")
    peak = placement_brkga(ctx, objective="peak_memory", params=SMALL)
    assert peak.fitness == peak.best.sim.peak_memory.max()
