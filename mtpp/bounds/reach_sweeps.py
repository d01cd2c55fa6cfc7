"""One step of the reach bound's sweeps, compiled (:mod:`mtpp.bounds.reach`).

A step takes the set ``prev`` (``U_(j-1)``, or ``D_(m-1)`` backward) and returns the ops
that may join it: every op ``v`` outside ``prev`` and ``banned``, in topological order
(reversed backward), whose predecessors (successors) are all in the set so far and
whose block ``X(v)`` fits, i.e. some block holding ``X(v)`` and no banned op may cost at
most the threshold.  ``X(v) = (anc(v) - prev)``, with the ops ``forced`` into the block
added and the hull taken when there are any (the module docstring of
:mod:`mtpp.bounds.reach` proves the claim this serves).

A block *fits* when it holds no banned op and either its own cost ``f(X)`` without a peak
(Eq. 1-3; summed in any order: passing is the safe side whatever the rounding, it only
keeps a set larger) is at most the threshold, or that of ``X`` with the last set a cut
found to fit (a block holding ``X``, so the cut would pass it too), or the minimum cut of
:func:`mtpp.bounds.hull_cuts.hull_cut` (a float at most ``c(H)``) is.  The step
refuses ``v`` only on that cut, so it proves what the Python loop it replaced proved,
with the same cuts.  On a 250-op layered graph at ``k = 8`` that loop spent 15 of 25 s of
shaving in the interpreter around 9 s of cuts.  Each block is found by walking the ops
outside ``prev`` only (:func:`reach_step`), where the step walked the whole graph three
times per op; with the last set that fits, a shaving pass that refutes 160,000 on the
500-op layered graph of seed 9102 at ``k = 8`` took 20 s instead of 39 s (walks alone:
32 s; 31,000 cuts instead of 56,000), with the same set at each of its 9,857 steps.

The cuts take most of a step's time (500-op layered graph of seed 9202 at ``k = 8``, three
shaving tests: 93%), so they run on the network with the step's banned ops merged into its
sink (:func:`mtpp.bounds.hull_cuts.contract_banned`, built at the step's first cut: the same minimum,
on 38% of the ops there): those three tests took 14.7 s instead of 27.2 s, and three at
``k = 16`` on the 250-op graph of seed 9201 5.5 s instead of 9.0 s, with the same answers.
"""

from __future__ import annotations

import numpy as np

from mtpp.bounds.hull_cuts import contract_banned, hull_cut, walk
from mtpp.core.jit import clock, njit

FITS = 0
"""The step's status: the set is returned."""
REFUSED = 1
"""The ops forced into the block cannot fit: the step refutes the threshold."""
LATE = 2
"""The deadline passed inside the step."""
REFUSAL_SLOTS = 16
"""Refusals kept per op (:class:`Refusals`)."""
REFUSAL_BYTES = 64 * 2**20
"""The refusals' bitsets take at most this (fewer slots per op past about 2,000 ops, none past
about 16,000: two bitsets of ``n`` bits per slot and op)."""
CHECK_UNITS = 1 << 20
"""Work between two looks at the clock: each op tested counts the ops of its block and 16, each
cut 16 times the network's arcs besides (a 250-op layered graph: 20 cuts, about 15 ms; at
20,000 ops every cut looks).  A step on a small graph never looks, so both paths of
:mod:`mtpp.core.jit` return the same; the caller looks before each step."""


class Refusals:
    """Cuts that refused an op, kept per op so that a later step spares the cut (the
    shaving's probes meet the same blocks again, a little larger).  A cut above the
    threshold ``T'`` for the block ``H`` with the banned ops ``B`` proves every block
    holding ``H`` and no op of ``B`` costs more than ``T'`` (``c(H)`` is a float at most
    the true minimum); a block ``X`` with banned ops ``B2`` where ``H <= X`` and ``B <=
    B2`` only has fewer blocks to choose from, so its true minimum exceeds ``T'`` too,
    and ``T'`` is at least the threshold ``T`` asked: the step refuses it without a cut.
    Per op, the last :data:`REFUSAL_SLOTS` refusals as bitsets of ``H`` and of the ops not
    in ``B``, with ``T'`` (``-inf``: an empty slot); none where they would take more than
    :data:`REFUSAL_BYTES`."""

    def __init__(self, n: int) -> None:
        words = (n + 63) // 64
        slots = min(REFUSAL_SLOTS, REFUSAL_BYTES // max(1, 16 * n * words))
        self.hulls = np.zeros((n, slots, words), dtype=np.uint64)
        self.allowed = np.zeros((n, slots, words), dtype=np.uint64)
        self.at = np.full((n, slots), -np.inf)
        self.slot = np.zeros(n, dtype=np.int64)
        self.spared = np.zeros(1, dtype=np.int64)
        """Cuts spared so far."""

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What :func:`reach_step` takes as ``refusals``."""
        return self.hulls, self.allowed, self.at, self.slot, self.spared


@njit(cache=True, nogil=True)
def _cost(members, count, inside, tick, entered, succ_ptr, succ_idx, pred_ptr, pred_idx, work, io, size_param,
          budget, bandwidth):  # fmt: skip
    """``f(X)`` without its peak (Eq. 1-3) of ``X = members[:count]`` (``inside[x] ==
    tick``): its work, each tensor that crosses its boundary once (produced inside with a
    consumer outside, or produced outside with a consumer inside: ``entered`` stamps
    those), and the overflow of its parameters over ``budget`` (``M - R``).  ``O`` of
    ``X`` and its edges."""
    total = 0.0
    params = 0.0
    for i in range(count):
        x = members[i]
        total += work[x]
        params += size_param[x]
        for e in range(succ_ptr[x], succ_ptr[x + 1]):
            if inside[succ_idx[e]] != tick:
                total += io[x]
                break
        for e in range(pred_ptr[x], pred_ptr[x + 1]):
            u = pred_idx[e]
            if inside[u] != tick and entered[u] != tick:
                entered[u] = tick
                total += io[u]
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
    refusals,
    deadline,
):
    """``(status, set)`` of one step (module docstring): :data:`FITS` and ``prev`` with
    the ops that may join it, :data:`REFUSED` (the forced ops cannot fit) or :data:`LATE`
    (past ``deadline``, a :func:`mtpp.core.jit.clock` reading; the set is then ``prev``).  ``back``: the backward sweep
    (``order`` is then the reversed topological order, and ``X(v)`` holds descendants).
    The network arrays are :class:`mtpp.bounds.hull_cuts.HullCuts`'s; ``refusals`` is a
    :class:`Refusals`' ``(hulls, allowed, at, slot, spared)``, read and extended here.

    ``prev`` is an ideal (a filter backward: the steps build it so), and an ideal holds
    the ancestors of its ops, so ``anc(v) - prev`` is the ops that reach ``v`` through
    ops outside ``prev`` (a convex set), and an op on a path between two ops outside
    ``prev`` is outside it too: each block is found by walking the ops outside ``prev``.
    With forced ops ``F``, ``A = anc(F) - prev`` and ``H(F) = desc(F) & A`` are found
    once, and ``H(X(v)) = X | H(F) | (desc(X) & A)`` for ``X = anc(v) - prev`` (an op of
    the hull lies below ``X`` or ``F`` and above ``X``, i.e. in ``X``, or above ``F`` and
    outside ``prev``, i.e. in ``A``)."""
    n = prev.shape[0]
    ptr, idx, optr, oidx = (
        (succ_ptr, succ_idx, pred_ptr, pred_idx) if back else (pred_ptr, pred_idx, succ_ptr, succ_idx)
    )
    outside = ~prev
    banned_idx = np.flatnonzero(banned)
    # the network with the banned ops merged into its sink (:func:`contract_banned`), built at the
    # step's first cut: its nodes, arcs, source, sink and ops (-1: not built)
    ptr2, tie2, ops2 = np.empty_like(net_ptr), np.empty_like(tie), np.empty_like(tie)
    head2, rev2, cap2 = np.empty_like(net_head), np.empty_like(net_rev), np.empty_like(net_cap)
    shape = np.full(5, -1, dtype=np.int64)
    upper2 = upper_banned if banned_idx.shape[0] > 0 else upper
    no_ops = np.empty(0, dtype=np.int64)
    members = np.empty(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    inside = np.zeros(n, dtype=np.int64)
    entered = np.zeros(n, dtype=np.int64)
    cover = np.empty(n, dtype=np.int64)  # the last set a cut found to fit (``cover_count`` ops)
    cover_count = np.zeros(1, dtype=np.int64)

    def fits_with_cover(count, tick):
        """Whether ``members[:count]`` with the ops of the last set a cut found to cost at
        most the threshold (its source side: no banned op, whose arcs to the sink cannot
        be cut) costs at most the threshold: a block holding ``X`` that fits, so the cut
        would pass ``X`` too.  On a 500-op layered graph at ``k = 8`` two thirds of the cuts
        that pass are spared so."""
        mark = tick + n + 1  # a stamp no block of this step has: the ticks stay at most n + 1
        total = count
        for i in range(count):
            inside[members[i]] = mark
        for i in range(cover_count[0]):
            x = cover[i]
            if inside[x] != mark:
                inside[x] = mark
                members[total] = x
                total += 1
        cost = _cost(
            members, total, inside, mark, entered, succ_ptr, succ_idx, pred_ptr, pred_idx,
            work, io, size_param, budget, bandwidth,
        )  # fmt: skip
        for i in range(count):
            inside[members[i]] = tick
        return cost <= threshold

    hulls, allowed_by, refused_at, slot, spared = refusals
    words = hulls.shape[2]
    kept = hulls.shape[1] > 0  # none kept on the largest graphs: no bitsets to build
    allowed_bits = np.zeros(words, dtype=np.uint64)
    for x in range(n if kept else 0):
        if not banned[x]:
            allowed_bits[x >> 6] |= np.uint64(1) << np.uint64(x & 63)
    member_bits = np.zeros(words, dtype=np.uint64)

    def known_refused(v, count):
        """Whether a refusal kept for ``v`` (:class:`Refusals`) covers ``members[:count]``
        with the banned ops: its hull inside them, its allowed ops around the allowed ones
        now, its threshold at least this one.  ``members[:count]`` is left in
        ``member_bits`` for :func:`refused` to keep."""
        member_bits[:] = 0
        for i in range(count):
            x = members[i]
            member_bits[x >> 6] |= np.uint64(1) << np.uint64(x & 63)
        for r in range(hulls.shape[1]):
            if refused_at[v, r] < threshold:
                continue
            covers = True
            for w in range(words):
                if (hulls[v, r, w] & ~member_bits[w]) or (allowed_bits[w] & ~allowed_by[v, r, w]):
                    covers = False
                    break
            if covers:
                return True
        return False

    def refused(count, tick, v):
        """Whether no block holding ``members[:count]`` (stamped ``tick``) and no banned op
        costs at most the threshold (module docstring), and the work it took
        (:data:`CHECK_UNITS`); ``v`` is the op tested (``-1``: the forced ops alone), whose
        refusals are looked up before a cut and kept after one."""
        for i in range(count):
            if banned[members[i]]:
                return True, count
        cost = _cost(
            members, count, inside, tick, entered, succ_ptr, succ_idx, pred_ptr, pred_idx,
            work, io, size_param, budget, bandwidth,
        )  # fmt: skip
        if cost <= threshold:
            return False, count
        if cover_count[0] > 0 and fits_with_cover(count, tick):
            return False, count + cover_count[0]
        keeps = v >= 0 and kept
        if keeps and known_refused(v, count):
            spared[0] += 1
            return True, count + words * hulls.shape[1]
        if shape[0] < 0:
            shape[0], shape[1], shape[2], shape[3], shape[4] = contract_banned(
                net_ptr, net_head, net_rev, net_cap, tie, source, sink, banned_idx, ptr2, head2, rev2, cap2, tie2, ops2
            )  # fmt: skip
        nodes, arcs = shape[0], shape[1]
        cut = hull_cut(
            ptr2[: nodes + 1], head2[:arcs], rev2[:arcs], cap2[:arcs], tie2, ban, shape[2], shape[3], upper2,
            upper_banned, own, level[:nodes], members[:count], no_ops, threshold,
        )  # fmt: skip
        if cut > threshold:
            if keeps:
                r = slot[v]
                slot[v] = (r + 1) % hulls.shape[1]
                hulls[v, r, :] = member_bits
                allowed_by[v, r, :] = allowed_bits
                refused_at[v, r] = threshold
            return True, count + 16 * arcs
        cover_count[0] = 0
        for i in range(shape[4]):
            if level[i] >= 0:
                cover[cover_count[0]] = ops2[i]
                cover_count[0] += 1
        return False, count + 16 * arcs

    forced_idx = np.flatnonzero(forced)
    has_forced = forced_idx.shape[0] > 0
    region = np.zeros(n, dtype=np.bool_)
    hull_forced = np.empty(0, dtype=np.int64)
    cur = prev.copy()
    units = 0
    tick = 1
    if has_forced:
        above = np.zeros(n, dtype=np.int64)
        starts = np.empty(n, dtype=np.int64)
        for i in range(forced_idx.shape[0]):
            above[forced_idx[i]] = 1
            starts[i] = forced_idx[i]
        count = walk(ptr, idx, starts, forced_idx.shape[0], outside, above, 1, stack)
        for i in range(count):
            region[starts[i]] = True
        for i in range(forced_idx.shape[0]):
            members[i] = forced_idx[i]
            inside[forced_idx[i]] = tick
        count = walk(optr, oidx, members, forced_idx.shape[0], region, inside, tick, stack)
        hull_forced = members[:count].copy()
        no, units = refused(count, tick, -1)
        if no:
            return REFUSED, cur
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
        tick += 1
        members[0] = v
        inside[v] = tick
        count = walk(ptr, idx, members, 1, outside, inside, tick, stack)
        if has_forced:
            for x in hull_forced:
                if inside[x] != tick:
                    inside[x] = tick
                    members[count] = x
                    count += 1
            count = walk(optr, oidx, members, count, region, inside, tick, stack)
        no, spent = refused(count, tick, v)
        units += spent + 16
        if not no:
            cur[v] = True
    return FITS, cur
