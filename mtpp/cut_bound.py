"""The k-independent *cut* lower bound: ``OPT >= max_v min_{S contains v} f(S)``.

Soundness.  Every op ``v`` lies in some block ``S`` of any partition, so the
bottleneck is at least ``f(S) >= min_{S' contains v} f(S')`` for every ``v``; the
minimum runs over *all* node sets containing ``v``, a superset of the blocks an
acyclic partition can have (convex sets), which can only lower it; and ``S = V``
is among them, so each minimum is at most ``f(V)``.  Overflow (Eq. 2) is
replaced by ``overflow({v})``: parameters only add up, so ``size_param(S) >=
size_param(v)`` and the overflow of any ``S`` containing ``v`` is at least that of
``{v}`` (with peak-aware costs, ``peak(S) >= 0`` only adds more).  What is left,

    g(S) = work(S) + (input IO + output IO)(S),

is a modular term plus a hypergraph cut: the tensor of ``u`` costs ``size_out(u)/B``
exactly when its net ``{u} + consumers(u)`` has members inside and outside ``S``
(input IO when ``u`` is outside, output IO when inside; a tensor with no consumer
is never charged).  So ``min_{S contains v} g(S)`` is an ``s``-``t`` minimum cut
(Lawler's net gadget): the source is ``v``, each op ``x`` has an arc ``x -> t`` of
capacity ``work(x)`` (cut when ``x`` is in ``S``), each net gets two extra nodes
``a -> b`` of capacity ``size_out(u)/B`` with infinite arcs from every member into
``a`` and from ``b`` to every member (the arc ``a -> b`` is cut exactly when the net
has members on both sides).  The value of any feasible flow is at most the
minimum cut (weak duality), so the maximum flow found, lowered by a relative
``1e-9`` for rounding, is a valid bound.

The flow is Dinic's algorithm on floating-point capacities in compiled code,
``O(V^2 E)`` per op in the worst case and far less on these networks.  Ops are
tried by decreasing ``g({v}) + overflow({v})``, an upper estimate of their
minimum, and the scan stops once that estimate cannot beat the best bound so far.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mtpp.cost import overflow_cost
from mtpp.problem import Problem

ROUNDING = 1e-9  # relative margin for floating-point rounding in the flow


def cut_network(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The gadget network as CSR arrays ``(ptr, head, rev, cap)`` (every arc
    paired with its reverse, ``rev[e]``) and the sink's index."""
    g = problem.graph
    n = g.n
    producers = np.flatnonzero(np.diff(g.succ_ptr) > 0)
    a_of = n + 2 * np.arange(producers.size)
    sink = n + 2 * producers.size
    tails, heads, caps = [], [], []
    ops = np.flatnonzero(g.work > 0)
    tails.append(ops)
    heads.append(np.full(ops.size, sink))
    caps.append(g.work[ops])
    tails.append(a_of)
    heads.append(a_of + 1)
    caps.append(g.size_out[producers] / problem.bandwidth)
    # members of each net: its producer and the consumers (the producer's out-edges)
    member = np.concatenate([producers, g.succ_idx])
    owner = np.zeros(n, dtype=np.int64)
    owner[producers] = a_of
    net = np.concatenate([a_of, np.repeat(owner, np.diff(g.succ_ptr))])
    tails += [member, net + 1]
    heads += [net, member]
    caps += [np.full(member.size, np.inf), np.full(member.size, np.inf)]
    tail = np.concatenate(tails).astype(np.int64)
    head = np.concatenate(heads).astype(np.int64)
    cap = np.concatenate(caps).astype(np.float64)
    m = tail.size
    # each arc e and its reverse m + e, then grouped by tail
    all_tail = np.concatenate([tail, head])
    all_head = np.concatenate([head, tail])
    all_cap = np.concatenate([cap, np.zeros(m)])
    order = np.argsort(all_tail, kind="stable")
    position = np.empty(2 * m, dtype=np.int64)
    position[order] = np.arange(2 * m)
    partner = np.concatenate([np.arange(m, 2 * m), np.arange(m)])
    ptr = np.zeros(sink + 2, dtype=np.int64)
    np.cumsum(np.bincount(all_tail, minlength=sink + 1), out=ptr[1:])
    return ptr, all_head[order], position[partner[order]], all_cap[order], int(sink)


@njit(cache=True)
def max_flow(ptr, head, rev, cap0, source, sink, tol):
    """Dinic's maximum flow from ``source`` to ``sink``; residual capacities at or
    below ``tol`` count as saturated (which only lowers the flow found)."""
    n_nodes = ptr.shape[0] - 1
    cap = cap0.copy()
    level = np.empty(n_nodes, dtype=np.int64)
    queue = np.empty(n_nodes, dtype=np.int64)
    it = np.empty(n_nodes, dtype=np.int64)
    path = np.empty(n_nodes, dtype=np.int64)  # arcs of the current path
    flow = 0.0
    while True:
        level[:] = -1
        level[source] = 0
        qh, qt = 0, 1
        queue[0] = source
        while qh < qt:
            x = queue[qh]
            qh += 1
            for e in range(ptr[x], ptr[x + 1]):
                y = head[e]
                if cap[e] > tol and level[y] < 0:
                    level[y] = level[x] + 1
                    queue[qt] = y
                    qt += 1
        if level[sink] < 0:
            return flow
        it[:] = ptr[:-1]
        depth = 0
        x = source
        while True:
            if x == sink:
                push = np.inf
                for d in range(depth):
                    if cap[path[d]] < push:
                        push = cap[path[d]]
                for d in range(depth):
                    e = path[d]
                    cap[e] -= push
                    cap[rev[e]] += push
                flow += push
                depth = 0
                x = source
                continue
            advanced = False
            while it[x] < ptr[x + 1]:
                e = it[x]
                y = head[e]
                if cap[e] > tol and level[y] == level[x] + 1:
                    path[depth] = e
                    depth += 1
                    x = y
                    advanced = True
                    break
                it[x] += 1
            if not advanced:
                if x == source:
                    break
                level[x] = -1  # dead end for this phase
                depth -= 1
                x = head[rev[path[depth]]]
                it[x] += 1


def cut_lower_bound(problem: Problem) -> tuple[float, int]:
    """``max_v min_{S contains v} (g(S) + overflow({v}))`` (see the module
    docstring), lowered by ``ROUNDING``, and the op attaining it (``-1`` if the
    graph has no work and no tensors)."""
    g = problem.graph
    inv_b = 1.0 / problem.bandwidth
    own_ovf = overflow_cost(problem, g.size_param)
    has_consumer = np.diff(g.succ_ptr) > 0
    inputs = np.bincount(g.edge_dst, weights=g.size_out[g.edge_src], minlength=g.n)  # distinct producers
    estimate = g.work + (inputs + g.size_out * has_consumer) * inv_b + own_ovf
    ptr, head, rev, cap, sink = cut_network(problem)
    finite = cap[np.isfinite(cap)]
    tol = 1e-12 * float(finite.max()) if finite.size else 0.0
    best, arg = 0.0, -1
    for v in np.argsort(-estimate, kind="stable").tolist():
        if estimate[v] <= best:
            break
        value = max_flow(ptr, head, rev, cap, v, sink, tol) + float(own_ovf[v])
        if value > best:
            best, arg = value, v
    return best * (1.0 - ROUNDING), arg
