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
from mtpp.pipelining.units import Units


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


MAX_OPEN_MARKERS = 12
""":func:`expressible_segmentation` keeps a state per subset of the split-point
modules open at a cut: at most ``2**MAX_OPEN_MARKERS`` per unit."""


@njit(cache=True)
def _compress(mask, support):
    """The bits of ``mask`` at the set bits of ``support``, packed to the low end."""
    out = 0
    bit = 0
    while support:
        low = support & -support
        if mask & low:
            out |= 1 << bit
        bit += 1
        support ^= low
    return out


@njit(cache=True)
def _expand(packed, support):
    """The inverse of :func:`_compress`."""
    out = 0
    bit = 0
    while support:
        low = support & -support
        if packed & (1 << bit):
            out |= low
        bit += 1
        support ^= low
    return out


@njit(cache=True)
def _arrive(g, pa, ps, j, b, value, a, s, carried, blocked, begin, end, reach, open_, n):
    """Make the cut before unit ``b`` (state ``carried`` / ``blocked`` from the cut
    before it): by a free ``END`` if there is one (it costs the later cuts nothing),
    else by consuming one ``BEGINNING``, one state per choice."""
    if end[b] & ~blocked:
        options = np.array([carried], dtype=np.int64)
    else:
        count = 0
        bits = begin[b]
        while bits:
            count += 1
            bits &= bits - 1
        options = np.empty(count, dtype=np.int64)
        bits = begin[b]
        i = 0
        while bits:
            low = bits & -bits
            depth = 0
            while (1 << depth) != low:
                depth += 1
            options[i] = carried | low if reach[b, depth] < n else carried  # a module ending at n blocks nothing
            i += 1
            bits ^= low
    for m in options:
        t = _compress(m, open_[b])
        if value < g[j, b, t]:
            g[j, b, t] = value
            pa[j, b, t] = a
            ps[j, b, t] = s


@njit(cache=True)
def expressible_kernel(cost, k, begin, end, reach, open_, starts, states):
    """``g[j, b, t]``: the best largest block over units ``0..b-1`` cut into ``j``
    blocks, the last cut before unit ``b`` made with the modules of state ``t``
    (packed over ``open_[b]``) consumed; ``pa`` / ``ps``: the cut and state before."""
    units = cost.shape[0]
    n = starts[units]
    g = np.full((k, units, states), np.inf)
    pa = np.full((k, units, states), -1, dtype=np.int64)
    ps = np.full((k, units, states), -1, dtype=np.int64)
    for b in range(1, units):
        if k > 1:
            _arrive(g, pa, ps, 1, b, cost[0, b - 1], 0, -1, 0, 0, begin, end, reach, open_, n)
    for j in range(2, k):
        for b in range(1, units):
            for a in range(1, b):
                c = cost[a, b - 1]
                for s in range(states):
                    v = g[j - 1, a, s]
                    if v == np.inf:
                        continue
                    if c > v:
                        v = c
                    mask = _expand(s, open_[a])
                    carried = 0
                    blocked = 0
                    bits = mask
                    while bits:
                        low = bits & -bits
                        depth = 0
                        while (1 << depth) != low:
                            depth += 1
                        e = reach[a, depth]
                        if e > starts[b]:
                            carried |= low
                        elif e == starts[b]:
                            blocked |= low
                        bits ^= low
                    _arrive(g, pa, ps, j, b, v, a, s, carried, blocked, begin, end, reach, open_, n)
    return g, pa, ps


def expressible_segmentation(cost: np.ndarray, k: int, units: Units) -> tuple[list[int], float] | None:
    """The best segmentation of ``units`` into at most ``k`` blocks whose cuts can
    all be made by distinct split points (one point per module: a module called once
    can mark its start or its end, not both), and its value; ``None`` when more than
    :data:`MAX_OPEN_MARKERS` split-point modules are open at one cut.

    Left to right, a cut made by a free ``END`` marker costs the later cuts nothing,
    and one made by a ``BEGINNING`` marker takes that module away from the cut at its
    end.  So the DP of :func:`min_max_segmentation` gains a state per cut: the set of
    modules open there that an earlier cut consumed (a subset of a chain of nested
    calls); a cut with no free marker is skipped.  A cut set it accepts has distinct
    markers, and every such set is reached (exchanging a matching's choices for the
    free ``END`` ones never hurts), so its value is the optimum among expressible
    plans.  ``O(k U^2 2^d)`` with ``d`` the open split-point modules per cut."""
    begin, end, reach = units.markers()
    count = cost.shape[0]
    starts = np.asarray(units.starts, dtype=np.int64)
    n = int(starts[-1])
    open_ = np.zeros(count, dtype=np.int64)
    for u in range(count):
        for i in range(reach.shape[1]):
            if 0 < reach[u, i] < n:
                open_[u] |= 1 << i
    width = max((bin(int(m)).count("1") for m in open_), default=0)
    if reach.shape[1] > 62 or width > MAX_OPEN_MARKERS:
        return None
    k = max(1, min(k, count))
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    g, pa, ps = expressible_kernel(cost, k, begin, end, reach, open_, starts, 1 << width)
    best, at = float(cost[0, count - 1]), None  # one block
    values = np.maximum(g, cost[:, count - 1][None, :, None])  # the last block from unit b on
    values[0] = np.inf
    values[:, 0] = np.inf
    flat = int(np.argmin(values))  # the fewest blocks among the best
    if values.flat[flat] < best:
        best, at = float(values.flat[flat]), tuple(int(x) for x in np.unravel_index(flat, values.shape))
    firsts = [0]
    while at is not None:
        j, b, t = at
        firsts.append(b)
        a, s = int(pa[j, b, t]), int(ps[j, b, t])
        at = None if j == 1 else (j - 1, a, s)
    return sorted(set(firsts)), best
