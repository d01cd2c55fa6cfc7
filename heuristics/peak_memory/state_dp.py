"""Dynamic programming over scheduled sets, with state collapsing (Topoformer App. C.3).

A state is the *set* ``S`` of ops run so far.  The live memory after ``S`` is a
function of ``S`` alone (the outputs in ``S`` that still have a consumer outside
``S``), so every completion of two partial orders with the same set sees the same
future step memories (Eq. 2, 3, 15 of the Topoformer paper); of all partial orders
of one set only the one with the smallest peak so far matters ("state collapsing").
Level ``t`` holds the states of size ``t``; a state's children add one ready op
(all its producers in ``S``).  With every state kept this is exact; keeping the
``beam_width`` best states per level gives the paper's *approximate DP*.

Each state gets a key ``b(S) = max(peak so far, I(S) + min_{v next} (size_out(v) +
size_param(v)))``: the next step holds the live memory ``I(S)`` plus the next op's
output and parameters, so every completion of ``S`` has peak ``>= b(S)``.  (The
minimum runs over a superset of the ops that can run next: the parent's ready ops
and the new op's consumers.)  The beam keeps the smallest keys, ties to the smaller
live memory.

Pruning and the lower bound.  With a known order of peak ``U``, a state whose key
reaches ``U`` cannot lead to a better order and is dropped.  Any order passes
through one state per level, so if ``q_t`` is the smallest key among states the
beam cut off at level ``t``, every order passing through a cut-off state has peak
``>= q_t``, and every other order survives to the end (state collapsing keeps a
set's cheapest prefix).  Hence

    OPT >= min(best order found, U, min_t q_t),

a proven lower bound from any run; with nothing cut off it equals the optimum and
the run is exact (``DpResult.exact``).  Cuts at early levels, where peaks are still
small, make this bound weak; :mod:`mtpp.bounds.peak_memory` has order-independent
ones.

Rounding.  Live memories are kept by adds and subtracts, so on a graph
that mixes a huge tensor with tiny ones their errors are not small relative to
the live memory.  Bound them against the largest magnitude touched instead: the
live memory of a kept state went through at most ``2n`` roundings (each tensor
added once, freed once), each at most ``u = 2^-53`` times a partial result, and
every partial result on the path that made a kept state is at most that path's
peak (adding is monotone, freeing only lowers), which is below ``U``; without a
``U``, at most ``T (1 + 2^-20)``, ``T`` the sum of all sizes.  Call that ``M``: every
step, peak and key is then within ``(2n + 3) u M`` of its true value (to first
order; a state merged with a cheaper prefix keeps its first live memory, made on
a path below ``M`` as well).  Following an optimal order level by level as above,
with every comparison made on computed values, its state is kept with a peak at
most ``OPT + (2n + 3) u M``, or cut off or pruned with a key at most that; and
``best``, the re-evaluated peak of the order found, adds at most two more such
errors (its own path and :func:`heuristics.peak_memory.orders.order_peak`).  So the
computed ``min(best, U, min_t q_t) <= OPT + 3 (2n + 3) u M``, and the returned
bound is lowered by ``8 (n + 2) u M`` (:func:`mtpp.core.rounding.lower_by`; the extra
``2n + 7`` units cover the second-order terms).  When the sizes sum exactly
(:func:`mtpp.core.memory.sums_are_exact`: every live memory and key is a sum of at most
``2T``) nothing is lowered.

Sets are bitsets of ``ceil(n / 64)`` words, each state carries its ready set as a
second bitset, and duplicates are merged through a Zobrist hash.  A level costs
``O(states x ready x deg^2)`` in compiled code plus a sort when the beam cuts.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from heuristics.arrays import graph_arrays
from heuristics.bitsets import CTZ, ONE, covered, mark_ready, ready_ops, zobrist_keys
from heuristics.peak_memory.orders import order_peak
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.jit import njit
from mtpp.core.memory import sums_are_exact
from mtpp.core.rounding import UNIT, lower_by

DEFAULT_MAX_STATES = 200_000  # per level, when the beam is unbounded (memory cap: it makes the run inexact)
MAX_TOTAL_STATES = 20_000_000  # states kept over all levels (8 bytes each for the way back)
TIMEOUT_WIDTH = 16  # beam width for the levels left once the time limit has passed ...
TIMEOUT_WORDS = 1 << 22  # ... at most: width x levels left x bitset words stays below this (20,000 ops: width 1)
# A level starts at full width only if LEVEL_MARGIN times the last level's time per state
# fits in the time left: children per state grow from level to level, and a level took up
# to 2.75 times the last one's pace.
LEVEL_MARGIN = 3.0
FINISH_SECONDS_PER_LEVEL = 8e-5
"""What a level of the narrow finish costs at least (a few kernel calls from Python: 56 and 71
microseconds on layered graphs of 20,000 and 50,000 ops, loaded 2-core machine): with a
time limit, the finish starts while the levels left fit in the time left at this pace, and a
call whose limit cannot hold all ``n`` levels overruns it (a 0.7 s beam took 2.8 s
at 50,000 ops); :func:`finish_seconds` is what callers check first."""


def finish_seconds(graph: Graph) -> float:
    """The least time :func:`state_dp` takes on ``graph`` whatever its limit: one narrow
    level per op (:data:`FINISH_SECONDS_PER_LEVEL`)."""
    return FINISH_SECONDS_PER_LEVEL * graph.n


@njit(cache=True)
def hash_table(ready):
    """An empty open-addressing table (``-1`` slots, a power of two at least twice the
    number of children) for the children of the states whose ready sets are ``ready``,
    and that number."""
    total = 0
    for s in range(ready.shape[0]):
        for w in range(ready.shape[1]):
            x = ready[s, w]
            while x != 0:
                x &= x - ONE
                total += 1
    cap = 2
    while cap < 2 * total + 2:
        cap *= 2
    return np.full(cap, -1, dtype=np.int64), total


@njit(cache=True, inline="always")
def same_child(sched, ps, pv, s, v):
    """Whether state ``ps`` plus op ``pv`` is the same set as state ``s`` plus op ``v``."""
    for w in range(sched.shape[1]):
        w1 = sched[ps, w]
        if pv >> 6 == w:
            w1 |= ONE << np.uint64(pv & 63)
        w2 = sched[s, w]
        if v >> 6 == w:
            w2 |= ONE << np.uint64(v & 63)
        if w1 != w2:
            return False
    return True


@njit(cache=True, inline="always")
def child_live(sched, s, v, live_s, succ_ptr, succ_idx, pred_ptr, pred_idx, size_out):
    """Live memory after adding ``v`` to state ``s`` (Eq. 3): ``v``'s output joins if it
    has consumers; a producer whose consumers are now all scheduled is freed."""
    cl = live_s
    if succ_ptr[v + 1] > succ_ptr[v]:
        cl += size_out[v]
    for a in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred_idx[a]
        if covered(sched, s, u, succ_ptr, succ_idx, v):
            cl -= size_out[u]
    return cl


KEEP_PEAK, KEEP_LOGP, KEEP_ALL = 0, 1, 2
"""How :func:`expand_level` merges the children of one set: the lower peak (ties: the
higher log-probability), the higher log-probability (ties: the lower peak), none."""


@njit(cache=True, inline="always")
def expand_level(sched, ready, hsh, live, peak, logp, y, zob, ctz, ub, mode, policy, lookahead, graph):
    """All children ``(state, ready op)`` of one level (``graph``: the arrays of
    :func:`heuristics.arrays.graph_arrays`), those whose peak reaches ``ub`` dropped,
    children of one set merged through a Zobrist-hash table (sets compared word by
    word on a hit) as ``mode`` says (:data:`KEEP_PEAK`, ...; the first one inserted
    wins full ties).  A child's peak is ``max(peak, live + size_out(v) +
    size_param(v))``; with a ``policy`` (the priorities ``y`` of Eq. 8 of Topoformer)
    its log-probability is its parent's (``logp``) plus ``y_v - logsumexp_{R(S)} y``
    (the normaliser computed once per state); without one, children merge by peak
    alone.  The live memory is computed once per distinct child; no per-child
    ``O(n)`` copy is made (the bitsets of the survivors are built afterwards by
    :func:`materialise_kernel`).

    Returns per child its parent, op, hash, peak, live memory, log-probability (with
    a policy) and, with ``lookahead``, ``live + `` the smallest ``size_out +
    size_param`` of an op that could run next (over a superset of the child's ready
    ops: the parent's other ready ops and the op's consumers), a lower bound on the
    child's next step memory; in insertion order (states in order, each state's ops
    by increasing index).  The kernels call it with constant ``policy`` and
    ``lookahead``, so that each compiles without the branches it does not take."""
    succ_ptr, succ_idx, pred_ptr, pred_idx, _, size_param, size_out = graph
    slots, total = hash_table(ready)
    mask = np.uint64(slots.size - 1)
    c_parent = np.empty(total, dtype=np.int64)
    c_node = np.empty(total, dtype=np.int64)
    c_hash = np.empty(total, dtype=np.uint64)
    c_peak = np.empty(total)
    c_live = np.empty(total)
    c_logp = np.empty(total if policy else 0)
    c_look = np.empty(total if lookahead else 0)
    count = 0
    for s in range(sched.shape[0]):
        ops = ready_ops(ready, s, ctz)
        lse = 0.0
        if policy:  # normaliser of Eq. 8 over R(S), shifted by its maximum
            top = -np.inf
            for v in ops:
                top = max(top, y[v])
            acc = 0.0
            for v in ops:
                acc += math.exp(y[v] - top)
            lse = top + math.log(acc)
        # the two smallest next-step additions size_out + size_param among s's ready ops
        m1, m2, a1 = np.inf, np.inf, -1
        if lookahead:
            for v in ops:
                add = size_out[v] + size_param[v]
                if add < m1:
                    m2 = m1
                    m1, a1 = add, v
                elif add < m2:
                    m2 = add
        for v in ops:
            lp = logp[s] + (y[v] - lse) if policy else 0.0
            step = live[s] + size_out[v] + size_param[v]
            p = peak[s] if peak[s] > step else step
            if p >= ub:
                continue
            h = hsh[s] ^ zob[v]
            i = np.int64(h & mask)
            while True:
                e = -1 if mode == KEEP_ALL else slots[i]
                if e == -1:
                    cl = child_live(sched, s, v, live[s], succ_ptr, succ_idx, pred_ptr, pred_idx, size_out)
                    if lookahead:  # next step: one of ready(s) - v or a consumer of v
                        nxt = m2 if v == a1 else m1
                        for a in range(succ_ptr[v], succ_ptr[v + 1]):
                            z = succ_idx[a]
                            add = size_out[z] + size_param[z]
                            if add < nxt:
                                nxt = add
                        if nxt == np.inf:  # v was the last op
                            nxt = 0.0
                        c_look[count] = cl + nxt
                    if mode != KEEP_ALL:
                        slots[i] = count
                    c_parent[count] = s
                    c_node[count] = v
                    c_hash[count] = h
                    c_peak[count] = p
                    c_live[count] = cl
                    if policy:
                        c_logp[count] = lp
                    count += 1
                    break
                if c_hash[e] == h and same_child(sched, c_parent[e], c_node[e], s, v):
                    if not policy:
                        better = p < c_peak[e]
                    elif mode == KEEP_PEAK:
                        better = p < c_peak[e] or (p == c_peak[e] and lp > c_logp[e])
                    else:
                        better = lp > c_logp[e] or (lp == c_logp[e] and p < c_peak[e])
                    if better:  # same set, so the same live memory
                        c_parent[e] = s
                        c_node[e] = v
                        c_peak[e] = p
                        if policy:
                            c_logp[e] = lp
                    break
                i = np.int64((np.uint64(i) + ONE) & mask)
    return (
        c_parent[:count],
        c_node[:count],
        c_hash[:count],
        c_peak[:count],
        c_live[:count],
        c_logp[:count],
        c_look[:count],
    )


@njit(cache=True)
def expand_kernel(sched, ready, hsh, live, peak, zob, ctz, ub, *graph):
    """The children of one level of the DP (:func:`expand_level`: merged by peak, no
    policy): per child its parent, op, hash, peak, live memory and next-step bound."""
    none = np.empty(0)
    c = expand_level(sched, ready, hsh, live, peak, none, none, zob, ctz, ub, KEEP_PEAK, False, True, graph)
    return c[0], c[1], c[2], c[3], c[4], c[6]


@njit(cache=True)
def materialise_kernel(parent, node, sched, ready, succ_ptr, succ_idx, pred_ptr, pred_idx):
    """Scheduled and ready bitsets of the chosen children."""
    k = parent.shape[0]
    n_words = sched.shape[1]
    new_sched = np.empty((k, n_words), dtype=np.uint64)
    new_ready = np.empty((k, n_words), dtype=np.uint64)
    for c in range(k):
        s, v = parent[c], node[c]
        for w in range(n_words):
            new_sched[c, w] = sched[s, w]
            new_ready[c, w] = ready[s, w]
        bit = ONE << np.uint64(v & 63)
        new_sched[c, v >> 6] |= bit
        new_ready[c, v >> 6] &= ~bit
        mark_ready(new_sched, new_ready, c, v, succ_ptr, succ_idx, pred_ptr, pred_idx)
    return new_sched, new_ready


def empty_level(graph: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The level of the empty set: its scheduled and ready bitsets (the sources ready),
    hash, live memory and peak so far."""
    n_words = (graph.n + 63) // 64
    sched = np.zeros((1, n_words), dtype=np.uint64)
    ready = np.zeros((1, n_words), dtype=np.uint64)
    for v in np.flatnonzero(np.diff(graph.pred_ptr) == 0).tolist():
        ready[0, v >> 6] |= ONE << np.uint64(v & 63)
    return sched, ready, np.zeros(1, dtype=np.uint64), np.zeros(1), np.zeros(1)


def trace_orders(parents: list[np.ndarray], nodes: list[np.ndarray], last: np.ndarray) -> np.ndarray:
    """The orders that end in the states ``last`` of the last level, one per row, read
    back through each level's ``parents`` (indices into the level before) and added
    ``nodes``."""
    orders = np.empty((last.size, len(nodes)), dtype=np.int64)
    idx = last
    for t in range(len(nodes) - 1, -1, -1):
        orders[:, t] = nodes[t][idx]
        idx = parents[t][idx]
    return orders


@dataclass(frozen=True)
class DpResult:
    """Best order found (node indices) and its peak; ``lower_bound`` is proven (see the
    module docstring); ``exact`` when no state was cut off, so ``peak`` is optimal
    (or, when every state was pruned, the given upper order is).  ``states`` counts
    states kept over all levels, ``max_level`` the widest level; ``truncated_at`` is
    the first level the beam cut (-1 if none)."""

    order: np.ndarray
    peak: float
    lower_bound: float
    exact: bool
    states: int
    max_level: int
    truncated_at: int
    stopped_by_time: bool
    wall_time: float


def _check_width(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1 or None, got {value!r}")
    return int(value)


def state_dp(
    graph: Graph,
    beam_width: int | None = None,
    upper_order: np.ndarray | None = None,
    max_states: int | None = DEFAULT_MAX_STATES,
    time_limit: float | None = None,
    seed: int = 0,
) -> DpResult:
    """Minimum-peak order by DP over scheduled sets (Topoformer App. C.3, "approximate
    DP"; exact when nothing is cut off).

    ``beam_width`` keeps that many states per level (``None``: all of them, up to
    ``max_states``, a memory guard).  ``upper_order`` (a known order) prunes every
    state whose peak reaches its peak and is returned if nothing better is found.
    Once ``time_limit`` seconds have passed, or the next level could end past them
    (at ``LEVEL_MARGIN`` times the last level's pace), or ``MAX_TOTAL_STATES`` states
    are stored, the remaining levels run with a beam of ``TIMEOUT_WIDTH`` (narrower on
    large graphs, down to one state, so that ``TIMEOUT_WORDS`` bounds the finish), the
    level at hand expanding only that many of its best states, so the call still ends
    with an order and a valid bound (``stopped_by_time``).
    ``seed`` only fixes the hash keys.  See :class:`DpResult`.
    """
    width = _check_width("beam_width", beam_width)
    cap = _check_width("max_states", max_states)
    limit = width if cap is None else (cap if width is None else min(width, cap))
    t0 = time.perf_counter()
    g = graph
    n = g.n
    n_words = (n + 63) // 64
    ub_order = None if upper_order is None else np.asarray(upper_order, dtype=np.int64)
    ub = math.inf if ub_order is None else order_peak(g, ub_order)
    zob = zobrist_keys(n, seed)
    arrays = graph_arrays(g)
    sched, ready, hsh, live, peak = empty_level(g)
    parents: list[np.ndarray] = []
    nodes: list[np.ndarray] = []
    min_cut = math.inf
    truncated_at = -1
    stopped = False
    states = 1
    max_level = 1
    per_state = 0.0  # seconds per state expanded at the last level timed (level 0, which loads the kernels, is not)
    for level in range(n):
        start = time.perf_counter()
        kept = None  # the states of this level expanded, when a stop keeps only the best of them
        late = time_limit is not None and (
            start - t0 >= time_limit
            or start - t0 + LEVEL_MARGIN * per_state * sched.shape[0] + FINISH_SECONDS_PER_LEVEL * (n - level)
            > time_limit
        )
        if not stopped and (states >= MAX_TOTAL_STATES or late):
            stopped = True
            # each state costs O(n / 64) per level: the finish must not outlast the limit by much
            finish = max(1, min(TIMEOUT_WIDTH, TIMEOUT_WORDS // max(1, (n - level) * n_words)))
            limit = finish if limit is None else min(limit, finish)
            if sched.shape[0] > limit:
                # a level that would not end within the limit expands only its best states
                # (a level of 200,000 states takes seconds); every order through a dropped state has peak >= its peak
                # so far, so the smallest of those counts as a cut-off key (module docstring)
                rank = np.lexsort((live, peak))
                kept, dropped = rank[:limit], rank[limit:]
                min_cut = min(min_cut, float(peak[dropped].min()))
                if truncated_at < 0:
                    truncated_at = level
                sched, ready, hsh, live, peak = sched[kept], ready[kept], hsh[kept], live[kept], peak[kept]
        expanded = sched.shape[0]
        c_parent, c_node, c_hash, c_peak, c_live, c_look = expand_kernel(
            sched, ready, hsh, live, peak, zob, CTZ, ub, *arrays
        )
        key = np.maximum(c_peak, c_look)  # a lower bound on every completion of the child
        alive = np.flatnonzero(key < ub)
        if alive.size == 0:
            break
        if limit is not None and alive.size > limit:
            rank = alive[np.lexsort((c_live[alive], key[alive]))]
            sel = rank[:limit]
            min_cut = min(min_cut, float(key[rank[limit:]].min()))
            if truncated_at < 0:
                truncated_at = level + 1
        else:
            sel = alive
        parent, node = c_parent[sel], c_node[sel]
        sched, ready = materialise_kernel(parent, node, sched, ready, g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx)
        hsh, live, peak = c_hash[sel], c_live[sel], c_peak[sel]
        parents.append((parent if kept is None else kept[parent]).astype(np.int32))  # indices into the whole level
        nodes.append(node.astype(np.int32))
        states += int(sel.size)
        max_level = max(max_level, int(sel.size))
        if level > 0:
            per_state = (time.perf_counter() - start) / expanded
    exact = truncated_at < 0
    if len(parents) == n:  # a full order below ub survived
        order = trace_orders(parents, nodes, np.zeros(1, dtype=np.int64))[0]
        best = order_peak(g, order)
    else:
        if ub_order is None:  # cannot happen: without pruning every level has a child
            raise RuntimeError("the state DP lost every state without an upper bound")
        order, best = ub_order.copy(), ub
    lower = min(best, ub, min_cut)
    if not sums_are_exact(g):  # lower for rounding (module docstring)
        magnitude = ub if math.isfinite(ub) else float(g.size_out.sum() + g.size_param.sum()) * (1.0 + 2.0**-20)
        lower = lower_by(lower, 0.0, 8.0 * (n + 2) * UNIT * magnitude)
    return DpResult(
        order=order,
        peak=best,
        lower_bound=lower,
        exact=exact,
        states=states,
        max_level=max_level,
        truncated_at=truncated_at,
        stopped_by_time=stopped,
        wall_time=time.perf_counter() - t0,
    )
