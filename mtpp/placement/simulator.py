"""The placement cost model (REGAL App. A.1): makespan and per-device peak memory.

Input: a placement ``p`` (op -> device index) and a priority order ``sigma`` (a
topological order of the ops, e.g. Kahn's algorithm on the REGAL priorities).

**Time.**  Ops are dispatched in the order ``sigma``.  Each device runs its own ops one
at a time, in the order they appear in ``sigma`` (no overtaking), each as soon as the
device is free and its inputs are present::

    start(v) = max(free[p(v)], max_{u in pred(v)} arrival(u, p(v)))
    end(v)   = start(v) + time(v, p(v))
    arrival(u, b) = end(u)                                            if p(u) == b
                  = end(u) + size_out(u) / bandwidth[p(u)][b] + latency[p(u)][b]  otherwise

**Transfers.**  The output of ``u`` is sent *once* to every other device that holds a
consumer of ``u``, however many consumers are there.  The transfer starts the moment
``u`` ends and is synchronous for the consumer: no consumer on ``b`` starts before the
whole tensor has arrived.  It blocks *neither* device's compute: each device has a
copy engine of its own and links have no contention (the delay model of HEFT).  So a
transfer is exactly a delay on the edge, which is what :mod:`formulations.placement`
models, and the two agree on every placement and per-device order.

**Memory** (per device, the conventions of :mod:`mtpp.memory` in continuous time):

* ``size_param(v)`` is held on ``p(v)`` while ``v`` runs: ``[start(v), end(v))``;
* the output of ``u`` is held on ``p(u)`` from ``start(u)`` until its last local
  consumer ends and every transfer out of it has finished (at least until ``end(u)``);
* its copy on another device ``b`` is held from ``end(u)`` (the buffer is allocated
  when the transfer starts) until the last consumer on ``b`` ends;
* at equal times, buffers released at ``t`` are freed before those allocated at ``t``
  are counted; a zero-length interval counts at its instant.

On one device this gives exactly :func:`mtpp.memory.peak_memory` of ``sigma`` (for
ops of positive time).  A device whose peak exceeds its capacity makes the placement
memory-infeasible; ``overflow`` is the sum over devices of the excess in bytes.

The time loop is compiled with numba (``O(n + m)``); memory is a vectorised sweep over
``O(n + m)`` intervals.  ``tests/placement/reference.py`` holds a slow reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtpp.errors import InvalidParameterError
from mtpp.graph import Graph
from mtpp.jit import njit
from mtpp.memory import check_order
from mtpp.placement.devices import DeviceSet


@njit(cache=True, inline="always")
def ready_time(v, b, free_b, pred_ptr, pred_idx, place, end, size_out, inv_bw, lat):
    """Earliest start of op ``v`` on device ``b``: the device is free at ``free_b`` and
    each input arrives when its producer ends, plus ``bytes / bandwidth + latency`` if
    the producer sits on another device (the transfer rule above)."""
    t = free_b
    for e in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred_idx[e]
        a = place[u]
        arr = end[u]
        if a != b:
            arr += size_out[u] * inv_bw[a, b] + lat[a, b]
        if arr > t:
            t = arr
    return t


@njit(cache=True)
def simulate_times(
    order: np.ndarray,
    place: np.ndarray,
    dur: np.ndarray,
    size_out: np.ndarray,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    inv_bw: np.ndarray,
    lat: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Start and end time of every op (the time rules above); ``dur[v]`` is the time
    of ``v`` on its device.  Trusts its input: ``order`` is topological."""
    n = order.shape[0]
    d = inv_bw.shape[0]
    start = np.empty(n, dtype=np.float64)
    end = np.empty(n, dtype=np.float64)
    free = np.zeros(d, dtype=np.float64)
    for k in range(n):
        v = order[k]
        b = place[v]
        t = ready_time(v, b, free[b], pred_ptr, pred_idx, place, end, size_out, inv_bw, lat)
        start[v] = t
        end[v] = t + dur[v]
        free[b] = end[v]
    return start, end


@dataclass(frozen=True)
class SimResult:
    """One simulated placement: makespan, per-op start/end times, per-device peak
    memory (bytes), whether every peak fits its device, and the total excess."""

    makespan: float
    start: np.ndarray
    end: np.ndarray
    peak_memory: np.ndarray
    memory_feasible: bool
    overflow: float
    transfers: int
    transfer_bytes: float


class PlacementContext:
    """The arrays of one (graph, device set) pair, computed once and reused for many
    placements (HEFT, BRKGA, brute force).  ``times`` overrides the device set's
    ``n x d`` time table."""

    def __init__(self, graph: Graph, devices: str | DeviceSet, times: np.ndarray | None = None) -> None:
        self.graph = graph
        from mtpp.presets import get_devices  # the registry imports this package

        self.devices = get_devices(devices)
        self.d = self.devices.d
        t = self.devices.times(graph) if times is None else np.asarray(times, dtype=np.float64)
        if t.shape != (graph.n, self.d):
            raise InvalidParameterError(f"times has shape {t.shape}; expected ({graph.n}, {self.d})")
        if not np.all(np.isfinite(t) & (t >= 0)):
            raise InvalidParameterError("times must be finite and >= 0")
        self.times = t
        self.inv_bw, self.lat = self.devices.link_arrays()
        self.capacity = self.devices.memory_array()
        self.src = graph.edge_src
        self.dst = graph.edge_dst

    def comm(self, u: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Transfer time of the outputs of ``u`` from devices ``a`` to ``b`` (0 if equal)."""
        return self.graph.size_out[u] * self.inv_bw[a, b] + self.lat[a, b]

    def check_placement(self, placement: object) -> np.ndarray:
        """``placement`` as an int64 array of device indices, checked."""
        p = np.asarray(placement)
        if p.shape != (self.graph.n,) or not (p.size == 0 or np.issubdtype(p.dtype, np.integer)):
            raise InvalidParameterError(f"placement must be {self.graph.n} device indices, got {p.shape} {p.dtype}")
        bad = np.flatnonzero((p < 0) | (p >= self.d))
        if bad.size:
            v = int(bad[0])
            raise InvalidParameterError(
                f"op {self.graph.ids[v]!r} is placed on device {int(p[v])}; devices are 0..{self.d - 1}"
            )
        return p.astype(np.int64)

    def run(self, place: np.ndarray, order: np.ndarray, memory: bool = True) -> SimResult:
        """Simulate (trusting ``place`` and ``order``; :func:`simulate` checks them)."""
        g = self.graph
        dur = self.times[np.arange(g.n), place]
        start, end = simulate_times(order, place, dur, g.size_out, g.pred_ptr, g.pred_idx, self.inv_bw, self.lat)
        makespan = float(end.max()) if g.n else 0.0
        remote = place[self.src] != place[self.dst]
        pairs = np.unique(self.src[remote] * self.d + place[self.dst[remote]])
        n_tr = int(pairs.size)
        tr_bytes = float(g.size_out[pairs // self.d].sum()) if n_tr else 0.0
        if not memory:
            peak = np.zeros(self.d)
            return SimResult(makespan, start, end, peak, True, 0.0, n_tr, tr_bytes)
        peak = self._peaks(place, start, end, remote)
        over = np.maximum(peak - self.capacity, 0.0)
        overflow = float(over.sum())
        return SimResult(makespan, start, end, peak, overflow == 0.0, overflow, n_tr, tr_bytes)

    def _peaks(self, place: np.ndarray, start: np.ndarray, end: np.ndarray, remote: np.ndarray) -> np.ndarray:
        g, d = self.graph, self.d
        src, dst = self.src, self.dst
        # output of u on its own device: until the last local consumer and every send ends
        release = end.copy()
        loc = ~remote
        np.maximum.at(release, src[loc], end[dst[loc]])
        rs, rd = src[remote], dst[remote]
        arrive = end[rs] + self.comm(rs, place[rs], place[rd])
        np.maximum.at(release, rs, arrive)
        # copies on other devices: one per (tensor, destination device)
        keys, inv = np.unique(rs * d + place[rd], return_inverse=True)
        copy_end = np.full(keys.size, -np.inf)
        np.maximum.at(copy_end, inv.reshape(-1), end[rd])
        cu = keys // d
        dev = np.concatenate([place, place, keys % d])
        s = np.concatenate([start, start, end[cu]])
        e = np.concatenate([end, release, copy_end])
        size = np.concatenate([g.size_param, g.size_out, g.size_out[cu]])
        keep = size > 0
        dev, s, e, size = dev[keep], s[keep], e[keep], size[keep]
        point = e <= s
        # kinds at equal (device, time): 0 = free of an interval, 1 = allocation, 2 = free of a point
        ev_dev = np.concatenate([dev, dev])
        ev_t = np.concatenate([s, np.where(point, s, e)])
        ev_kind = np.concatenate([np.ones(s.size, np.int64), np.where(point, 2, 0)])
        ev_delta = np.concatenate([size, -size])
        idx = np.lexsort((ev_kind, ev_t, ev_dev))
        running = np.cumsum(ev_delta[idx])
        peak = np.zeros(d)
        alloc = ev_kind[idx] == 1
        np.maximum.at(peak, ev_dev[idx][alloc], running[alloc])
        return peak


def simulate(
    graph: Graph,
    devices: str | DeviceSet | PlacementContext,
    placement: object,
    order: object | None = None,
) -> SimResult:
    """Simulate ``placement`` (device index per op) with priority order ``order`` (a
    topological order of node indices; default: the graph's own) on ``devices`` (a
    preset name, a :class:`DeviceSet`, or a prepared :class:`PlacementContext`)."""
    ctx = devices if isinstance(devices, PlacementContext) else PlacementContext(graph, devices)
    if ctx.graph is not graph:
        raise InvalidParameterError("the PlacementContext was built for another graph")
    place = ctx.check_placement(placement)
    sigma = graph.topological_order if order is None else check_order(graph, order)
    return ctx.run(place, np.ascontiguousarray(sigma, dtype=np.int64))
