"""Coarsening for placement: the coarse graph is an acyclic quotient of the fine one,
its weights are the documented sums, and coarse placements map back to valid fine
placements that the simulator re-checks."""

from __future__ import annotations

from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest

from heuristics.placement.baselines import heft
from heuristics.placement.coarsen import coarsen, default_target, refine_moves
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.presets import DEVICE_SETS as PRESETS
from mtpp.core.simulator import PlacementContext, simulate
from mtpp.generators import regal_graph
from mtpp.placement.api import place
from tests.heuristics.placement.test_baselines import random_dag
from tests.oracle.placement import rechecked


def layered(rng: np.random.Generator, layers: int, width: int, p: float = 0.5, skip: float = 0.05) -> Graph:
    """Complete-ish bipartite links between consecutive layers plus long skip edges:
    the shape on which simultaneous contractions most easily close a cycle."""
    n = layers * width
    edges = []
    for u in range(n):
        lu = u // width
        for v in range((lu + 1) * width, n):
            lv = v // width
            if (lv == lu + 1 and rng.random() < p) or (lv > lu + 1 and rng.random() < skip):
                edges.append((u, v))
    return Graph.from_arrays(rng.integers(1, 9, n), rng.integers(0, 4, n), rng.integers(1, 100, n), edges)


def check_quotient(g: Graph, target: int) -> None:
    co = coarsen(g, target)
    c, cl = co.graph, co.cluster
    # a surjection onto 0..nc-1
    assert cl.shape == (g.n,) and cl.min() == 0 and cl.max() == c.n - 1
    assert np.unique(cl).size == c.n
    # the coarse edges are exactly the quotient of the fine edges, and acyclic
    cross = cl[g.edge_src] != cl[g.edge_dst]
    want = set(zip(cl[g.edge_src[cross]].tolist(), cl[g.edge_dst[cross]].tolist(), strict=True))
    assert set(zip(c.edge_src.tolist(), c.edge_dst.tolist(), strict=True)) == want
    assert nx.is_directed_acyclic_graph(c.to_networkx())
    # weights: sums, and size_out counts exactly the members leaving the cluster (or sinks)
    assert np.allclose(c.work, np.bincount(cl, weights=g.work, minlength=c.n))
    assert np.allclose(c.size_param, np.bincount(cl, weights=g.size_param, minlength=c.n))
    out = np.zeros(c.n)
    for v in range(g.n):
        succ = g.successors(v)
        if succ.size == 0 or np.any(cl[succ] != cl[v]):
            out[cl[v]] += g.size_out[v]
    assert np.allclose(c.size_out, out)
    # each cluster is weakly connected
    for members in co.members():
        assert nx.is_weakly_connected(g.to_networkx().subgraph([g.ids[v] for v in members]))


def test_coarse_graph_acyclic_on_random_dags() -> None:
    rng = np.random.default_rng(0)
    for i in range(60):
        n = int(rng.integers(2, 60))
        g = random_dag(rng, n, float(rng.uniform(0.02, 0.5)))
        check_quotient(g, int(rng.integers(1, n + 1)))
        if i < 10:
            check_quotient(regal_graph(seed=i), 16)


def test_coarse_graph_acyclic_on_layered_graphs() -> None:
    rng = np.random.default_rng(1)
    for _ in range(15):
        g = layered(rng, int(rng.integers(3, 10)), int(rng.integers(2, 12)), float(rng.uniform(0.2, 0.9)))
        check_quotient(g, max(1, g.n // 6))


def test_target_size_reached_where_possible() -> None:
    chain = Graph.from_arrays([1] * 50, [0] * 50, [4] * 50, [(i, i + 1) for i in range(49)])
    for target in (1, 7, 25, 50, 80):
        assert coarsen(chain, target).graph.n == min(target, 50)
    g = random_dag(np.random.default_rng(3), 200, 0.05)
    assert nx.is_weakly_connected(g.to_networkx())
    for target in (20, 50, 100):
        assert coarsen(g, target).graph.n == target
    assert coarsen(g).graph.n == default_target(g.n)
    # no edges: nothing can be contracted
    free = Graph.from_arrays([1] * 5, [0] * 5, [1] * 5, [])
    assert coarsen(free, 2).graph.n == 5
    with pytest.raises(InvalidParameterError):
        coarsen(g, 0)


def test_two_thousand_ops_is_fast() -> None:
    import time

    g = random_dag(np.random.default_rng(4), 2000, 0.003)
    coarsen(g, 50)  # compile
    t0 = time.perf_counter()
    co = coarsen(g, 100)
    assert time.perf_counter() - t0 < 2.0 and co.graph.n <= 110


def test_mapped_back_placement_is_valid_and_rechecked() -> None:
    ds = PRESETS["cpu-igpu-dgpu"]
    rng = np.random.default_rng(5)
    for _ in range(8):
        g = layered(rng, 6, 8, 0.4)
        co = coarsen(g, 12)
        ctx = PlacementContext(g, ds)
        cctx = PlacementContext(co.graph, ds, co.times(ctx.times))
        # cluster times are member sums per device
        assert np.allclose(cctx.times.sum(axis=0), ctx.times.sum(axis=0))
        c = heft(cctx)
        fine_place, fine_order = co.expand(c.place), co.expand_order(c.order)
        assert np.all(fine_place == c.place[co.cluster])
        r = simulate(g, ds, fine_place, fine_order)  # validates the order is topological
        assert r.makespan > 0
        # the order keeps clusters contiguous in the coarse order
        rank = np.empty(co.graph.n, dtype=np.int64)
        rank[c.order] = np.arange(co.graph.n)
        assert np.all(np.diff(rank[co.cluster[fine_order]]) >= 0)
        # projecting the expansion gives back the coarse placement
        assert np.all(co.project(fine_place, ctx.times) == c.place)
        # refinement only improves, and stays a valid placement
        p2, _ = refine_moves(ctx, fine_place, fine_order, "runtime", time_limit=2.0)
        r2 = simulate(g, ds, p2, fine_order)
        assert r2.makespan <= r.makespan + 1e-9


@pytest.mark.parametrize("objective", ["runtime", "peak_memory"])
def test_place_coarse_brkga_is_rechecked_and_bounded(objective: str) -> None:
    g = regal_graph(seed=2)
    ds = PRESETS["two-devices"] if objective == "peak_memory" else PRESETS["cpu-igpu-dgpu"]
    p = place(g, ds, objective=objective, method="coarse-brkga", time_limit=1.0, coarse_target=20)
    assert p.method == "coarse-brkga" and set(p.candidates) == {"coarse-brkga"}
    r = simulate(g, ds, list(p.device), list(p.index_order))
    assert p.memory_feasible and r.memory_feasible
    makespan, peaks = rechecked(g, ds, p.device, p.index_order)  # rounded up by the simulator's error
    assert p.makespan == makespan >= r.makespan
    assert p.upper_bound == (makespan if objective == "runtime" else max(peaks))
    assert p.lower_bound <= p.upper_bound + 1e-9
    if objective == "runtime":
        # the proven bound is the original graph's, the same as for any other method
        q = place(g, ds, method="cpsat", time_limit=1.0, threads=1)
        assert p.lower_bound <= q.makespan + 1e-9


def test_auto_adds_coarse_brkga_on_large_graphs() -> None:
    g = random_dag(np.random.default_rng(6), 320, 0.01)
    p = place(g, "two-devices", method="auto", time_limit=2.0, threads=1, cpsat_max_ops=0)
    assert "coarse-brkga" in p.candidates and "brkga" in p.candidates
    small = place(random_dag(np.random.default_rng(6), 30, 0.1), "two-devices", time_limit=1.0, cpsat_max_ops=0)
    assert "coarse-brkga" not in small.candidates


def test_a_passed_deadline_stops_coarsening_before_its_first_round() -> None:
    """Issue 76: coarsening has a deadline; past it no round starts and the coarsening
    reached so far (here none: the graph itself) is returned, still a valid quotient."""
    import time

    g = random_dag(np.random.default_rng(6), 300, 0.02)
    co = coarsen(g, 20, deadline=time.perf_counter() - 1.0)
    assert co.rounds == 0 and co.graph.n == g.n
    assert sorted(co.cluster.tolist()) == list(range(g.n))
    assert co.graph.work.sum() == pytest.approx(g.work.sum())
    full = coarsen(g, 20, deadline=time.perf_counter() + 600.0)
    assert full.rounds > 0 and full.graph.n == coarsen(g, 20).graph.n  # a far deadline changes nothing


def test_a_deadline_met_mid_way_keeps_the_rounds_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock passes the deadline after two rounds: two rounds are kept."""
    import heuristics.placement.coarsen as module

    g = random_dag(np.random.default_rng(7), 400, 0.01)
    readings = iter([0.0, 0.0, 10.0])  # one reading before each round; the third is late
    clock = SimpleNamespace(perf_counter=lambda: next(readings, 10.0))
    monkeypatch.setattr(module, "time", clock)
    co = coarsen(g, 2, deadline=5.0)
    assert co.rounds == 2 and g.n > co.graph.n > 2
    assert sorted(set(co.cluster.tolist())) == list(range(co.graph.n))  # a surjection onto the coarse nodes
    assert nx.is_directed_acyclic_graph(nx.DiGraph(list(zip(co.graph.edge_src.tolist(), co.graph.edge_dst.tolist()))))
