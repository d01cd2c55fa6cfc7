"""The *clique* lower bound: k-dependent, from ops that cannot share a block cheaply.

Pigeonhole.  Any ``k + 1`` ops ``A`` of an acyclic partition into ``k`` blocks put two
of them, ``u`` and ``v``, in one block ``S``.  Blocks are convex (an op ``w`` outside
``S`` on a path ``u -> w -> v`` would give the quotient graph the cycle ``S ->
block(w) -> S``), so ``S`` holds the *hull* ``H(u, v)``: the interval ``desc(u) &
anc(v)`` when ``u`` reaches ``v`` (or the reverse), else ``{u, v}``.  Hence

    OPT(k) >= min_{u != v in A} c(u, v),     c(u, v) = min { f(S) : S contains H(u, v) },

for every set ``A`` of ``k + 1`` ops: ``A`` is a ``(k + 1)``-clique of the *conflict
graph* that joins ``u`` and ``v`` when ``c(u, v) >= T``, and no partition of
bottleneck below ``T`` can colour that clique with ``k`` blocks.  Along one path the
bound is the min-max segmentation of the path into ``k`` runs (for monotone
interval costs the two coincide); across the width of a wide graph two far-apart ops
pay for both their tensors, so at ``k = 4..32`` it sits well above Lemma 3.3's ``W / k``
and the k-independent cut bound (:mod:`mtpp.bounds.cut`), which is its ``k + 1 = 1``
case.

Each ``c(u, v)`` is bounded below by one minimum cut (:class:`mtpp.bounds.hull_cuts.HullCuts`).  A
pair whose cut was not computed (time limit) counts as ``0``, never a conflict.  The
minimum over a set is exact in floating point, so every value is at most the true
optimum at its k (exact real arithmetic on the float inputs).

Which ``A``.  Candidates are the ``N`` ops of largest single-op cost ``g({v})`` (an
op heavy with work and tensors is expensive to share); the cuts of all their pairs
are computed, candidate by candidate (so a time limit leaves the first candidates
complete); then a greedy max-min dispersion from every candidate (add the op whose
cheapest pair with the chosen ones is dearest) gives, for every k at once, a set of
``k + 1`` ops and its bound.  The greedy can do worse with more candidates (on a
500-op layered graph at k = 8: 94,368 from the first 200, 88,009 from all 500), so it
runs on the first 64, 128, 256, .. candidates too and the best set is kept.  The
choice only decides how strong the bound is, never whether it holds.  Cost:
``N (N - 1) / 2`` minimum cuts (Dinic's algorithm, a millisecond each on 500 ops:
8,128 for ``N = 128`` in about 6 s) plus ``O(N^2 max k)`` per dispersion.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from mtpp.bounds.hull_cuts import HullCuts, reach
from mtpp.core.problem import Problem

MAX_CANDIDATES = 128
"""Ops whose pairs are cut, at most (the time limit may stop earlier)."""


@dataclass(frozen=True)
class CliqueBound:
    """The clique bound of each k asked for, and how it was obtained."""

    bounds: dict[int, float]
    """k -> a float at most the true optimum at k; absent where fewer than ``k + 1``
    candidates were available."""
    cliques: dict[int, np.ndarray]
    """k -> the ``k + 1`` ops (indices) whose pairs give the bound."""
    candidates: int
    pairs: int
    """Pairs whose minimum cut was computed."""
    total_pairs: int
    """``N (N - 1) / 2``: every pair was computed when equal to ``pairs``."""
    wall_time: float

    @property
    def complete(self) -> bool:
        return self.pairs == self.total_pairs


def disperse(costs: np.ndarray, ks: list[int]) -> dict[int, tuple[float, np.ndarray]]:
    """For each k in ``ks``, a set of ``k + 1`` candidates with the largest cheapest
    pair found by greedy max-min dispersion from every start (symmetric ``costs``,
    diagonal ignored): ``k -> (min pair cost, members)``."""
    n = costs.shape[0]
    top = min(max(ks) + 1, n)
    best: dict[int, tuple[float, np.ndarray]] = {}
    for start in range(n):
        chosen = [start]
        cheapest = costs[start].copy()  # per candidate: its cheapest pair with the chosen ones
        cheapest[start] = -np.inf
        value = np.inf
        for size in range(2, top + 1):
            j = int(np.argmax(cheapest))
            if cheapest[j] <= 0.0:
                break
            value = min(value, float(cheapest[j]))
            chosen.append(j)
            np.minimum(cheapest, costs[j], out=cheapest)
            cheapest[chosen] = -np.inf
            if size - 1 in ks and value > best.get(size - 1, (0.0, None))[0]:
                best[size - 1] = (value, np.array(chosen))
    return best


def _prefixes(n: int) -> list[int]:
    """``64, 128, 256, ..`` below ``n``, then ``n``: the candidate prefixes dispersed."""
    sizes = [size for size in (64 * 2**i for i in range(32)) if size < n]
    return [*sizes, n]


def clique_lower_bounds(
    problem: Problem, ks: list[int], time_limit: float | None = None, max_candidates: int = MAX_CANDIDATES
) -> CliqueBound:
    """The clique bound (module docstring) at each ``k`` in ``ks`` (``problem.k`` is not
    used), cutting the pairs of up to ``max_candidates`` ops until ``time_limit``
    seconds (``None``: all of them)."""
    t0 = time.perf_counter()
    g = problem.graph
    has_consumer = np.diff(g.succ_ptr) > 0
    inputs = np.bincount(g.edge_dst, weights=g.size_out[g.edge_src], minlength=g.n)
    single = g.work + (inputs + g.size_out * has_consumer) / problem.bandwidth  # g({v}): only the ranking
    cand = np.argsort(-single, kind="stable")[: min(max_candidates, g.n)]
    N = cand.size
    desc: list[np.ndarray] = []  # per candidate reached so far: its descendants and ancestors
    anc: list[np.ndarray] = []
    cut = HullCuts(problem)
    costs = np.zeros((min(N, 64),) * 2)  # grown by doubling: N may be every op of a large graph
    done = 0
    stop = None if time_limit is None else t0 + time_limit
    for j in range(N):
        if stop is not None and time.perf_counter() > stop:
            break
        if j == costs.shape[0]:
            grown = np.zeros((min(N, 2 * j),) * 2)
            grown[:j, :j] = costs
            costs = grown
        v = cand[j]
        desc.append(reach(g.succ_ptr, g.succ_idx, cand[j : j + 1], g.n))
        anc.append(reach(g.pred_ptr, g.pred_idx, cand[j : j + 1], g.n))
        for i in range(j):
            if stop is not None and time.perf_counter() > stop:
                break
            u = cand[i]
            if desc[i][v]:
                hull = np.flatnonzero(desc[i] & anc[j])
            elif desc[j][u]:
                hull = np.flatnonzero(desc[j] & anc[i])
            else:
                hull = np.array([u, v])
            costs[i, j] = costs[j, i] = cut(hull)
            done += 1
        if done < j * (j + 1) // 2:
            break
    found: dict[int, tuple[float, np.ndarray]] = {}
    reached = len(desc)
    costs = costs[:reached, :reached]
    for size in _prefixes(reached):  # greedy dispersion can do worse with more candidates: keep the best
        for k, (value, members) in disperse(costs[:size, :size], sorted(set(ks))).items():
            if value > found.get(k, (0.0, None))[0]:
                found[k] = (value, members)
    return CliqueBound(
        bounds={k: v for k, (v, _) in found.items()},
        cliques={k: cand[members] for k, (_, members) in found.items()},
        candidates=N,
        pairs=done,
        total_pairs=N * (N - 1) // 2,
        wall_time=time.perf_counter() - t0,
    )
