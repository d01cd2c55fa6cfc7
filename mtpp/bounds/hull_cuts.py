"""The cheapest block that holds a given set of ops, from below: one minimum cut.

Every block of an acyclic partition is convex, so a block holding ops ``X`` holds
their *hull* ``H(X)``: every op on a path between two of them, ``desc(X) & anc(X)``.
The clique bound (:mod:`mtpp.bounds.clique`: pairs) and the crossing bound
(:mod:`mtpp.bounds.crossing`: a tensor's producer with its consumers) both need

    c(H) = min { f(S) : S contains H },

and bound it below exactly as the cut bound bounds its per-op minimum (steps 1-6 of
:mod:`mtpp.bounds.cut`): ``f(S) >= g(S) + overflow({x})`` for every op ``x`` of ``S``
(parameters only add up; with peak-aware costs the peak only adds),
``min_{S contains H} g(S)`` is an ``s``-``t`` minimum cut of the same gadget network
with a super-source tied to every op of ``H`` by arcs that must not be cut, and
:func:`mtpp.bounds.cut.min_cut_below` returns a float at most its true value; the
largest lowered ``overflow({x})`` over ``H`` is added with the same rounding step
(:func:`mtpp.core.rounding.two_sum`, one float down when the sum rounded up).  About a
millisecond per hull on 500 ops, a second on 20,000.
"""

from __future__ import annotations

import numpy as np

from mtpp.bounds.cut import csr_network, gadget_arcs, io_below, min_cut_below, own_overflow_below
from mtpp.core.jit import njit
from mtpp.core.problem import Problem
from mtpp.core.rounding import two_sum

ESTIMATE_UP = 1.0 + 2.0**-40  # raises float estimates of a minimum: tightness only


@njit(cache=True, nogil=True)
def walk(ptr, idx, members, count, allowed, inside, tick, stack):
    """Extend ``members[:count]`` (ops the caller has stamped ``tick`` in ``inside``) by every
    op reachable from them along the CSR adjacency ``(ptr, idx)`` through ops with
    ``allowed`` set, stamping and appending each; the new count.  ``O`` of the ops reached
    and their edges (``stack``: scratch of ``n`` entries)."""
    top = 0
    for i in range(count):
        stack[top] = members[i]
        top += 1
    while top > 0:
        top -= 1
        x = stack[top]
        for e in range(ptr[x], ptr[x + 1]):
            y = idx[e]
            if allowed[y] and inside[y] != tick:
                inside[y] = tick
                members[count] = y
                count += 1
                stack[top] = y
                top += 1
    return count


@njit(cache=True, nogil=True)
def reach(ptr, idx, starts, n):
    """``out[x]``: ``x`` is reachable from one of ``starts`` along the CSR adjacency
    ``(ptr, idx)`` (the starts included): descendants with successor lists, ancestors
    with predecessor lists.  ``O(n + m)``."""
    inside = np.zeros(n, dtype=np.int64)
    members = np.empty(n, dtype=np.int64)
    count = 0
    for x in starts:
        if inside[x] == 0:
            inside[x] = 1
            members[count] = x
            count += 1
    walk(ptr, idx, members, count, np.ones(n, dtype=np.bool_), inside, 1, np.empty(n, dtype=np.int64))
    return inside == 1


class HullCuts:
    """``c(H)`` from below for any hull ``H`` (indices of ops): one minimum cut of the
    gadget network with a super-source tied to ``H`` (module docstring).  With
    ``banned`` ops, the minimum runs over the sets ``S`` that hold ``H`` and none of
    them (an infinite arc from each to the sink); a cut of ``H`` alone (and its nets'
    entry nodes) crosses no infinite arc when ``H`` holds no banned op, so the integer
    flow's argument (:mod:`mtpp.bounds.cut`, step 3) stands, and when it holds one no
    such set exists and any value is below the minimum."""

    def __init__(self, problem: Problem) -> None:
        g = problem.graph
        tail, head, cap, sink = gadget_arcs(problem)
        self.source, self.sink = sink + 1, sink
        ops = np.arange(g.n, dtype=np.int64)
        self.ptr, self.head, self.rev, self.cap, position = csr_network(
            np.r_[tail, np.full(g.n, self.source), ops],
            np.r_[head, ops, np.full(g.n, sink)],
            np.r_[cap, np.zeros(2 * g.n)],
            sink + 2,
        )
        self.tie = position[-2 * g.n : -g.n]  # the arc source -> op x, capacity 0 until x is in the hull
        self.ban = position[-g.n :]  # the arc op x -> sink, capacity 0 until x is banned
        self.upper = float(g.work.sum()) * ESTIMATE_UP  # g(V) = work(V) is at least every minimum
        # with banned ops V is not a candidate: every g(S) is at most the work plus each tensor twice
        self.upper_banned = (float(g.work.sum()) + 2.0 * float(io_below(problem).sum())) * ESTIMATE_UP
        self.own = own_overflow_below(problem)
        self.level = np.empty(self.ptr.size - 1, dtype=np.int64)

    def __call__(self, hull: np.ndarray, banned: np.ndarray | None = None) -> float:
        none = np.zeros(0, dtype=np.int64)
        return float(
            hull_cut(
                self.ptr, self.head, self.rev, self.cap, self.tie, self.ban, self.source, self.sink,
                self.upper, self.upper_banned, self.own, self.level,
                np.asarray(hull, dtype=np.int64), none if banned is None else np.asarray(banned, dtype=np.int64),
                np.inf,
            )
        )  # fmt: skip


@njit(cache=True, nogil=True)
def hull_cut(ptr, head, rev, cap, tie, ban, source, sink, upper, upper_banned, own, level, hull, banned, enough):
    """:meth:`HullCuts.__call__` on its network's arrays (compiled callers call this): ``c(H)``
    from below for the non-empty hull ``hull`` and the ``banned`` ops (indices); a caller that
    only asks whether it exceeds ``enough`` gets, once a flow shows it does, that flow's value
    (:func:`mtpp.bounds.cut.min_cut_below`).  The source side of the last minimum cut found
    is left in ``level`` (``>= 0``)."""
    cap = cap.copy()
    for x in hull:
        cap[tie[x]] = np.inf
    if banned.shape[0] > 0:
        upper = upper_banned
        for x in banned:
            cap[ban[x]] = np.inf
    flow, _ = min_cut_below(ptr, head, rev, cap, source, sink, upper, level, enough)
    most = 0.0  # own >= 0: the largest own overflow of the hull
    for x in hull:
        most = max(most, own[x])
    value, error = two_sum(flow, most)  # value + error = flow + own exactly
    if error < 0.0:
        value = max(0.0, np.nextafter(value, -np.inf))
    return value


@njit(cache=True, nogil=True)
def contract_banned(ptr, head, rev, cap, tie, source, sink, banned, ptr2, head2, rev2, cap2, tie2, ops):
    """:class:`HullCuts`' network with the ``banned`` ops (indices) merged into the sink, and
    with them every node from which an infinite arc leads to a merged one (a net's exit node
    ``a + 1`` where a consumer is banned), written into ``ptr2, head2, rev2, cap2`` (at least
    as long as ``ptr`` and ``head``; ``tie2`` and ``ops`` as long as ``tie``): its nodes, arcs,
    source and sink; ``tie2[x]`` is its arc source -> op ``x`` (``-1``: ``x`` merged) and
    ``ops[i]`` the op of node ``i`` (the ops kept are its first nodes, in their order).

    Every cut of finite value leaves a banned op on the sink side (its infinite arc to the
    sink), and so every node with an infinite arc to a node on the sink side.  Merging those
    nodes into the sink keeps every finite cut and its value: an arc out of a merged node is
    never cut, and one into a merged node is cut exactly when its copy into the sink is; arcs
    of capacity 0 both ways (the ban arcs) are dropped.  So with the hull (no merged op) tied
    to the source, the minimum cut is the same as with the banned ops tied to the sink, and
    :func:`hull_cut` on this network, with no banned ops, returns a float at most it.  In
    shaving most ops are banned (500-op layered graph at ``k = 8``: 62% at each cut), and a
    cut's work grows with its network: shaving took half the time to two thirds."""
    nodes = ptr.shape[0] - 1
    merged = np.zeros(nodes, dtype=np.bool_)
    merged[sink] = True
    stack = np.empty(nodes, dtype=np.int64)
    top = 0
    for x in banned:
        if not merged[x]:
            merged[x] = True
            stack[top] = x
            top += 1
    while top > 0:  # the arcs into y are the partners of its own
        top -= 1
        y = stack[top]
        for e in range(ptr[y], ptr[y + 1]):
            x = head[e]
            if not merged[x] and cap[rev[e]] == np.inf:
                merged[x] = True
                stack[top] = x
                top += 1
    new = np.full(nodes, -1, dtype=np.int64)
    kept = 0
    for x in range(nodes):
        if not merged[x]:
            new[x] = kept
            kept += 1
    to = kept  # the new sink

    keep = np.zeros(head.shape[0], dtype=np.bool_)  # the arcs out of kept nodes that stay
    ptr2[: kept + 2] = 0
    for x in range(nodes):
        if merged[x]:
            continue
        for e in range(ptr[x], ptr[x + 1]):
            y = head[e]
            if cap[e] > 0.0 or cap[rev[e]] > 0.0 or ((x == source or y == source) and not merged[y]):
                keep[e] = True
                ptr2[new[x] + 1] += 1
                if merged[y]:  # its partner leaves the sink
                    ptr2[to + 1] += 1
    for i in range(kept + 1):
        ptr2[i + 1] += ptr2[i]
    fill = ptr2[: kept + 1].copy()
    where = np.full(head.shape[0], -1, dtype=np.int64)
    for x in range(nodes):
        for e in range(ptr[x], ptr[x + 1]):
            if not keep[e]:
                continue
            i = fill[new[x]]
            fill[new[x]] += 1
            where[e], cap2[i] = i, cap[e]
            if merged[head[e]]:
                head2[i] = to
                j = fill[to]
                fill[to] += 1
                where[rev[e]], head2[j], cap2[j] = j, new[x], cap[rev[e]]
            else:
                head2[i] = new[head[e]]
    for e in range(head.shape[0]):
        if where[e] >= 0:
            rev2[where[e]] = where[rev[e]]
    count = 0
    for x in range(tie.shape[0]):
        tie2[x] = -1
        if not merged[x]:
            tie2[x] = where[tie[x]]
            ops[count] = x
            count += 1
    return kept + 1, ptr2[kept + 1], new[source], to, count
