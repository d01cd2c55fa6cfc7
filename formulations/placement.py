"""Joint placement and scheduling as a constraint model (no solver here).

For ops ``v``, devices ``j`` and edges ``(u, v)`` (time in integer model units)::

    x[v, j] in {0, 1},  sum_j x[v, j] = 1                 op v runs on device j
    optional interval [s_v, s_v + dur[v, j]) present iff x[v, j];  e_v = its end
    no_overlap(intervals of device j)              for each j     one op at a time
    s_v >= e_u                                     for (u, v) in E
    s_v >= e_u + delay[(u, v), a, b]   if x[u, a] and x[v, b], a != b   transfer
    C >= e_v for all v;   minimise C

``delay[(u, v), a, b] = size_out(u) / bandwidth[a][b] + latency[a][b]``: the delay
semantics of :mod:`mtpp.core.simulator` (a transfer starts when its producer
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
interval that starts at ``s_u`` (own device) or somewhere in ``[e_u, s_w]`` for every
consumer ``w`` on ``b`` (a copy: allocated at the latest when its first consumer there
starts) and ends at or after every local consumer's end and, on ``u``'s own device,
every transfer's arrival.  Here the model may also *delay* an op to save memory, which
the simulator (earliest starts) cannot: with memory the model is a lower bound on the
best simulated makespan, not equal.  ``allowed[v, j]`` is false where ``v``'s own
inputs, output and parameters exceed ``j``'s capacity: they are all live on ``j``
while ``v`` runs there (:mod:`mtpp.core.simulator`), zero-time ops included.

**Integers**.  Every time datum ``x`` (the time table, the float transfer
delays ``d^`` computed as the simulator computes them) becomes ``floor(scale x - eta)``,
at least 0, with ``scale`` a power of two (:func:`power_of_two_scale`: the grid of
the data when they all lie on one fine enough for every sum the simulator forms, then
``exact`` is true, every float sum of the simulator is exact and ``eta = 0``; else
``scale M`` about ``2^50``, ``M`` the sum over ops of the slowest time and over edges
of the slowest delay, an upper bound on every simulated time).  Multiplying by a power
of two is exact, so every model datum is at most ``scale x``.  ``eta`` is 0 without
memory; with memory and inexact data ``eta = 2 u scale M`` (``u = 2^-53``, ``eta <=
1/4``), the most that one float addition of the simulator can fall short of its exact
sum, in model units.  Bytes likewise become ``floor(mem_scale x)`` and capacities
``ceil(mem_scale c)`` with a power-of-two ``mem_scale`` (``-1``, unlimited, for a
capacity that the total of all sizes cannot reach).  Why the model is a relaxation:

* *Without memory*: take any placement and priority order, and its list schedule in
  exact arithmetic on the float data (``t``, ``d^``); the same sequences in model units
  start every op no later than ``scale`` times that (induction along the order: every
  datum is at most ``scale`` times its float), so the model optimum is at most
  ``scale`` times the exact-arithmetic makespan of every placement, which is within
  ``gamma(5n)`` of both its simulated float makespan and its makespan with the true
  delays ``bytes / bandwidth + latency``
  (:mod:`mtpp.core.simulator`, "Rounding").
* *With memory*: map a memory-feasible simulated schedule (float times ``s^``, ``e^``;
  its exact peaks, the running sums of its event sweep in exact arithmetic, fit)
  by ``phi(x) = floor(scale x)``: ``s'_v = phi(s^_v)``, ``e'_v = s'_v + dur'_v``.  A float
  addition falls short of its sum by at most ``eta / scale``, so ``floor(a) + floor(b)
  <= floor(a + b)`` gives ``e'_v <= phi(e^_v)`` and ``s'_w >= e'_u + delay'`` for every
  edge and device successor: the model's precedences, no-overlaps and the makespan
  ``<= phi(simulated makespan)`` hold.  Every model interval then lies inside ``[phi(a),
  phi(b))`` for the simulator's allocation and free times ``a <= b`` of the same buffer
  (a copy starts at ``phi(e^_u)``, which the free start allows), and an integer ``t``
  lies in ``[phi(a), phi(b))`` iff ``a < (t + 1) / scale <= b``: the buffers the model
  counts at ``t`` are live in the simulator after every event before ``(t + 1) /
  scale``, a prefix of its sweep, so their bytes are at most its exact peak, at most
  the capacity, and their model bytes at most ``mem_scale`` times that, at most the
  model capacity.  (With memory the model's optimum is at most ``scale`` times the
  simulated makespan of every memory-feasible placement.)

So a proven model bound ``B`` gives ``OPT >= (B / scale) / (1 + gamma(5n + 5))``, for
the optimum in exact arithmetic and for the simulated one (:meth:`PlacementModel.proven_bound`).
With positive times and without memory the model optimum is ``scale OPT`` when ``exact``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mtpp.core.memory import exact_on_grid
from mtpp.core.rounding import UNIT, gamma, lower_by
from mtpp.core.simulator import PlacementContext

MAX_TOTAL = 2.0**50
"""The largest model horizon or byte total: far from int64 overflow in every sum."""


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
        """Model time units to graph time units (``units / scale``; not a proven bound
        by itself: :meth:`proven_bound`)."""
        return units / self.scale

    def to_units(self, t: np.ndarray) -> np.ndarray:
        """Graph times to model units (rounded down; used for hints only)."""
        return np.floor(np.asarray(t) * self.scale).astype(np.int64)

    def proven_bound(self, units: float) -> float:
        """A proven lower bound on the optimum makespan (exact arithmetic, and
        simulated) from a proven bound ``units`` of the model: ``units / scale`` (exact:
        ``scale`` is a power of two) lowered by ``gamma(5n + 5)`` (module docstring)
        with :func:`mtpp.core.rounding.lower_by`, which also absorbs a subnormal quotient's
        rounding; 0 for a bound that is not finite or not positive."""
        if not math.isfinite(units) or units <= 0:
            return 0.0
        return lower_by(units / self.scale, gamma(5 * self.n + 5), 0.0)


def power_of_two_scale(values: np.ndarray, magnitude: float) -> tuple[float, bool]:
    """A power of two ``s`` for the data ``values`` (non-negative, finite) whose sums
    reach at most ``magnitude``: the grid ``2^-k`` of the values (every value an integer
    multiple of ``2^k``) with ``exact`` true when ``magnitude`` is at most ``2^52 2^k``
    (every float sum of them is then exact, :func:`mtpp.core.memory.exact_on_grid`) and
    ``s magnitude`` at most :data:`MAX_TOTAL`; else ``2^floor(log2(MAX_TOTAL /
    magnitude))`` (at most ``2^50`` for magnitudes below 1), ``exact`` false."""
    x = np.abs(np.asarray(values, dtype=np.float64).ravel())
    x = x[x > 0]
    top = max(float(magnitude), 1.0)
    if x.size and exact_on_grid(x, magnitude):
        mantissa, exponent = np.frexp(x)
        digits = (mantissa * 2.0**53).astype(np.int64)
        k = int((exponent - 53 + np.frexp((digits & -digits).astype(np.float64))[1] - 1).min())
        if math.ldexp(float(magnitude), -k) <= MAX_TOTAL:
            return math.ldexp(1.0, -k), True
    if not x.size:
        return 1.0, True
    return math.ldexp(1.0, math.floor(math.log2(MAX_TOTAL / top))), False


def _floored(values: np.ndarray, scale: float, eta: float) -> np.ndarray:
    """``max(0, floor(scale x - eta))`` for each ``x`` (``scale`` a power of two, so
    ``scale x`` and its fractional part are exact)."""
    y = np.asarray(values, dtype=np.float64) * scale
    f = np.floor(y)
    return np.maximum(f - (y - f < eta), 0).astype(np.int64)


def build_placement(ctx: PlacementContext, memory: bool = False, upper_bound: float | None = None) -> PlacementModel:
    """The model for ``ctx``'s graph and devices.  ``upper_bound`` (the simulated
    makespan of a placement, memory-feasible if ``memory``) caps the horizon: the image
    of an optimal placement (module docstring) ends by ``scale`` times it."""
    g, d = ctx.graph, ctx.d
    src, dst = g.edge_src, g.edge_dst
    delay = g.size_out[src][:, None, None] * ctx.inv_bw[None] + ctx.lat[None]  # m x d x d, the simulator's floats
    off = ~np.eye(d, dtype=bool)
    slow_delay = delay[:, off].max(axis=1) if delay.size and d > 1 else np.zeros(g.m)
    total = (float(ctx.times.max(axis=1).sum()) if g.n else 0.0) + float(slow_delay.sum())
    magnitude = total * (1.0 + 2.0**-20)  # at least the exact sum: a float sum of n + m terms
    used = delay[:, off] if d > 1 else np.zeros(0)
    scale, exact = power_of_two_scale(np.concatenate([ctx.times.reshape(-1), used.reshape(-1)]), magnitude)
    eta = 0.0 if (exact or not memory) else 2.0 * UNIT * scale * magnitude
    dur = _floored(ctx.times, scale, eta)
    dl = _floored(delay, scale, eta)
    dl[:, ~off] = 0
    horizon = math.ceil(scale * magnitude) + 1
    if upper_bound is not None and math.isfinite(upper_bound):
        horizon = min(horizon, math.ceil(scale * upper_bound * (1.0 + 2.0**-20)) + 1)
    sizes = np.concatenate([g.size_out, g.size_param])
    size_total = float(sizes.sum()) * (1.0 + 2.0**-20)
    mem_scale, _ = power_of_two_scale(sizes, 4.0 * size_total)
    out_b = _floored(g.size_out, mem_scale, 0.0)
    par_b = _floored(g.size_param, mem_scale, 0.0)
    cap = np.full(d, -1, dtype=np.int64)
    binding = np.isfinite(ctx.capacity) & (ctx.capacity < size_total)  # else no device can reach it
    cap[binding] = np.ceil(ctx.capacity[binding] * mem_scale).astype(np.int64)
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
    transfers, and the total fastest time spread evenly over the ``d`` devices.

    Rounding: both are float sums of at most ``n`` non-negative times, each within
    ``gamma(n)`` of its exact value relative to itself (Higham Eq. 4.4), the average
    one division more; so each is lowered by ``gamma(n + 1)`` with
    :func:`mtpp.core.rounding.lower_by` (whose ``4u`` takes the division) -- unless the
    times lie on one power-of-two grid fine enough for their total
    (:func:`mtpp.core.memory.exact_on_grid`), when the sums are exact and only the division
    is absorbed."""
    g = ctx.graph
    if g.n == 0:
        return 0.0
    fastest = ctx.times.min(axis=1)
    finish = fastest.copy()
    for v in g.topological_order:
        preds = g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]]
        if preds.size:
            finish[v] = fastest[v] + finish[preds].max()
    total = float(fastest.sum())
    rel = 0.0 if exact_on_grid(fastest, total * (1.0 + 2.0**-20)) else gamma(g.n + 1)
    path = float(finish.max())
    return max(path if rel == 0.0 else lower_by(path, rel, 0.0), lower_by(total / ctx.d, rel, 0.0))
