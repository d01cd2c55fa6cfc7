"""Classic topological orders: depth-first and breadth-first Kahn.

Both run Kahn's algorithm with a dynamic rule instead of fixed priorities: BFS takes
the ready node released earliest (a FIFO queue), DFS the one released latest (a
stack), so DFS finishes a branch before starting the next, keeping a producer and
its consumers close together.  Ties among the initial sources go to the smaller
index.  ``O(n + m)``.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from heuristics.kahn import kahn_order, priorities_for
from mtpp.graph import Graph


def _kahn_with(graph: Graph, lifo: bool) -> np.ndarray:
    indeg = np.diff(graph.pred_ptr).tolist()
    succ_ptr, succ_idx = graph.succ_ptr.tolist(), graph.succ_idx.tolist()
    ready = deque(i for i in range(graph.n) if indeg[i] == 0)
    if lifo:
        ready.reverse()
    order = []
    while ready:
        u = ready.pop() if lifo else ready.popleft()
        order.append(u)
        released = []
        for v in succ_idx[succ_ptr[u] : succ_ptr[u + 1]]:
            indeg[v] -= 1
            if indeg[v] == 0:
                released.append(v)
        # with a stack, reversing makes the smallest released index come out first
        ready.extend(reversed(released) if lifo else released)
    return np.array(order, dtype=np.int64)


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
