"""The placement oracle: a plain-Python simulator that replays the memory events one by one
in exact rational arithmetic, and the brute-force optima (makespan and peak memory) over
all placements and priority orders."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import networkx as nx
import numpy as np

from mtpp.core.device_sets import DeviceSet
from mtpp.core.graph import Graph

TRANSFER = -1  # a transfer's completion comes before every op's events at one instant
ALLOCATE, FREE = 0, 1


@dataclass(frozen=True)
class Replay:
    """One placement replayed: the float makespan and start / end times (computed with
    the simulator's own float operations, which define the event order), the makespan
    in exact arithmetic (true delays ``bytes / bandwidth + latency``) and each device's
    peak in exact arithmetic."""

    makespan: float
    start: list[float]
    end: list[float]
    exact_makespan: Fraction
    peaks: list[Fraction]


def replay(graph: Graph, devices: DeviceSet, place: list[int], order: list[int], times: Any = None) -> Replay:
    """The rules of :mod:`mtpp.core.simulator`, straight: the time loop, then
    every memory event listed with its key ``(time, rank, kind)``, sorted, and replayed
    one at a time per device with exact sums."""
    t_table = devices.times(graph) if times is None else np.asarray(times, dtype=np.float64)
    inv, lat = devices.link_arrays()
    n, d = graph.n, devices.d
    out = [float(x) for x in graph.size_out]
    param = [float(x) for x in graph.size_param]
    preds = {v: [int(u) for u in graph.predecessors(v)] for v in range(n)}
    succs = {v: [int(w) for w in graph.successors(v)] for v in range(n)}

    def comm(u: int, a: int, b: int) -> float:  # the simulator's float operations
        return 0.0 if a == b else out[u] * float(inv[a][b]) + float(lat[a][b])

    def exact_comm(u: int, a: int, b: int) -> Fraction:
        if a == b:
            return Fraction(0)
        bw = float(devices.bandwidth[a][b])
        return (Fraction(0) if bw == float("inf") else Fraction(out[u]) / Fraction(bw)) + Fraction(
            float(devices.latency[a][b])
        )

    start: dict[int, float] = {}
    end: dict[int, float] = {}
    free = [0.0] * d
    xend: dict[int, Fraction] = {}
    xfree = [Fraction(0)] * d
    for v in order:
        b = place[v]
        t, xt = free[b], xfree[b]
        for u in preds[v]:
            t = max(t, end[u] + comm(u, place[u], b))
            xt = max(xt, xend[u] + exact_comm(u, place[u], b))
        start[v], end[v] = t, t + float(t_table[v][b])
        free[b] = end[v]
        xend[v] = xt + Fraction(float(t_table[v][b]))
        xfree[b] = xend[v]

    pos = {v: i for i, v in enumerate(order)}
    events: list[tuple[int, float, int, int, float]] = []  # device, time, rank, kind, bytes
    for v in range(n):
        events.append((place[v], start[v], pos[v], ALLOCATE, param[v]))
        events.append((place[v], end[v], pos[v], FREE, -param[v]))
    for u in range(n):
        a = place[u]
        conditions = [(end[u], pos[u])]  # u itself has ended
        for w in succs[u]:
            if place[w] == a:
                conditions.append((end[w], pos[w]))  # a local consumer has ended
            else:
                conditions.append((end[u] + comm(u, a, place[w]), TRANSFER))  # a transfer has completed
        t, r = max(conditions)
        events.append((a, start[u], pos[u], ALLOCATE, out[u]))
        events.append((a, t, r, FREE, -out[u]))
        for b in sorted({place[w] for w in succs[u]} - {a}):
            t, r = max((end[w], pos[w]) for w in succs[u] if place[w] == b)
            events.append((b, end[u], pos[u], ALLOCATE, out[u]))  # the transfer starts
            events.append((b, t, r, FREE, -out[u]))
    peaks = []
    for dev in range(d):
        live = best = Fraction(0)
        for event in sorted(e for e in events if e[0] == dev):
            live += Fraction(event[4])
            best = max(best, live)
        peaks.append(best)
    return Replay(
        max(end.values(), default=0.0),
        [start[v] for v in range(n)],
        [end[v] for v in range(n)],
        max(xend.values(), default=Fraction(0)),
        peaks,
    )


def slow_simulate(
    graph: Graph, devices: DeviceSet, place: list[int], order: list[int], times: Any = None
) -> tuple[float, list[float]]:
    """Makespan and per-device peak memory (the exact peaks rounded to floats) of
    :func:`replay`."""
    r = replay(graph, devices, place, order, times)
    return r.makespan, [float(p) for p in r.peaks]


def _orders(graph: Graph) -> list[list[int]]:
    """Every topological order, in networkx's order (the optima keep the first placement
    and order that reach them)."""
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.n))
    g.add_edges_from((int(u), int(v)) for u, v in zip(graph.edge_src, graph.edge_dst))
    return [list(o) for o in nx.all_topological_sorts(g)]


def _optimum(
    graph: Graph, devices: DeviceSet, objective: str, memory: bool, run: Any
) -> tuple[float, tuple[int, ...], list[int]]:
    cap = [dev.memory for dev in devices.devices]
    best: tuple[float, tuple[int, ...], list[int]] = (np.inf, (), [])
    orders = _orders(graph)
    for place in itertools.product(range(devices.d), repeat=graph.n):
        for order in orders:
            if run is None:
                mk, peaks = slow_simulate(graph, devices, list(place), order)
                fits = all(p <= c for p, c in zip(peaks, cap))
            else:
                r = run.run(np.array(place, dtype=np.int64), np.array(order, dtype=np.int64))
                mk, peaks, fits = r.makespan, r.peak_memory.tolist(), r.memory_feasible
            if memory and not fits:
                continue
            value = mk if objective == "runtime" else max(peaks)
            if value < best[0]:
                best = (value, place, order)
    return best


def brute_force(
    graph: Graph, devices: DeviceSet, memory: bool = False, run: Any = None
) -> tuple[float, tuple[int, ...], list[int]]:
    """The smallest simulated makespan over every placement and every topological
    order (memory-feasible ones only if ``memory``): (makespan, placement, order).
    ``run``: a :class:`PlacementContext` to simulate with instead of
    :func:`slow_simulate` (faster; the two are checked equal in test_simulator)."""
    return _optimum(graph, devices, "runtime", memory, run)


def brute_force_peak(
    graph: Graph, devices: DeviceSet, memory: bool = False, run: Any = None
) -> tuple[float, tuple[int, ...], list[int]]:
    """The smallest simulated peak memory (the largest per-device peak) over every
    placement and every topological order (memory-feasible ones only if ``memory``):
    (peak, placement, order); ``run`` as in :func:`brute_force`."""
    return _optimum(graph, devices, "peak_memory", memory, run)


def rechecked(graph: Graph, devices: Any, device: Any, order: Any, times: Any = None) -> tuple[float, list[float]]:
    """What :func:`mtpp.place` reports for a placement: its re-simulated makespan and
    per-device peaks, each rounded upwards by the simulator's error bound."""
    from mtpp.core.result import upper_rounded
    from mtpp.core.simulator import PlacementContext

    ctx = PlacementContext(graph, devices, times)
    place = np.asarray(device, dtype=np.int64)
    sim = ctx.run(place, np.asarray(order, dtype=np.int64))
    peaks = [upper_rounded(float(p), float(e)) for p, e in zip(sim.peak_memory, sim.peak_error)]
    return upper_rounded(sim.makespan, ctx.makespan_error(place, sim.makespan)), peaks


@dataclass(frozen=True)
class Optima:
    """The exact optima of one tiny instance over every placement and priority order
    (:func:`exact_optima`): the makespan and the peak over all placements, and over the
    placements whose exact peaks fit every device (``None`` when none fits)."""

    makespan: Fraction
    peak: Fraction
    feasible_makespan: Fraction | None
    feasible_peak: Fraction | None
    visited: int

    def of(self, objective: str, feasible: bool) -> Fraction | None:
        """The optimum of ``objective`` (``"runtime"`` or ``"peak_memory"``), over the
        memory-feasible placements if ``feasible``."""
        if objective == "runtime":
            return self.feasible_makespan if feasible else self.makespan
        return self.feasible_peak if feasible else self.peak


def fits(devices: DeviceSet, peaks: list[Fraction]) -> bool:
    """Whether exact per-device peaks fit every device's memory."""
    return all(p <= Fraction(dev.memory) for p, dev in zip(peaks, devices.devices) if dev.memory != float("inf"))


def exact_optima(graph: Graph, devices: DeviceSet, times: Any = None, check: Any = None) -> Optima:
    """:func:`replay` every placement and topological order in exact arithmetic and keep
    the optima (:class:`Optima`); ``check(place, order, replay)`` is called on each."""
    best: dict[str, Fraction | None] = {"mk": None, "pk": None, "fmk": None, "fpk": None}

    def keep(key: str, value: Fraction) -> None:
        old = best[key]
        best[key] = value if old is None else min(old, value)

    visited = 0
    orders = _orders(graph)
    for place in itertools.product(range(devices.d), repeat=graph.n):
        for order in orders:
            visited += 1
            r = replay(graph, devices, list(place), order, times)
            if check is not None:
                check(place, order, r)
            peak = max(r.peaks)
            keep("mk", r.exact_makespan)
            keep("pk", peak)
            if fits(devices, r.peaks):
                keep("fmk", r.exact_makespan)
                keep("fpk", peak)
    mk, pk = best["mk"], best["pk"]
    assert mk is not None and pk is not None
    return Optima(mk, pk, best["fmk"], best["fpk"], visited)
