"""Joint placement and scheduling as a constraint model (no solver here).

For ops ``v``, devices ``j`` and edges ``(u, v)`` (time in integer model units)::

    x[v, j] in {0, 1},  sum_j x[v, j] = 1                 op v runs on device j
    optional interval [s_v, s_v + dur[v, j]) present iff x[v, j];  e_v = its end
    no_overlap(intervals of device j)              for each j     one op at a time
    s_v >= e_u                                     for (u, v) in E
    s_v >= e_u + delay[(u, v), a, b]   if x[u, a] and x[v, b], a != b   transfer
    C >= e_v for all v;   minimise C

``delay[(u, v), a, b] = size_out(u) / bandwidth[a][b] + latency[a][b]``: the delay
semantics of :mod:`mtpp.placement.simulator` (a transfer starts when its producer
ends and occupies no device).

**Relation to the simulator.**  Every simulated schedule is feasible here, so the model
optimum is <= the best simulated makespan over all placements and priority orders.
Conversely, when every op takes positive time, sorting any model schedule by start
time gives a topological priority order whose simulation starts every op no later
(induction along the order: same per-device sequences, earliest starts), so the two
optima are *equal*.  With zero-time ops the model may slip an op into another op's
run, which the in-order simulator cannot; the model is then a lower bound only.

**Memory** (``memory=True``), the simulator's lifetimes as one cumulative per device
of finite capacity: the parameters of ``v`` on ``v``'s interval; for every tensor
``u`` and device ``b`` holding it (``u`` runs there or a consumer does) an optional
interval from ``s_u`` (own device) or ``e_u`` (a copy) to an end ``>=`` every local
consumer's end and, on ``u``'s own device, every transfer's arrival.  Here the model
may also *delay* an op to save memory, which the simulator (earliest starts) cannot:
with memory the model is a lower bound on the best simulated makespan, not equal.

Integers: times are multiplied by ``scale`` (:func:`formulations.schedule.integer_scale`);
when that is inexact they are rounded *down*, bytes down and capacities up, so the
model is a relaxation and its proven bound divided by ``scale`` stays a valid lower
bound on the true optimum (``exact`` false).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from formulations.schedule import integer_scale
from mtpp.placement.simulator import PlacementContext


@dataclass(frozen=True)
class PlacementModel:
    """The model above as arrays: ``dur`` (n x d), ``delay`` (m x d x d, zero
    diagonal) and ``horizon`` in time units; bytes and capacities (``-1`` =
    unlimited) in memory units; ``allowed[v, j]`` is false where op ``v``'s own
    inputs, output and parameters exceed device ``j``'s capacity; ``topo_pos`` is each
    op's position in the graph's topological order (to break ties between starts)."""

    n: int
    d: int
    edge_src: np.ndarray
    edge_dst: np.ndarray
    dur: np.ndarray
    delay: np.ndarray
    horizon: int
    scale: float
    exact: bool
    memory: bool
    out_bytes: np.ndarray
    param_bytes: np.ndarray
    capacity: np.ndarray
    mem_scale: float
    allowed: np.ndarray
    topo_pos: np.ndarray

    def to_time(self, units: float) -> float:
        """Model time units to graph time units."""
        return units / self.scale

    def to_units(self, t: np.ndarray) -> np.ndarray:
        """Graph times to model units (rounded down; used for hints only)."""
        return np.floor(np.asarray(t) * self.scale + 1e-9).astype(np.int64)


def _scaled(values: np.ndarray, scale: float, exact: bool, up: bool = False) -> np.ndarray:
    x = values * scale
    if exact:
        return np.round(x).astype(np.int64)
    return (np.ceil(x) if up else np.floor(x)).astype(np.int64)


def build_placement(ctx: PlacementContext, memory: bool = False, upper_bound: float | None = None) -> PlacementModel:
    """The model for ``ctx``'s graph and devices.  ``upper_bound`` (a simulated
    makespan) caps the horizon."""
    g, d = ctx.graph, ctx.d
    src, dst = g.edge_src, g.edge_dst
    delay = g.size_out[src][:, None, None] * ctx.inv_bw[None] + ctx.lat[None]  # m x d x d
    scale, exact = integer_scale(np.concatenate([ctx.times.reshape(-1), delay.reshape(-1)]))
    dur = _scaled(ctx.times, scale, exact)
    dl = _scaled(delay, scale, exact)
    horizon = int(dur.max(axis=1).sum() + (dl.max(axis=(1, 2)).sum() if dl.size else 0))
    if upper_bound is not None and math.isfinite(upper_bound):
        horizon = min(horizon, math.ceil(upper_bound * scale + 1e-6))
    finite = np.isfinite(ctx.capacity)
    mem_scale, mem_exact = integer_scale(np.concatenate([g.size_out, g.size_param, ctx.capacity[finite]]))
    out_b = _scaled(g.size_out, mem_scale, mem_exact)
    par_b = _scaled(g.size_param, mem_scale, mem_exact)
    cap = np.full(d, -1, dtype=np.int64)
    cap[finite] = _scaled(ctx.capacity[finite], mem_scale, mem_exact, up=True)
    topo_pos = np.empty(g.n, dtype=np.int64)
    topo_pos[g.topological_order] = np.arange(g.n)
    allowed = np.ones((g.n, d), dtype=bool)
    if memory:
        inputs = np.zeros(g.n, dtype=np.int64)
        np.add.at(inputs, dst, out_b[src])
        local = out_b + par_b + inputs
        allowed = (cap[None, :] < 0) | (local[:, None] <= cap[None, :])
    return PlacementModel(
        n=g.n,
        d=d,
        edge_src=src,
        edge_dst=dst,
        dur=dur,
        delay=dl,
        horizon=horizon,
        scale=scale,
        exact=exact,
        memory=memory,
        out_bytes=out_b,
        param_bytes=par_b,
        capacity=cap,
        mem_scale=mem_scale,
        allowed=allowed,
        topo_pos=topo_pos,
    )


def simple_lower_bound(ctx: PlacementContext) -> float:
    """A bound on the makespan of every placement and schedule, in ``O(n + m)``: the
    larger of the critical path with every op at its fastest device time and free
    transfers, and the total fastest time spread evenly over the ``d`` devices."""
    g = ctx.graph
    fastest = ctx.times.min(axis=1)
    finish = fastest.copy()
    for v in g.topological_order:
        preds = g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]]
        if preds.size:
            finish[v] = fastest[v] + finish[preds].max()
    return float(max(finish.max(), fastest.sum() / ctx.d))
