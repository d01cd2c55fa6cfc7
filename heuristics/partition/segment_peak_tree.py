"""Kernels for the activation peak ``peak(S)`` of the segments of an order, for the peak-aware
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
not added again (contrast with the single-device schedule of :mod:`mtpp.core.memory`,
whose step memory adds the running op's parameters, Topoformer Eq. 15).

Left-extension sweep (as :mod:`heuristics.partition.segments`).  Fix ``r``; moving ``l`` left
adds step ``l`` and changes the other steps only by one kind of update: if the
tensor of ``pi(l)`` leaves the block and ``c`` is its last consumer in ``[l, r]``
(``c = l`` if none), steps ``c + 1 .. r`` gain ``size_out``.  The memory of step
``t`` itself, ``P_r(t) = in(t, r) + size_out(pi(t))`` (``in(t, r)``: tensors produced
before ``t`` with a consumer in ``[t, r]``), does not depend on ``l``; ``in`` is kept
as a running sum with the same ``O(deg)`` test as the input IO of
:func:`heuristics.partition.segments.extend_left`.  Hence

    peak(l, r) = max_{l <= t <= r} ( P_r(t) + sum_{l <= p < t, pi(p) leaves, c_p < t} size_out(pi(p)) ),

kept in a max segment tree with range increments over ``j = r - t`` (the updates are
then prefix increments and the new step is the next leaf).  A left step costs
``O(deg log deg + log n)``, a whole column ``O((n + m) log n)``, the table
``O(n (n + m) log n)`` time without ``n^2`` memory.  Every update only adds memory,
so ``peak(l, r)`` never decreases as ``l`` moves left: a sweep may include it in a
lower bound that only grows (as SliceGraph's pruning needs).

All arrays are indexed by position in the order; they come from
:func:`heuristics.partition.segments.prepare` (the ``*_raw`` sizes, not divided by ``B``).
"""

from __future__ import annotations

import numpy as np

from mtpp.core.jit import njit


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
    ``in_sum`` and ``peak(l, r)``.  The arrays are a prepared order's (its ``out_raw``,
    ``first_consumer``, ``last_consumer``, ``cons_ptr``, ``cons_pos``, ``in_ptr``,
    ``in_size_raw``, ``in_next``), one by one: this runs once per sweep step, and a
    compiled kernel that reads arrays out of a tuple pays a reference count for each."""
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
