"""Classic topological orders: depth-first and breadth-first Kahn.

Both run Kahn's algorithm with a dynamic rule instead of fixed priorities: BFS takes
the ready node released earliest (a FIFO queue), DFS the one released latest (a
stack), so DFS finishes a branch before starting the next, keeping a producer and
its consumers close together.  Ties among the initial sources go to the smaller
index.  ``O(n + m)``.
"""

from __future__ import annotations

import numpy as np

from heuristics.kahn import kahn_order, priorities_for
from mtpp.core.graph import Graph
from mtpp.core.jit import njit


@njit(cache=True, nogil=True)
def kahn_with_kernel(pred_ptr, succ_ptr, succ_idx, lifo):
    """Kahn's algorithm taking the ready node released latest (``lifo``: a stack) or
    earliest (a FIFO queue); the sources start in index order, the smallest first out,
    and a node's released successors enter in their order (on a stack the first
    released comes out first).  ``O(n + m)``."""
    n = pred_ptr.shape[0] - 1
    indeg = np.empty(n, dtype=np.int64)
    for v in range(n):
        indeg[v] = pred_ptr[v + 1] - pred_ptr[v]
    ready = np.empty(n, dtype=np.int64)
    head, tail = 0, 0  # the queue is ready[head:tail]; the stack ready[:tail], top last
    for v in range(n - 1, -1, -1) if lifo else range(n):
        if indeg[v] == 0:
            ready[tail] = v
            tail += 1
    order = np.empty(n, dtype=np.int64)
    for t in range(n):
        if lifo:
            tail -= 1
            u = ready[tail]
        else:
            u = ready[head]
            head += 1
        order[t] = u
        lo, hi = succ_ptr[u], succ_ptr[u + 1]
        for e in range(hi - 1, lo - 1, -1) if lifo else range(lo, hi):
            v = succ_idx[e]
            indeg[v] -= 1
            if indeg[v] == 0:
                ready[tail] = v
                tail += 1
    return order


def _kahn_with(graph: Graph, lifo: bool) -> np.ndarray:
    return kahn_with_kernel(graph.pred_ptr, graph.succ_ptr, graph.succ_idx, lifo)


def dfs_order(graph: Graph) -> np.ndarray:
    """Depth-first topological order (Kahn with a stack)."""
    return _kahn_with(graph, lifo=True)


def bfs_order(graph: Graph) -> np.ndarray:
    """Breadth-first topological order (Kahn with a FIFO queue)."""
    return _kahn_with(graph, lifo=False)


def classic_priorities(graph: Graph) -> np.ndarray:
    """Priorities (one row each) whose Kahn orders are the kahn, dfs and bfs orders:
    the seeds of a BRKGA's first population, so it never does worse than those."""
    return np.vstack([priorities_for(o) for o in (kahn_order(graph), dfs_order(graph), bfs_order(graph))])
