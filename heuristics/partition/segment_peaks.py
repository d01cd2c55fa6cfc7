"""Activation peak ``peak(S)`` of the segments of an order, as tables and columns
(the sweep itself is :mod:`heuristics.partition.segment_peak_tree`; the definition of ``peak(S)`` is
there and in :func:`mtpp.core.memory.block_peak`, the independent reference)."""

from __future__ import annotations

import numpy as np

from heuristics.arrays import graph_arrays
from heuristics.partition.segment_peak_tree import peak_extend_left, peak_tree, peak_tree_reset, prefix_peaks_kernel
from heuristics.partition.segments import prepare, prepared
from mtpp.core.jit import njit
from mtpp.core.problem import Problem


@njit(cache=True)
def peak_column_kernel(r, stop, t, d, size, p):
    """``peak(l, r)`` for ``l = r, r-1, ..., stop`` (entry ``r - l``) of the prepared
    order ``p``, leaving the tree empty again."""
    res = np.empty(r - stop + 1)
    in_sum = 0.0
    out, first, last, cons_ptr, cons_pos = p.out_raw, p.first_consumer, p.last_consumer, p.cons_ptr, p.cons_pos
    in_ptr, in_size, in_next = p.in_ptr, p.in_size_raw, p.in_next
    for l in range(r, stop - 1, -1):
        in_sum, res[r - l] = peak_extend_left(
            l, r, in_sum, t, d, size, out, first, last, cons_ptr, cons_pos, in_ptr, in_size, in_next
        )
    peak_tree_reset(t, d, size, r - stop)
    return res


@njit(cache=True)
def peak_table_kernel(order, *graph):
    p = prepared(order, 1.0, graph)  # peaks read the sizes themselves, not divided by the bandwidth
    n = order.shape[0]
    table = np.full((n, n), np.nan)
    t, d, size = peak_tree(n)
    for r in range(n):
        col = peak_column_kernel(r, 0, t, d, size, p)
        for l in range(r + 1):
            table[l, r] = col[r - l]
    return table


@njit(cache=True)
def one_column_kernel(r, stop, t, d, size, order, *graph):
    """:func:`peak_column_kernel` on the tree ``(t, d, size)`` for a Python caller."""
    p = prepared(order, 1.0, graph)
    return peak_column_kernel(r, stop, t, d, size, p)


def peak_segment_table(problem: Problem, order: np.ndarray) -> np.ndarray:
    """``T[l, r] = peak({order[l], ..., order[r]})`` for all ``l <= r``, ``nan`` below
    the diagonal; ``O(n (n + m) log n)`` time, ``n^2`` floats."""
    order = np.asarray(order, dtype=np.int64)
    return peak_table_kernel(order, *graph_arrays(problem.graph))


def prefix_peaks(problem: Problem, order: np.ndarray) -> np.ndarray:
    """``peak(0, r)`` for every ``r`` (see :func:`heuristics.partition.segment_peak_tree.prefix_peaks_kernel`)."""
    p = prepare(problem, order)
    return prefix_peaks_kernel(p.out_raw, p.last_consumer, p.in_ptr, p.in_size_raw, p.in_next)


def peak_column(problem: Problem, order: np.ndarray, r: int, stop: int = 0) -> np.ndarray:
    """``peak(l, r)`` for ``l = r, r-1, ..., stop`` (entry ``r - l``): one column of the
    table, ``O((r - stop + edges) log n)``, as a DP sweep would produce it."""
    t, d, size = peak_tree(problem.graph.n)
    order = np.asarray(order, dtype=np.int64)
    return one_column_kernel(int(r), int(stop), t, d, size, order, *graph_arrays(problem.graph))
