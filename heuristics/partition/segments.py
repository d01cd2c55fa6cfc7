"""Segment costs ``f({pi(l), ..., pi(r)})`` of a topological order (Lemma 4.1).

The paper builds an ``n x n`` table with a 2D Fenwick tree.  Here the cost of a
segment is grown one node at a time to the *left*: with the right end ``r`` fixed,
adding the node at position ``l`` to ``S = [l+1, r]`` changes Eq. (3) by

* ``+ work(v)``;
* ``+ size_out(v)/B`` if some consumer of ``v`` lies after ``r`` (its tensor leaves S);
* ``- size_out(v)/B`` if some consumer of ``v`` lies in ``[l+1, r]`` (that tensor was
  an input of S and is now produced inside);
* ``+ size_out(u)/B`` for each producer ``u`` of ``v`` whose next consumer after ``l``
  lies beyond ``r`` (the tensor of ``u`` had no consumer in S yet, so it becomes a new
  input; a tensor is counted once per block however many consumers it has);

and the overflow term of Eq. (2) is recomputed from prefix sums of ``size_param``
(plus, for peak-aware costs, the segment's activation peak from the sweep of
:mod:`heuristics.partition.segment_peak_tree`, which moves left in step with this one).
Each step is ``O(deg(v))``, so a whole column costs ``O(n + m)`` and the full table
``O(n (n + m))`` with no ``n^2`` memory unless the table itself is asked for.  The
DP of :mod:`heuristics.partition.slicegraph` sweeps columns this way and stops a sweep as soon
as the segment's work alone exceeds what could still improve the answer
(``f(S) >= work(S)``), so at large ``n`` it neither stores nor visits the full table.

All arrays here are indexed by *position* in the order, not by node.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from heuristics.arrays import graph_arrays
from heuristics.partition.segment_peak_tree import peak_extend_left, peak_tree, peak_tree_reset
from mtpp.core.jit import njit
from mtpp.core.problem import Problem


class PreparedOrder(NamedTuple):
    """Per-position arrays of one order that make a left-extension step ``O(deg)``.  The
    kernels take it as one argument and unpack it once, before their loops (an array
    read out of a tuple inside a compiled loop pays a reference count every time)."""

    work: np.ndarray  # work of the node at each position
    param_prefix: np.ndarray  # length n + 1
    out: np.ndarray  # size_out / B of the node at each position
    first_consumer: np.ndarray  # smallest consumer position, n if none
    last_consumer: np.ndarray  # largest consumer position, -1 if none
    in_ptr: np.ndarray  # CSR over positions: the in-edges of each position
    in_size: np.ndarray  # size_out / B of the producer of each in-edge
    in_next: np.ndarray  # next consumer position of that producer after this one, n if none
    out_raw: np.ndarray  # size_out of the node at each position (memory units, for peaks)
    in_size_raw: np.ndarray  # size_out of the producer of each in-edge (memory units)
    cons_ptr: np.ndarray  # CSR over positions: the sorted consumer positions of each position
    cons_pos: np.ndarray


@njit(cache=True)
def prepare_kernel(order, succ_ptr, succ_idx, pred_ptr, pred_idx, work, size_param, size_out, inv_b):
    """Build the :class:`PreparedOrder` arrays in ``O(n + m log deg)``."""
    n = order.shape[0]
    pos = np.empty(n, dtype=np.int64)
    for i in range(n):
        pos[order[i]] = i
    w = np.empty(n)
    out = np.empty(n)
    out_raw = np.empty(n)
    param_prefix = np.zeros(n + 1)
    first = np.full(n, n, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    cons_ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        v = order[i]
        w[i] = work[v]
        out_raw[i] = size_out[v]
        out[i] = size_out[v] * inv_b
        param_prefix[i + 1] = param_prefix[i] + size_param[v]
        cons_ptr[i + 1] = cons_ptr[i] + succ_ptr[v + 1] - succ_ptr[v]
    cons_pos = np.empty(cons_ptr[n], dtype=np.int64)
    for i in range(n):
        v = order[i]
        a, b = succ_ptr[v], succ_ptr[v + 1]
        if b > a:
            seg = np.sort(pos[succ_idx[a:b]])
            cons_pos[cons_ptr[i] : cons_ptr[i + 1]] = seg
            first[i] = seg[0]
            last[i] = seg[-1]
    in_ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        v = order[i]
        in_ptr[i + 1] = in_ptr[i] + pred_ptr[v + 1] - pred_ptr[v]
    in_size = np.empty(in_ptr[n])
    in_size_raw = np.empty(in_ptr[n])
    in_next = np.empty(in_ptr[n], dtype=np.int64)
    for i in range(n):
        v = order[i]
        e = in_ptr[i]
        for t in range(pred_ptr[v], pred_ptr[v + 1]):
            p = pos[pred_idx[t]]
            seg = cons_pos[cons_ptr[p] : cons_ptr[p + 1]]
            j = np.searchsorted(seg, i, side="right")
            in_size_raw[e] = size_out[pred_idx[t]]
            in_size[e] = size_out[pred_idx[t]] * inv_b
            in_next[e] = seg[j] if j < seg.shape[0] else n
            e += 1
    return w, param_prefix, out, first, last, in_ptr, in_size, in_next, out_raw, in_size_raw, cons_ptr, cons_pos


@njit(cache=True, inline="always")
def extend_left(l, r, w, out, first, last, in_ptr, in_size, in_next):
    """Change of input IO + work + output IO when position ``l`` joins ``[l+1, r]``."""
    d = w[l]
    if last[l] > r:
        d += out[l]
    if first[l] <= r:
        d -= out[l]
    for e in range(in_ptr[l], in_ptr[l + 1]):
        if in_next[e] > r:
            d += in_size[e]
    return d


@njit(cache=True, inline="always")
def overflow(param, budget, inv_b):
    """Eq. (2) with a fixed activation reserve."""
    x = param - budget
    return x * inv_b if x > 0.0 else 0.0


@njit(cache=True, inline="always")
def prepared(order, inv_b, graph):
    """:func:`prepare_kernel` as a :class:`PreparedOrder`, for kernels (``graph``:
    :class:`heuristics.arrays.GraphArrays`)."""
    return PreparedOrder(*prepare_kernel(order, *graph, inv_b))


@njit(cache=True)
def table_kernel(order, inv_b, budget, peak_aware, *graph):
    w, param_prefix, out, first, last, in_ptr, in_size, in_next, out_raw, in_size_raw, cons_ptr, cons_pos = prepared(
        order, inv_b, graph
    )
    n = order.shape[0]
    table = np.full((n, n), np.inf)
    t, d, size = peak_tree(n)
    for r in range(n):
        base = 0.0
        in_sum = 0.0
        pk = 0.0
        for l in range(r, -1, -1):
            base += extend_left(l, r, w, out, first, last, in_ptr, in_size, in_next)
            if peak_aware:
                in_sum, pk = peak_extend_left(
                    l, r, in_sum, t, d, size, out_raw, first, last, cons_ptr, cons_pos, in_ptr, in_size_raw, in_next
                )
            table[l, r] = base + overflow(param_prefix[r + 1] - param_prefix[l] + pk, budget, inv_b)
        if peak_aware:
            peak_tree_reset(t, d, size, r)
    return table


def prepare(problem: Problem, order: np.ndarray) -> PreparedOrder:
    """The per-position arrays of ``order`` for ``problem``."""
    order = np.asarray(order, dtype=np.int64)
    return PreparedOrder(*prepare_kernel(order, *graph_arrays(problem.graph), 1.0 / problem.bandwidth))


def segment_cost_table(problem: Problem, order: np.ndarray) -> np.ndarray:
    """``T[l, r] = f({order[l], ..., order[r]})`` for all ``l <= r`` (``inf`` below the
    diagonal), in ``O(n (n + m))`` time (``O(n (n + m) log n)`` with peak-aware
    overflow) and ``n^2`` floats of memory.  Use it to look at costs; the DP never
    materialises it."""
    order = np.asarray(order, dtype=np.int64)
    inv_b = 1.0 / problem.bandwidth
    return table_kernel(order, inv_b, problem.param_budget, problem.peak_aware, *graph_arrays(problem.graph))
