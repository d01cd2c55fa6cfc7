"""SliceGraph: optimal segmentation of a topological order into at most k blocks
(Algorithm 1 and Lemma 4.2 of the MTPP paper), and the BRKGA decoder built on it
(Algorithm 2: Kahn with priorities, then slice).

``dp[j, r]`` is the best bottleneck of the first ``r + 1`` positions in at most ``j``
blocks (costs always count IO against the *whole* graph):

    dp[1, r] = f([0, r])
    dp[j, r] = min(dp[j-1, r], min_{1 <= l <= r} max(dp[j-1, l-1], f([l, r])))

Segment costs come column by column from :mod:`heuristics.partition.segments`, so nothing of
size ``n^2`` is stored: memory is ``O(n k)``.  Two prunings keep it far below the
``O(n^2 k)`` worst case without changing the answer:

* for a fixed ``r`` the sweep over ``l`` moves left and stops once a lower bound on
  ``f([l, r])`` that only grows as ``l`` decreases reaches the best value found for
  this ``r``: work + overflow + the output tensors of ``[l, r]`` that have a consumer
  after ``r`` (those leave the block whatever ``l`` is; input IO is left out because
  it can shrink when a producer joins the block);
* candidates are never worse for more blocks (``dp[j-1, .] >= dp[j, .]``), so the
  still-improvable ``j`` form a prefix ``2..J`` and the inner loop stops at ``J``;
* the value of the equal-work split of the same order is feasible, so it caps the
  search from the start (sweeps stop once the lower bound reaches it);
* with peak-aware costs (``Problem.peak_aware``) the overflow of Eq. (2) includes
  the segment's activation peak from :mod:`heuristics.partition.segment_peak_tree`, swept in step; the
  peak only grows as ``l`` moves left, so the pruning bound above stays valid;
* an optional ``upper_bound`` caps everything: values ``< upper_bound`` are exact,
  and if the optimum is ``>= upper_bound`` the DP reports ``inf`` (BRKGA uses this to
  skip work on chromosomes that cannot enter the elite).

A ``deadline`` (a :func:`time.perf_counter` value) stops the DP between two columns
once the clock passes it (looked at every :data:`CHECK_STEPS` sweep steps): at 20,000
ops one DP takes seconds, so a budget must be able to cut it.  A cut-off slice falls
back to the best equal-work split (:func:`equal_work_split`, ``O((n + m) log k)``): a
feasible partition always arrives, marked ``exact=False``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from heuristics.arrays import GraphArrays, graph_arrays
from heuristics.kahn import in_degrees, kahn_kernel
from heuristics.partition.segment_peak_tree import peak_extend_left, peak_tree, peak_tree_reset, prefix_peaks_kernel
from heuristics.partition.segments import extend_left, overflow, prepared
from mtpp.core.jit import clock, njit
from mtpp.core.problem import Problem

CHECK_STEPS = 1 << 16
"""Sweep steps of the DP between two looks at the clock under a deadline (about a millisecond)."""


@njit(cache=True, nogil=True)
def dp_kernel(p, k, budget, inv_b, ub, peak_aware, deadline):
    """Fill ``dp`` and ``choice`` (start of the last block, ``-1`` = last block empty)
    for the :class:`heuristics.partition.segments.PreparedOrder` ``p``; ``complete`` is
    false when the clock passed ``deadline`` first (``dp[k, n - 1]`` is then ``inf``)."""
    w, param_prefix, out, first, last, in_ptr, in_size, in_next, out_raw, in_size_raw, cons_ptr, cons_pos = p
    n = w.shape[0]
    timed = deadline < np.inf
    steps = CHECK_STEPS  # a deadline already passed stops the DP before its first column
    t, d, size = peak_tree(n if peak_aware else 1)
    prefix_peak = prefix_peaks_kernel(out_raw, last, in_ptr, in_size_raw, in_next) if peak_aware else np.zeros(n)
    dp = np.full((k + 1, n), np.inf)
    choice = np.full((k + 1, n), -1, dtype=np.int32)
    best = np.empty(k + 1)
    arg = np.empty(k + 1, dtype=np.int64)
    prefix = 0.0
    for r in range(n):
        steps += 1
        if timed and steps >= CHECK_STEPS:
            steps = 0
            if clock() >= deadline:
                dp[k, n - 1] = np.inf
                return dp, choice, False
        # dp[1, r]: the prefix [0, r] as one block has only output IO
        prefix += w[r]
        if last[r] >= 0:
            prefix += out[r]
        for e in range(in_ptr[r], in_ptr[r + 1]):
            if in_next[e] == n:  # r was the producer's last consumer
                prefix -= in_size[e]
        dp[1, r] = prefix + overflow(param_prefix[r + 1] + prefix_peak[r], budget, inv_b)
        choice[1, r] = 0
        if k == 1:
            continue
        for j in range(2, k + 1):
            best[j] = ub
            arg[j] = -1
        base = 0.0
        mono = 0.0  # work + outputs leaving past r: both only grow as l moves left
        in_sum = 0.0
        pk = 0.0  # the peak also only grows as l moves left
        used = -1  # leaves of the peak tree this column filled
        for l in range(r, 0, -1):
            steps += 1
            base += extend_left(l, r, w, out, first, last, in_ptr, in_size, in_next)
            if peak_aware:
                in_sum, pk = peak_extend_left(
                    l, r, in_sum, t, d, size, out_raw, first, last, cons_ptr, cons_pos, in_ptr, in_size_raw, in_next
                )
                used = r - l
            mono += w[l]
            if last[l] > r:
                mono += out[l]
            ovf = overflow(param_prefix[r + 1] - param_prefix[l] + pk, budget, inv_b)
            lower = mono + ovf
            if lower >= best[2]:
                break
            cost = base + ovf
            for j in range(2, k + 1):
                if lower >= best[j]:
                    break
                prev = dp[j - 1, l - 1]
                cand = prev if prev > cost else cost
                if cand < best[j]:
                    best[j] = cand
                    arg[j] = l
        if used >= 0:
            peak_tree_reset(t, d, size, used)
        for j in range(2, k + 1):
            if arg[j] < 0 or dp[j - 1, r] <= best[j]:
                dp[j, r] = dp[j - 1, r]
            else:
                dp[j, r] = best[j]
                choice[j, r] = arg[j]
    return dp, choice, True


@njit(cache=True, nogil=True)
def equal_work_starts(w, k):
    """Start positions of the pieces of about equal work that cut the order into at
    most ``k`` non-empty pieces (piece ``b`` ends where the running work reaches
    ``b / k`` of the total).  ``O(n)``."""
    n = w.shape[0]
    total = 0.0
    for i in range(n):
        total += w[i]
    starts = np.empty(k, dtype=np.int64)
    s = 0
    l = 0
    acc = 0.0
    for b in range(1, k + 1):
        if l >= n:
            break
        starts[s] = l
        s += 1
        r = l
        acc += w[l]
        while r + 1 < n and (b == k or acc + w[r + 1] <= total * b / k):
            r += 1
            acc += w[r]
        l = r + 1
    return starts[:s].copy()


@njit(cache=True, nogil=True)
def split_value(p, starts, budget, inv_b, peak_aware):
    """Bottleneck of cutting the prepared order ``p`` at ``starts``, each block priced
    exactly as the DP prices it (grown to the left from its last position).
    ``O(n + m)`` (``O((n + m) log n)`` peak-aware)."""
    w, param_prefix, out, first, last, in_ptr, in_size, in_next, out_raw, in_size_raw, cons_ptr, cons_pos = p
    n = w.shape[0]
    t, d, size = peak_tree(n if peak_aware else 1)
    worst = 0.0
    for b in range(starts.shape[0]):
        l = starts[b]
        r = starts[b + 1] - 1 if b + 1 < starts.shape[0] else n - 1
        base = 0.0
        in_sum = 0.0
        pk = 0.0
        for i in range(r, l - 1, -1):
            base += extend_left(i, r, w, out, first, last, in_ptr, in_size, in_next)
            if peak_aware:
                in_sum, pk = peak_extend_left(
                    i, r, in_sum, t, d, size, out_raw, first, last, cons_ptr, cons_pos, in_ptr, in_size_raw, in_next
                )
        if peak_aware:
            peak_tree_reset(t, d, size, r - l)
        cost = base + overflow(param_prefix[r + 1] - param_prefix[l] + pk, budget, inv_b)
        if cost > worst:
            worst = cost
    return worst


@njit(cache=True, nogil=True)
def equal_work_split(p, k, budget, inv_b, peak_aware):
    """The best of the equal-work splits (:func:`equal_work_starts`) into ``j = 1, 2,
    4, ..., k`` pieces of the prepared order ``p``, as ``(value, starts)``: a feasible
    split (at most ``k`` blocks), so its value caps the DP without changing the
    optimum, and the partition a DP cut off by its deadline falls back to.
    ``O((n + m) log k)``; where IO dominates, fewer pieces than ``k`` are often far
    cheaper."""
    best = np.inf
    best_starts = np.zeros(1, dtype=np.int64)
    j = 1
    while True:
        starts = equal_work_starts(p.work, j)
        value = split_value(p, starts, budget, inv_b, peak_aware)
        if value < best:
            best = value
            best_starts = starts
        if j >= k:
            break
        j = min(2 * j, k)
    return best, best_starts


@njit(cache=True, nogil=True)
def segment_starts(choice, k):
    """Start positions of the non-empty blocks of the optimum, first block first."""
    n = choice.shape[1]
    starts = np.empty(k, dtype=np.int64)
    s = 0
    j, r = k, n - 1
    while r >= 0:
        l = 0 if j == 1 else choice[j, r]
        if l >= 0:
            starts[s] = l
            s += 1
            r = l - 1
        j -= 1
    return starts[:s][::-1].copy()


@njit(cache=True, nogil=True)
def slice_kernel(order, inv_b, k, budget, ub, peak_aware, deadline, *graph):
    """Algorithm 1 on ``order`` of the graph whose arrays are ``graph``
    (:func:`heuristics.partition.segments.graph_arrays`): ``(value, starts, exact)``,
    the optimal slicing's bottleneck and block starts (``starts`` empty where the value
    is not below ``ub``).  The DP is capped just above the best equal-work split
    (:func:`equal_work_split`); past ``deadline`` it stops and that split is returned
    with ``exact`` false."""
    p = prepared(order, inv_b, graph)
    fallback, fallback_starts = equal_work_split(p, k, budget, inv_b, peak_aware)
    cap = fallback + 1e-9 * abs(fallback) + 1e-12  # strictly above a feasible value, whatever the summation order
    if deadline < np.inf and clock() >= deadline:  # past it already: the split, without the DP's O(n k) arrays
        return fallback, fallback_starts, False
    dp, choice, complete = dp_kernel(p, k, budget, inv_b, min(ub, cap), peak_aware, deadline)
    if not complete:
        return fallback, fallback_starts, False
    value = dp[k, order.shape[0] - 1]
    starts = segment_starts(choice, k) if value < ub else np.zeros(0, dtype=np.int64)
    return value, starts, True


@dataclass(frozen=True)
class Segmentation:
    """A slicing of one order: ``starts[b]`` is the first position of block ``b``;
    ``assignment[v]`` the block of node ``v``.  ``bottleneck`` is the DP's value
    (callers re-check it with :func:`mtpp.evaluate`).  ``exact``: the optimal slicing
    of the order; false for the equal-work fallback of a DP cut off by its deadline."""

    order: np.ndarray
    starts: np.ndarray
    assignment: np.ndarray
    bottleneck: float
    exact: bool = True

    @classmethod
    def of(cls, order: np.ndarray, starts: np.ndarray, value: float, exact: bool = True) -> Segmentation:
        """The segmentation of ``order`` cut at ``starts`` (its value ``value``)."""
        blocks = np.zeros(order.size, dtype=np.int64)
        blocks[starts[1:]] = 1
        assignment = np.empty(order.size, dtype=np.int64)
        assignment[order] = np.cumsum(blocks)
        return cls(order=order, starts=starts, assignment=assignment, bottleneck=float(value), exact=exact)


def slice_order(
    problem: Problem, order: np.ndarray, upper_bound: float = math.inf, deadline: float = math.inf
) -> Segmentation | None:
    """Algorithm 1: the optimal split of topological ``order`` into at most
    ``problem.k`` contiguous blocks.  Returns ``None`` if no split beats
    ``upper_bound``.  Time ``O(n (n + m) k)`` worst case, far less with the
    prunings above; memory ``O(n k)``.  Past ``deadline`` (a :func:`time.perf_counter`
    value) the DP stops and the best equal-work split is returned instead
    (``exact=False``; ``None`` if it does not beat ``upper_bound``)."""
    order = np.asarray(order, dtype=np.int64)
    k = min(problem.k, order.size)  # more blocks than nodes would only be empty
    inv_b = 1.0 / problem.bandwidth
    value, starts, exact = slice_kernel(
        order, inv_b, k, problem.param_budget, upper_bound, problem.peak_aware, deadline, *graph_arrays(problem.graph)
    )
    if not value < upper_bound:
        return None
    return Segmentation.of(order, starts, value, exact)


@njit(cache=True, nogil=True)
def decode_batch_kernel(keys, indeg, inv_b, k, budget, ub, peak_aware, deadline, *graph):
    """Algorithm 2 for every row of ``keys``: Kahn order, then the sliced bottleneck
    (``inf`` where it is not below ``ub``, and for the rows from the one the
    ``deadline`` cut off), with the order and block starts of the best row (empty
    when no row is finite)."""
    g = GraphArrays(*graph)
    fitness = np.full(keys.shape[0], np.inf)
    best = np.inf
    best_order = np.zeros(0, dtype=np.int64)
    best_starts = np.zeros(0, dtype=np.int64)
    for c in range(keys.shape[0]):
        order = kahn_kernel(g.succ_ptr, g.succ_idx, indeg, keys[c])
        v, starts, exact = slice_kernel(order, inv_b, k, budget, ub, peak_aware, deadline, *graph)
        if not exact:
            break
        if v < ub:
            fitness[c] = v
            if v < best:
                best = v
                best_order = order
                best_starts = starts
    return fitness, best_order, best_starts


def sort_and_slice(
    problem: Problem, keys: np.ndarray, upper_bound: float = math.inf, deadline: float = math.inf
) -> tuple[np.ndarray, Segmentation | None]:
    """BrkgaSortAndSliceDecoder (Algorithm 2) on a batch of priority vectors (one per
    row): the bottleneck of each, or ``inf`` where it is not below ``upper_bound``
    or the DP did not finish by ``deadline`` (a :func:`time.perf_counter` value), and
    the optimal slicing of the best row's order (``None`` if no row is finite), so a
    search keeps its best partition without slicing it again."""
    g = problem.graph
    fitness, order, starts = decode_batch_kernel(
        np.ascontiguousarray(keys, dtype=np.float64),
        in_degrees(g),
        1.0 / problem.bandwidth,
        min(problem.k, g.n),
        problem.param_budget,
        upper_bound,
        problem.peak_aware,
        deadline,
        *graph_arrays(problem.graph),
    )
    if order.size == 0:
        return fitness, None
    return fitness, Segmentation.of(order, starts, float(fitness.min()))


def sort_and_slice_fitness(
    problem: Problem, keys: np.ndarray, upper_bound: float = math.inf, deadline: float = math.inf
) -> np.ndarray:
    """The fitness of :func:`sort_and_slice` alone."""
    return sort_and_slice(problem, keys, upper_bound, deadline)[0]
