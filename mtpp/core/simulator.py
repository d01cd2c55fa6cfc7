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

**Memory** (per device, the conventions of :mod:`mtpp.core.memory` in continuous time).
Buffers are allocated and freed at *events*; ``pos(v)`` is ``v``'s position in ``sigma``:

* ``size_param(v)`` and ``v``'s output are allocated on ``p(v)`` at ``start(v)``, the
  parameters freed at ``end(v)``;
* the output of ``u`` is freed on ``p(u)`` when its last local consumer has ended and
  every transfer out of it has completed (and ``u`` itself has ended);
* its copy on another device ``b`` is allocated when the transfer starts (``u``'s end)
  and freed when the last consumer on ``b`` ends.

Each event has a key ``(time, rank, kind)``: an event of op ``v`` (its start, its end,
or the start of a transfer out of it) has rank ``pos(v)``; the completion of a
transfer has rank ``-1``; ``kind`` puts allocations before frees.  A buffer freed by
several conditions is freed at the *largest* key among them.  Per device the events
run in key order, and the peak is the largest running sum of the bytes they allocate
and free.  So at one instant, the ops that end or start there take their turns in
``sigma`` order, each allocating (output, parameters) before freeing (its parameters,
the inputs it was the last local consumer of); a transfer that completes there frees
its source copy before any of them.  **An op's inputs stay allocated while its output
is written, whatever its duration (zero included)**: an input's free key is at least
``(end(v), pos(v), free)``, above ``v``'s allocation ``(start(v), pos(v), allocate)``,
and every input arrived (its allocation key is at most ``(start(v), pos(u), allocate)``
with ``pos(u) < pos(v)``).  Hence on every device and placement the peak is at least
``size_out(v) + size_param(v) + sum_{u in pred(v)} size_out(u)`` for each ``v``
there, the bound of :func:`mtpp.core.memory.local_lower_bound`.  On one device the key
order is exactly step order (step ``k``'s allocation, then its frees, then step ``k +
1``'s allocation, even where times tie), so the peak is exactly
:func:`mtpp.core.memory.peak_memory` of ``sigma``, zero-time ops included.

A device whose peak, rounded up by its error bound, exceeds its capacity makes the
placement memory-infeasible; ``overflow`` is the sum over devices of the excess.

**Rounding**.  The event *order* is that of the simulated float times (the
simulator defines it); everything else is judged against exact real arithmetic on the
data (the time table, ``size_out``, bandwidths, latencies, sizes):

* the makespan is a maximum over chains of sums of non-negative terms: one rounding per
  op on the chain (``end = start + time``) and four per transfer (``1 / bandwidth``,
  the product with the bytes, the latency, the arrival), at most ``5n`` in all, so it is
  within ``gamma(5n)`` of the exact value relative to itself (Higham, Lemma 3.1; a
  maximum adds no error): :meth:`PlacementContext.makespan_error` is ``gamma(5n + 5)``
  times the makespan, or 0 when every term the placement uses is computed exactly and
  lies on one power-of-two grid fine enough for all its sums
  (:func:`mtpp.core.memory.exact_on_grid`);
* each device's peak is a running sum of ``E`` signed sizes whose exact partial sums are
  live memories, at least 0 and at most the exact peak ``P``: each rounding errs by at
  most ``u`` times that (plus the error so far), so every partial sum, and the peak, is
  within ``gamma(E) P`` of the truth and ``SimResult.peak_error = 2 gamma(E) peak``
  bounds it (0 when :func:`mtpp.core.memory.sums_are_exact`: a device holds each tensor at
  most once, so its partial sums stay below the total of all sizes).  Each device's
  running sum is its own, so a 1e12 tensor on one device does not blur another's 1e-3.

The time loop is compiled with numba (``O(n + m)``); memory builds the ``O(n + m)``
events with vectorised numpy, sorts them by ``(device, time, 2 rank + kind)`` with one
``lexsort`` and sweeps them with a compiled running sum per device
(:func:`device_peaks`): ``O((n + m) log(n + m))``.
``tests/oracle/placement.py`` holds a slow reference that replays the events one by
one in exact rational arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mtpp.core.device_sets import DeviceSet
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.jit import njit
from mtpp.core.memory import check_order, exact_on_grid, sums_are_exact
from mtpp.core.rounding import gamma


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


@njit(cache=True)
def device_peaks(dev: np.ndarray, delta: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The largest running sum of ``delta`` per device (at least 0), the sum restarted
    at each device (``dev`` sorted), and the number of events per device."""
    peak = np.zeros(d, dtype=np.float64)
    counts = np.zeros(d, dtype=np.int64)
    run = 0.0
    last = -1
    for i in range(dev.shape[0]):
        j = dev[i]
        if j != last:
            run = 0.0
            last = j
        run += delta[i]
        counts[j] += 1
        if run > peak[j]:
            peak[j] = run
    return peak, counts


@dataclass(frozen=True)
class SimResult:
    """One simulated placement: makespan, per-op start/end times, per-device peak
    memory (bytes) and a bound on each peak's rounding error (module docstring),
    whether every peak fits its device, and the total excess."""

    makespan: float
    start: np.ndarray
    end: np.ndarray
    peak_memory: np.ndarray
    memory_feasible: bool
    overflow: float
    transfers: int
    transfer_bytes: float
    peak_error: np.ndarray


TRANSFER_RANK = -1
"""The rank of a transfer's completion among the events of one instant: before every op's."""
ALLOCATE, FREE = 0, 1


class PlacementContext:
    """The arrays of one (graph, device set) pair, computed once and reused for many
    placements (HEFT, BRKGA, brute force).  ``times`` overrides the device set's
    ``n x d`` time table."""

    def __init__(self, graph: Graph, devices: str | DeviceSet, times: np.ndarray | None = None) -> None:
        self.graph = graph
        from mtpp.core.presets import get_devices  # the registry imports this package

        self.devices = get_devices(devices)
        self.d = self.devices.d
        t = self.devices.times(graph) if times is None else np.asarray(times, dtype=np.float64)
        if t.shape != (graph.n, self.d):
            raise InvalidParameterError(f"times has shape {t.shape}; expected ({graph.n}, {self.d})")
        if not np.all(np.isfinite(t) & (t >= 0)):
            raise InvalidParameterError("times must be finite and >= 0")
        self.times = t
        self.inv_bw, self.lat = self.devices.link_arrays()
        bw = np.array(self.devices.bandwidth, dtype=np.float64)
        # 1 / bandwidth is exact for an infinite bandwidth (0) or a power of two
        self.inv_exact = (self.inv_bw == 0) | (np.isfinite(bw) & (np.frexp(bw)[0] == 0.5))
        self.capacity = self.devices.memory_array()
        self.src = graph.edge_src
        self.dst = graph.edge_dst
        self.sizes_exact = sums_are_exact(graph)

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
            return SimResult(makespan, start, end, peak, True, 0.0, n_tr, tr_bytes, np.zeros(self.d))
        peak, err = self._peaks(place, order, start, end, remote)
        # feasible only if the exact peak fits: the computed one rounded up by its error
        upper = np.where(err > 0, np.nextafter(peak + err, np.inf), peak)
        over = np.maximum(upper - self.capacity, 0.0)
        overflow = float(over.sum())
        return SimResult(makespan, start, end, peak, overflow == 0.0, overflow, n_tr, tr_bytes, err)

    def makespan_error(self, place: np.ndarray, makespan: float) -> float:
        """A bound on ``|makespan - exact makespan|`` for the makespan that :meth:`run`
        computed for ``place`` (module docstring, "Rounding"): 0 when every term the
        placement uses (its ops' times, the delays of its transfers) is computed
        exactly (``1 / bandwidth`` exact, the product with the bytes exact, the latency
        added exactly) and all of them lie on one power-of-two grid fine enough for
        their total; else ``gamma(5n + 5) makespan``.  ``O(n + m)``."""
        g = self.graph
        if not math.isfinite(makespan) or makespan <= 0:
            return 0.0
        rough = gamma(5 * g.n + 5) * makespan
        dur = self.times[np.arange(g.n), place]
        remote = place[self.src] != place[self.dst]
        rs, a, b = self.src[remote], place[self.src[remote]], place[self.dst[remote]]
        if not np.all(self.inv_exact[a, b]):
            return rough
        inv = self.inv_bw[a, b]
        size = g.size_out[rs]
        prod = size * inv
        if np.any((inv > 0) & (prod / np.where(inv > 0, inv, 1.0) != size)):  # under/overflow
            return rough
        lat = self.lat[a, b]
        delay = prod + lat
        back = delay - prod
        if np.any((prod - (delay - back)) + (lat - back) != 0):  # Knuth's two-sum: the sum was rounded
            return rough
        terms = np.concatenate([dur, delay])
        return 0.0 if exact_on_grid(terms, float(terms.sum()) * (1.0 + 2.0**-20)) else rough

    def _peaks(
        self, place: np.ndarray, order: np.ndarray, start: np.ndarray, end: np.ndarray, remote: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-device peaks and their error bounds: the event sweep of the module docstring."""
        g, d = self.graph, self.d
        src, dst = self.src, self.dst
        pos = np.empty(g.n, dtype=np.int64)
        pos[order] = np.arange(g.n)
        loc = ~remote
        ls, ld = src[loc], dst[loc]
        rs, rd = src[remote], dst[remote]
        arrive = end[rs] + self.comm(rs, place[rs], place[rd])
        # own output of u: freed at the largest key of its end, its local consumers' ends
        # and its transfers' completions (largest time first, then the largest rank there)
        rel_t = end.copy()
        np.maximum.at(rel_t, ls, end[ld])
        np.maximum.at(rel_t, rs, arrive)
        rel_r = np.where(end == rel_t, pos, TRANSFER_RANK - 1)
        hit = end[ld] == rel_t[ls]
        np.maximum.at(rel_r, ls[hit], pos[ld[hit]])
        np.maximum.at(rel_r, rs[arrive == rel_t[rs]], TRANSFER_RANK)
        # copies on other devices: one per (tensor, destination device), freed at the
        # largest key of the consumers' ends there
        keys, inv = np.unique(rs * d + place[rd], return_inverse=True)
        inv = inv.reshape(-1)
        copy_t = np.full(keys.size, -np.inf)
        np.maximum.at(copy_t, inv, end[rd])
        copy_r = np.full(keys.size, TRANSFER_RANK - 1, dtype=np.int64)
        hit = end[rd] == copy_t[inv]
        np.maximum.at(copy_r, inv[hit], pos[rd[hit]])
        cu = keys // d
        # intervals: parameters, own outputs, copies
        dev = np.concatenate([place, place, keys % d])
        a_t = np.concatenate([start, start, end[cu]])
        a_r = np.concatenate([pos, pos, pos[cu]])
        f_t = np.concatenate([end, rel_t, copy_t])
        f_r = np.concatenate([pos, rel_r, copy_r])
        size = np.concatenate([g.size_param, g.size_out, g.size_out[cu]])
        keep = size > 0
        dev, a_t, a_r, f_t, f_r, size = dev[keep], a_t[keep], a_r[keep], f_t[keep], f_r[keep], size[keep]
        k = size.size
        ev_dev = np.concatenate([dev, dev])
        ev_t = np.concatenate([a_t, f_t])
        # rank and kind in one key: allocations (kind 0) before frees (kind 1) of one rank
        ev_rk = 2 * np.concatenate([a_r, f_r]) + np.repeat(np.array([ALLOCATE, FREE], dtype=np.int64), k)
        ev_delta = np.concatenate([size, -size])
        idx = np.lexsort((ev_rk, ev_t, ev_dev))
        peak, counts = device_peaks(ev_dev[idx], ev_delta[idx], d)
        if self.sizes_exact:
            return peak, np.zeros(d)
        return peak, np.array([2.0 * gamma(int(c)) for c in counts]) * peak


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
