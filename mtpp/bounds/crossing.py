"""The *crossing* lower bound: k-dependent, from tensors no cheap block can keep inside.

Averaging.  A partition into ``k`` blocks of bottleneck ``T`` has

    k T >= sum_S f(S) >= sum_S g(S) = work(V) + sum_u size_out(u) / B * blocks(u),

where ``g`` is ``f`` without overflow (Eq. 1-3; overflow and a peak-aware term only
add) and ``blocks(u)`` is the number of blocks that the *net* of ``u`` (``u`` and its
consumers) meets when that is at least two, else ``0``: the tensor is output IO of
``u``'s block once and input IO of every other block holding a consumer, once per
block (Eq. 1).  Two facts bound ``blocks(u)`` from below at ``T``:

* a net inside one block ``S`` puts its hull in ``S`` (blocks are convex), so if
  ``c(N_u) > T``, with ``c(N_u)`` the cheapest block holding the hull of the net
  (:class:`mtpp.bounds.hull_cuts.HullCuts`, one minimum cut), the net meets two blocks;
* likewise two members ``x, y`` of the net with ``c(x, y) > T`` (the cheapest block
  holding their hull) are in different blocks, so members that pairwise conflict
  (a clique of the *conflict graph* at ``T``) meet that many blocks.

So ``blocks(u) >= m_u(T) = max(2 [c(N_u) > T], omega_u(T))`` when that is at least
two, with ``omega_u(T)`` the size of a clique (found greedily, from every start) of
the pairs with ``c(x, y) > T``; ``m_u`` only falls as ``T`` grows.  For any
``b``, at ``T < b`` every ``c >= b`` exceeds ``T``, so ``F(T) = sum_u o_u m_u(T) >=
G(b)``, the same sum with the conflicts ``c >= b`` (``o_u = size_out / B``), and

    OPT(k) >= max_b min(b, (work(V) + G(b)) / k),

since ``OPT < min(b, ..)`` would give ``k OPT >= work(V) + G(b)``.  ``G`` changes
only at the cut values, so ``b`` runs over them: each net's steps ``o_u (m_i -
m_(i+1))`` at its values ``p_1 < p_2 < ..`` are summed from the largest ``b`` down.
``b = inf`` is Lemma 3.3's ``work(V) / k``.  On IO-heavy wide graphs most tensors
cannot stay inside a block of the optimum's cost and the bound rises towards
``(work + 2 IO) / k``.

Pairs of nets.  Two nets that share an op and both lie inside blocks lie inside the
same block (the one holding the shared op), which then holds the hull of their union.
So at ``T < b`` the nets ``u`` with ``m_u(b) = 0`` that stay inside a block form an
independent set of the *net conflict graph*, whose edges join two such nets that share
an op and whose union's hull ``c(N_u | N_w) >= b``; the others meet two blocks or more.
The nets that do not stay inside form a vertex cover ``C`` of that graph, so with weights
``2 o_u`` and any ``y >= 0`` on its edges with ``sum_(e at u) y_e <= 2 o_u`` (a dual of
the vertex cover's linear relaxation), ``sum_(u in C) 2 o_u >= sum_e y_e`` (each edge has
an end in ``C``).  Hence

    F(T) >= G'(b) = sum_u o_u m_u(b) + sum_e y_e   and   OPT(k) >= min(b, (work(V) + G'(b)) / k),

for every ``b``.  The best ``y`` is the optimum of that linear relaxation, the least
fractional cover, which is half the maximum flow of the graph's bipartite double cover
(each net ``u`` as ``u'`` on the left and ``u''`` on the right, arcs ``s -> u'`` and
``u'' -> t`` of capacity ``2 o_u``, and ``a' -> b''``, ``b' -> a''`` of infinite capacity
for each edge ``ab``): a flow ``f`` gives ``y_ab = (f(a' b'') + f(b' a'')) / 2``, within
the weights at both ends, and ``y`` gives the flow ``y_ab`` on both arcs (Nemhauser and
Trotter, "Vertex packings: structural properties and algorithms", 1975).  So one minimum
cut per ``b`` (:func:`mtpp.bounds.cut.min_cut_below`, exact integers) at the cut values a
bisection per k visits.  ``G'`` falls as ``b`` grows: it is ``sum_u o_u m_u(b)`` over
the nets with ``m_u(b) >= 2`` plus the least fractional cover of the others, and as ``b``
grows each ``m_u`` falls, a net whose ``m_u`` falls to 0 trades its fixed count (at least
``2 o_u``) for a free ``x_u`` of weight ``2 o_u``, and conflicts only drop (up to the
flow's rounding, which only lowers a value: every ``b`` tried is a bound whatever the
search does).  A greedy ``y`` (edges of heavier lighter tensor first, each taking what
both its ends had left) was used before; against it the optimum lifted the bound at
k = 8 / 16 / 32 by 0.23 / 0.64 / 0.24% on layered dev seed 9201 (500 ops; k = 16:
72,656 -> 73,122) and 0.22 / 1.09 / 0.19% on 7002 (250 ops).
On the layered graphs of seeds 9102-9104 (500 and 250 ops) the pairs lifted the bound at
k = 4..32 by 4-16% (9102, k = 16: 76,148 -> 83,405; 9103, k = 8: 55,842 -> 64,017),
where the nets' own hulls fit but two overlapping nets rarely do; on REGAL-style graphs
(8001-8004) by 0-8% (8004, k = 16: 1,875 -> 2,016), where work outweighs tensors and the
pigeonhole bound mostly leads.

Cost: first one hull and one minimum cut per tensor with a consumer (about 1 ms on
500 ops), heaviest tensors first, which gives ``m_u = 2 [c(N_u) >= b]``; then, while
time is left, the pairs of up to :data:`MAX_MEMBERS` members of each net, heaviest
first; then the pairs of nets that share an op, heavier lighter tensor first (about
7,000 on 500 layered ops, 1.2 ms each).  A cut not computed counts as ``0``: no
crossing, no conflict.

Rounding.  Every ``c`` is at most its true value (:mod:`mtpp.bounds.hull_cuts`).  ``o_u``
is lowered below ``size_out / B`` (:func:`mtpp.bounds.cut.io_below`); each step
``o_u (m_i - m_(i+1))`` rounds once, and ``work(V) + G(b)`` is a float running sum
of at most ``n + M`` non-negative terms (``M`` steps), so the computed value is
within ``gamma(n + 2 M)`` of the exact one relative to it (:mod:`mtpp.core.rounding`); the
division by ``k`` adds one rounding, and :func:`mtpp.core.rounding.lower_by` with
``gamma(n + 2 M + 2)`` takes ``(work(V) + G(b)) / k`` below the truth.  The minimum and maximum are exact.
With pairs of nets, the flow runs on the weights ``2 o_u`` (exact doublings of
``o_u``, itself below the truth) and :func:`mtpp.bounds.cut.min_cut_below` returns a float
at most its exact maximum, so half of it (exact) is at most the least fractional cover;
``work(V) + G'(b)`` is then a float sum of at most ``n + N + 1`` non-negative terms
(``N`` nets), lowered by ``gamma(n + 2 N + E + 2)`` (``E`` pairs: more than enough).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from mtpp.bounds.cut import csr_network, io_below, min_cut_below
from mtpp.bounds.hull_cuts import HullCuts, reach
from mtpp.core.graph import Graph
from mtpp.core.jit import njit
from mtpp.core.problem import Problem
from mtpp.core.rounding import UNIT, gamma

MAX_MEMBERS = 12
"""Members of a net (its producer and first consumers) whose pairs are cut, at most."""


@dataclass(frozen=True)
class CrossingBound:
    """The crossing bound of each k asked for, and how much of it was computed."""

    bounds: dict[int, float]
    """k -> a float at most the true optimum at k."""
    nets: int
    """Nets whose hull was cut."""
    paired: int
    """Nets whose members' pairs were cut too."""
    total_nets: int
    """Tensors with a consumer: every net was cut (and paired) when equal to ``nets``
    (and ``paired``)."""
    net_pairs: int
    """Pairs of nets that share an op whose union's hull was cut."""
    total_net_pairs: int
    """Such pairs among the nets cut: all were cut when equal to ``net_pairs``."""
    wall_time: float

    @property
    def complete(self) -> bool:
        return self.nets == self.paired == self.total_nets and self.net_pairs == self.total_net_pairs


@njit(cache=True, nogil=True)
def clique_counts(net_cost, pairs, values):
    """A net's ``m(b)`` (module docstring) at each cut value ``b`` of ``values``
    (increasing): the conflicts are the member pairs with ``pairs >= b`` (symmetric,
    diagonal ignored), cliques grown greedily from every member; a suffix maximum makes
    ``m`` non-increasing (a clique at a larger ``b`` is one at a smaller ``b``)."""
    s = pairs.shape[0]
    counts = np.zeros(values.size, dtype=np.int64)
    members = np.empty(s, dtype=np.int64)
    for i in range(values.size):
        b = values[i]
        best = 2 if net_cost >= b else 0
        for start in range(s):
            members[0] = start
            size = 1
            for y in range(s):
                if y == start:
                    continue
                joins = True
                for t in range(size):
                    if pairs[members[t], y] < b:
                        joins = False
                        break
                if joins:
                    members[size] = y
                    size += 1
            if size >= 2 and size > best:
                best = size
        counts[i] = best
    for i in range(values.size - 2, -1, -1):
        counts[i] = max(counts[i], counts[i + 1])
    return counts


def _pair_costs(cut: HullCuts, problem: Problem, ops: np.ndarray, late: Callable[[], bool]) -> np.ndarray | None:
    """The symmetric matrix of ``c(x, y)`` over ``ops``, or ``None`` if ``late()`` first."""
    g = problem.graph
    desc = [reach(g.succ_ptr, g.succ_idx, ops[i : i + 1], g.n) for i in range(ops.size)]
    anc = [reach(g.pred_ptr, g.pred_idx, ops[i : i + 1], g.n) for i in range(ops.size)]
    pairs = np.zeros((ops.size, ops.size))
    for i, j in combinations(range(ops.size), 2):
        if late():
            return None
        if desc[i][ops[j]]:
            hull = np.flatnonzero(desc[i] & anc[j])
        elif desc[j][ops[i]]:
            hull = np.flatnonzero(desc[j] & anc[i])
        else:
            hull = ops[[i, j]]
        pairs[i, j] = pairs[j, i] = cut(hull)
    return pairs


def crossing_lower_bounds(
    problem: Problem,
    ks: list[int],
    time_limit: float | None = None,
    max_members: int = MAX_MEMBERS,
    net_pairs: bool = True,
) -> CrossingBound:
    """The crossing bound (module docstring) at each ``k`` in ``ks`` (``problem.k`` is
    not used), cutting nets, then pairs of their members, then (``net_pairs``) pairs of
    nets that share an op, until ``time_limit`` seconds (``None``: all of them)."""
    t0 = time.perf_counter()
    g = problem.graph
    o = io_below(problem)
    nets = np.flatnonzero((np.diff(g.succ_ptr) > 0) & (o > 0.0))
    nets = nets[np.argsort(-o[nets], kind="stable")]
    cut = HullCuts(problem) if nets.size else None

    def late() -> bool:
        return time_limit is not None and time.perf_counter() - t0 > time_limit

    steps: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # net -> (p, m)
    for u in nets:  # stage 1: the nets' hulls
        if late():
            break
        assert cut is not None
        cost = cut(np.flatnonzero(_hull(g, _net(g, u))))
        steps[int(u)] = (np.array([cost]), np.array([2 if cost > 0.0 else 0]))
    done, paired = len(steps), 0
    for u in nets[:done]:  # stage 2: pairs of members
        assert cut is not None
        ops = _net(g, u)[:max_members]
        pairs = _pair_costs(cut, problem, ops, late)
        if pairs is None:
            break
        net_cost = float(steps[int(u)][0][0])
        values = np.unique(np.r_[net_cost, pairs[np.triu_indices(ops.size, 1)]])
        values = values[values > 0.0]
        steps[int(u)] = (values, clique_counts(net_cost, pairs, values))
        paired += 1
    cut_nets = nets[:done]
    none = np.zeros(0, dtype=np.int64)
    pair_a, pair_b = _overlapping(g, cut_nets, o) if net_pairs and not late() else (none, none)
    pair_cost = np.zeros(pair_a.size)
    pairs_cut = 0
    for i in range(pair_a.size):  # stage 3: pairs of nets that share an op
        if late():
            break
        assert cut is not None
        members = np.r_[_net(g, cut_nets[pair_a[i]]), _net(g, cut_nets[pair_b[i]])]
        pair_cost[i] = cut(np.flatnonzero(_hull(g, members)))
        pairs_cut += 1
    p = np.concatenate([s[0] for s in steps.values()]) if steps else np.zeros(0)
    w = np.concatenate([-o[u] * np.diff(np.r_[m, 0]) for u, (_, m) in steps.items()]) if steps else np.zeros(0)
    keep = (p > 0.0) & (w > 0.0)
    p, w = p[keep], w[keep]
    order = np.argsort(-p, kind="stable")
    x = np.cumsum(np.r_[float(g.work.sum()), w[order]])  # work(V) + G(b), b from the largest down
    b = np.r_[np.inf, p[order]]
    slack = 1.0 - gamma(g.n + 2 * w.size + 2) - 4.0 * UNIT  # mtpp.core.rounding.lower_by, vectorised
    bounds = {k: float(np.max(np.minimum(b, np.maximum(0.0, x / k * slack)))) for k in ks}
    if pairs_cut:
        cut_pairs = (pair_a[:pairs_cut], pair_b[:pairs_cut], pair_cost[:pairs_cut])
        bounds = _with_net_pairs(g, ks, bounds, steps, cut_nets, o, cut_pairs)
    return CrossingBound(
        bounds=bounds,
        nets=done,
        paired=paired,
        total_nets=int(nets.size),
        net_pairs=pairs_cut,
        total_net_pairs=int(pair_a.size),
        wall_time=time.perf_counter() - t0,
    )


def _net(g: Graph, u: int | np.integer) -> np.ndarray:
    """The net of ``u``: ``u`` and its consumers."""
    return np.r_[u, g.succ_idx[g.succ_ptr[u] : g.succ_ptr[u + 1]]]


def _hull(g: Graph, members: np.ndarray) -> np.ndarray:
    """Every op on a path between two of ``members`` (a mask)."""
    return reach(g.succ_ptr, g.succ_idx, members, g.n) & reach(g.pred_ptr, g.pred_idx, members, g.n)


def _overlapping(g: Graph, nets: np.ndarray, o: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs ``(i, j)``, ``i < j``, of positions in ``nets`` whose nets share an op, the
    pairs of heavier lighter tensor first (the conflicts worth most are cut first)."""
    holders: list[list[int]] = [[] for _ in range(g.n)]  # op -> positions of the nets holding it
    for i, u in enumerate(nets.tolist()):
        for v in _net(g, u).tolist():
            holders[v].append(i)
    pairs = {(a, b) for held in holders for a, b in combinations(sorted(held), 2)}
    if not pairs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ab = np.array(sorted(pairs), dtype=np.int64)
    lighter = np.minimum(o[nets[ab[:, 0]]], o[nets[ab[:, 1]]])
    ab = ab[np.argsort(-lighter, kind="stable")]
    return ab[:, 0], ab[:, 1]


def _with_net_pairs(
    g: Graph,
    ks: list[int],
    bounds: dict[int, float],
    steps: dict[int, tuple[np.ndarray, np.ndarray]],
    nets: np.ndarray,
    o: np.ndarray,
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> dict[int, float]:
    """``bounds`` lifted by the conflicts between nets (module docstring, "Pairs of nets"):
    ``min(b, (work(V) + G'(b)) / k)`` at the cut values ``b`` above the lowest bound that a
    bisection per k visits (each is a bound: the search only decides which are tried);
    ``pairs`` are the positions in ``nets`` of the two nets and their union's cut."""
    pair_a, pair_b, pair_cost = pairs
    counts = [steps[int(u)] for u in nets]
    ptr = np.r_[0, np.cumsum([c[0].size for c in counts])].astype(np.int64)
    values = np.concatenate([c[0] for c in counts]).astype(np.float64)
    mult = np.concatenate([c[1] for c in counts]).astype(np.int64)
    cand = np.unique(np.r_[values, pair_cost])
    cand = cand[cand > min(bounds.values())]
    slack = 1.0 - gamma(g.n + 2 * nets.size + pair_a.size + 2) - 4.0 * UNIT  # mtpp.core.rounding.lower_by
    work = float(g.work.sum())
    seen: dict[int, float] = {}

    def total(i: int) -> float:  # work(V) + G'(cand[i]), from below
        if i not in seen:
            crossed, weights = net_counts(cand[i], o[nets], ptr, values, mult)
            conflict = pair_cost >= cand[i]
            cover = least_cover_below(weights, pair_a[conflict], pair_b[conflict])
            seen[i] = (work + crossed + cover) * slack
        return seen[i]

    lifted = dict(bounds)
    for k in ks:  # bisection for the last b with total / k >= b (G' falls as b grows, nearly)
        lo, hi = 0, cand.size - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            lifted[k] = max(lifted[k], min(float(cand[mid]), total(mid) / k))
            lo, hi = (mid + 1, hi) if total(mid) / k >= cand[mid] else (lo, mid - 1)
    return lifted


@njit(cache=True, nogil=True)
def net_counts(b, o, ptr, values, mult):
    """``sum_i o_i m_i(b)`` (module docstring) and each net's weight in the cover at ``b``:
    ``2 o_i`` where ``m_i(b) = 0`` (it may stay inside a block), else 0 (it is counted
    already).  Net ``i``'s steps are ``values[ptr[i]:ptr[i + 1]]`` (increasing), ``m_i(b)``
    the count ``mult`` at the first value ``>= b``, else 0."""
    nets = o.size
    crossed = 0.0
    weights = np.zeros(nets)
    for i in range(nets):
        lo, hi = ptr[i], ptr[i + 1]
        j = lo + np.searchsorted(values[lo:hi], b)
        m = mult[j] if j < hi else 0
        crossed += o[i] * m
        if m == 0:
            weights[i] = 2.0 * o[i]
    return crossed, weights


def least_cover_below(weights: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """A float at most the least fractional vertex cover ``min sum_i weights_i x_i`` over
    ``x >= 0`` with ``x_a + x_b >= 1`` for every edge ``(a[e], b[e])``: half the maximum flow
    of the bipartite double cover (module docstring, "Pairs of nets"), by one exact minimum
    cut.  Edges at a net of weight 0 need no cover (``x`` there is free)."""
    keep = (weights[a] > 0.0) & (weights[b] > 0.0)
    a, b = a[keep], b[keep]
    if not a.size:
        return 0.0
    used = np.unique(np.r_[a, b])
    a, b = np.searchsorted(used, a), np.searchsorted(used, b)
    n = used.size
    source, sink = 2 * n, 2 * n + 1
    left, right = np.arange(n), n + np.arange(n)
    tail = np.r_[np.full(n, source), right, a, b]
    head = np.r_[left, np.full(n, sink), n + b, n + a]
    cap = np.r_[weights[used], weights[used], np.full(2 * a.size, np.inf)]
    ptr, heads, rev, caps, _ = csr_network(tail, head, cap, 2 * n + 2)
    level = np.empty(2 * n + 2, dtype=np.int64)
    flow, _ = min_cut_below(ptr, heads, rev, caps, source, sink, float(weights[used].sum()), level, np.inf)
    return 0.5 * flow
