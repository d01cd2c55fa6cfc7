"""The multi-order DP: SliceGraph's segmentation over the prefixes of several orders.

SliceGraph (Algorithm 1) cuts one topological order into contiguous blocks, so its
blocks are differences of consecutive *prefixes* of that order, each prefix an ideal
(a set closed under predecessors).  Given ``R`` orders, this DP lets a block run from
a prefix of one order to a prefix of another: its states are the ideals ``I(r, q)``
(the first ``q`` ops of order ``r``) and a block ``I(r2, q) minus I(r1, p)`` is allowed
wherever ``I(r1, p)`` is a subset of ``I(r2, q)``, i.e. ``q`` is at least every position
in order ``r2`` of the ops of ``I(r1, p)``.  Any chain of nested ideals
``{} = I_0 < I_1 < ... < I_j = V`` cuts the graph into blocks whose quotient graph is
acyclic (block ``b`` only reads from ``I_{b-1}``), so every path is a valid partition,
and the concatenation of its blocks is a topological order that SliceGraph slices into
the same blocks.  This is the restricted decision diagram of the ideal DP whose layers
are the prefix ideals of the orders: with ``R = 1`` it is SliceGraph, and with every
topological order it is the ideal DP.

It minimises the bottleneck by bisection on a threshold ``T``: one pass
(:func:`merge_pass`) computes the fewest blocks of cost at most ``T`` that reach each
state, keeping the smallest bottleneck among paths of that many blocks.  A block's cost
is Eq. (3) with the fixed-reserve overflow of Eq. (2), grown one op at a time in the
order of ``r2``:

* ``+ work(v)``, and the overflow from the block's ``size_param``;
* ``+ size_out(u)/B`` for a producer ``u`` of ``v`` outside the block, counted once per
  tensor: in order ``r2`` every producer of ``v`` comes before ``v``, so a producer not
  already in the block lies in ``I(r1, p)``, and an input stays an input as the block
  grows;
* ``+ size_out(v)/B`` while some consumer of ``v`` is outside the block (none of them
  lies in ``I(r1, p)``), ``- size_out(v)/B`` once the last one joins.

Work, inputs and overflow only grow as the block grows, so a sweep stops once they
pass ``T``.  A source state is skipped when the work left after it cannot fit in the
blocks left at ``T`` each, and states that repeat an earlier order's ideal (equal
Zobrist hashes) are expanded once.  Costs are not peak-aware (``Problem.peak_aware``):
the caller then keeps its own partition.  Every partition it returns is re-checked by
:func:`mtpp.evaluate` like any other.
"""

from __future__ import annotations

import math
import time

import numpy as np

from heuristics.partition.slicegraph import Segmentation
from mtpp.core.jit import clock, njit
from mtpp.core.problem import Problem

CHECK_STEPS = 1 << 16
"""Sweep steps between two looks at the clock under a deadline."""
RTOL = 1e-4
"""The bisection stops once the threshold is known to within this fraction."""
FIRST_STEP = 1.0 / 64
"""The first threshold tried lies this fraction below the upper bound; the step doubles
after a pass that finds a partition and shrinks fourfold after one that does not (the
merged optimum is a few percent below the best order's, far above ``work / k``)."""
MAX_ORDERS = 16
"""Orders merged at most: a pass costs ``O(R^2)`` sweeps per prefix length."""


@njit(cache=True, nogil=True)
def merge_pass(
    orders, pos, hashes, rest, succ_ptr, pred_ptr, pred_idx, work, size_param, out, budget, inv_b, t, k, deadline
):
    """One threshold pass: ``blocks[r, q]`` the fewest blocks of cost at most ``t``
    whose union is the ideal ``I(r, q)`` (``k + 1`` where more than ``k``), with
    ``worst[r, q]`` the smallest bottleneck among such paths, and the parent state
    ``(from_r, from_p)`` of its last block.  ``complete`` is false when the clock
    passed ``deadline`` first.  ``rest[r, q]``: the work outside ``I(r, q)``."""
    n_orders, n = orders.shape
    blocks = np.full((n_orders, n + 1), k + 1, dtype=np.int64)
    worst = np.full((n_orders, n + 1), np.inf)
    from_r = np.full((n_orders, n + 1), -1, dtype=np.int64)
    from_p = np.full((n_orders, n + 1), -1, dtype=np.int64)
    start = np.zeros((n_orders, n_orders), dtype=np.int64)  # first position in r2 outside I(r1, p)
    reach = np.zeros((n_orders, n_orders), dtype=np.int64)  # 1 + last position in r2 of I(r1, p)
    seen = np.zeros((n_orders, n_orders), dtype=np.int64)  # ops of r1 already folded into reach
    in_block = np.zeros(n, dtype=np.bool_)
    counted = np.zeros(n, dtype=np.bool_)
    outside = np.zeros(n, dtype=np.int64)  # consumers of a block op not yet in the block
    added = np.empty(n, dtype=np.int64)
    inputs = np.empty(n, dtype=np.int64)
    timed = deadline < np.inf
    steps = CHECK_STEPS
    for r in range(n_orders):
        blocks[r, 0] = 0
        worst[r, 0] = 0.0
    for p in range(n):
        for r1 in range(n_orders):
            used = blocks[r1, p]
            if used >= k or rest[r1, p] > (k - used) * t * (1.0 + 1e-12):
                continue
            repeat = False
            for r0 in range(r1):
                if hashes[r0, p] == hashes[r1, p]:
                    repeat = True
                    break
            if repeat:
                continue
            for r2 in range(n_orders):
                while seen[r1, r2] < p:
                    x = pos[r2, orders[r1, seen[r1, r2]]] + 1
                    if x > reach[r1, r2]:
                        reach[r1, r2] = x
                    seen[r1, r2] += 1
                s = start[r1, r2]
                while s < n and pos[r1, orders[r2, s]] < p:
                    s += 1
                start[r1, r2] = s
                q0 = reach[r1, r2]
                w = 0.0
                prm = 0.0
                ins = 0.0
                outs = 0.0
                ovf = 0.0
                n_added = 0
                n_inputs = 0
                for i in range(s, n):
                    steps += 1
                    if timed and steps >= CHECK_STEPS:
                        steps = 0
                        if clock() >= deadline:
                            return blocks, worst, from_r, from_p, False
                    v = orders[r2, i]
                    if pos[r1, v] >= p:
                        in_block[v] = True
                        added[n_added] = v
                        n_added += 1
                        w += work[v]
                        prm += size_param[v]
                        outside[v] = succ_ptr[v + 1] - succ_ptr[v]
                        if outside[v] > 0:
                            outs += out[v]
                        for e in range(pred_ptr[v], pred_ptr[v + 1]):
                            u = pred_idx[e]
                            if in_block[u]:
                                outside[u] -= 1
                                if outside[u] == 0:
                                    outs -= out[u]
                            elif not counted[u]:
                                counted[u] = True
                                inputs[n_inputs] = u
                                n_inputs += 1
                                ins += out[u]
                        ovf = (prm - budget) * inv_b if prm > budget else 0.0
                        if w + ins + ovf > t:
                            break
                    elif i + 1 != q0:
                        continue  # I(r2, i + 1) minus I(r1, p) is the block already offered
                    if i + 1 < q0 or n_added == 0:
                        continue
                    cost = w + ins + ovf + outs
                    if cost > t:
                        continue
                    bott = worst[r1, p] if worst[r1, p] > cost else cost
                    q = i + 1
                    if used + 1 < blocks[r2, q] or (used + 1 == blocks[r2, q] and bott < worst[r2, q]):
                        blocks[r2, q] = used + 1
                        worst[r2, q] = bott
                        from_r[r2, q] = r1
                        from_p[r2, q] = p
                for j in range(n_added):
                    in_block[added[j]] = False
                for j in range(n_inputs):
                    counted[inputs[j]] = False
    return blocks, worst, from_r, from_p, True


def merge_orders(
    problem: Problem,
    orders: list[np.ndarray],
    upper_bound: float,
    lower_bound: float = 0.0,
    deadline: float = math.inf,
    max_orders: int = MAX_ORDERS,
) -> Segmentation | None:
    """The best partition of the multi-order DP over ``orders`` (topological orders
    of ``problem.graph``; the first ``max_orders`` distinct ones) whose bottleneck
    is below ``upper_bound``, found by a search on the threshold between
    ``max(lower_bound, work / k)`` and ``upper_bound`` to within :data:`RTOL` (steps
    down from the upper bound, bisection once a threshold fails), as the
    segmentation of the concatenated blocks; ``None`` where it finds none (or for
    peak-aware costs).  ``upper_bound`` should be the value of the best order's own
    slicing, a path of the DP, so the first pass always finds one.  Past ``deadline``
    (a :func:`time.perf_counter` value) the best partition found so far is returned."""
    g = problem.graph
    if problem.peak_aware or g.n == 0 or not math.isfinite(upper_bound):
        return None
    distinct: list[np.ndarray] = []
    for order in orders:
        order = np.asarray(order, dtype=np.int64)
        if not any(np.array_equal(order, o) for o in distinct):
            distinct.append(order)
        if len(distinct) == max_orders:
            break
    stack = np.vstack(distinct)
    n_orders, n = stack.shape
    pos = np.empty_like(stack)
    rows = np.arange(n_orders)[:, None]
    pos[rows, stack] = np.arange(n)
    zobrist = np.asarray(np.random.default_rng(0).integers(1, 2**63, n, dtype=np.uint64))
    hashes = np.zeros((n_orders, n + 1), dtype=np.uint64)
    hashes[:, 1:] = np.bitwise_xor.accumulate(zobrist[stack], axis=1)
    work = g.work.astype(np.float64)
    rest = work.sum() - np.concatenate([np.zeros((n_orders, 1)), np.cumsum(work[stack], axis=1)], axis=1)
    inv_b = 1.0 / problem.bandwidth
    arrays = (stack, pos, hashes, np.maximum(rest, 0.0), g.succ_ptr, g.pred_ptr, g.pred_idx, work)
    sizes = (g.size_param.astype(np.float64), g.size_out * inv_b, problem.param_budget, inv_b)
    k = problem.k
    lo = max(lower_bound, float(work.sum()) / k)
    hi = upper_bound * (1.0 + 1e-9)  # the best order's own path, summed in another order
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    step = FIRST_STEP
    while True:
        t = hi if best is None else max(0.5 * (lo + hi), hi * (1.0 - step))
        blocks, worst, from_r, from_p, complete = merge_pass(*arrays, *sizes, t, k, deadline)
        if not complete:
            break
        end = int(np.argmin(np.where(blocks[:, n] <= k, worst[:, n], np.inf)))
        if blocks[end, n] <= k:
            hi = float(worst[end, n])
            best = (hi, *_path(stack, pos, from_r, from_p, end))
            step *= 2.0
        elif best is None:
            return None  # the first pass at upper_bound: no path in these orders
        else:
            lo = t
            step *= 0.25
        if hi - lo <= RTOL * hi or time.perf_counter() >= deadline:
            break
    if best is None or not best[0] < upper_bound:
        return None
    value, order, starts = best
    return Segmentation.of(order, starts, value)


def _path(
    stack: np.ndarray, pos: np.ndarray, from_r: np.ndarray, from_p: np.ndarray, end: int
) -> tuple[np.ndarray, np.ndarray]:
    """The order (blocks concatenated, each in its own order) and block starts of the
    path ending at ``I(end, n)``."""
    r, q = end, stack.shape[1]
    pieces = []
    while q > 0:
        r1, p = int(from_r[r, q]), int(from_p[r, q])
        prefix = stack[r, :q]
        pieces.append(prefix[pos[r1, prefix] >= p])
        r, q = r1, p
    pieces.reverse()
    starts = np.cumsum([0] + [len(b) for b in pieces[:-1]])
    return np.concatenate(pieces), starts.astype(np.int64)
