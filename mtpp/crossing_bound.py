"""The *crossing* lower bound: k-dependent, from tensors no cheap block can keep inside (issue 23).

Averaging.  A partition into ``k`` blocks of bottleneck ``T`` has

    k T >= sum_S f(S) >= sum_S g(S) = work(V) + sum_u size_out(u) / B * blocks(u),

where ``g`` is ``f`` without overflow (Eq. 1-3; overflow and a peak-aware term only
add) and ``blocks(u)`` is the number of blocks that the *net* of ``u`` (``u`` and its
consumers) meets when that is at least two, else ``0``: the tensor is output IO of
``u``'s block once and input IO of every other block holding a consumer, once per
block (Eq. 1).  A net inside one block ``S`` puts its hull in ``S`` (blocks are
convex), so ``f(S) >= c(u)``, the cheapest block holding the hull of ``u`` and its
consumers (:class:`mtpp.hull_cuts.HullCuts`, one minimum cut).  So at ``T < c(u)``
the net meets two blocks at least and the tensor counts twice.  With the nets
sorted by ``c_1 >= c_2 >= ..`` and ``X_j = work(V) + 2 (o_1 + .. + o_j)`` (``o_i =
size_out / B`` of net ``i``),

    OPT(k) >= max_j min(c_j, X_j / k),

since ``OPT < min(c_j, X_j / k)`` would make nets ``1..j`` all cross at ``T = OPT``
and give ``k OPT >= X_j``.  ``j = 0`` is Lemma 3.3's ``work(V) / k``.  On IO-heavy
wide graphs most tensors cannot stay inside a block of the optimum's cost, and the
bound rises towards ``(work + 2 IO) / k``: on a 500-op layered graph at k = 4 / 8 / 16,
0.85 / 0.54 / 0.51 of the best partition found where the clique bound gave 0.66 /
0.34 / 0.37.

Rounding.  Each ``c_j`` is at most its true value (:mod:`mtpp.hull_cuts`); a net
not cut (time limit) gets ``c = 0`` and never counts.  ``o_i`` is lowered below
``size_out / B`` (:func:`mtpp.cut_bound.io_below`) and doubled exactly.  ``X_j`` is
a float running sum of at most ``n + j`` non-negative terms, within ``gamma(n + j)``
of its exact value relative to it (:mod:`mtpp.rounding`), and the division by ``k``
adds one rounding; :func:`mtpp.rounding.lower_by` with ``gamma(n + j + 1)`` takes
``X_j / k`` below the truth.  The minimum and maximum are exact.

Cost: one hull and one minimum cut per tensor with a consumer (about 1 ms on 500
ops), heaviest tensors first so a time limit keeps the nets that weigh most; the
bound for every k comes from the same cuts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from mtpp.cut_bound import io_below
from mtpp.hull_cuts import HullCuts, reach
from mtpp.problem import Problem
from mtpp.rounding import UNIT, gamma


@dataclass(frozen=True)
class CrossingBound:
    """The crossing bound of each k asked for, and how much of it was computed."""

    bounds: dict[int, float]
    """k -> a float at most the true optimum at k."""
    nets: int
    """Nets whose hull was cut."""
    total_nets: int
    """Tensors with a consumer: every net was cut when equal to ``nets``."""
    wall_time: float

    @property
    def complete(self) -> bool:
        return self.nets == self.total_nets


def net_costs(problem: Problem, time_limit: float | None = None) -> tuple[np.ndarray, np.ndarray, int, int]:
    """``(c, o, cut, nets)``: per op, ``c`` the cheapest block holding the hull of its
    net, from below (``0`` where not computed: no consumer, an empty tensor, or the
    time limit), and ``o`` its tensor's ``size_out / B`` from below; how many nets were
    cut (by decreasing ``o``) of how many."""
    t0 = time.perf_counter()
    g = problem.graph
    o = io_below(problem)
    c = np.zeros(g.n)
    nets = np.flatnonzero((np.diff(g.succ_ptr) > 0) & (o > 0.0))
    done = 0
    if nets.size == 0:
        return c, o, done, 0
    cut = HullCuts(problem)
    for u in nets[np.argsort(-o[nets], kind="stable")]:
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        consumers = g.succ_idx[g.succ_ptr[u] : g.succ_ptr[u + 1]]
        hull = reach(g.succ_ptr, g.succ_idx, np.array([u]), g.n) & reach(g.pred_ptr, g.pred_idx, consumers, g.n)
        c[u] = cut(np.flatnonzero(hull))
        done += 1
    return c, o, done, int(nets.size)


def crossing_lower_bounds(problem: Problem, ks: list[int], time_limit: float | None = None) -> CrossingBound:
    """The crossing bound (module docstring) at each ``k`` in ``ks`` (``problem.k`` is
    not used), cutting nets until ``time_limit`` seconds (``None``: all of them)."""
    t0 = time.perf_counter()
    g = problem.graph
    c, o, done, total = net_costs(problem, time_limit)
    counted = np.flatnonzero(c > 0.0)
    ranked = counted[np.argsort(-c[counted], kind="stable")]
    x = np.cumsum(np.r_[float(g.work.sum()), 2.0 * o[ranked]])  # X_0, X_1, ..
    thresholds = np.r_[np.inf, c[ranked]]
    slack = 1.0 - gamma(g.n + ranked.size + 1) - 4.0 * UNIT  # mtpp.rounding.lower_by, vectorised
    bounds = {k: float(np.max(np.minimum(thresholds, np.maximum(0.0, x / k * slack)))) for k in ks}
    return CrossingBound(bounds=bounds, nets=done, total_nets=total, wall_time=time.perf_counter() - t0)
