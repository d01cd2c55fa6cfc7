"""Kahn's topological sort with node priorities (Algorithm 3 of the MTPP paper).

Among the nodes whose producers are all placed, the one with the highest priority
goes next (a max-heap); equal priorities go to the smaller node index, so the
order is a deterministic function of the priorities.  ``O(n log n + m)``.
Every topological order is reachable: :func:`priorities_for` gives the priorities
that reproduce a given order (the construction in the proof of Theorem 4.3).
"""

from __future__ import annotations

import numpy as np

from mtpp.core.graph import Graph
from mtpp.core.jit import njit


@njit(cache=True, inline="always")
def _before(prio: np.ndarray, a: int, b: int) -> bool:
    """Whether node ``a`` leaves the heap before node ``b``."""
    return prio[a] > prio[b] or (prio[a] == prio[b] and a < b)


@njit(cache=True, inline="always")
def _push(heap: np.ndarray, size: int, prio: np.ndarray, v: int) -> int:
    """Insert node ``v`` into the binary heap of ``size`` nodes; the new size."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if _before(prio, v, heap[p]):
            heap[i] = heap[p]
            i = p
        else:
            break
    heap[i] = v
    return size + 1


@njit(cache=True)
def kahn_kernel(succ_ptr: np.ndarray, succ_idx: np.ndarray, indeg0: np.ndarray, prio: np.ndarray) -> np.ndarray:
    """Algorithm 3 on CSR arrays; ``indeg0`` is each node's in-degree."""
    n = indeg0.shape[0]
    indeg = indeg0.copy()
    heap = np.empty(n, dtype=np.int64)
    size = 0
    order = np.empty(n, dtype=np.int64)
    for v in range(n):
        if indeg[v] == 0:
            size = _push(heap, size, prio, v)
    t = 0
    while size > 0:
        u = heap[0]
        order[t] = u
        t += 1
        size -= 1
        last = heap[size]
        # sift the last element down from the root
        i = 0
        while True:
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and _before(prio, heap[c + 1], heap[c]):
                c += 1
            if _before(prio, heap[c], last):
                heap[i] = heap[c]
                i = c
            else:
                break
        if size > 0:
            heap[i] = last
        for e in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ_idx[e]
            indeg[v] -= 1
            if indeg[v] == 0:
                size = _push(heap, size, prio, v)
    return order


def in_degrees(graph: Graph) -> np.ndarray:
    """In-degree of every node, from the CSR arrays."""
    return np.diff(graph.pred_ptr).astype(np.int64)


def kahn_order(graph: Graph, priorities: np.ndarray | None = None) -> np.ndarray:
    """The topological order Kahn's algorithm picks with these node priorities
    (higher first; ties by smaller index).  ``None`` means all equal: index order."""
    prio = np.zeros(graph.n) if priorities is None else np.asarray(priorities, dtype=np.float64)
    if prio.shape != (graph.n,):
        raise ValueError(f"priorities has shape {prio.shape}; expected ({graph.n},)")
    return kahn_kernel(graph.succ_ptr, graph.succ_idx, in_degrees(graph), prio)


def priorities_for(order: np.ndarray) -> np.ndarray:
    """Priorities in ``[0, 1]`` under which Kahn's algorithm returns ``order`` exactly
    (earlier position -> higher priority), for any topological ``order``."""
    n = len(order)
    prio = np.empty(n, dtype=np.float64)
    prio[np.asarray(order)] = (n - np.arange(n)) / n
    return prio
