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
minimum cut (weak duality).

Exact arithmetic.  "True" values are exact real arithmetic on the float
inputs.  A float max flow is not safe on graphs that mix a ``1e12`` tensor with
``1e-3`` ops (its residual updates err by ``u 1e12``, ``u = 2^-53``, far more than
the answer), so the flow runs on integers and every step only lowers a cut:

1. Capacities are lowered to floats ``c_e <= `` their true value: ``work(x)`` is a
   float input; ``fl(size_out/B) <= (size_out/B)(1 + u)``, so
   ``fl(fl(size_out/B) (1 - 2^-51)) <= (size_out/B)(1 + u)^2 (1 - 4u) < size_out/B``
   (when ``B`` is a power of two the division is exact and is kept: a quotient too
   small to be a normal float is below ``q_v`` and floors to 0 in step 3).
2. Each finite capacity is capped at ``U_v``, an estimate of the minimum for ``v``
   (``min(g({v}), g(V) = work(V))``, raised by ``2^-40``).  Capping lowers every
   cut, so the minimum stays a lower bound whatever ``U_v`` is; and a cut of value
   at most ``U_v`` has no arc above ``U_v``, so the minimum is unchanged whenever it
   is at most ``U_v``.
3. The capped capacities are floored to integers in units of ``q_v = 2^k``, the
   smallest power of two (at least ``2^-1000``) with ``2 fl(sum) / q_v <= 2^60``
   (``fl(sum) >= sum / 2``), so the integer capacities sum to at most ``2^60``;
   infinite arcs get ``2^62``.  ``c / q_v`` is exact (a power of two, result normal
   or below 1), so ``q_v floor(c / q_v) <= c``.  The cut of every node set with no
   infinite arc is at most ``2^60`` (``S`` = all but ``t`` is one), so no minimum
   cut crosses an infinite arc, and the integer minimum cut times ``q_v`` is at
   most the true minimum.
4. Dinic's algorithm on ``int64`` is exact: the residual capacities of an arc and
   its reverse always sum to the arc's capacity, at most ``2^62``, so nothing
   overflows.  The flow ``F`` is converted to a float rounded down and multiplied
   by ``q_v`` (exact: a power of two, the result normal).
5. ``overflow({v})`` is ``(size_param(v) - (M - R))^+ / B``.  ``two_sum`` gives
   ``p = fl(M - R)`` with its exact error ``e0`` and ``s = fl(size_param - p)``
   with ``e1``, so the true excess is ``s + e1 - e0`` exactly (``|e0| <= u |p|``,
   ``|e1| <= u |s|``).  ``x = fl(s + fl(e1 - e0))`` errs by at most ``u |x| + u^2
   (|s| + |p|)``, so ``fl(x^+ / B)`` is at most ``(1 + 3u)`` times the true value
   plus ``(1 + 3u) u^2 (|s| + |p|) / B``, and :func:`mtpp.core.rounding.lower_by` with
   relative ``3u`` and absolute ``(2 u^2 (|s| + |p|) + 2^-1000) / B`` lowers it
   below the truth (``2^-1000`` covers roundings below the normal range).  With
   peak-aware costs ``R = 0`` and the true overflow of ``{v}`` is only larger.
6. The two are added by :func:`mtpp.core.rounding.two_sum`, whose error term says
   exactly whether the float sum rounded up; if it did, it is stepped one float
   down (``nextafter``), below the exact sum (rounding to nearest moves a sum by
   at most half the gap to the next float below).

Loss.  With ``U_v`` at least the minimum, the result is below the true minimum by
less than ``k q_v`` plus a relative ``4u`` (``k`` the finite arcs of the integer
minimum cut): each floored arc loses less than ``q_v``.  When ``k q_v`` exceeds
``2^-30`` of the flow (a huge arc set the scale), ``U_v`` is lowered to the true
value of the cut just found (an upper bound on the minimum) and the flow run again
with the finer ``q_v``, up to ``REFINE`` times; every run's value is a valid bound
and the largest is kept.  On ordinary graphs ``q_v`` is about ``2^-60`` of the
network's total capacity, so the loss is far below ``1e-12`` relative.

The flow is Dinic's algorithm in compiled code, ``O(V^2 E)`` per op in the worst
case and far less on these networks (on ``int64`` as fast as it was on floats).
Ops are tried by decreasing ``min(g({v}), g(V) = work(V)) + overflow({v})``, an
upper estimate of their value; once a minimum cut set ``S`` is found, every op in
``S`` has its estimate lowered to ``g(S)`` plus its own overflow, and an op whose
estimate cannot beat the best bound by more than a relative ``2^-36`` is skipped
(it could raise the bound by no more than that).  Skipping only ever lowers the
result, so none of this bears on soundness.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from mtpp.core.jit import njit
from mtpp.core.problem import Problem
from mtpp.core.rounding import UNIT, two_sum

INFINITE = 2**62  # integer capacity of the arcs that must not be cut
TOTAL_BITS = 60  # the finite integer capacities of one network sum to at most 2^60
MIN_EXPONENT = -1000  # q_v >= 2^-1000: a normal float, so c / q_v below 1 floors to 0
REFINE = 3  # extra flows with a smaller cap U_v when the quantisation loss is visible
DIVISION_DOWN = 1.0 - 2.0**-51  # fl(fl(x / B) * this) <= x / B (module docstring, step 1)
TINY = 2.0**-1000  # covers the roundings of numbers too small to be normal floats
ESTIMATE_UP = 1.0 + 2.0**-40  # raises float estimates of a minimum: tightness only
SKIP = 1.0 + 2.0**-36  # ops whose estimate is within this factor of the best bound are not tried


def io_below(problem: Problem) -> np.ndarray:
    """Per op, ``size_out / B`` as a float at most its true value (step 1 of the
    module docstring)."""
    io = problem.graph.size_out / problem.bandwidth
    if math.frexp(problem.bandwidth)[0] != 0.5:  # B not a power of two: the division rounds
        io = io * DIVISION_DOWN
    return io


def gadget_arcs(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The arcs of the gadget network as ``(tail, head, cap)`` and the sink's index:
    ops are nodes ``0..n-1``, each net ``u`` adds ``n + 2i`` and ``n + 2i + 1``.
    Finite capacities are floats at most their true values (step 1 of the module
    docstring); the arcs that must not be cut have ``inf``."""
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
    caps.append(io_below(problem)[producers])
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
    return tail, head, cap, int(sink)


def csr_network(
    tail: np.ndarray, head: np.ndarray, cap: np.ndarray, nodes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Arcs as CSR arrays ``(ptr, head, rev, cap)``, every arc paired with its
    reverse (``rev[e]``, capacity 0), grouped by tail; and ``position``: where arc
    ``i`` of the input went."""
    m = tail.size
    all_tail = np.concatenate([tail, head])
    all_head = np.concatenate([head, tail])
    all_cap = np.concatenate([cap, np.zeros(m)])
    order = np.argsort(all_tail, kind="stable")
    position = np.empty(2 * m, dtype=np.int64)
    position[order] = np.arange(2 * m)
    partner = np.concatenate([np.arange(m, 2 * m), np.arange(m)])
    ptr = np.zeros(nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(all_tail, minlength=nodes), out=ptr[1:])
    return ptr, all_head[order], position[partner[order]], all_cap[order], position[:m]


def cut_network(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The gadget network (:func:`gadget_arcs`) as CSR arrays ``(ptr, head, rev,
    cap)`` (:func:`csr_network`) and the sink's index."""
    tail, head, cap, sink = gadget_arcs(problem)
    ptr, heads, rev, caps, _ = csr_network(tail, head, cap, sink + 1)
    return ptr, heads, rev, caps, sink


@njit(cache=True, nogil=True)
def quantise(cap, upper, icap):
    """Fills ``icap`` with ``floor(min(cap, upper) / q)`` (``INFINITE`` for infinite
    arcs) and returns the exponent ``k`` of ``q = 2^k`` (step 3 of the module
    docstring): the integer capacities sum to at most ``2^60``."""
    total = 0.0
    for e in range(cap.shape[0]):
        c = cap[e]
        if c < np.inf:
            total += c if c < upper else upper
    k = MIN_EXPONENT
    if total > 0.0:
        _, ex = math.frexp(total)  # total < 2^ex, and the exact sum < 2 total
        k = max(ex + 1 - TOTAL_BITS, MIN_EXPONENT)
    q = math.ldexp(1.0, k)
    for e in range(cap.shape[0]):
        c = cap[e]
        if c < np.inf:
            icap[e] = np.int64(math.floor((c if c < upper else upper) / q))
        else:
            icap[e] = INFINITE
    return k


@njit(cache=True, nogil=True)
def max_flow(ptr, head, rev, icap, source, sink, level, stop):
    """Dinic's maximum flow from ``source`` to ``sink`` on the integer capacities
    ``icap`` (changed in place to the residual capacities): exact.  On return
    ``level[x] >= 0`` marks the nodes the residual network reaches from ``source``,
    the source side of a minimum cut; but as soon as the flow exceeds ``stop`` it is
    returned at once (a flow, so at most the maximum: enough to say the cut exceeds
    ``stop``), and ``level`` marks no cut."""
    n_nodes = ptr.shape[0] - 1
    cap = icap
    queue = np.empty(n_nodes, dtype=np.int64)
    it = np.empty(n_nodes, dtype=np.int64)
    path = np.empty(n_nodes, dtype=np.int64)  # arcs of the current path
    flow = np.int64(0)
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
                if cap[e] > 0 and level[y] < 0:
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
                push = INFINITE
                for d in range(depth):
                    if cap[path[d]] < push:
                        push = cap[path[d]]
                for d in range(depth):
                    e = path[d]
                    cap[e] -= push
                    cap[rev[e]] += push
                flow += push
                if flow > stop:
                    return flow
                depth = 0
                x = source
                continue
            advanced = False
            while it[x] < ptr[x + 1]:
                e = it[x]
                y = head[e]
                if cap[e] > 0 and level[y] == level[x] + 1:
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


@njit(cache=True, nogil=True)
def min_cut_below(ptr, head, rev, cap, source, sink, upper, level, enough):
    """A float at most the minimum ``source``-``sink`` cut of the network with the
    float capacities ``cap`` (steps 2-4 of the module docstring), capping them at
    ``upper`` and refining the cap up to ``REFINE`` times; and the float value of
    the last minimum cut found, whose source side is left in ``level`` (``>= 0``).
    Once a flow shows the cut above ``enough`` (a caller that only asks whether it
    is: ``inf`` never stops), that flow's value is returned with ``inf`` for the cut."""
    n_nodes = ptr.shape[0] - 1
    icap = np.empty(cap.shape[0], dtype=np.int64)
    best = 0.0
    found = np.inf
    for _ in range(REFINE + 1):
        k = quantise(cap, upper, icap)
        stop = INFINITE
        if enough < math.ldexp(1.0, k + 61):  # below 2^61 q: floor(enough / q) fits an int64
            stop = np.int64(math.floor(enough / math.ldexp(1.0, k))) if enough >= 0.0 else np.int64(-1)
        flow = max_flow(ptr, head, rev, icap, source, sink, level, stop)
        f = np.float64(flow)
        if np.int64(f) > flow:  # int -> float rounds to nearest: step down to round down
            f = np.nextafter(f, -np.inf)
        value = math.ldexp(f, k)  # exact: a power of two, the result normal (or 0)
        if value > best:
            best = value
        if flow > stop:  # stopped early: flow q > enough, and no cut is marked
            return best, np.inf
        # the minimum cut just found: its arcs and their true (uncapped) value
        arcs = 0
        found = 0.0
        for x in range(n_nodes):
            if level[x] < 0:
                continue
            for e in range(ptr[x], ptr[x + 1]):
                if level[head[e]] < 0 and cap[e] > 0.0:
                    arcs += 1
                    found += cap[e]
        if arcs <= flow * 2.0**-30 or not found * ESTIMATE_UP < 0.5 * upper:
            break  # the loss (< arcs q) is negligible, or a smaller cap would not refine q
        upper = found * ESTIMATE_UP
    return best, found


def own_overflow_below(problem: Problem) -> np.ndarray:
    """Per op ``v``, a float at most the true ``overflow({v}) = (size_param(v) - (M -
    R))^+ / B`` (step 5 of the module docstring), vectorised."""
    g = problem.graph
    if math.isinf(problem.memory):
        return np.zeros(g.n)
    b = problem.bandwidth
    p, e0 = two_sum(problem.memory, -problem.reserve)  # p + e0 = M - R exactly
    sp = g.size_param
    s = sp - p
    bb = s - sp
    e1 = (sp - (s - bb)) + (-p - bb)  # two_sum, vectorised: s + e1 = size_param - p exactly
    x = s + (e1 - e0)
    own = np.maximum(x, 0.0) / b
    absolute = (2 * UNIT * UNIT * (np.abs(s) + abs(p)) + TINY) / b
    return np.maximum(0.0, (own - absolute) * (1.0 - 7 * UNIT))  # lower_by(own, 3u, absolute)


@dataclass(frozen=True)
class CutBound:
    """What :func:`cut_bound` proved: ``bound`` (rounded down), the op attaining it
    (``-1`` if none), the ops whose minimum cut was computed (``tried``) and skipped
    because their estimate could not beat the bound (``skipped``), out of ``ops``;
    ``complete`` is false where the deadline stopped it first (``bound`` is then the
    maximum over the ops tried: still a lower bound, every op's minimum is one)."""

    bound: float
    op: int
    complete: bool
    tried: int
    skipped: int
    ops: int
    wall_time: float


def cut_bound(problem: Problem, deadline: float = math.inf) -> CutBound:
    """``max_v min_{S contains v} (g(S) + overflow({v}))`` (see the module docstring),
    rounded down.  Never above the true value (exact real arithmetic on the float
    inputs); below it by less than the loss stated in the module docstring.

    ``deadline`` (a :func:`time.perf_counter` value) is looked at before the network is
    built and before each op's minimum cut: once it has passed, the maximum over the ops
    done so far is returned (``complete`` false).  Every op's minimum is a lower bound on
    ``OPT``, so the partial maximum is one too; ops go by decreasing estimate, so the
    ones most likely to attain the bound come first."""
    t0 = time.perf_counter()
    g = problem.graph
    if time.perf_counter() >= deadline:
        return CutBound(0.0, -1, g.n == 0, 0, 0, g.n, time.perf_counter() - t0)
    b = problem.bandwidth
    own = own_overflow_below(problem)
    has_consumer = np.diff(g.succ_ptr) > 0
    inputs = np.bincount(g.edge_dst, weights=g.size_out[g.edge_src], minlength=g.n)  # distinct producers
    single = g.work + (inputs + g.size_out * has_consumer) / b  # g({v})
    upper = np.minimum(single, float(g.work.sum())) * ESTIMATE_UP  # g(V) = work(V)
    estimate = upper + own * ESTIMATE_UP
    ptr, head, rev, cap, sink = cut_network(problem)
    level = np.empty(ptr.size - 1, dtype=np.int64)
    best, arg, tried, skipped = 0.0, -1, 0, 0
    complete = True
    for v in np.argsort(-estimate, kind="stable").tolist():
        if estimate[v] <= best * SKIP:
            skipped += 1
            continue
        if time.perf_counter() >= deadline:
            complete = False
            break
        tried += 1
        flow, found = min_cut_below(ptr, head, rev, cap, v, sink, float(upper[v]), level, np.inf)
        value, error = two_sum(flow, float(own[v]))  # value + error = flow + own exactly
        if error < 0.0:
            value = max(0.0, float(np.nextafter(value, -np.inf)))
        if value > best:
            best, arg = value, v
        # every op on the source side lies in the set just found: its minimum is at most that set's g
        side = np.flatnonzero(level[: g.n] >= 0)
        np.minimum.at(upper, side, found * ESTIMATE_UP)
        estimate[side] = upper[side] + own[side] * ESTIMATE_UP
    return CutBound(best, arg, complete, tried, skipped, g.n, time.perf_counter() - t0)


def cut_lower_bound(problem: Problem, deadline: float = math.inf) -> tuple[float, int]:
    """:func:`cut_bound`'s bound and the op attaining it (``-1`` if the graph has no
    work and no tensors, or the deadline stopped it before any op)."""
    res = cut_bound(problem, deadline)
    return res.bound, res.op
