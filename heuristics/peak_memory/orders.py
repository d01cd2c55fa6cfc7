"""Peak-memory topological orders: the compiled evaluator and the order baselines.

The objective is Eq. (1) of the Topoformer paper with the step memory of Eq. (15),
``M_t = I_{t-1} + m(sigma_t) + p(sigma_t)`` and ``I_t`` of Eq. (3): while the op at
step ``t`` runs, memory holds every live output tensor (its inputs, its own output,
and every earlier tensor with a consumer at or after ``t``) plus the op's parameters.
A tensor is freed after the step of its last consumer; a tensor without consumers
(a sink's output) lives during its own step only.  See :mod:`mtpp.core.memory` for the
independent vectorised evaluator; the kernel here is the one the searches call.

Baselines (Topoformer Section 5, Table 1):

* ``dfs`` / ``bfs``: depth-/breadth-first Kahn (:mod:`heuristics.traversal`);
* ``random-T``: T random topological orders (Kahn with i.i.d. uniform priorities),
  the best kept (the paper's "Random order" is random-100);
* ``brkga``: BRKGA (:mod:`heuristics.brkga`) over node priorities decoded by Kahn's
  algorithm (Algorithm 3 of the MTPP paper) and scored by the peak, seeded with the
  priorities of given orders so it never does worse than them.

All are seeded and reproducible.  Every order is ``O(n log n + m)`` to decode and
``O(n + m)`` to score, so a 1000-node graph takes milliseconds per order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from heuristics.brkga import BrkgaParams, Progress, brkga
from heuristics.kahn import in_degrees, kahn_kernel, priorities_for
from heuristics.traversal import bfs_order, dfs_order
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.jit import njit

RANDOM_BATCH = 64


@njit(cache=True)
def order_peak_kernel(order, succ_ptr, pred_ptr, pred_idx, size_out, size_param, upper_bound):
    """Peak of Eq. (1)/(15) for one order, ``O(n + m)``; ``inf`` as soon as it reaches
    ``upper_bound`` (values below it are exact).

    Keeps the live memory ``I_{t-1}`` and each tensor's count of consumers still to
    run: step ``t`` uses ``I_{t-1} + size_out(v) + size_param(v)``; afterwards a
    producer whose last consumer was ``v`` is freed, and ``v``'s output stays only if
    it has consumers.
    """
    n = order.shape[0]
    remaining = np.empty(n, dtype=np.int64)
    for v in range(n):
        remaining[v] = succ_ptr[v + 1] - succ_ptr[v]
    live = 0.0
    peak = 0.0
    for t in range(n):
        v = order[t]
        mem = live + size_out[v] + size_param[v]
        if mem > peak:
            peak = mem
            if peak >= upper_bound:
                return np.inf
        live = after_step(v, live, remaining, pred_ptr, pred_idx, size_out)
    return peak


@njit(cache=True, inline="always")
def after_step(v, live, remaining, pred_ptr, pred_idx, size_out):
    """The live memory ``I_t`` of Eq. (3) once op ``v`` has run, from ``live`` =
    ``I_{t-1}``: each input whose last consumer ``v`` was is freed (``remaining`` counts
    each tensor's consumers still to run, updated here), and ``v``'s output stays only
    if it has consumers."""
    for e in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred_idx[e]
        remaining[u] -= 1
        if remaining[u] == 0:
            live -= size_out[u]
    if remaining[v] > 0:
        live += size_out[v]
    return live


@njit(cache=True)
def batch_peak_kernel(keys, succ_ptr, succ_idx, pred_ptr, pred_idx, indeg, size_out, size_param, upper_bound):
    """BRKGA decoder: each row of ``keys`` is a priority vector; Kahn's algorithm
    turns it into an order and the order is scored by its peak (``inf`` at or above
    ``upper_bound``)."""
    fit = np.empty(keys.shape[0])
    for i in range(keys.shape[0]):
        order = kahn_kernel(succ_ptr, succ_idx, indeg, keys[i])
        fit[i] = order_peak_kernel(order, succ_ptr, pred_ptr, pred_idx, size_out, size_param, upper_bound)
    return fit


def order_peak(graph: Graph, order: np.ndarray, upper_bound: float = math.inf) -> float:
    """Peak memory of a topological ``order`` of node indices (no validation: use
    :func:`mtpp.core.memory.peak_memory` on untrusted input)."""
    g = graph
    return float(
        order_peak_kernel(
            np.asarray(order, dtype=np.int64),
            g.succ_ptr,
            g.pred_ptr,
            g.pred_idx,
            g.size_out,
            g.size_param,
            float(upper_bound),
        )
    )


def decode_peaks(graph: Graph, keys: np.ndarray, upper_bound: float = math.inf) -> np.ndarray:
    """Peaks of the Kahn orders of a batch of priority vectors (rows of ``keys``)."""
    g = graph
    return batch_peak_kernel(
        np.ascontiguousarray(keys, dtype=np.float64),
        g.succ_ptr,
        g.succ_idx,
        g.pred_ptr,
        g.pred_idx,
        in_degrees(g),
        g.size_out,
        g.size_param,
        float(upper_bound),
    )


@dataclass(frozen=True)
class OrderResult:
    """An order of node indices, its peak, and how many orders were scored."""

    order: np.ndarray
    peak: float
    evaluations: int = 1
    stopped_by_time: bool = False


def traversal_order(graph: Graph, kind: str) -> OrderResult:
    """The depth-first (``kind="dfs"``) or breadth-first (``"bfs"``) Kahn order."""
    if kind not in ("dfs", "bfs"):
        raise InvalidParameterError(f"traversal kind must be 'dfs' or 'bfs', got {kind!r}")
    order = dfs_order(graph) if kind == "dfs" else bfs_order(graph)
    return OrderResult(order, order_peak(graph, order))


def random_orders(graph: Graph, count: int = 100, seed: int = 0) -> OrderResult:
    """Best of ``count`` random topological orders (random-T, Topoformer Table 1):
    Kahn's algorithm with i.i.d. uniform priorities, decoded in batches."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise InvalidParameterError(f"count must be an integer >= 1, got {count!r}")
    rng = np.random.default_rng(seed)
    best_keys, best = None, math.inf
    done = 0
    while done < count:
        keys = rng.random((min(RANDOM_BATCH, count - done), graph.n))
        fit = decode_peaks(graph, keys, best)
        i = int(np.argmin(fit))
        if best_keys is None or fit[i] < best:
            best, best_keys = float(fit[i]), keys[i].copy()
        done += len(keys)
    assert best_keys is not None
    order = kahn_order_of(graph, best_keys)
    return OrderResult(order, order_peak(graph, order), evaluations=count)


def kahn_order_of(graph: Graph, priorities: np.ndarray) -> np.ndarray:
    """Kahn's order for ``priorities`` (higher first, ties to the smaller index)."""
    return kahn_kernel(graph.succ_ptr, graph.succ_idx, in_degrees(graph), np.asarray(priorities, dtype=np.float64))


def brkga_order(
    graph: Graph,
    params: BrkgaParams | None = None,
    seed: int = 0,
    initial_orders: list[np.ndarray] | None = None,
    time_limit: float | None = None,
    progress: Progress | None = None,
) -> OrderResult:
    """BRKGA over priorities with the peak objective (population x generations from
    ``params``, default 50 x 100).  ``initial_orders`` (e.g. the dfs, bfs and beam
    orders) seed the first population through :func:`heuristics.kahn.priorities_for`,
    which Kahn decodes back to exactly those orders, so the result is never worse
    than the best of them."""
    p = params or BrkgaParams(population=50, generations=100)
    seeds = [dfs_order(graph), bfs_order(graph), *(initial_orders or [])]
    initial = np.vstack([priorities_for(np.asarray(o, dtype=np.int64)) for o in seeds])[: p.population]

    def decode(keys: np.ndarray, ub: float) -> np.ndarray:
        return decode_peaks(graph, keys, ub)

    res = brkga(decode, graph.n, p, seed=seed, initial=initial, time_limit=time_limit, progress=progress)
    order = kahn_order_of(graph, res.keys)
    return OrderResult(order, order_peak(graph, order), res.evaluations, res.stopped_by_time)
