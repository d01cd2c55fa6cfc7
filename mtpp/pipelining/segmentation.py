"""Optimal contiguous segmentation of a fixed order at allowed cut positions.

SliceGraph's DP (Algorithm 1 of the MTPP paper, :mod:`heuristics.partition.slicegraph`) cuts a
topological order into at most ``k`` contiguous blocks minimising the largest block
cost of Eq. (3).  A ``torch.distributed.pipelining`` plan may only cut at unit starts
(:mod:`mtpp.pipelining.units`), so here the same recurrence runs over units:

    dp[1, b] = C[0, b]
    dp[j, b] = min(dp[j-1, b], min_{1 <= a <= b} max(dp[j-1, a-1], C[a, b]))

with ``C[a, b]`` the cost of the block made of units ``a..b``.  Every split-point
plan with at most ``k`` stages is such a segmentation and the recurrence enumerates
them all, so its value is the optimum among split-point plans (the same argument
as Lemma 4.2, with fewer candidate cuts).  ``C`` comes from the left-extension
sweep of :mod:`heuristics.partition.segments` (``O(deg)`` per step), one sweep per right
end: ``O(U (n + m))`` for ``U`` units, then ``O(U^2 k)`` for the DP.
:func:`min_max_segmentation` takes any cost matrix, so the additive costs of the
baseline rules (:mod:`mtpp.pipelining.baselines`) reuse it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heuristics.partition.segments import extend_left, overflow, prepare
from mtpp.core.jit import njit
from mtpp.core.problem import Problem


@njit(cache=True)
def unit_cost_kernel(w, param_prefix, out, first, last, in_ptr, in_size, in_next, starts, budget, inv_b):
    """``C[a, b] = f(positions starts[a] .. starts[b + 1] - 1)``, ``inf`` for ``a > b``."""
    units = starts.shape[0] - 1
    cost = np.full((units, units), np.inf)
    for b in range(units):
        r = starts[b + 1] - 1
        base = 0.0
        a = b
        for pos in range(r, -1, -1):
            base += extend_left(pos, r, w, out, first, last, in_ptr, in_size, in_next)
            if pos == starts[a]:
                cost[a, b] = base + overflow(param_prefix[r + 1] - param_prefix[pos], budget, inv_b)
                a -= 1
    return cost


def unit_costs(problem: Problem, starts: Sequence[int]) -> np.ndarray:
    """The block costs (Eq. 3, whole-graph IO) of every run of units of the index
    order ``0..n-1``, which must be topological; ``starts`` ends with ``n``."""
    if problem.peak_aware:
        raise NotImplementedError("split-point plans price overflow with a fixed reserve, not peak-aware")
    arrays = prepare(problem, np.arange(problem.graph.n, dtype=np.int64))
    return unit_cost_kernel(
        *arrays[:8], np.asarray(starts, dtype=np.int64), problem.param_budget, 1.0 / problem.bandwidth
    )


@njit(cache=True)
def min_max_kernel(cost, k):
    """``dp`` and ``choice`` (first unit of the last block, ``-1``: fewer blocks)."""
    units = cost.shape[0]
    dp = np.full((k + 1, units), np.inf)
    choice = np.full((k + 1, units), -1, dtype=np.int64)
    for b in range(units):
        dp[1, b] = cost[0, b]
        choice[1, b] = 0
    for j in range(2, k + 1):
        for b in range(units):
            best = dp[j - 1, b]
            arg = -1
            for a in range(1, b + 1):
                cand = max(dp[j - 1, a - 1], cost[a, b])
                if cand < best:
                    best = cand
                    arg = a
            dp[j, b] = best
            choice[j, b] = arg
    return dp, choice


def min_max_segmentation(cost: np.ndarray, k: int) -> tuple[list[int], float]:
    """The first unit of each block of an optimal segmentation of units
    ``0..U-1`` into at most ``k`` blocks under block costs ``cost[a, b]``, and
    its value."""
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    k = max(1, min(k, cost.shape[0]))
    dp, choice = min_max_kernel(cost, k)
    firsts: list[int] = []
    j, b = k, cost.shape[0] - 1
    while b >= 0:
        a = 0 if j == 1 else int(choice[j, b])
        if a >= 0:
            firsts.append(a)
            b = a - 1
        j -= 1
    return firsts[::-1], float(dp[k, -1])


def additive_costs(weights: Sequence[float]) -> np.ndarray:
    """``C[a, b] = weights[a] + ... + weights[b]`` (``inf`` below the diagonal): the
    block cost of the linear partition problem that the baselines balance."""
    prefix = np.concatenate([[0.0], np.cumsum(np.asarray(weights, dtype=np.float64))])
    cost = prefix[None, 1:] - prefix[:-1, None]
    cost[np.tril_indices(len(weights), -1)] = np.inf
    return cost
