"""Straightforward SliceGraph, the yardstick the benchmarks compare against.

The segment-cost table is built as the paper's Lemma 4.1 suggests, with all updates
before all queries: each tensor adds its ``size_out / B`` to the rectangles of
segments ``[l, r]`` it enters or leaves, a 2D difference array collects the
rectangles and two prefix sums turn it into the table (``O(n^2 + m)`` time, ``n^2``
memory).  The DP is the textbook recurrence of Algorithm 1, vectorised over ``l``
with numpy (``O(n^2 k)``), with no pruning.
"""

from __future__ import annotations

import numpy as np

from mtpp.core.problem import Problem


def reference_table(problem: Problem, order: np.ndarray) -> np.ndarray:
    g = problem.graph
    n = g.n
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    diff = np.zeros((n + 1, n + 1))

    def rect(l0, l1, r0, r1, w):  # add w to T[l, r] for l0 <= l <= l1, r0 <= r <= r1
        np.add.at(diff, (l0, r0), w)
        np.add.at(diff, (l0, r1 + 1), -w)
        np.add.at(diff, (l1 + 1, r0), -w)
        np.add.at(diff, (l1 + 1, r1 + 1), w)

    s = g.size_out / problem.bandwidth
    ps, pd = pos[g.edge_src], pos[g.edge_dst]
    key = np.lexsort((pd, ps))
    ps, pd, prod = ps[key], pd[key], g.edge_src[key]
    change = ps[1:] != ps[:-1]
    first_of_group = np.r_[np.ones(min(1, ps.size), dtype=bool), change]
    last_of_group = np.r_[change, np.ones(min(1, ps.size), dtype=bool)]
    # output: producer in [l, r], last consumer after r
    p_last, c_last, w_last = ps[last_of_group], pd[last_of_group], s[prod[last_of_group]]
    rect(np.zeros_like(p_last), p_last, p_last, c_last - 1, w_last)
    # input: producer before l, some consumer in [l, r]: for l in (c_prev, c_i], r >= c_i
    prev = np.where(first_of_group, ps, np.r_[0, pd[:-1]])
    rect(prev + 1, pd, pd, np.full_like(pd, n - 1), s[prod])
    io = np.cumsum(np.cumsum(diff, axis=0), axis=1)[:n, :n]
    w = np.r_[0.0, np.cumsum(g.work[order])]
    p = np.r_[0.0, np.cumsum(g.size_param[order])]
    work = w[None, 1:] - w[:-1, None]
    param = p[None, 1:] - p[:-1, None]
    table = io + work + np.maximum(param - problem.param_budget, 0.0) / problem.bandwidth
    table[np.tril_indices(n, -1)] = np.inf
    return table


def reference_slice_value(problem: Problem, order: np.ndarray) -> float:
    table = reference_table(problem, order)
    n, k = problem.graph.n, problem.k
    dp = table[0].copy()  # one block
    for _ in range(2, k + 1):
        new = dp.copy()
        for r in range(1, n):
            new[r] = min(new[r], np.maximum(dp[:r], table[1 : r + 1, r]).min())
        dp = new
    return float(dp[-1])
