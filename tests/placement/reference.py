"""Slow, obviously-correct references for the placement tests: a plain-Python
simulator and the brute-force optimum over all placements and priority orders."""

from __future__ import annotations

import itertools
from typing import Any

import networkx as nx
import numpy as np

from mtpp.graph import Graph
from mtpp.placement.devices import DeviceSet


def slow_simulate(graph: Graph, devices: DeviceSet, place: list[int], order: list[int]) -> tuple[float, list[float]]:
    """Makespan and per-device peak memory, straight from the rules in
    :mod:`mtpp.placement.simulator`, with no arrays and no sorting tricks."""
    times = devices.times(graph)
    n, d = graph.n, devices.d
    preds = {v: [int(u) for u in graph.predecessors(v)] for v in range(n)}
    succs = {v: [int(w) for w in graph.successors(v)] for v in range(n)}

    def comm(u: int, a: int, b: int) -> float:
        if a == b:
            return 0.0
        return float(graph.size_out[u]) / devices.bandwidth[a][b] + devices.latency[a][b]

    start: dict[int, float] = {}
    end: dict[int, float] = {}
    free = [0.0] * d
    for v in order:
        b = place[v]
        t = free[b]
        for u in preds[v]:
            t = max(t, end[u] + comm(u, place[u], b))
        start[v], end[v] = t, t + float(times[v][b])
        free[b] = end[v]
    intervals: list[tuple[int, float, float, float]] = []  # device, from, to, bytes
    for u in range(n):
        a = place[u]
        intervals.append((a, start[u], end[u], float(graph.size_param[u])))
        release = end[u]
        for w in succs[u]:
            release = max(release, end[w] if place[w] == a else end[u] + comm(u, a, place[w]))
        intervals.append((a, start[u], release, float(graph.size_out[u])))
        for b in {place[w] for w in succs[u]} - {a}:
            last = max(end[w] for w in succs[u] if place[w] == b)
            intervals.append((b, end[u], last, float(graph.size_out[u])))
    peaks = []
    for dev in range(d):
        mine = [iv for iv in intervals if iv[0] == dev]
        best = 0.0
        for _, t, _, _ in mine:
            live = sum(sz for _, s, e, sz in mine if s <= t < e or s == e == t)
            best = max(best, live)
        peaks.append(best)
    return max(end.values()), peaks


def topological_orders(graph: Graph) -> list[list[int]]:
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.n))
    g.add_edges_from((int(u), int(v)) for u, v in zip(graph.edge_src, graph.edge_dst))
    return [list(o) for o in nx.all_topological_sorts(g)]


def brute_force(
    graph: Graph, devices: DeviceSet, memory: bool = False, run: Any = None
) -> tuple[float, tuple[int, ...], list[int]]:
    """The smallest simulated makespan over every placement and every topological
    order (memory-feasible ones only if ``memory``): (makespan, placement, order).
    ``run``: a :class:`PlacementContext` to simulate with instead of
    :func:`slow_simulate` (faster; the two are checked equal in test_simulator)."""
    cap = [dev.memory for dev in devices.devices]
    best: tuple[float, tuple[int, ...], list[int]] = (np.inf, (), [])
    orders = topological_orders(graph)
    for place in itertools.product(range(devices.d), repeat=graph.n):
        for order in orders:
            if run is None:
                mk, peaks = slow_simulate(graph, devices, list(place), order)
            else:
                r = run.run(np.array(place, dtype=np.int64), np.array(order, dtype=np.int64))
                mk, peaks = r.makespan, r.peak_memory.tolist()
            if memory and any(p > c for p, c in zip(peaks, cap)):
                continue
            if mk < best[0]:
                best = (mk, place, order)
    return best
