"""Simulated annealing over the acyclic partitions themselves: an upper bound
that moves one op, or one cone of ops, at a time between blocks.

Labels.  An acyclic partition into ``k`` blocks, its blocks numbered in a topological
order of its quotient graph (:func:`mtpp.core.evaluate.dag_numbering`), is a *monotone
labelling* ``a: V -> {0..k-1}`` with ``a(u) <= a(v)`` for every edge ``(u, v)``; every
monotone labelling is an acyclic partition (its quotient edges all go up).  So op ``v``
may take any label in ``[max a(preds), min a(succs)]`` and the partition stays valid:
that is the move.  Unlike SliceGraph, whose blocks are segments of one order, a move
reshapes two blocks at once, whatever order they came from.

Costs.  A move changes only the blocks ``i`` (left) and ``j`` (entered), in ``O(deg v)``:
their work and parameters, ``v``'s own tensor (it leaves ``j``'s inputs; it enters
``i``'s inputs if a consumer stays there; it is ``j``'s output if a consumer lies outside
``j``), and each input tensor ``u`` of ``v`` (``i`` may stop and ``j`` start reading it,
and ``u``'s own block may stop or start writing it), from ``cnt[u, b]``, the consumers
of ``u`` in block ``b``.  Eq. (3) per block with the fixed reserve of :class:`mtpp.Problem`
(peak-aware costs are not handled: :func:`anneal_partition` returns ``None``).  The
running costs are recomputed from scratch at every chunk of moves (no drift), and the
partition returned is re-checked by the caller with :func:`mtpp.evaluate`.

Cones.  An op inside a block, with a predecessor and a successor in it, has no other
label (``max a(preds) = min a(succs)``), so single moves only nibble at a block's edges,
and a block can shed a chain of ops only through states that cost more on the way.  A
*push* moves a whole cone at once: op ``v`` of block ``i`` with every op of ``i`` that
it reaches through ``i`` goes to ``i + 1`` (or, the mirror image, with every op of ``i``
that reaches it, to ``i - 1``), as one move with one acceptance test.  The labelling stays
monotone: a member's successors outside the cone have labels above ``i`` (those in ``i``
are in it), so at least ``i + 1``, and its predecessors at most ``i``.  Only block ``i``
and the block the cone enters change, and the cone is priced by moving its members one by one with the
single-move rules above (a member's count may pass through states that are not monotone;
the rules do not need monotony), and moved back in reverse if rejected.  A part
:data:`PUSH` of the moves are pushes, of cones of at most :data:`PUSH_CAP` ops; on layered
graphs they lower the bottleneck found at ``k = 16`` and ``32`` (``benchmarks/anneal_moves.py``).

Swaps.  Where work is most of a block's cost (REGAL-style graphs at ``k = 16`` and ``32``,
four or five ops a block), the blocks near the bottleneck are full, and moving one op out
of one of them overfills the block it enters: the move is rejected, or taken at a loss the
cold end of a cycle does not recover.  A *swap* trades op ``v`` of block ``i`` for op ``u``
of block ``j``, as one move with one acceptance test: ``j`` lies in ``v``'s range (``u`` is
drawn at random among the ops of the blocks there, up to ``4 k`` draws), ``v`` goes to
``j``, and then ``u`` goes to ``i`` if ``i`` lies in ``u``'s range with ``v`` moved (else
``v`` goes back).  Each step is a single move of a monotone labelling, so the swap keeps it
monotone; it is priced, and undone when rejected, as a cone is.  The part of the moves
that swap is :data:`SWAP` times the work's share of ``work + tensors`` (:func:`swap_share`):
swaps lower the bottleneck found on REGAL-style graphs at ``k = 16`` and ``32``, and change
nothing beyond the run-to-run spread at ``k = 8`` or on layered graphs, where tensors weigh
four times the work (``benchmarks/anneal_moves.py --move swap``).

Search.  The energy is ``sum_b ((cost_b - T)^+)^2`` with a target ``T`` just below the
best bottleneck found (:data:`TARGET`): moves that shrink the blocks above ``T`` pay off,
the others are free, and a worse move is taken with probability ``exp(-dE / temp)``.
When every block is below the best bottleneck it is kept, and ``T`` drops below it.  The
temperature falls geometrically from :data:`HOT` to :data:`COLD` (times ``(0.01 best)^2``,
the energy of one block one percent over) over each cycle of :data:`CYCLE_SECONDS`, and
every cycle restarts from the best partition.  Random numbers come from a xorshift
generator of our own, the same on the compiled and the Python path.  (A linear energy,
``sum_b (cost_b - T)^+``, did as well on REGAL-style graphs and moved nothing on layered
ones.)  Started from SliceGraph's partition of a brkga-10000 order, a few seconds of
annealing lower it on both families (``benchmarks/wide_bounds.py`` graphs).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from heuristics.kahn import kahn_order
from heuristics.partition.slicegraph import equal_work_starts
from mtpp.core.evaluate import dag_numbering
from mtpp.core.jit import njit
from mtpp.core.problem import Problem

TARGET = 0.99
"""The energy's target is this part of the best bottleneck found."""
HOT, COLD = 10.0, 1e-3
"""Each cycle's temperature, from hot to cold, in units of ``(0.01 best)^2``."""
CYCLE_SECONDS = 2.0
"""One cooling cycle, restarted from the best partition (a cycle of 20-30 million moves
on 150-250 ops; shorter time limits make shorter cycles)."""
CYCLE_MOVES = 1 << 24
"""A cycle's moves when the call counts moves rather than seconds (its whole budget if less)."""
CHUNK = 1 << 16
"""Moves per kernel call (compiled: a few milliseconds); the clock and the temperature
are read between calls, and the costs recomputed."""
COOLING_STEPS = 32
"""A call of a few moves still cools in at least this many chunks."""
CHUNK_PER_OP = 256
"""A chunk is at most this many moves per op: a tiny graph runs the kernel as plain Python
(:mod:`mtpp.core.jit`), a few microseconds a move."""
PUSH = 0.1
"""The part of the moves that push a cone (module docstring, Cones): 0.05 and 0.2 did about
as well, 0.4 worse."""
PUSH_CAP = 64
"""A cone of more ops is not pushed (its search stops there): a move stays cheap; a larger
cap or none did no better."""
SWAP = 0.3
"""The part of the moves that swap two ops (module docstring, Swaps) where the tensors weigh
nothing; :func:`swap_share` scales it by the work's share.  0.1, 0.3 and 0.5 all beat no
swaps on REGAL-style graphs, 0.3 and 0.5 by a little more at ``k = 16``."""
MAX_CELLS = 1 << 26
"""The consumer counts take ``n k`` cells (4 bytes each): above this, no annealing."""


@dataclass(frozen=True)
class Annealed:
    """The best partition of an annealing run."""

    assignment: np.ndarray
    """Block of every op, numbered in a topological order of the quotient graph."""
    bottleneck: float
    """Its cost as the annealer computed it (the caller re-checks it with :func:`mtpp.evaluate`)."""
    moves: int
    """Moves tried."""
    wall_time: float


@njit(cache=True)
def _random(state):
    """The next 64-bit xorshift* number (``state``: one ``uint64``)."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return x * np.uint64(2685821657736338717)


@njit(cache=True)
def block_state(n, k, succ_ptr, succ_idx, work, param, io, a):
    """``cnt[u, b]`` (consumers of ``u`` in block ``b``), each op's consumers, and each
    block's work, parameters, inputs and outputs, from scratch.  ``O(n k + m)``."""
    cnt = np.zeros((n, k), dtype=np.int32)
    consumers = np.zeros(n, dtype=np.int32)
    wb = np.zeros(k)
    pb = np.zeros(k)
    inb = np.zeros(k)
    outb = np.zeros(k)
    for u in range(n):
        wb[a[u]] += work[u]
        pb[a[u]] += param[u]
        for e in range(succ_ptr[u], succ_ptr[u + 1]):
            cnt[u, a[succ_idx[e]]] += 1
            consumers[u] += 1
    for u in range(n):
        if consumers[u] == 0 or io[u] == 0.0:
            continue
        for b in range(k):
            if b != a[u] and cnt[u, b] > 0:
                inb[b] += io[u]
        if consumers[u] > cnt[u, a[u]]:
            outb[a[u]] += io[u]
    return cnt, consumers, wb, pb, inb + outb


@njit(cache=True)
def _io_shift(v, i, j, a, cnt, consumers, io, pred_ptr, pred_idx):
    """The input/output changes ``(d_i, d_j)`` of blocks ``i`` and ``j`` when op ``v``
    goes from ``i`` to ``j`` (module docstring, Costs); no other block's cost changes."""
    di = 0.0
    dj = 0.0
    if consumers[v] > 0 and io[v] != 0.0:
        if consumers[v] > cnt[v, i]:
            di -= io[v]  # no longer written by i
        if consumers[v] > cnt[v, j]:
            dj += io[v]  # written by j
        if cnt[v, j] > 0:
            dj -= io[v]  # no longer read by j
        if cnt[v, i] > 0:
            di += io[v]  # read by i
    for e in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred_idx[e]
        if io[u] == 0.0:
            continue
        c = a[u]
        if c != i and cnt[u, i] == 1:
            di -= io[u]  # i stops reading u
        if c != j and cnt[u, j] == 0:
            dj += io[u]  # j starts reading u
        if c == i and consumers[u] == cnt[u, i]:
            di += io[u]  # u's block i starts writing it
        elif c == j and consumers[u] == cnt[u, j] + 1:
            dj -= io[u]  # u's block j stops writing it
    return di, dj


@njit(cache=True)
def _shift(v, i, j, a, cnt, consumers, io, pred_ptr, pred_idx, work, param, wb, pb, iob):
    """Move ``v`` from block ``i`` to ``j``, updating the counts and block sums."""
    di, dj = _io_shift(v, i, j, a, cnt, consumers, io, pred_ptr, pred_idx)
    _apply(v, i, j, di, dj, a, cnt, pred_ptr, pred_idx, work, param, wb, pb, iob)


@njit(cache=True)
def _apply(v, i, j, di, dj, a, cnt, pred_ptr, pred_idx, work, param, wb, pb, iob):
    """Move ``v`` from block ``i`` to ``j`` whose input/output changes are ``di, dj``."""
    a[v] = j
    for e in range(pred_ptr[v], pred_ptr[v + 1]):
        cnt[pred_idx[e], i] -= 1
        cnt[pred_idx[e], j] += 1
    wb[i] -= work[v]
    wb[j] += work[v]
    pb[i] -= param[v]
    pb[j] += param[v]
    iob[i] += di
    iob[j] += dj


@njit(cache=True)
def _range(v, k, a, pred_ptr, pred_idx, succ_ptr, succ_idx):
    """The labels ``[lo, hi]`` op ``v`` may take with the others' fixed: from its
    predecessors' highest to its successors' lowest (module docstring, Labels)."""
    lo = 0
    for e in range(pred_ptr[v], pred_ptr[v + 1]):
        lo = max(lo, a[pred_idx[e]])
    hi = k - 1
    for e in range(succ_ptr[v], succ_ptr[v + 1]):
        hi = min(hi, a[succ_idx[e]])
    return lo, hi


@njit(cache=True)
def _cone(v, i, a, ptr, idx, mark, stamp, members, cap):
    """``v`` and the ops of block ``i`` reached from it along ``ptr``/``idx`` (successors or
    predecessors) through block ``i``, in ``members``; their number, or 0 above ``cap``."""
    members[0] = v
    mark[v] = stamp
    size = 1
    head = 0
    while head < size:
        u = members[head]
        head += 1
        for e in range(ptr[u], ptr[u + 1]):
            w = idx[e]
            if a[w] == i and mark[w] != stamp:
                if size == cap:
                    return 0
                mark[w] = stamp
                members[size] = w
                size += 1
    return size


@njit(cache=True, nogil=True)  # runs beside the MIPs: mtpp.engine.background
def anneal_kernel(
    n, k, pred_ptr, pred_idx, succ_ptr, succ_idx, work, param, io, budget, bw, a, best_a, scalars, rng, moves
):
    """``moves`` moves from labelling ``a`` (module docstring), in place; ``scalars`` holds
    ``[best, target, temp, target ratio, push, cone cap, swap]`` in and ``best`` out, ``best_a``
    the best labelling."""
    cnt, consumers, wb, pb, iob = block_state(n, k, succ_ptr, succ_idx, work, param, io, a)
    cost = np.empty(k)
    for b in range(k):
        cost[b] = wb[b] + iob[b] + max(pb[b] - budget, 0.0) / bw
    best, target, temp = scalars[0], scalars[1], scalars[2]
    push, cap, swap = scalars[4], np.int64(scalars[5]), scalars[6]
    mark = np.zeros(n, dtype=np.int64)
    members = np.empty(n, dtype=np.int64)
    stamp = 0
    over = 0  # blocks above the target: what the energy counts
    high = 0  # blocks at the best bottleneck or above: none left means a new best
    for b in range(k):
        over += int(cost[b] > target)
        high += int(cost[b] >= best)
    for _ in range(moves):
        v = np.int64(_random(rng) % np.uint64(n))
        i = a[v]
        size = 0  # a cone's members, or 0 for a single move
        di = dj = 0.0
        kind = (_random(rng) >> np.uint64(11)) * (1.0 / 9007199254740992.0)  # push, swap or single
        partner = -1  # the op a swap moved from j to i
        if push <= kind < push + swap:
            lo, hi = _range(v, k, a, pred_ptr, pred_idx, succ_ptr, succ_idx)
            if lo >= hi:
                continue
            for _ in range(4 * k):
                w = np.int64(_random(rng) % np.uint64(n))
                if a[w] != i and lo <= a[w] <= hi:
                    partner = w
                    break
            if partner < 0:
                continue
            j = a[partner]
            _shift(v, i, j, a, cnt, consumers, io, pred_ptr, pred_idx, work, param, wb, pb, iob)
            lo, hi = _range(partner, k, a, pred_ptr, pred_idx, succ_ptr, succ_idx)
            if not lo <= i <= hi:
                _shift(v, j, i, a, cnt, consumers, io, pred_ptr, pred_idx, work, param, wb, pb, iob)
                continue
            _shift(partner, j, i, a, cnt, consumers, io, pred_ptr, pred_idx, work, param, wb, pb, iob)
            ni = wb[i] + iob[i] + max(pb[i] - budget, 0.0) / bw
            nj = wb[j] + iob[j] + max(pb[j] - budget, 0.0) / bw
        elif kind < push:
            stamp += 1
            if _random(rng) & np.uint64(1):
                if i == k - 1:
                    continue
                j = i + 1
                size = _cone(v, i, a, succ_ptr, succ_idx, mark, stamp, members, cap)
            else:
                if i == 0:
                    continue
                j = i - 1
                size = _cone(v, i, a, pred_ptr, pred_idx, mark, stamp, members, cap)
            if size < 2:
                continue
            for t in range(size):
                _shift(members[t], i, j, a, cnt, consumers, io, pred_ptr, pred_idx, work, param, wb, pb, iob)
            ni = wb[i] + iob[i] + max(pb[i] - budget, 0.0) / bw
            nj = wb[j] + iob[j] + max(pb[j] - budget, 0.0) / bw
        else:
            lo, hi = _range(v, k, a, pred_ptr, pred_idx, succ_ptr, succ_idx)
            if lo >= hi:
                continue
            j = lo + np.int64(_random(rng) % np.uint64(hi - lo))
            if j >= i:
                j += 1
            di, dj = _io_shift(v, i, j, a, cnt, consumers, io, pred_ptr, pred_idx)
            ni = wb[i] - work[v] + iob[i] + di + max(pb[i] - param[v] - budget, 0.0) / bw
            nj = wb[j] + work[v] + iob[j] + dj + max(pb[j] + param[v] - budget, 0.0) / bw
        before = max(cost[i] - target, 0.0) ** 2 + max(cost[j] - target, 0.0) ** 2
        after = max(ni - target, 0.0) ** 2 + max(nj - target, 0.0) ** 2
        delta = after - before
        if delta > 0.0:
            draw = (_random(rng) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
            if draw >= math.exp(-delta / temp):
                if partner >= 0:  # undo a swap
                    _shift(partner, i, j, a, cnt, consumers, io, pred_ptr, pred_idx, work, param, wb, pb, iob)
                    _shift(v, j, i, a, cnt, consumers, io, pred_ptr, pred_idx, work, param, wb, pb, iob)
                for t in range(size - 1, -1, -1):  # undo a cone, last member first
                    _shift(members[t], j, i, a, cnt, consumers, io, pred_ptr, pred_idx, work, param, wb, pb, iob)
                continue
        if size == 0 and partner < 0:  # priced above: the single move's changes are known
            _apply(v, i, j, di, dj, a, cnt, pred_ptr, pred_idx, work, param, wb, pb, iob)
        over += int(ni > target) - int(cost[i] > target) + int(nj > target) - int(cost[j] > target)
        high += int(ni >= best) - int(cost[i] >= best) + int(nj >= best) - int(cost[j] >= best)
        cost[i] = ni
        cost[j] = nj
        if high == 0:
            best = cost.max()
            best_a[:] = a
            target = min(target, best * scalars[3])
            over = 0
            high = 0
            for b in range(k):
                over += int(cost[b] > target)
                high += int(cost[b] >= best)
    scalars[0] = best
    scalars[1] = target
    return scalars


def anneal_partition(
    problem: Problem,
    assignment: np.ndarray,
    time_limit: float | None = None,
    seed: int = 0,
    moves: int | None = None,
    stop_at: float = 0.0,
    halt: threading.Event | None = None,
    push: float = PUSH,
    swap: float | None = None,
) -> Annealed | None:
    """Anneal from ``assignment`` (any valid partition) for ``time_limit`` seconds or
    ``moves`` moves (whichever comes first; at least one of them), stopping early once
    the bottleneck is at most ``stop_at`` (a proven lower bound) or ``halt`` is set
    (read between chunks of :data:`CHUNK` moves); ``push`` is the part of the moves that
    push a cone (:data:`PUSH`; 0: single ops only) and ``swap`` the part that swap two ops
    (default :func:`swap_share`; ``push + swap <= 1``).  ``None`` for peak-aware problems, a
    single block, or more than :data:`MAX_CELLS` consumer counts."""
    if time_limit is None and moves is None:
        raise ValueError("anneal_partition needs a time limit or a number of moves")
    if not 0.0 <= push <= 1.0:
        raise ValueError(f"push must lie in [0, 1], not {push}")
    swap = min(swap_share(problem), 1.0 - push) if swap is None else swap
    if not 0.0 <= swap <= 1.0 - push:
        raise ValueError(f"swap must lie in [0, 1 - push] = [0, {1.0 - push}], not {swap}")
    g, k = problem.graph, problem.k
    if problem.peak_aware or k < 2 or g.n < 2 or g.n * k > MAX_CELLS:
        return None
    t0 = time.perf_counter()
    deadline = math.inf if time_limit is None else t0 + time_limit
    a = dag_numbering(problem, np.asarray(assignment, dtype=np.int64))
    args = (
        g.n,
        k,
        g.pred_ptr,
        g.pred_idx,
        g.succ_ptr,
        g.succ_idx,
        np.ascontiguousarray(g.work, dtype=np.float64),
        np.ascontiguousarray(g.size_param, dtype=np.float64),
        np.ascontiguousarray(g.size_out / problem.bandwidth, dtype=np.float64),
        float(problem.param_budget),
        float(problem.bandwidth),
    )
    best_a = a.copy()
    _, _, wb, pb, iob = block_state(g.n, k, g.succ_ptr, g.succ_idx, args[6], args[7], args[8], a)
    best = float((wb + iob + np.maximum(pb - args[9], 0.0) / args[10]).max())
    rng = np.array([(seed * 0x9E3779B97F4A7C15 + 1) % 2**64 | 1], dtype=np.uint64)
    cycle = CYCLE_SECONDS if time_limit is None else min(CYCLE_SECONDS, time_limit)
    chunk = min(CHUNK, CHUNK_PER_OP * g.n, max(1, (moves or CHUNK) // COOLING_STEPS))
    cycle_moves = min(moves or 0, CYCLE_MOVES)  # with a number of moves, cycles of this many
    done, cycle_start = 0, time.perf_counter()
    while (
        done < (moves if moves is not None else math.inf)
        and time.perf_counter() < deadline
        and best > stop_at
        and not (halt is not None and halt.is_set())
    ):
        phase = (time.perf_counter() - cycle_start) / cycle if moves is None else (done % cycle_moves) / cycle_moves
        if phase >= 1.0:  # a new cycle, from the best partition
            cycle_start, phase = time.perf_counter(), 0.0
            a = best_a.copy()
        temp = HOT * (COLD / HOT) ** phase * (0.01 * best) ** 2 + 1e-300
        scalars = np.array([best, best * TARGET, temp, TARGET, push, PUSH_CAP, swap])
        step = chunk if moves is None else min(chunk, moves - done)
        scalars = anneal_kernel(*args, a, best_a, scalars, rng, step)
        best = float(scalars[0])
        done += step
    return Annealed(best_a, best, done, time.perf_counter() - t0)


def swap_share(problem: Problem) -> float:
    """The default part of the moves that swap two ops: :data:`SWAP` times the work's share of
    the work plus the tensors that have a consumer (``size_out / B``): about 0.23 on REGAL-style
    graphs, 0.06 on layered ones (module docstring, Swaps)."""
    work, io = float(problem.graph.work.sum()), problem.consumed_io
    return SWAP * work / (work + io) if work + io > 0.0 else 0.0


def spread_start(problem: Problem, seed: int) -> np.ndarray:
    """A fresh start for a restart: a random topological order (Kahn's algorithm with
    seeded random priorities) cut into at most ``k`` segments of about equal work
    (:func:`heuristics.partition.slicegraph.equal_work_starts`; equal op counts on a graph
    without work), so that the blocks are used.  Segments of a topological order are a
    monotone labelling: a valid partition (module docstring).

    Where input/output dominates, the best partition can be one block (its cost is all
    the work, with no tensor crossing) and annealing from it is stuck: only a sink may
    take another label; from spread starts it finds the better partitions of more blocks."""
    g = problem.graph
    order = kahn_order(g, np.random.default_rng(seed).random(g.n))
    work = np.asarray(g.work, dtype=np.float64)[order]
    if not work.sum() > 0.0:
        work = np.ones(g.n)
    cuts = np.zeros(g.n, dtype=np.int64)
    cuts[equal_work_starts(work, problem.k)[1:]] = 1
    assignment = np.empty(g.n, dtype=np.int64)
    assignment[order] = np.cumsum(cuts)
    return assignment
