"""Placement baselines: every op on one device, and HEFT (Topcuoglu et al. 2002).

Each method returns a :class:`PlacementCandidate`: a placement (device index per op),
a priority order (a topological order) and its simulation by
:mod:`mtpp.core.simulator`, which is the only judge of makespan and memory.

HEFT, as used here:

* **upward rank with mean costs**: ``rank(v) = mean_j time(v, j) + max_{w in succ(v)}
  (cbar(v) + rank(w))``, where ``cbar(v)`` is the transfer time of ``v``'s output
  averaged over the ordered pairs of *distinct* devices (0 on one device);
* the priority order is Kahn's algorithm with ``rank`` as priority (higher first), so it
  is topological even when zero-time ops tie;
* each op in that order goes to the device with the **earliest finish time, without
  insertion**: it is appended after the ops already on the device, exactly as the
  simulator runs them, so HEFT's own finish times are the simulated ones.  Ties go to
  the lower device index.  ``O(n log n + m d)``.

HEFT ignores memory; the simulation reports whether its placement fits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heuristics.kahn import in_degrees, kahn_kernel
from mtpp.core.jit import njit
from mtpp.core.simulator import PlacementContext, SimResult, ready_time


@dataclass(frozen=True)
class PlacementCandidate:
    """A placement, its priority order, its simulation and the method that made it."""

    method: str
    place: np.ndarray
    order: np.ndarray
    sim: SimResult


def evaluate(ctx: PlacementContext, method: str, place: np.ndarray, order: np.ndarray) -> PlacementCandidate:
    """Simulate and wrap (``place`` and ``order`` are trusted)."""
    place = np.ascontiguousarray(place, dtype=np.int64)
    order = np.ascontiguousarray(order, dtype=np.int64)
    return PlacementCandidate(method, place, order, ctx.run(place, order))


def single_device(ctx: PlacementContext, device: int) -> PlacementCandidate:
    """Every op on ``device``, in the graph's topological order."""
    g = ctx.graph
    return evaluate(ctx, f"single:{ctx.devices.names[device]}", np.full(g.n, device), g.topological_order)


def all_single_devices(ctx: PlacementContext) -> list[PlacementCandidate]:
    """:func:`single_device` for each device."""
    return [single_device(ctx, j) for j in range(ctx.d)]


def upward_rank(ctx: PlacementContext) -> np.ndarray:
    """HEFT's upward rank with mean run times and mean transfer times."""
    g, d = ctx.graph, ctx.d
    wbar = ctx.times.mean(axis=1)
    if d > 1:
        off = ~np.eye(d, dtype=bool)
        cbar = g.size_out * ctx.inv_bw[off].mean() + ctx.lat[off].mean()
    else:
        cbar = np.zeros(g.n)
    rank = wbar.copy()
    for v in g.topological_order[::-1]:
        succ = g.succ_idx[g.succ_ptr[v] : g.succ_ptr[v + 1]]
        if succ.size:
            rank[v] = wbar[v] + cbar[v] + rank[succ].max()
    return rank


@njit(cache=True)
def _eft_assign(
    order: np.ndarray,
    times: np.ndarray,
    size_out: np.ndarray,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    inv_bw: np.ndarray,
    lat: np.ndarray,
) -> np.ndarray:
    """Earliest-finish-time device per op, ops taken in ``order``, no insertion."""
    n, d = times.shape
    place = np.empty(n, dtype=np.int64)
    end = np.empty(n, dtype=np.float64)
    free = np.zeros(d, dtype=np.float64)
    for k in range(n):
        v = order[k]
        best_b = 0
        best_f = np.inf
        for b in range(d):
            t = ready_time(v, b, free[b], pred_ptr, pred_idx, place, end, size_out, inv_bw, lat)
            f = t + times[v, b]
            if f < best_f:
                best_f = f
                best_b = b
        place[v] = best_b
        end[v] = best_f
        free[best_b] = best_f
    return place


def heft(ctx: PlacementContext) -> PlacementCandidate:
    """HEFT without insertion (see the module docstring)."""
    g = ctx.graph
    order = kahn_kernel(g.succ_ptr, g.succ_idx, in_degrees(g), upward_rank(ctx))
    place = _eft_assign(order, ctx.times, g.size_out, g.pred_ptr, g.pred_idx, ctx.inv_bw, ctx.lat)
    return evaluate(ctx, "heft", place, order)
