"""One step of the reach bound's sweeps, compiled (:mod:`mtpp.reach_bound`).

A step takes the set ``prev`` (``U_(j-1)``, or ``D_(m-1)`` backward) and returns the ops
that may join it: every op ``v`` outside ``prev`` and ``banned``, in topological order
(reversed backward), whose predecessors (successors) are all in the set so far and
whose block ``X(v)`` fits, i.e. some block holding ``X(v)`` and no banned op may cost at
most the threshold.  ``X(v) = (anc(v) - prev)``, with the ops ``forced`` into the block
added and the hull taken when there are any (the module docstring of
:mod:`mtpp.reach_bound` proves the claim this serves).

A block *fits* when it holds no banned op and either its own cost ``f(X)`` without a peak
(Eq. 1-3; summed in any order: passing is the safe side whatever the rounding, it only
keeps a set larger) is at most the threshold, or the minimum cut of
:func:`mtpp.hull_cuts.hull_cut` (a float at most ``c(H)``) is.  The step
refuses ``v`` only on that cut, so it proves what the Python loop it replaced proved,
with the same cuts.  On a 250-op layered graph at ``k = 8`` that loop spent 15 of 25 s of
shaving in the interpreter around 9 s of cuts.
"""

from __future__ import annotations

import numpy as np

from mtpp.hull_cuts import hull_cut, reach
from mtpp.jit import clock, njit

FITS = 0
"""The step's status: the set is returned."""
REFUSED = 1
"""The ops forced into the block cannot fit: the step refutes the threshold."""
LATE = 2
"""The deadline passed inside the step."""
CHECK_UNITS = 1 << 20
"""Work between two looks at the clock: each op tested counts the graph's ops and edges, each
cut 16 times the network's arcs besides (a 250-op layered graph: 20 cuts, about 15 ms; at
20,000 ops every cut looks).  A step on a small graph never looks, so both paths of
:mod:`mtpp.jit` return the same; the caller looks before each step."""


@njit(cache=True, nogil=True)
def block_cost(block, edge_src, edge_dst, work, io, size_param, budget, bandwidth):
    """``f(block)`` without its peak (Eq. 1-3): work, each tensor that crosses the block's
    boundary once, and the overflow of its parameters over ``budget`` (``M - R``)."""
    n = block.shape[0]
    crossing = np.zeros(n, dtype=np.bool_)
    for e in range(edge_src.shape[0]):
        if block[edge_src[e]] != block[edge_dst[e]]:
            crossing[edge_src[e]] = True
    total = 0.0
    params = 0.0
    for v in range(n):
        if block[v]:
            total += work[v]
            params += size_param[v]
        if crossing[v]:
            total += io[v]
    if params > budget:
        total += (params - budget) / bandwidth
    return total


@njit(cache=True, nogil=True)
def reach_step(
    threshold,
    back,
    prev,
    forced,
    banned,
    order,
    succ_ptr,
    succ_idx,
    pred_ptr,
    pred_idx,
    edge_src,
    edge_dst,
    work,
    io,
    size_param,
    budget,
    bandwidth,
    net_ptr,
    net_head,
    net_rev,
    net_cap,
    tie,
    ban,
    source,
    sink,
    upper,
    upper_banned,
    own,
    level,
    deadline,
):
    """``(status, set)`` of one step (module docstring): :data:`FITS` and ``prev`` with
    the ops that may join it, :data:`REFUSED` (the forced ops cannot fit) or :data:`LATE`
    (past ``deadline``, a :func:`mtpp.jit.clock` reading; the set is then ``prev``).  ``back``: the backward sweep
    (``order`` is then the reversed topological order, and ``X(v)`` holds descendants).
    The network arrays are :class:`mtpp.hull_cuts.HullCuts`'s."""
    n = prev.shape[0]
    ptr, idx = (succ_ptr, succ_idx) if back else (pred_ptr, pred_idx)
    banned_idx = np.flatnonzero(banned)
    per_test, per_cut = n + edge_src.shape[0], 16 * net_head.shape[0]

    def hull_of(ops):
        start = np.flatnonzero(ops)
        return reach(succ_ptr, succ_idx, start, n) & reach(pred_ptr, pred_idx, start, n)

    def refused(block):
        """Whether no block holding ``block`` and no banned op costs at most the threshold
        (module docstring), and the work it took (:data:`CHECK_UNITS`)."""
        if (block & banned).any():
            return True, per_test
        if block_cost(block, edge_src, edge_dst, work, io, size_param, budget, bandwidth) <= threshold:
            return False, per_test
        cut = hull_cut(
            net_ptr, net_head, net_rev, net_cap, tie, ban, source, sink, upper, upper_banned, own, level,
            np.flatnonzero(block), banned_idx, threshold,
        )  # fmt: skip
        return cut > threshold, per_test + per_cut

    has_forced = forced.any()
    cur = prev.copy()
    units = 0
    if has_forced:
        no, units = refused(hull_of(forced))
        if no:
            return REFUSED, cur
    single = np.empty(1, dtype=np.int64)
    for v in order:
        if prev[v] or banned[v]:
            continue
        ready = True
        for e in range(ptr[v], ptr[v + 1]):
            if not cur[idx[e]]:
                ready = False
                break
        if not ready:
            continue
        if units >= CHECK_UNITS:
            units = 0
            if clock() > deadline:
                return LATE, prev.copy()
        single[0] = v
        ops = reach(ptr, idx, single, n) & ~prev
        no, spent = refused(hull_of(ops | forced) if has_forced else ops)
        units += spent
        if not no:
            cur[v] = True
    return FITS, cur
