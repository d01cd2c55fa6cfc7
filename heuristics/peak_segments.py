"""Activation peak ``peak(S)`` of the segments of an order, for the peak-aware
overflow of Eq. (2) of the MTPP paper:

    overflow(S) = (size_param(S) + peak(S) - M)^+ / B.

``S = {pi(l), ..., pi(r)}`` runs in the order's sequence, one op per step ``t`` in
``[l, r]``.  The memory at step ``t`` is the sum of the tensors live at ``t``:

* an **input** tensor (producer before ``l``, a consumer in ``S``) arrives before the
  block starts and is held from step ``l`` to its last consumer in ``S``;
* a tensor **produced in** ``S`` at step ``p`` is live from ``p`` to its last consumer;
  if it also has a consumer after ``r`` it **leaves** the block and is held until ``r``;
  a tensor with no consumer at all is live during step ``p`` only;
* tensors that only pass by (producer before ``l``, no consumer in ``S``) are not in
  the block's memory.

``peak(S)`` is the largest step memory.  It holds activations only: the block's
parameters are all resident and counted by ``size_param(S)`` in Eq. (2), so they are
not added again (contrast with the single-device schedule of :mod:`mtpp.memory`,
whose step memory adds the running op's parameters, Topoformer Eq. 15).

Left-extension sweep (as :mod:`heuristics.segments`).  Fix ``r``; moving ``l`` left
adds step ``l`` and changes the other steps only by one kind of update: if the
tensor of ``pi(l)`` leaves the block and ``c`` is its last consumer in ``[l, r]``
(``c = l`` if none), steps ``c + 1 .. r`` gain ``size_out``.  The memory of step
``t`` itself, ``P_r(t) = in(t, r) + size_out(pi(t))`` (``in(t, r)``: tensors produced
before ``t`` with a consumer in ``[t, r]``), does not depend on ``l``; ``in`` is kept
as a running sum with the same ``O(deg)`` test as the input IO of
:func:`heuristics.segments.extend_left`.  Hence

    peak(l, r) = max_{l <= t <= r} ( P_r(t) + sum_{l <= p < t, pi(p) leaves, c_p < t} size_out(pi(p)) ),

kept in a max segment tree with range increments over ``j = r - t`` (the updates are
then prefix increments and the new step is the next leaf).  A left step costs
``O(deg log deg + log n)``, a whole column ``O((n + m) log n)``, the table
``O(n (n + m) log n)`` time without ``n^2`` memory.  Every update only adds memory,
so ``peak(l, r)`` never decreases as ``l`` moves left: a sweep may include it in a
lower bound that only grows (as SliceGraph's pruning needs).

All arrays are indexed by position in the order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from heuristics.segments import extend_left, prepare
from mtpp.problem import Problem


class PreparedPeak(NamedTuple):
    """Per-position arrays of one order for :func:`peak_extend_left`."""

    out: np.ndarray  # size_out of the node at each position
    first: np.ndarray  # smallest consumer position, n if none
    last: np.ndarray  # largest consumer position, -1 if none
    cons_ptr: np.ndarray  # CSR over positions: the sorted consumer positions of each position
    cons_pos: np.ndarray
    in_ptr: np.ndarray  # CSR over positions: the in-edges of each position
    in_size: np.ndarray  # size_out of the producer of each in-edge
    in_next: np.ndarray  # next consumer position of that producer after this one, n if none


@njit(cache=True)
def prepare_peak_kernel(order, succ_ptr, succ_idx, pred_ptr, pred_idx, size_out):
    """Build the :class:`PreparedPeak` arrays in ``O(n + m log deg)``."""
    n = order.shape[0]
    pos = np.empty(n, dtype=np.int64)
    for i in range(n):
        pos[order[i]] = i
    out = np.empty(n)
    first = np.full(n, n, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    cons_ptr = np.zeros(n + 1, dtype=np.int64)
    in_ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        v = order[i]
        out[i] = size_out[v]
        cons_ptr[i + 1] = cons_ptr[i] + succ_ptr[v + 1] - succ_ptr[v]
        in_ptr[i + 1] = in_ptr[i] + pred_ptr[v + 1] - pred_ptr[v]
    cons_pos = np.empty(cons_ptr[n], dtype=np.int64)
    for i in range(n):
        v = order[i]
        a, b = succ_ptr[v], succ_ptr[v + 1]
        if b > a:
            seg = np.sort(pos[succ_idx[a:b]])
            cons_pos[cons_ptr[i] : cons_ptr[i + 1]] = seg
            first[i] = seg[0]
            last[i] = seg[-1]
    in_size = np.empty(in_ptr[n])
    in_next = np.empty(in_ptr[n], dtype=np.int64)
    for i in range(n):
        v = order[i]
        e = in_ptr[i]
        for t in range(pred_ptr[v], pred_ptr[v + 1]):
            p = pos[pred_idx[t]]
            seg = cons_pos[cons_ptr[p] : cons_ptr[p + 1]]
            j = np.searchsorted(seg, i, side="right")
            in_size[e] = size_out[pred_idx[t]]
            in_next[e] = seg[j] if j < seg.shape[0] else n
            e += 1
    return out, first, last, cons_ptr, cons_pos, in_ptr, in_size, in_next


def prepare_peak(problem: Problem, order: np.ndarray) -> PreparedPeak:
    """The per-position arrays of ``order`` for ``problem``'s graph."""
    g = problem.graph
    return PreparedPeak(
        *prepare_peak_kernel(
            np.asarray(order, dtype=np.int64), g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx, g.size_out
        )
    )


@njit(cache=True)
def prefix_peaks_kernel(out, last, in_ptr, in_size, in_next):
    """``peak(0, r)`` for every ``r`` in ``O(n + m)``: a prefix block has no inputs, and a
    tensor produced in it is live at step ``t <= r`` exactly when it is in the whole
    order (its last consumer is at or after ``t``, or it leaves and is held to ``r``),
    so ``peak(0, r)`` is the running maximum of the order's activation profile.  For
    the ``dp[1, r]`` row of SliceGraph, which grows prefixes to the right."""
    n = out.shape[0]
    res = np.empty(n)
    live = 0.0
    best = -np.inf
    for t in range(n):
        mem = live + out[t]
        if mem > best:
            best = mem
        res[t] = best
        for e in range(in_ptr[t], in_ptr[t + 1]):
            if in_next[e] == n:  # t is the producer's last consumer
                live -= in_size[e]
        if last[t] >= 0:
            live += out[t]
    return res


# ---------------------------------------------------------------- max segment tree
@njit(cache=True)
def peak_tree(n):
    """An empty tree for orders of ``n`` positions: ``(t, d, size)``; ``t[1]`` is the
    maximum (``-inf`` when empty), ``d`` the pending increments."""
    size = 1
    while size < max(n, 1):
        size *= 2
    return np.full(2 * size, -np.inf), np.zeros(2 * size), size


@njit(cache=True, inline="always")
def _tree_apply(t, d, size, p, value):
    t[p] += value
    if p < size:
        d[p] += value


@njit(cache=True, inline="always")
def _tree_build(t, d, p):
    while p > 1:
        p >>= 1
        a, b = t[2 * p], t[2 * p + 1]
        t[p] = (a if a > b else b) + d[p]


@njit(cache=True, inline="always")
def _tree_prefix_add(t, d, size, k, value):
    """Add ``value`` to leaves ``0..k``."""
    lo, hi = size, size + k + 1
    l0, r0 = lo, hi - 1
    while lo < hi:
        if lo & 1:
            _tree_apply(t, d, size, lo, value)
            lo += 1
        if hi & 1:
            hi -= 1
            _tree_apply(t, d, size, hi, value)
        lo >>= 1
        hi >>= 1
    _tree_build(t, d, l0)
    _tree_build(t, d, r0)


@njit(cache=True)
def peak_tree_reset(t, d, size, k):
    """Empty leaves ``0..k`` (the ones a column used) and their ancestors:
    ``O(k + log n)``, so columns cut short stay cheap."""
    lo, hi = size, size + k
    while lo >= 1:
        for p in range(lo, hi + 1):
            t[p] = -np.inf
            d[p] = 0.0
        if lo == 1:
            break
        lo >>= 1
        hi >>= 1


@njit(cache=True, inline="always")
def peak_extend_left(l, r, in_sum, t, d, size, out, first, last, cons_ptr, cons_pos, in_ptr, in_size, in_next):
    """Position ``l`` joins the block ``[l+1, r]`` (call with ``l = r, r-1, ...`` on a
    tree emptied for this column and ``in_sum = 0`` at ``l = r``).  Returns the new
    ``in_sum`` and ``peak(l, r)``."""
    if first[l] <= r:  # pi(l)'s tensor was an input of [l+1, r]; now it is produced inside
        in_sum -= out[l]
    for e in range(in_ptr[l], in_ptr[l + 1]):
        if in_next[e] > r:  # the producer had no consumer in [l+1, r]: a new input
            in_sum += in_size[e]
    j = r - l
    leaf = size + j
    t[leaf] = in_sum + out[l]  # the ancestors of a new leaf carry no pending increment
    _tree_build(t, d, leaf)
    if last[l] > r:  # the tensor leaves the block: held until r
        seg = cons_pos[cons_ptr[l] : cons_ptr[l + 1]]
        c = l
        k = np.searchsorted(seg, r, side="right")
        if k > 0:
            c = seg[k - 1]
        if c < r:
            _tree_prefix_add(t, d, size, r - c - 1, out[l])
    return in_sum, t[1]


@njit(cache=True)
def peak_column_kernel(r, stop, t, d, size, out, first, last, cons_ptr, cons_pos, in_ptr, in_size, in_next):
    """``peak(l, r)`` for ``l = r, r-1, ..., stop`` (entry ``r - l``), leaving the tree
    empty again."""
    res = np.empty(r - stop + 1)
    in_sum = 0.0
    for l in range(r, stop - 1, -1):
        in_sum, res[r - l] = peak_extend_left(
            l, r, in_sum, t, d, size, out, first, last, cons_ptr, cons_pos, in_ptr, in_size, in_next
        )
    peak_tree_reset(t, d, size, r - stop)
    return res


@njit(cache=True)
def peak_table_kernel(out, first, last, cons_ptr, cons_pos, in_ptr, in_size, in_next):
    n = out.shape[0]
    table = np.full((n, n), np.nan)
    t, d, size = peak_tree(n)
    for r in range(n):
        col = peak_column_kernel(r, 0, t, d, size, out, first, last, cons_ptr, cons_pos, in_ptr, in_size, in_next)
        for l in range(r + 1):
            table[l, r] = col[r - l]
    return table


@njit(cache=True)
def peak_cost_table_kernel(
    w, param_prefix, out_b, first, last, in_ptr, in_size_b, in_next, out, cons_ptr, cons_pos, in_size, memory, inv_b
):
    n = w.shape[0]
    table = np.full((n, n), np.inf)
    t, d, size = peak_tree(n)
    for r in range(n):
        base = 0.0
        in_sum = 0.0
        for l in range(r, -1, -1):
            base += extend_left(l, r, w, out_b, first, last, in_ptr, in_size_b, in_next)
            in_sum, pk = peak_extend_left(
                l, r, in_sum, t, d, size, out, first, last, cons_ptr, cons_pos, in_ptr, in_size, in_next
            )
            x = param_prefix[r + 1] - param_prefix[l] + pk - memory
            table[l, r] = base + (x * inv_b if x > 0.0 else 0.0)
        peak_tree_reset(t, d, size, r)
    return table


def peak_segment_table(problem: Problem, order: np.ndarray) -> np.ndarray:
    """``T[l, r] = peak({order[l], ..., order[r]})`` (module docstring) for all
    ``l <= r``, ``nan`` below the diagonal; ``O(n (n + m) log n)`` time, ``n^2`` floats."""
    p = prepare_peak(problem, order)
    return peak_table_kernel(*p)


def prefix_peaks(problem: Problem, order: np.ndarray) -> np.ndarray:
    """``peak(0, r)`` for every ``r`` (see :func:`prefix_peaks_kernel`)."""
    p = prepare_peak(problem, order)
    return prefix_peaks_kernel(p.out, p.last, p.in_ptr, p.in_size, p.in_next)


def peak_column(problem: Problem, order: np.ndarray, r: int, stop: int = 0) -> np.ndarray:
    """``peak(l, r)`` for ``l = r, r-1, ..., stop`` (entry ``r - l``): one column of the
    table, ``O((r - stop + edges) log n)``, as a DP sweep would produce it."""
    p = prepare_peak(problem, order)
    t, d, size = peak_tree(problem.graph.n)
    return peak_column_kernel(int(r), int(stop), t, d, size, *p)


def peak_aware_cost_table(problem: Problem, order: np.ndarray) -> np.ndarray:
    """Segment costs with the peak-aware overflow of Eq. (2): input IO + work +
    ``(size_param(S) + peak(S) - M)^+ / B`` + output IO, ``inf`` below the diagonal.
    ``M = problem.memory``; the activation reserve is not used (``peak(S)`` replaces
    it).  The IO and work terms are those of :func:`heuristics.segments.segment_cost_table`."""
    s = prepare(problem, order)
    p = prepare_peak(problem, order)
    return peak_cost_table_kernel(
        s.work, s.param_prefix, s.out, s.first_consumer, s.last_consumer, s.in_ptr, s.in_size, s.in_next,
        p.out, p.cons_ptr, p.cons_pos, p.in_size, float(problem.memory), 1.0 / problem.bandwidth,
    )  # fmt: skip
