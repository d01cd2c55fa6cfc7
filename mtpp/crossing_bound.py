"""The *crossing* lower bound: k-dependent, from tensors no cheap block can keep inside (issue 23).

Averaging.  A partition into ``k`` blocks of bottleneck ``T`` has

    k T >= sum_S f(S) >= sum_S g(S) = work(V) + sum_u size_out(u) / B * blocks(u),

where ``g`` is ``f`` without overflow (Eq. 1-3; overflow and a peak-aware term only
add) and ``blocks(u)`` is the number of blocks that the *net* of ``u`` (``u`` and its
consumers) meets when that is at least two, else ``0``: the tensor is output IO of
``u``'s block once and input IO of every other block holding a consumer, once per
block (Eq. 1).  Two facts bound ``blocks(u)`` from below at ``T``:

* a net inside one block ``S`` puts its hull in ``S`` (blocks are convex), so if
  ``c(N_u) > T``, with ``c(N_u)`` the cheapest block holding the hull of the net
  (:class:`mtpp.hull_cuts.HullCuts`, one minimum cut), the net meets two blocks;
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

Cost: first one hull and one minimum cut per tensor with a consumer (about 1 ms on
500 ops), heaviest tensors first, which gives ``m_u = 2 [c(N_u) >= b]``; then, while
time is left, the pairs of up to :data:`MAX_MEMBERS` members of each net, heaviest
first.  A cut not computed counts as ``0``: no crossing, no conflict.

Rounding.  Every ``c`` is at most its true value (:mod:`mtpp.hull_cuts`).  ``o_u``
is lowered below ``size_out / B`` (:func:`mtpp.cut_bound.io_below`); each step
``o_u (m_i - m_(i+1))`` rounds once, and ``work(V) + G(b)`` is a float running sum
of at most ``n + M`` non-negative terms (``M`` steps), so the computed value is
within ``gamma(n + 2 M)`` of the exact one relative to it (:mod:`mtpp.rounding`); the
division by ``k`` adds one rounding, and :func:`mtpp.rounding.lower_by` with
``gamma(n + 2 M + 2)`` takes ``(work(V) + G(b)) / k`` below the truth.  The minimum and maximum are exact.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from mtpp.cut_bound import io_below
from mtpp.hull_cuts import HullCuts, reach
from mtpp.jit import njit
from mtpp.problem import Problem
from mtpp.rounding import UNIT, gamma

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
    wall_time: float

    @property
    def complete(self) -> bool:
        return self.nets == self.paired == self.total_nets


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
    problem: Problem, ks: list[int], time_limit: float | None = None, max_members: int = MAX_MEMBERS
) -> CrossingBound:
    """The crossing bound (module docstring) at each ``k`` in ``ks`` (``problem.k`` is
    not used), cutting nets, then pairs of their members, until ``time_limit`` seconds
    (``None``: all of them)."""
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
        consumers = g.succ_idx[g.succ_ptr[u] : g.succ_ptr[u + 1]]
        hull = reach(g.succ_ptr, g.succ_idx, np.array([u]), g.n) & reach(g.pred_ptr, g.pred_idx, consumers, g.n)
        cost = cut(np.flatnonzero(hull))
        steps[int(u)] = (np.array([cost]), np.array([2 if cost > 0.0 else 0]))
    done, paired = len(steps), 0
    for u in nets[:done]:  # stage 2: pairs of members
        assert cut is not None
        ops = np.r_[u, g.succ_idx[g.succ_ptr[u] : g.succ_ptr[u + 1]]][:max_members]
        pairs = _pair_costs(cut, problem, ops, late)
        if pairs is None:
            break
        net_cost = float(steps[int(u)][0][0])
        values = np.unique(np.r_[net_cost, pairs[np.triu_indices(ops.size, 1)]])
        values = values[values > 0.0]
        steps[int(u)] = (values, clique_counts(net_cost, pairs, values))
        paired += 1
    p = np.concatenate([s[0] for s in steps.values()]) if steps else np.zeros(0)
    w = np.concatenate([-o[u] * np.diff(np.r_[m, 0]) for u, (_, m) in steps.items()]) if steps else np.zeros(0)
    keep = (p > 0.0) & (w > 0.0)
    p, w = p[keep], w[keep]
    order = np.argsort(-p, kind="stable")
    x = np.cumsum(np.r_[float(g.work.sum()), w[order]])  # work(V) + G(b), b from the largest down
    b = np.r_[np.inf, p[order]]
    slack = 1.0 - gamma(g.n + 2 * w.size + 2) - 4.0 * UNIT  # mtpp.rounding.lower_by, vectorised
    bounds = {k: float(np.max(np.minimum(b, np.maximum(0.0, x / k * slack)))) for k in ks}
    return CrossingBound(
        bounds=bounds, nets=done, paired=paired, total_nets=int(nets.size), wall_time=time.perf_counter() - t0
    )
