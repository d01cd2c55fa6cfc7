"""Minimum linear arrangement objective over topological orders (App. C.1).

``h(pi) = sum_{(u, v) in E} w(u, v) |pi^-1(u) - pi^-1(v)|`` restricted to topological
orders (so ``pi^-1(v) > pi^-1(u)`` and the absolute value drops), with ``w = 1``
(``mla``) or ``w(u, v) = io(u, v) = size_out(u) / B`` (``mla-weighted``).  BRKGA
minimises it through Kahn decoding; the best order is then sliced by SliceGraph.
"""

from __future__ import annotations

import numpy as np

from heuristics.kahn import in_degrees, kahn_kernel
from mtpp.core.jit import njit
from mtpp.core.problem import Problem


@njit(cache=True)
def _mla_batch(keys, succ_ptr, succ_idx, indeg, edge_src, edge_dst, weights):
    n = indeg.shape[0]
    out = np.empty(keys.shape[0])
    pos = np.empty(n, dtype=np.int64)
    for c in range(keys.shape[0]):
        order = kahn_kernel(succ_ptr, succ_idx, indeg, keys[c])
        for i in range(n):
            pos[order[i]] = i
        total = 0.0
        for e in range(edge_src.shape[0]):
            total += weights[e] * (pos[edge_dst[e]] - pos[edge_src[e]])
        out[c] = total
    return out


def edge_weights(problem: Problem, weighted: bool) -> np.ndarray:
    """``w(u, v)``: 1 per edge, or ``io(u, v) = size_out(u) / B`` when weighted."""
    g = problem.graph
    if not weighted:
        return np.ones(g.m)
    return g.size_out[g.edge_src] / problem.bandwidth


def mla_fitness(problem: Problem, keys: np.ndarray, weighted: bool) -> np.ndarray:
    """The linear-arrangement cost of the Kahn order of each row of ``keys``."""
    g = problem.graph
    return _mla_batch(
        np.ascontiguousarray(keys, dtype=np.float64),
        g.succ_ptr,
        g.succ_idx,
        in_degrees(g),
        g.edge_src,
        g.edge_dst,
        edge_weights(problem, weighted),
    )
