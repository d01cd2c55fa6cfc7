"""The minimum-peak topological order as a cumulative scheduling model (no solver here).

Topoformer Eq. (1)-(3) and (15): choose a topological order minimising the largest
step memory.  As a constraint model over integer positions (one op per time step):

    p_v in {a_v, ..., n - 1 - d_v}                    position of op v; a_v / d_v = number
                                                      of its ancestors / descendants
    all_different(p)                                  one op per step
    p_u + 1 <= p_v                   for (u, v) in E  topological
    e_u = max_{w in succ(u)} p_w     (u with consumers)   last step that reads u's output
    tensor interval  [p_u, e_u + 1)  demand size_out(u)   (sinks: [p_u, p_u + 1))
    op interval      [p_v, p_v + 1)  demand size_param(v) (parameters only while v runs)
    cumulative(all intervals) <= C
    C >= L                                            redundant: L = max of the local bound
                                                      max_v (size_out(v) + size_param(v)
                                                      + sum_{u in pred(v)} size_out(u)) and
                                                      any proven bound from another method
    C <= U                                            optional: the peak of a known order
    minimise C

At step ``t`` the tensors whose interval covers ``t`` are exactly the live tensors of
Eq. (3) plus the op's own output (Eq. 2), so ``C`` at the optimum is the minimum peak.

Constraint solvers need integer demands: sizes are multiplied by ``scale`` (the
smallest power of ten that makes them all integers, up to ``10^6``); when no such
scale exists the scaled sizes are rounded *down*, so every order's model peak is at
most ``scale`` times its true peak and the model's proven bound divided by ``scale``
stays a valid lower bound (``exact`` is then false and an order's peak must be
re-evaluated with the true sizes).

The model is a plain data record: :mod:`formulations.cpsat_schedule` turns it into a
CP-SAT model.  It is not a MILP, so it does not go through :class:`solvers.Model`
(a linear encoding of the cumulative constraint needs ``O(n^2)`` binaries).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mtpp.graph import Graph

MAX_TOTAL = 2**50  # keeps every sum of demands far from int64 overflow
MAX_DECIMALS = 6


@dataclass(frozen=True)
class ScheduleModel:
    """Integer data of the model in the module docstring (arrays indexed by node)."""

    n: int
    edge_src: np.ndarray
    edge_dst: np.ndarray
    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    out_demand: np.ndarray  # int64: size_out * scale (rounded down unless exact)
    param_demand: np.ndarray  # int64: size_param * scale
    earliest: np.ndarray  # int64: number of ancestors (smallest possible position)
    latest: np.ndarray  # int64: n - 1 - number of descendants
    scale: float
    exact: bool
    lower_bound: int  # redundant C >= lower_bound (model units)
    upper_bound: int | None  # C <= upper_bound (model units), if given

    def to_size(self, capacity: float) -> float:
        """A capacity in model units as memory (a valid lower bound when ``capacity``
        is a proven bound of the model)."""
        return capacity / self.scale

    def positions(self, order: np.ndarray) -> np.ndarray:
        """``p`` of a topological order (node indices)."""
        pos = np.empty(self.n, dtype=np.int64)
        pos[np.asarray(order, dtype=np.int64)] = np.arange(self.n)
        return pos

    def ends(self, pos: np.ndarray) -> np.ndarray:
        """``e`` for positions ``pos``: the last consumer's position, ``p_u`` for sinks."""
        end = pos.copy()
        np.maximum.at(end, self.edge_src, pos[self.edge_dst])
        return end

    def capacity(self, order: np.ndarray) -> int:
        """The model's peak (in model units) of a topological order."""
        pos = self.positions(order)
        end = self.ends(pos)
        delta = np.zeros(self.n + 1, dtype=np.int64)
        np.add.at(delta, pos, self.out_demand)
        np.add.at(delta, end + 1, -self.out_demand)
        use = np.cumsum(delta)[: self.n]
        use[pos] += self.param_demand
        return int(use.max())


def integer_scale(values: np.ndarray) -> tuple[float, bool]:
    """The smallest ``10^k`` (``k <= 6``) making ``values`` integral without passing
    ``MAX_TOTAL``; otherwise a power-of-two scale for flooring (second item false)."""
    total = float(np.sum(values)) if values.size else 0.0
    for k in range(MAX_DECIMALS + 1):
        s = 10.0**k
        x = values * s
        if total * s >= MAX_TOTAL:
            break
        if np.all(np.abs(x - np.round(x)) <= 1e-9 * np.maximum(1.0, np.abs(x))):
            return s, True
    s = 2.0 ** math.floor(math.log2(MAX_TOTAL / max(total, 1.0)))
    return s, False


def _ancestor_counts(graph: Graph, order: np.ndarray, reverse: bool) -> np.ndarray:
    """Number of ancestors (or descendants, ``reverse``) of each node, with Python
    ints as bitsets: ``O(n m / 64)``."""
    n = graph.n
    ptr, idx = (graph.succ_ptr, graph.succ_idx) if reverse else (graph.pred_ptr, graph.pred_idx)
    sets = [0] * n
    for v in (order[::-1] if reverse else order).tolist():
        acc = 0
        for u in idx[ptr[v] : ptr[v + 1]].tolist():
            acc |= sets[u] | (1 << u)
        sets[v] = acc
    return np.array([s.bit_count() for s in sets], dtype=np.int64)


def local_bound_units(graph: Graph, out: np.ndarray, param: np.ndarray) -> np.ndarray:
    """Per node ``out(v) + param(v) + sum_{u in pred(v)} out(u)``: the memory of v's own
    step whatever the order (its inputs and output are live, its parameters loaded)."""
    inputs = np.zeros_like(out)
    np.add.at(inputs, graph.edge_dst, out[graph.edge_src])
    return out + param + inputs


def build_schedule(graph: Graph, lower_bound: float = 0.0, upper_bound: float | None = None) -> ScheduleModel:
    """The model of the module docstring for ``graph``.  ``lower_bound`` (a proven
    bound from elsewhere, in memory units) and ``upper_bound`` (the peak of a known
    order) become the redundant rows ``C >= L`` and ``C <= U``."""
    scale, exact = integer_scale(np.concatenate([graph.size_out, graph.size_param]))
    if exact:
        out = np.round(graph.size_out * scale).astype(np.int64)
        param = np.round(graph.size_param * scale).astype(np.int64)
    else:
        out = np.floor(graph.size_out * scale).astype(np.int64)
        param = np.floor(graph.size_param * scale).astype(np.int64)
    order = graph.topological_order
    lb = int(local_bound_units(graph, out, param).max())
    if lower_bound > 0:
        # OPT >= lower_bound, and the model optimum is at most scale * OPT (equal when exact)
        scaled = lower_bound * scale
        lb = max(lb, math.ceil(scaled - 1e-9 * max(1.0, scaled)) if exact else math.floor(scaled))
    ub = None if upper_bound is None or math.isinf(upper_bound) else math.ceil(upper_bound * scale + 1e-6)
    if ub is not None:
        lb = min(lb, ub)
    n = graph.n
    return ScheduleModel(
        n=n,
        edge_src=graph.edge_src,
        edge_dst=graph.edge_dst,
        succ_ptr=graph.succ_ptr,
        succ_idx=graph.succ_idx,
        out_demand=out,
        param_demand=param,
        earliest=_ancestor_counts(graph, order, reverse=False),
        latest=n - 1 - _ancestor_counts(graph, order, reverse=True),
        scale=scale,
        exact=exact,
        lower_bound=lb,
        upper_bound=ub,
    )
