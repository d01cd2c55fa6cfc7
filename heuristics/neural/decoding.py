"""Decoders from node priorities to topological orders (Topoformer Section 4.2, Eq. 6, 8).

The priorities ``y`` (one real per node, Eq. 7) define a policy over topological
orders: with ``S`` the set of ops placed so far and ``R(S)`` the ops whose producers
are all in ``S`` (the schedulable set), the next op is ``v in R(S)`` with probability

    p(v | S) = exp(y_v) / sum_{j in R(S)} exp(y_j)                       (Eq. 8)

and an order's probability is the product of its steps (Eq. 6).  Note that the
normaliser depends on ``S`` only, not on the order in which ``S`` was placed.

* :func:`greedy_order` takes the most likely op at every step (Kahn's algorithm with
  the priorities, :func:`heuristics.kahn.kahn_order`; ties to the smaller index);
* :func:`sample_orders` draws orders exactly from Eq. 6 and 8, one draw per step;
* :func:`beam_search` keeps the ``width`` most likely partial orders per step, with
  state collapsing (Section 4.2): partial orders of one scheduled set are merged, the
  one with the lower peak so far kept (``collapse="peak"``) or the more likely one
  (``collapse="logp"``).  It reuses the bitset states of :mod:`heuristics.peak_memory.state_dp`.

The peak is Eq. 1 with the step memory of Eq. 2, 3 and 15 as in
:func:`heuristics.peak_memory.orders.order_peak`.  Everything here is numpy + numba; the
differentiable log-probabilities are in :mod:`heuristics.neural.policy`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from heuristics.arrays import graph_arrays
from heuristics.bitsets import CTZ, zobrist_keys
from heuristics.kahn import in_degrees, kahn_order
from heuristics.peak_memory.state_dp import (
    KEEP_ALL,
    KEEP_LOGP,
    KEEP_PEAK,
    empty_level,
    expand_level,
    materialise_kernel,
    trace_orders,
)
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.jit import njit

COLLAPSE_MODES = ("peak", "logp", "none")
_MODE_CODE = {"peak": KEEP_PEAK, "logp": KEEP_LOGP, "none": KEEP_ALL}
_ZOBRIST_SEED = 0x7E57  # fixes the hash keys; results never depend on it (sets are compared on a hash hit)


# ---------------------------------------------------------------- validation
def _check_priorities(graph: Graph, priorities: object) -> np.ndarray:
    """``priorities`` as a contiguous float64 array of shape ``(n,)`` with finite entries."""
    try:
        y = np.ascontiguousarray(priorities, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"priorities must be an array of {graph.n} reals: {exc}") from exc
    if y.shape != (graph.n,):
        raise InvalidParameterError(f"priorities has shape {y.shape}; expected ({graph.n},), one per node")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise InvalidParameterError(f"priorities must be finite; priorities[{bad[0]}] = {y[bad[0]]!r}")
    return y


def _check_positive(name: str, value: object, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        extra = " or None" if allow_none else ""
        raise InvalidParameterError(f"{name} must be an integer >= 1{extra}, got {value!r}")
    return int(value)


# ---------------------------------------------------------------- greedy
def greedy_order(graph: Graph, priorities: np.ndarray) -> np.ndarray:
    """The greedy decoder (Topoformer Section 4.2, "Greedy"): at every step the
    schedulable op of largest probability under Eq. 8, i.e. of highest priority, ties
    to the smaller index.  That is Kahn's algorithm with these priorities,
    :func:`heuristics.kahn.kahn_order`; ``O(n log n + m)``."""
    return kahn_order(graph, _check_priorities(graph, priorities))


# ---------------------------------------------------------------- sampling
@njit(cache=True)
def sample_kernel(succ_ptr, succ_idx, indeg0, y, uniforms):
    """One order per row of ``uniforms`` (``(count, n)`` numbers in ``[0, 1)``), each
    step drawn from Eq. 8 by inverse CDF over the schedulable list: ``O(n * ready)``
    per order.  The weights ``exp(y_i - max)`` are shifted by the maximum over the
    current schedulable set, so no step underflows to an all-zero distribution."""
    count, n = uniforms.shape
    out = np.empty((count, n), dtype=np.int64)
    indeg = np.empty(n, dtype=np.int64)
    avail = np.empty(n, dtype=np.int64)
    w = np.empty(n)
    for s in range(count):
        k = 0
        for v in range(n):
            indeg[v] = indeg0[v]
            if indeg0[v] == 0:
                avail[k] = v
                k += 1
        for t in range(n):
            top = -np.inf
            for j in range(k):
                if y[avail[j]] > top:
                    top = y[avail[j]]
            total = 0.0
            for j in range(k):
                w[j] = math.exp(y[avail[j]] - top)  # numba's exp bit for bit (np.exp of a numpy scalar is not)
                total += w[j]
            target = uniforms[s, t] * total
            acc = 0.0
            pick = -1
            last_pos = 0
            for j in range(k):
                if w[j] > 0.0:
                    last_pos = j
                acc += w[j]
                if acc > target:
                    pick = j
                    break
            if pick < 0:  # rounding put the target at the total: the last op of positive weight
                pick = last_pos
            v = avail[pick]
            k -= 1
            avail[pick] = avail[k]
            out[s, t] = v
            for e in range(succ_ptr[v], succ_ptr[v + 1]):
                z = succ_idx[e]
                indeg[z] -= 1
                if indeg[z] == 0:
                    avail[k] = z
                    k += 1
    return out


def sample_orders(
    graph: Graph, priorities: np.ndarray, count: int, seed: int | np.random.Generator | None = 0
) -> np.ndarray:
    """``count`` topological orders drawn independently from the policy of Eq. 6 and 8
    (Topoformer Section 4.2, "Sampling"), as a ``(count, n)`` int64 array.

    Each step draws the next op from the *current* schedulable set with probability
    ``exp(y_i) / sum_j exp(y_j)`` (inverse CDF with one uniform per step).  This is not
    the same as perturbing the priorities once with Gumbel noise and running Kahn's
    algorithm: there the noise of an op that stayed schedulable is reused at later
    steps, conditioned on having lost earlier, which changes the distribution.
    Reproducible for a given ``seed`` (an int or a :class:`numpy.random.Generator`);
    ``O(count * n * ready + count * m)`` in compiled code.
    """
    y = _check_priorities(graph, priorities)
    c = _check_positive("count", count)
    assert c is not None
    uniforms = np.random.default_rng(seed).random((c, graph.n))
    return sample_kernel(graph.succ_ptr, graph.succ_idx, in_degrees(graph), y, uniforms)


# ---------------------------------------------------------------- beam search
@njit(cache=True)
def beam_expand_kernel(sched, ready, hsh, live, peak, logp, y, zob, ctz, mode, *graph):
    """All children ``(state, ready op)`` of one beam level, scored by the policy of
    Eq. 8 (:func:`heuristics.peak_memory.state_dp.expand_level`): per child its parent,
    op, hash, peak, live memory and log-probability, in insertion order (states in
    order, each state's ops by increasing index)."""
    c = expand_level(sched, ready, hsh, live, peak, logp, y, zob, ctz, np.inf, mode, True, False, graph)
    return c[0], c[1], c[2], c[3], c[4], c[5]


@dataclass(frozen=True)
class BeamResult:
    """The final beam of :func:`beam_search`: ``orders`` ``(B, n)`` complete orders,
    their total log-probabilities under Eq. 6 and 8 (``log_probs``) and peaks (Eq. 1,
    ``peaks``), best first (lowest peak, ties to higher log-prob, for ``collapse="peak"``;
    highest log-prob, ties to lower peak, otherwise).  ``order``, ``peak`` and
    ``log_prob`` are the first row.  ``states`` counts the partial orders kept over all
    levels, ``max_level`` the widest level, ``truncated`` whether the width ever cut a
    level (if not, the search was exhaustive)."""

    orders: np.ndarray
    log_probs: np.ndarray
    peaks: np.ndarray
    order: np.ndarray
    peak: float
    log_prob: float
    collapse: str
    states: int
    max_level: int
    truncated: bool


def beam_search(graph: Graph, priorities: np.ndarray, width: int | None = 16, collapse: str = "peak") -> BeamResult:
    """Beam search with state collapsing (Topoformer Section 4.2, "Beam search with
    state-collapsing") over the policy of Eq. 6 and 8.

    Level ``t`` holds partial orders of ``t`` ops; each is extended by every op of its
    schedulable set, a child scored by its total log-probability ``sum_s log p(sigma_s |
    sigma_{1:s-1})`` (Eq. 6, 8), and the ``width`` highest-scoring children survive
    (ties: higher priority of the added op, then its smaller index, as in Kahn's
    algorithm, so ``width=1`` is :func:`greedy_order`; then the lower peak; ``width=None``
    keeps all).  Before the cut, *partial* orders with the same scheduled
    set are merged (state collapsing): ``collapse="peak"`` keeps the lower peak so far
    (ties: higher log-prob), ``"logp"`` the higher log-prob (ties: lower peak), and
    ``"none"`` merges nothing (plain beam search; for an objective other than the peak,
    whose final beam the caller scores itself, this keeps the beam diverse).  Complete
    orders are never merged: the final beam holds the completions of the last level.
    (With a single sink every order's first ``n - 1`` ops form one set, so a collapsing
    search ends with one order on such graphs.)

    Why ``width=None, collapse="peak"`` is exact: the live memory after a prefix
    (outputs placed whose consumers are not all placed, Eq. 3) is a function of the set
    ``S`` of placed ops alone, and so is the schedulable set.  Every completion of two
    prefixes of ``S`` therefore sees the same future step memories (Eq. 2), and the peak
    of the completed order is ``max(peak of prefix, peak of the rest)``, monotone in the
    prefix's peak: the cheapest prefix of ``S`` dominates the others.  By induction on
    ``|S|`` the kept prefix of every reachable ``S`` has the least peak over all
    prefixes of ``S`` (a best prefix of ``S + v`` extends some prefix of ``S``, which can
    be replaced by the kept one without raising the peak), so the completed orders
    include one of minimum peak.  Likewise the step probabilities of Eq. 8 depend on
    ``S`` only, so ``width=None, collapse="logp"`` returns a most likely order (a
    longest path over scheduled sets).  Unbounded widths visit every scheduled set
    (exponentially many in general): use them on small graphs only.

    Cost per level ``O(states x ready x (1 + deg^2))`` compiled, plus a sort of the
    children and ``O(width x n / 64)`` to build the survivors' bitsets.  The log-probs
    and peaks are computed along the way; the returned peaks equal
    :func:`heuristics.peak_memory.orders.order_peak` of the orders.
    """
    y = _check_priorities(graph, priorities)
    limit = _check_positive("width", width, allow_none=True)
    if collapse not in COLLAPSE_MODES:
        raise InvalidParameterError(f"collapse must be one of {COLLAPSE_MODES}, got {collapse!r}")
    mode = _MODE_CODE[collapse]
    g = graph
    n = g.n
    zob = zobrist_keys(n, _ZOBRIST_SEED)
    arrays = graph_arrays(g)
    sched, ready, hsh, live, peak = empty_level(g)
    logp = np.zeros(1)
    parents: list[np.ndarray] = []
    nodes: list[np.ndarray] = []
    states, max_level, truncated = 1, 1, False
    for level in range(n):
        level_mode = KEEP_ALL if level == n - 1 else mode  # complete orders are not merged
        c_parent, c_node, c_hash, c_peak, c_live, c_logp = beam_expand_kernel(
            sched, ready, hsh, live, peak, logp, y, zob, CTZ, level_mode, *arrays
        )
        if limit is not None and c_node.size > limit:
            sel = np.lexsort((c_peak, c_node, -y[c_node], -c_logp))[:limit]
            truncated = True
        else:
            sel = np.arange(c_node.size)
        parent, node = c_parent[sel], c_node[sel]
        if level < n - 1:
            sched, ready = materialise_kernel(
                parent, node, sched, ready, g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx
            )
        hsh, live, peak, logp = c_hash[sel], c_live[sel], c_peak[sel], c_logp[sel]
        parents.append(parent)
        nodes.append(node)
        states += int(sel.size)
        max_level = max(max_level, int(sel.size))
    rank = np.lexsort((-logp, peak)) if collapse == "peak" else np.lexsort((peak, -logp))
    orders = trace_orders(parents, nodes, rank)
    log_probs, peaks = logp[rank], peak[rank]
    return BeamResult(
        orders=orders,
        log_probs=log_probs,
        peaks=peaks,
        order=orders[0].copy(),
        peak=float(peaks[0]),
        log_prob=float(log_probs[0]),
        collapse=collapse,
        states=states,
        max_level=max_level,
        truncated=truncated,
    )
