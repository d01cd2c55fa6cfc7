"""Anytime best-first search over scheduled sets for the minimum peak memory.

Problem (Topoformer Eq. 1-3, 15): minimise ``peak(sigma) = max_t M_t`` over
topological orders ``sigma``.  The live memory ``I(S)`` after a set ``S`` of ops has
run depends on ``S`` alone (the outputs in ``S`` with a consumer outside ``S``), so
the step that adds ``v`` to ``S`` costs ``I(S) + size_out(v) + size_param(v)``
whatever order ran ``S``: the minimum peak is a *bottleneck shortest path* from the
empty set to the full set over the down-closed sets (ideals), with path cost the
largest step.  ``g(S)`` is the smallest peak of a known prefix reaching ``S``.

Search (A* with the max in place of the sum).  States are expanded by increasing
key ``f(S) = max(g(S), h(S))``, ties to the deeper state (a depth-first dive at the
level of the bound finds complete orders early; tried against ties to the smaller
``g`` first, which re-opens fewer states but proved fewer graphs), then to the
smaller ``g``, with an admissible
``h(S)`` (every completion of ``S`` has a step ``>= h(S)``):

* the next step holds ``I(S)`` plus the next op: ``I(S) + min_{v ready}
  (size_out(v) + size_param(v))``;
* the *forced-live bound relative to S*: for every op ``v`` not in ``S``, while
  ``v`` runs memory holds ``v``'s output and parameters, every ancestor ``u`` of
  ``v`` with a consumer in ``desc*(v)`` (:mod:`mtpp.bounds.peak_memory`), and every
  ``u`` in ``S`` with a consumer in ``desc*(v)``: that consumer is not in ``S``
  (``S`` is down-closed and ``v`` is not in it), so it runs at or after ``v``.  So

      h_v(S) = F(v) + sum_{u in S cap Q(v)} size_out(u),   Q(v) = P(v) - anc*(v),

  with ``F(v)`` the static forced-live memory and ``P(v)`` the producers of
  ``desc*(v)``;
* the *min-cut live memory relative to S* (:mod:`mtpp.bounds.peak_cut`): every op
  ``v`` not in ``S`` still has to run, and its step holds at least
  ``B(v) + sum_{u in S cap Q(v)} R[v, u]`` (``B(v)`` the min-cut live memory, ``R``
  the residuals of its maximum flow: each such ``u`` adds an augmenting path of its
  own once ``S`` is forced to the source side).

``h(S) = max_{v not in S} max(F(v) + sum_{S cap Q(v)} size_out, B(v) + sum_{S cap
Q(v)} R[v, .])`` with the next-step term; ops are tried by decreasing largest value
their ``h_v`` can reach, stopping once that cannot beat the best so far.

Equal sets are collapsed through a Zobrist hash (the cheapest ``g`` kept; a state
reached again more cheaply is re-opened), children whose key reaches the best
known peak ``U`` are dropped, and a goal (the full set) lowers ``U``.

Free moves.  If an op ``v`` is ready at ``S`` and ``I(S + v) <= I(S)``
(its output, if it has consumers, is at most the inputs it frees), then for every
``X`` with ``S <= X`` and ``v`` not in ``X``, ``I(X + v) - I(X) <= I(S + v) - I(S) <=
0``: ``v``'s output joins in both, and every input of ``v`` freed at ``S`` (its other
consumers all in ``S``) is freed at ``X`` too.  So moving ``v`` to the front of any
completion of ``S`` raises no later step (each runs with ``X + v`` in place of
``X``), and adds the step ``I(S) + size_out(v) + size_param(v)``.  When that step is
at most ``lift(S)`` below, ``S + v`` is ``S``'s only child: some completion through
it is no worse than the best completion of ``S`` up to ``lift(S) <= OPT``
(``tests/heuristics/peak_memory/test_best_first.py`` checks the lemma on every ideal
of small graphs against brute force).

Free pairs (exact arithmetic only).  Likewise if ``v`` is ready at ``S``, a consumer
``w`` of ``v`` is ready at ``S + v``, both steps are at most ``lift(S)`` and ``I(S +
v + w) <= min(I(S), I(S + v))``, then ``S + v`` is ``S``'s only child: in a completion
``sigma``, a step with ``X`` before it holds neither (``w`` never runs before ``v``)
and gains ``I(X + v + w) - I(X) <= I(S + v + w) - I(S) <= 0`` (the same argument for
the set ``{v, w}``), or holds ``v`` only and gains ``I(X + w) - I(X) <= I(S + v + w)
- I(S + v) <= 0`` (:func:`pair_move`; checked like the free move).

Backward (``backward=True``).  The same bottleneck path problem read from the end:
a state is the set ``T`` of ops run last (up-closed), its boundary memory ``I(V -
T)``, an op is ready when all its consumers are in ``T``, and adding ``v`` costs the
step of ``v``, ``I(V - T - v) + size_out(v) + size_param(v)`` (:func:`back_live`).
Every order is one path, so the bound argument holds word for word with ``h(T)``
the larger of a next-step term and ``max_{v not in T} h_v(T)``,

    h_v(T) = max(F(v) + sum_{u in A(v) cap feed(T)} size_out(u),
                 B(v) + sum_{u in A(v) cap feed(T)} R[v, u]),   A(v) = anc(v) - P(v),

``feed(T)`` the ops with a consumer in ``T``: every op of ``T`` runs after ``v``, so
an ancestor ``u`` of ``v`` feeding ``T`` is live at ``v``'s step (outside ``P(v)``,
not yet counted by ``F(v)``); in the min-cut network, forcing ``T`` to the sink side
adds for each such ``u`` the path source ``-> x_u -> c_u ->`` its consumer in ``T ->``
sink, whose only finite arc is ``u``'s own (``tests/heuristics/peak_memory`` checks
both against the brute-force step given ``T``).  The next step adds at least ``size_param(z)`` (plus
``size_out(z)`` for a sink ``z``) to the boundary after ``T``, since ``z``'s output
leaves it.  The free-move lemma holds mirrored: with ``v`` ready at ``T``, ``I(V - T'
- v) - I(V - T') <= I(V - T - v) - I(V - T)`` for ``T <= T'`` (the inputs of ``v``
that join the boundary are those with no consumer in ``T'``), so when that is ``<=
0`` and ``v``'s step is at most the lift, ``T + v`` is the only child (exact
arithmetic only).  On graphs whose critical op has more ancestors than descendants
(layered graphs) the plateau of states at the root's key is far smaller backward.

Lift.  Every order's peak is at least ``OPT``, so a path's cost ``g`` may be raised
to any proven ``L <= OPT`` without changing which orders reach ``U`` or the bound
``min(U, smallest open key)``; then sets first reached with ``g <= L`` are never
re-opened by a cheaper path (on layered graphs most of the expansions were such
re-openings).  ``lift(S)`` is the root's bound ``h(empty)`` (the static min-cut and
forced-live maxima), or, when every quantity is exact (below), the larger key of
the state being expanded: the smallest open key, at most ``OPT`` by the bound
argument.

Bound.  Every order passes through one state per level.  Call a stored state
``S`` *good* if ``max(g(S), peak of some completion of S) <= OPT`` (the root is).
When a good ``S`` is expanded, the first step of that completion (or, after a free
move, of the completion with ``v`` moved to the front, which is no worse up to
``lift(S) <= OPT``) gives a child of cost at most ``OPT`` with a completion of peak
at most ``OPT``: it is stored (or already stored at least as cheaply, so good),
unless its key reached ``U``, and then ``OPT >= U``.  Follow good states from the
root through expanded ones (a re-opened state is open again) to the deepest: it is
still open, and ``f(S) <= max(g(S), h(S)) <= OPT`` because ``h`` is admissible.
So at any moment

    OPT >= min(U, smallest key still open),

a proven lower bound that rises as the search runs; when the smallest open key
reaches ``U`` (or nothing is open), the order of peak ``U`` is optimal.  States
pruned at ``U`` do not matter as the bound is capped at ``U``.

Rounding.  Live memories are kept by adds and subtracts, so bound
their errors against the largest magnitude touched, ``U_0`` (the peak of the
start order): a stored state's live memory went through at most ``2n`` roundings
on the path that first made it, each at most ``u = 2^-53`` times a partial result,
and those are at most that path's peak, below ``U <= U_0`` (adding is monotone,
freeing only lowers).  So every ``g``, step and next-step term errs by at most
``(2n + 3) u U_0`` (to first order); the forced-live and min-cut terms of ``h`` are
float sums of at most ``2n + 3`` non-negative terms (each residual ``fl(size_out -
flow / 2^k) >= 0`` to within ``u`` of itself), within ``gamma(2n + 2)`` of their
true values, which are at most ``OPT <= U_0 (1 + small)`` on an optimal order's
states.  The argument above, run on computed values, gives ``f(S) <= OPT + (2n +
3) u U_0`` for the open state of the optimal order, and ``U`` re-evaluated as a
peak (:func:`heuristics.peak_memory.orders.order_peak`) adds at most two more such
errors: the computed ``min(U, smallest open key) <= OPT + 3 (2n + 3) u U_0``.  With
free moves and the lift (both on the fixed root bound when not exact, so the
errors do not compound along a path) a good state's computed ``g`` is at most
``OPT + 2 (2n + 3) u U_0`` and its completion's true peak one more such error
above ``OPT``: ``lower_bound`` is lowered by ``16 (n + 2) u U_0``
(:func:`mtpp.core.rounding.lower_by`; the free-move test shrinks the freed sum for its
rounding, :func:`frees_enough`, so ``I(S + v) <= I(S)`` holds exactly).
A given ``static_bound`` must be a true bound to within ``gamma(n + 2)`` (as
:func:`mtpp.bounds.peak_memory.forced_live_memory` is).  When every size, static
value and residual lies on one power-of-two grid fine enough for ``4`` times the
largest sum (:func:`mtpp.core.memory.exact_on_grid`; integer sizes, say), every
quantity is computed exactly and nothing is lowered.

Memory.  States live in arrays allocated once from ``memory_mb`` (two bitsets of
``ceil(n / 64)`` words, hash, g, live memory, h, parent, op, depth; a heap of twice
as many entries; an open-addressing table): the cap is never exceeded; when it is
full the search stops and reports it (``memory_hit``), the bound still valid (a
state whose children did not fit goes back on the heap).  Time is checked between
batches of expansions.  An expansion costs ``O(ready x (deg^2 + n / 64))`` for the
children plus ``O(n x n / 64)`` at worst for ``h``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from heuristics.arrays import graph_arrays
from heuristics.bitsets import CTZ, DEBRUIJN, ONE, covered, has, mark_ready, ready_ops, zobrist_keys
from heuristics.peak_memory.orders import order_peak, traversal_order
from heuristics.peak_memory.state_dp import child_live
from mtpp.bounds.peak_cut import cut_live_memory
from mtpp.bounds.peak_memory import ancestor_bits, masked_sums, needed_bits
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.jit import clock, njit
from mtpp.core.memory import exact_on_grid
from mtpp.core.rounding import UNIT, lower_by

DEFAULT_MEMORY_MB = 512
FIXED_BYTES_PER_STATE = 8 * 5 + 4 * 2 + 2 * (8 + 4 + 8 + 8) + 4 * 8  # arrays, heap, table

# status codes of the kernel
RUNNING, FINISHED, MEMORY_FULL, TARGET_REACHED, TIME_UP = 0, 1, 2, 3, 4


@njit(cache=True, inline="always")
def _before(ka, ga, da, kb, gb, db):
    """Heap order: smaller key first, then the deeper state, then the smaller peak so
    far."""
    return ka < kb or (ka == kb and (da > db or (da == db and ga < gb)))


@njit(cache=True)
def _push(hk, hd, hi, hg, size, key, depth, idx, g):
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if not _before(key, g, depth, hk[p], hg[p], hd[p]):
            break
        hk[i], hd[i], hi[i], hg[i] = hk[p], hd[p], hi[p], hg[p]
        i = p
    hk[i], hd[i], hi[i], hg[i] = key, depth, idx, g
    return size + 1


@njit(cache=True)
def _pop(hk, hd, hi, hg, size):
    """Removes the top entry (read it before calling); returns the new size."""
    size -= 1
    key, depth, idx, g = hk[size], hd[size], hi[size], hg[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and _before(hk[c + 1], hg[c + 1], hd[c + 1], hk[c], hg[c], hd[c]):
            c += 1
        if not _before(hk[c], hg[c], hd[c], key, g, depth):
            break
        hk[i], hd[i], hi[i], hg[i] = hk[c], hd[c], hi[c], hg[c]
        i = c
    if size > 0:
        hk[i], hd[i], hi[i], hg[i] = key, depth, idx, g
    return size


@njit(cache=True, inline="always")
def relative_terms(v, over, row, q_bits, forced, static, size_out, resid, relative):
    """``F(v) + sum size_out`` and ``B(v) + sum R[v, .]`` over ``over[row] cap Q(v)``
    (module docstring; ``relative`` false: the second is ``B(v)``), summed by
    increasing op."""
    total = forced[v]
    cut = static[v]
    for w in range(q_bits.shape[1]):
        x = over[row, w] & q_bits[v, w]
        while x != 0:
            low = x & (~x + ONE)
            x ^= low
            u = w * 64 + CTZ[(low * DEBRUIJN) >> np.uint64(58)]
            total += size_out[u]
            if relative:
                cut += resid[v, u]
    return total, cut


@njit(cache=True)
def set_bound(bits, s, order, static, forced, top, q_bits, resid, size_out, best, over, row):
    """``max(best, max_{v not in S} h_v(S))`` (module docstring); ``order`` sorts the
    ops by decreasing ``top``, the largest ``h_v`` can get.  The relative terms sum
    over ``over[row] cap Q(v)``: ``over[row]`` is ``S`` forward, the ops feeding
    ``T`` backward; an empty ``resid`` (``(0, 0)``) leaves the min-cut terms static."""
    relative = resid.shape[0] > 0  # an empty R: the relative min-cut terms are off
    for k in range(order.shape[0]):
        v = order[k]
        if top[v] <= best:
            break
        if has(bits, s, v):
            continue
        total, cut = relative_terms(v, over, row, q_bits, forced, static, size_out, resid, relative)
        if total > best:
            best = total
        if cut > best:
            best = cut
    return best


@njit(cache=True, inline="always")
def frees_enough(bits, s, v, succ_ptr, succ_idx, pred_ptr, pred_idx, size_out, exact):
    """Whether adding the ready op ``v`` to the set ``s`` does not raise the live
    memory, ``I(S + v) <= I(S)``: ``v``'s output (if it has consumers) is at most the
    inputs it frees.  The freed sum is a float sum of ``k`` non-negative terms, at
    most ``gamma(k)`` above the truth, so unless ``exact`` it is shrunk by ``4 (k + 1)
    u`` first: a ``True`` holds in exact arithmetic."""
    if succ_ptr[v + 1] == succ_ptr[v]:
        return True
    freed = 0.0
    k = 0
    for a in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred_idx[a]
        if covered(bits, s, u, succ_ptr, succ_idx, v):
            freed += size_out[u]
            k += 1
    if exact:
        return size_out[v] <= freed
    return size_out[v] <= freed * (1.0 - 4.0 * (k + 1) * UNIT)


@njit(cache=True)
def feeding(bits, s, feeds, pred_ptr, pred_idx):
    """``feeds[0]``: the ops with a consumer in the set ``bits[s]``."""
    n_words = bits.shape[1]
    for w in range(n_words):
        feeds[0, w] = 0
    for w in range(n_words):
        x = bits[s, w]
        while x != 0:
            low = x & (~x + ONE)
            x ^= low
            z = w * 64 + CTZ[(low * DEBRUIJN) >> np.uint64(58)]
            for a in range(pred_ptr[z], pred_ptr[z + 1]):
                u = pred_idx[a]
                feeds[0, u >> 6] |= ONE << np.uint64(u & 63)


@njit(cache=True, inline="always")
def back_live(bits, s, v, live_s, succ_ptr, succ_idx, pred_ptr, pred_idx, size_out):
    """Backward search: ``I(V - T - v)`` from ``I(V - T)``, ``T`` the set ``s`` of ops
    run last and ``v`` ready (all its consumers in ``T``): ``v``'s output leaves the
    boundary (it had a consumer in ``T`` iff it has one), and every input of ``v``
    with no consumer in ``T`` joins it."""
    cl = live_s
    if succ_ptr[v + 1] > succ_ptr[v]:
        cl -= size_out[v]
    for a in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred_idx[a]
        later = False
        for b in range(succ_ptr[u], succ_ptr[u + 1]):
            if has(bits, s, succ_idx[b]) == 1:
                later = True
                break
        if not later:
            cl += size_out[u]
    return cl


@njit(cache=True)
def pair_move(bits, s, ops, live_s, limit, succ_ptr, succ_idx, pred_ptr, pred_idx, size_out, size_param):
    """Index in ``ops`` of a ready op ``v`` with a consumer ``w`` that is ready once
    ``v`` ran, such that both steps stay at most ``limit`` and ``I(S + v + w) <=
    min(I(S), I(S + v))`` (a free pair, module docstring), or ``-1``.  Exact
    arithmetic only (the caller checks)."""
    for k in range(ops.shape[0]):
        v = ops[k]
        if live_s + size_out[v] + size_param[v] > limit:
            continue
        cl_v = child_live(bits, s, v, live_s, succ_ptr, succ_idx, pred_ptr, pred_idx, size_out)
        for e in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[e]
            if cl_v + size_out[w] + size_param[w] > limit:
                continue
            if not covered(bits, s, w, pred_ptr, pred_idx, v):  # w is not ready once v ran
                continue
            cl = cl_v
            if succ_ptr[w + 1] > succ_ptr[w]:
                cl += size_out[w]
            for a in range(pred_ptr[w], pred_ptr[w + 1]):
                u = pred_idx[a]
                last = True
                for b in range(succ_ptr[u], succ_ptr[u + 1]):
                    z = succ_idx[b]
                    if z != w and z != v and has(bits, s, z) == 0:
                        last = False
                        break
                if last:
                    cl -= size_out[u]
            if cl <= live_s and cl <= cl_v:
                return k
    return -1


class SearchState(NamedTuple):
    """The arrays of a search (module docstring), allocated once from ``memory_mb``:
    per stored set its bitset, ready ops, hash, ``g``, live memory, ``h``, parent, op
    and depth; the heap of keys, depths, sets and ``g``; the hash table; the counters
    (sets stored, heap size, expansions, goal set); the best peak known."""

    bits: np.ndarray
    rdy: np.ndarray
    hsh: np.ndarray
    g: np.ndarray
    live: np.ndarray
    hval: np.ndarray
    parent: np.ndarray
    node: np.ndarray
    depth: np.ndarray
    hk: np.ndarray
    hd: np.ndarray
    hi: np.ndarray
    hg: np.ndarray
    table: np.ndarray
    ctr: np.ndarray
    ub_box: np.ndarray


@njit(cache=True)
def search_kernel(
    bits,
    rdy,
    hsh,
    g,
    live,
    hval,
    parent,
    node,
    depth,
    hk,
    hd,
    hi,
    hg,
    table,
    ctr,
    ub_box,
    succ_ptr,
    succ_idx,
    pred_ptr,
    pred_idx,
    work,
    size_param,
    size_out,
    zob,
    order,
    static,
    forced,
    top,
    q_bits,
    resid,
    target,
    free_moves,
    floor,
    exact,
    backward,
    max_expansions,
    deadline,
):
    """Runs at most ``max_expansions`` expansions of the best-first search on the
    state arrays (a :class:`SearchState`, then the arrays of
    :func:`heuristics.arrays.graph_arrays`) and returns a status code.  ``ctr`` holds the
    number of states, the heap size, the expansions so far and the goal state;
    ``ub_box[0]`` the best peak known.  The clock is looked at between children (one
    expansion can take seconds on 20,000 ops): past ``deadline`` the state goes back
    on the heap, as when memory is full, and ``TIME_UP`` is returned."""
    n = succ_ptr.shape[0] - 1
    timed = deadline < np.inf
    every = 1 if bits.shape[1] >= 16 else 64  # children between two looks at the clock
    seen = 0
    n_words = bits.shape[1]
    cap = bits.shape[0]
    hcap = hk.shape[0]
    mask = np.uint64(table.shape[0] - 1)
    child = np.empty(n_words, dtype=np.uint64)
    feeds = np.empty((1, n_words), dtype=np.uint64)
    for _ in range(max_expansions):
        size = ctr[1]
        if size == 0 or hk[0] >= ub_box[0]:
            return FINISHED
        if ub_box[0] <= target:
            return TARGET_REACHED
        s, s_g, s_key, s_depth = hi[0], hg[0], hk[0], hd[0]
        size = _pop(hk, hd, hi, hg, size)
        ctr[1] = size
        if s_g > g[s]:  # stale: the state was reached more cheaply since
            continue
        ctr[2] += 1
        full = False
        ops = ready_ops(rdy, s, CTZ)
        lift = floor  # a proven bound on OPT: every g is raised to it (module docstring)
        if exact and s_key > lift:
            lift = s_key
        limit = g[s] if g[s] > lift else lift
        for k in range(ops.shape[0] if free_moves and not backward else 0):  # a free move: the only child
            v = ops[k]
            if live[s] + size_out[v] + size_param[v] <= limit and frees_enough(
                bits, s, v, succ_ptr, succ_idx, pred_ptr, pred_idx, size_out, exact
            ):
                ops = ops[k : k + 1]
                break
        else:
            if free_moves and exact and backward:
                for k in range(ops.shape[0]):
                    v = ops[k]
                    cl = back_live(bits, s, v, live[s], succ_ptr, succ_idx, pred_ptr, pred_idx, size_out)
                    if cl <= live[s] and cl + size_out[v] + size_param[v] <= limit:
                        ops = ops[k : k + 1]
                        break
            elif free_moves and exact:
                k = pair_move(
                    bits, s, ops, live[s], limit, succ_ptr, succ_idx, pred_ptr, pred_idx, size_out, size_param
                )
                if k >= 0:
                    ops = ops[k : k + 1]
        late = False
        for v in ops:
            if timed:
                seen += 1
                if seen >= every:
                    seen = 0
                    if clock() >= deadline:
                        late = True
                        break
            if backward:  # the step of v runs on the boundary after it
                cl = back_live(bits, s, v, live[s], succ_ptr, succ_idx, pred_ptr, pred_idx, size_out)
                step = cl + size_out[v] + size_param[v]
            else:
                step = live[s] + size_out[v] + size_param[v]
            cg = limit if limit > step else step
            ub = ub_box[0]
            if cg >= ub:
                continue
            h = hsh[s] ^ zob[v]
            for w in range(n_words):
                child[w] = bits[s, w]
            child[v >> 6] |= ONE << np.uint64(v & 63)
            i = np.int64(h & mask)
            found = -1
            while True:
                e = table[i]
                if e == -1:
                    break
                if hsh[e] == h:
                    same = True
                    for w in range(n_words):
                        if bits[e, w] != child[w]:
                            same = False
                            break
                    if same:
                        found = e
                        break
                i = np.int64((np.uint64(i) + ONE) & mask)
            if found >= 0:
                if cg >= g[found]:
                    continue
                if s_depth + 1 == n:  # a cheaper complete order
                    g[found], parent[found], node[found] = cg, s, v
                    ub_box[0] = cg
                    ctr[3] = found
                    continue
                if size >= hcap - 1:
                    full = True
                    break
                g[found] = cg
                parent[found] = s
                node[found] = v
                key = cg if cg > hval[found] else hval[found]
                if key < ub:
                    size = _push(hk, hd, hi, hg, size, key, depth[found], found, cg)
                continue
            # a new set: its live memory, ready ops and bound
            if not backward:
                cl = child_live(bits, s, v, live[s], succ_ptr, succ_idx, pred_ptr, pred_idx, size_out)
            d = s_depth + 1
            if d == n:  # a complete order
                if ctr[0] >= cap:
                    full = True
                    break
                c = ctr[0]
                ctr[0] += 1
                for w in range(n_words):
                    bits[c, w] = child[w]
                    rdy[c, w] = 0
                hsh[c], g[c], live[c], hval[c] = h, cg, cl, cg
                parent[c], node[c], depth[c] = s, v, d
                table[i] = c
                ub_box[0] = cg
                ctr[3] = c
                continue
            if ctr[0] >= cap or size >= hcap - 1:
                full = True
                break
            c = ctr[0]
            for w in range(n_words):
                bits[c, w] = child[w]
                rdy[c, w] = rdy[s, w]
            rdy[c, v >> 6] &= ~(ONE << np.uint64(v & 63))
            nxt = np.inf
            if backward:  # ready: every consumer in T; the next step is at least cl + add
                mark_ready(bits, rdy, c, v, pred_ptr, pred_idx, succ_ptr, succ_idx)
            else:
                mark_ready(bits, rdy, c, v, succ_ptr, succ_idx, pred_ptr, pred_idx)
            for z in ready_ops(rdy, c, CTZ):
                add = size_out[z] + size_param[z]
                if backward and succ_ptr[z + 1] > succ_ptr[z]:
                    add = size_param[z]  # z's own output leaves the boundary as it runs
                if add < nxt:
                    nxt = add
            hb = cl + nxt
            if backward:
                feeding(bits, c, feeds, pred_ptr, pred_idx)
                hb = set_bound(bits, c, order, static, forced, top, q_bits, resid, size_out, hb, feeds, 0)
            else:
                hb = set_bound(bits, c, order, static, forced, top, q_bits, resid, size_out, hb, bits, c)
            key = cg if cg > hb else hb
            if key >= ub:
                continue  # not stored: it can never beat the best order
            ctr[0] += 1
            hsh[c], g[c], live[c], hval[c] = h, cg, cl, hb
            parent[c], node[c], depth[c] = s, v, d
            table[i] = c
            size = _push(hk, hd, hi, hg, size, key, d, c, cg)
        if full or late:  # the state goes back so that its key still bounds what lies below it
            size = _push(hk, hd, hi, hg, size, s_key, s_depth, s, s_g)
            ctr[1] = size
            return MEMORY_FULL if full else TIME_UP
        ctr[1] = size
    return RUNNING


@dataclass(frozen=True)
class SearchResult:
    """Best order found (node indices) and its peak; ``lower_bound`` is proven at
    any stop (module docstring); ``optimal`` when the search closed the gap.
    ``expanded`` and ``states`` count expansions and stored sets; ``memory_hit``
    when the state arrays (``memory_bytes``) filled up, ``stopped_by_time`` when the
    time limit stopped it, ``target_reached`` when an order of peak ``<= target``
    ended it early."""

    order: np.ndarray
    peak: float
    lower_bound: float
    optimal: bool
    expanded: int
    states: int
    memory_hit: bool
    stopped_by_time: bool
    target_reached: bool
    memory_bytes: int
    wall_time: float
    setup_time: float = 0.0
    """Seconds spent before the first expansion (bitsets, bounds): ``O(n m / 64)``, a
    second or so at 20,000 ops; a caller with little time left skips a second search."""


@njit(cache=True)
def relative_tops(q_bits, forced, static, size_out, resid):
    """The largest value ``h_v`` can reach, ``max(F(v) + sum_{Q(v)} size_out,
    B(v) + sum_{Q(v)} R[v, .])``, summed in the order :func:`set_bound` sums (so its
    sums over subsets of ``Q(v)`` never exceed it), in ``O(n^2 / 64 + |Q|)`` time and
    no ``n x n`` temporaries (an empty ``resid``: no min-cut terms)."""
    n = q_bits.shape[0]
    relative = resid.shape[0] > 0
    top = np.empty(n)
    for v in range(n):
        total, cut = relative_terms(v, q_bits, v, q_bits, forced, static, size_out, resid, relative)
        top[v] = total if total > cut else cut
    return top


def search_memory_bytes(n: int, memory_mb: float = DEFAULT_MEMORY_MB, residuals: bool = True) -> float:
    """Bytes one :func:`best_first_search` on ``n`` ops may hold: its state arrays
    (``memory_mb``), about eight ``n x n / 64`` bitset matrices (ancestors, needed
    tensors, ``Q``, their temporaries, both directions) and, with ``residuals``, the
    ``n x n`` float matrix ``R``.  A caller with a memory cap skips a search above it."""
    words = 8 * n * ((n + 63) // 64)
    return memory_mb * 2**20 + 8 * words + (8 * n * n if residuals else 0)


def _relative_bound_data(
    graph: Graph, static: np.ndarray, resid: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``F(v)``, ``Q(v)`` bitsets, the largest ``h_v`` can get and the ops by
    decreasing that (module docstring)."""
    g = graph
    anc = ancestor_bits(g.topological_order, g.pred_ptr, g.pred_idx)
    reach = needed_bits(g.topological_order, g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx)
    forced = g.size_out + g.size_param + masked_sums(anc & reach, g.size_out)
    q_bits = reach & ~anc
    idx = np.arange(g.n)
    q_bits[idx, idx >> 6] &= ~(ONE << (idx & 63).astype(np.uint64))
    top = relative_tops(q_bits, forced, static, g.size_out, resid)
    order = np.argsort(-top, kind="stable").astype(np.int64)
    return forced, q_bits, top, order


def best_first_search(
    graph: Graph,
    upper_order: np.ndarray | None = None,
    time_limit: float | None = None,
    memory_mb: float = DEFAULT_MEMORY_MB,
    target: float = -math.inf,
    seed: int = 0,
    static_bound: np.ndarray | None = None,
    free_moves: bool = True,
    backward: bool = False,
    residuals: np.ndarray | None = None,
) -> SearchResult:
    """Minimum-peak order of ``graph`` by anytime best-first search over scheduled
    sets (module docstring).

    ``upper_order`` (a known order; default the depth-first one) is returned unless
    something better is found and prunes the search; ``time_limit`` seconds and
    ``memory_mb`` megabytes of state arrays stop it with a valid ``lower_bound``;
    ``target`` ends it as soon as an order with peak ``<= target`` is known (a caller
    that needs no better).  ``static_bound`` gives ``B(v)`` (default: the min-cut
    live memory of every op, :mod:`mtpp.bounds.peak_cut`), and ``residuals``
    its ``R`` (default zero, the relative min-cut terms off; pass both from one
    ``cut_live_memory(graph, every_op=True)`` to search twice without recomputing).  ``free_moves``
    (default on) expands a state by one free move only when it has one (module
    docstring); off, every ready op is tried.  ``backward`` searches the sets of ops
    run last instead (module docstring).  ``seed`` only fixes the hash keys.
    """
    t0 = time.perf_counter()
    if isinstance(memory_mb, bool) or not isinstance(memory_mb, (int, float)) or not memory_mb > 0:
        raise InvalidParameterError(f"memory_mb must be a number > 0, got {memory_mb!r}")
    g = graph
    n = g.n
    n_words = (n + 63) // 64
    ub_order = traversal_order(g, "dfs").order if upper_order is None else np.asarray(upper_order, dtype=np.int64)
    ub = order_peak(g, ub_order)
    per_state = FIXED_BYTES_PER_STATE + 2 * 8 * n_words
    cap = max(2, int(memory_mb * 2**20) // per_state)
    table_size = 1 << max(2, (2 * cap - 1).bit_length())
    bits = np.zeros((cap, n_words), dtype=np.uint64)
    rdy = np.zeros((cap, n_words), dtype=np.uint64)
    hsh = np.zeros(cap, dtype=np.uint64)
    gs, live, hval = np.zeros(cap), np.zeros(cap), np.zeros(cap)
    parent = np.full(cap, -1, dtype=np.int64)
    node = np.zeros(cap, dtype=np.int32)
    depth = np.zeros(cap, dtype=np.int32)
    hcap = 2 * cap
    hk, hd = np.zeros(hcap), np.zeros(hcap, dtype=np.int32)
    hi, hg = np.zeros(hcap, dtype=np.int64), np.zeros(hcap)
    table = np.full(table_size, -1, dtype=np.int64)
    memory_bytes = sum(a.nbytes for a in (bits, rdy, hsh, gs, live, hval, parent, node, depth, hk, hd, hi, hg, table))
    if static_bound is None:
        static, _, resid = cut_live_memory(g, time_limit, every_op=True)
    else:
        static = np.asarray(static_bound, dtype=np.float64)
        resid = np.zeros((0, 0)) if residuals is None else np.asarray(residuals, dtype=np.float64)
    if resid.shape != (n, n):
        resid = np.zeros((0, 0))  # no residuals (a graph too large for them): the min-cut terms stay static
    forced, q_bits, top, by_bound = _relative_bound_data(g, static, resid)
    if backward:  # the relative terms over the ancestors feeding T (module docstring)
        anc = ancestor_bits(g.topological_order, g.pred_ptr, g.pred_idx)
        q_bits = anc & ~needed_bits(g.topological_order, g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx)
        del anc
        top = relative_tops(q_bits, forced, static, g.size_out, resid)
        by_bound = np.argsort(-top, kind="stable").astype(np.int64)
    zob = zobrist_keys(n, seed)
    # the root: nothing scheduled, the sources ready
    sources = np.flatnonzero(np.diff(g.succ_ptr if backward else g.pred_ptr) == 0)  # backward: the sinks
    np.bitwise_or.at(rdy[0], sources >> 6, ONE << (sources & 63).astype(np.uint64))
    first = g.size_param[sources] if backward else (g.size_out + g.size_param)[sources]
    hval[0] = max(float(first.min()), float(static.max()), float(forced.max()))
    # every partial sum: a live memory or step (<= T), forced-live terms (<= T), min-cut terms
    largest = float(g.size_out.sum() + g.size_param.sum()) + float(static.max(initial=0.0))
    values = np.concatenate([g.size_out, g.size_param, static, resid.ravel()])
    exact = exact_on_grid(values, 4.0 * largest * (1.0 + 2.0**-20))
    table[0] = 0  # the empty set hashes to 0, slot 0
    hk[0], hi[0] = hval[0], 0
    ctr = np.array([1, 1 if hval[0] < ub else 0, 0, -1], dtype=np.int64)  # states, heap size, expansions, goal
    ub_box = np.array([ub])
    state = SearchState(bits, rdy, hsh, gs, live, hval, parent, node, depth, hk, hd, hi, hg, table, ctr, ub_box)
    arrays = graph_arrays(g)
    # the batch of expansions doubles while it takes < 0.05 s (one expansion can take 0.1 s at 20,000 ops)
    status, batch, stopped = RUNNING, 1, False
    deadline = math.inf if time_limit is None else t0 + time_limit
    setup = time.perf_counter() - t0
    while status == RUNNING:
        if time_limit is not None and time.perf_counter() - t0 >= time_limit:
            stopped = True
            break
        t = time.perf_counter()
        status = search_kernel(
            *state,
            *arrays,
            zob,
            by_bound,
            static,
            forced,
            top,
            q_bits,
            resid,
            float(target),
            free_moves,
            float(hval[0]),
            exact,
            backward,
            batch,
            deadline,
        )
        if status == TIME_UP:
            stopped, status = True, RUNNING
            break
        took = time.perf_counter() - t
        if took < 0.05:  # about 0.1 s between time checks
            batch *= 2
        elif took > 0.2 and batch > 1:
            batch //= 2
    peak = float(ub_box[0])
    if ctr[3] >= 0:  # an order better than the given one
        order = np.empty(n, dtype=np.int64)
        s = int(ctr[3])
        for t_ in range(n) if backward else range(n - 1, -1, -1):  # backward: the first op was added last
            order[t_] = node[s]
            s = int(parent[s])
        peak = order_peak(g, order)
        if peak > order_peak(g, ub_order):  # (a lifted cost can hide which of two orders is better)
            order, peak = ub_order.copy(), order_peak(g, ub_order)
    else:
        order = ub_order.copy()
    optimal = status == FINISHED
    lower = peak if optimal else min(peak, float(hk[0]) if ctr[1] > 0 else peak)
    if not exact:  # lower for rounding (module docstring)
        lower = lower_by(lower, 0.0, 16.0 * (n + 2) * UNIT * ub)
    return SearchResult(
        order=order,
        peak=peak,
        lower_bound=lower,
        optimal=optimal,
        expanded=int(ctr[2]),
        states=int(ctr[0]),
        memory_hit=status == MEMORY_FULL,
        stopped_by_time=stopped,
        target_reached=status == TARGET_REACHED,
        memory_bytes=memory_bytes,
        setup_time=setup,
        wall_time=time.perf_counter() - t0,
    )
