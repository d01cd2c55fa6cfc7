"""Exact MTPP by dynamic programming over the ideal lattice (Tarnawski et al.,
"Efficient Algorithms for Device Placement of DNN Graph Operators", NeurIPS 2020,
Section 3, here with the cost of Eq. 1-3 of the MTPP paper).

Every acyclic k-partition is a chain of ideals ``{} = I_0 <= ... <= I_k = V``
(blocks ``I_j \\ I_{j-1}``, empty blocks allowed) and every chain is one
(:mod:`heuristics.partition.ideals`), so

    OPT(k) = min over chains with at most k blocks of the largest block cost f (Eq. 1-3).

Threshold form.  For a threshold ``T`` let ``g_T(I)`` be the least number of blocks of
cost ``<= T`` in a chain from ``{}`` to ``I``; then ``OPT(k) <= T`` iff ``g_T(V) <= k``,
for every ``k`` at once, and ``g_T`` is a one-dimensional table:

    g_T({}) = 0,   g_T(I) = 1 + min {g_T(J) : J < I ideal, f(I \\ J) <= T}.

:func:`ideal_dp_all` keeps, per ideal, the pair ``(g_T(I), b_T(I))`` minimal in
lexicographic order (``b`` = the largest block cost of such a chain; the order is
compatible with appending a block, so the recursion is exact) and searches ``T`` for
each ``k`` of the list, smallest ``k`` first: a cheap greedy chain (largest progress
per block) bisected over ``T`` proposes a value ``b``, and one DP pass at the largest
float below ``b`` that finds no chain of ``k`` blocks proves ``b`` optimal; a pass
that finds one lowers ``b`` and repeats.  Every chain found serves every larger ``k``.
Ideals are numbered so that subsets come first; the DP relaxes forward: when ``J``
is reached its entry is final, and a depth-first search over the cover edges of the
lattice visits every ideal ``I >= J`` once (a stamp per ``J``), growing ``S = I \\ J``
one node at a time.  With ``J`` and ``I`` ideals, a tensor enters ``S`` only from
``J`` and leaves ``S`` only to ``V \\ I``, so

    f(S) = work(I) - work(J) + overflow(param(I) - param(J))
           + (boundary(I) + sum_{u in J, u -> S} size(u) ([u has a consumer in S]
                                                     - [u has a consumer outside I])) / B

where ``boundary`` is the size of the tensors leaving an ideal: the sum runs over
the tensors crossing out of ``J`` and is updated in ``O(deg(v))`` per step from a
count of each such tensor's consumers in ``S``.

Pruning, all exact, for a pass at threshold ``T`` that looks for chains of at most
``k`` blocks (``r = k - g_T(J)`` blocks left after ``J``):

* ``f(S) >= work(S) + overflow(S) + (input tensors of S) / B`` and that sum only
  grows along the search, so the search from ``J`` stops where it exceeds ``T``,
  and pairs with ``f(S) > T`` are dropped;
* the blocks after ``J`` hold ``V \\ J`` and read every tensor leaving ``J``, so their
  costs add up to at least ``rest(J) = work(V \\ J) + boundary(J) / B``: ``J`` is
  only extended if ``rest(J) <= r T``, and ``I`` only recorded at ``g_T(J) + 1`` if
  ``rest(I) <= (r - 1) T`` (this IO term is what makes the pass cheap on graphs
  whose costs are mostly tensor traffic: ONNX inception_v2 on an A100 preset).

Peak-aware costs (``Problem.peak_aware``) are priced here *without* the activation
peak: ``peak(S) >= 0`` only raises ``f``, so the value is then a lower bound on the
optimum (and the partition is re-priced by the evaluator).

Rounding (:mod:`mtpp.core.rounding`).  ``work``, ``size_param`` and ``boundary`` of the
ideals and the running tensor sum ``x`` are compensated sums, and every difference
``x(I) - x(J)`` is taken on the pairs, so no cancellation of a huge tensor against
itself survives.  A block cost ``c`` is computed as ``c' = w + ovf + io / B`` from at
most four such sums of at most ``m = n + |E| + 4`` updates each, a plain sum of the
non-negative input tensors, and a handful of final roundings, whence

    |c' - c| <= rel c + err,    rel = gamma(n + |E| + 16),
    err = 6 (dd(m, W) + (dd(m, S) + dd(m, P)) / B) + 2u (P + |M - R|) / B

with ``dd = dd_error``, ``W = sum work``, ``P = sum size_param``, ``S = 4 sum size_out
(outdeg + 1)`` the largest magnitudes any partial sum reaches (the ``P``, ``M - R``
term only with finite memory: the overflow subtracts the budget from the block's
parameters).  A pass at threshold ``T`` compares computed values with ``T``: a pair
with ``c' > T`` has true cost ``c > L = lower_by(T)`` (:func:`mtpp.core.rounding.lower_by`);
``rest'`` is such a cost too (the last block's, without overflow), and ``rest' > r T``
implies ``rest > r L``.  So a pass that finds no chain of ``k`` blocks proves that
every chain of ``k`` blocks has a block of true cost ``> L``: ``OPT(k) >= L``.  A
chain of computed value ``v'`` and a failed pass at ``T = v'`` minus one ulp prove
``OPT >= lower_by(T)``, which :attr:`IdealDpResult.lower_bound` reports; to search
below a true upper bound ``U`` a pass uses ``T = U (1 + rel) + err``, which keeps
every pair of true cost ``<= U``.  On ordinary data ``err`` is about ``1e-25`` of the total weight; a graph
whose magnitudes make it exceed the optimality tolerance gets the bound it proves
and no claim of optimality.

Time ``O(sum_J |{I >= J : f(I \\ J) <= T}| deg)`` per pass for the ``J`` that pass the
test above; memory ``16 N`` bytes of tables for ``N`` ideals (``g`` and the chain's
predecessor as ``int32``, ``b`` as a double) plus ``16 N`` of scratch, next to the
lattice (:mod:`heuristics.partition.ideals`).  The search from one ``J`` runs in
compiled code and the time limit is checked between chunks of ``J``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from heuristics.bitsets import has
from heuristics.partition.ideals import (
    BOUNDARY,
    BOUNDARY_LO,
    DEFAULT_MAX_IDEALS,
    PARAM,
    PARAM_LO,
    WORK,
    WORK_LO,
    IdealLattice,
    enumerate_ideals,
)
from heuristics.partition.segments import overflow
from mtpp.core.jit import njit
from mtpp.core.problem import Problem
from mtpp.core.rounding import UNIT, dd_add, dd_diff, dd_error, gamma, lower_by

SLACK = 1e-9  # relative slack of the known lower bound: a chain within it is optimal
TABLE_BYTES = 32  # DP tables and scratch per ideal (module docstring)
MAX_TABLE = 1 << 30  # bytes of DP tables and scratch: at most 1 GiB, so 2^25 ideals
CHUNK_SECONDS = 0.25  # roughly how often the time limit is checked
HOPELESS = 20.0
"""A pass gives up (as if past its deadline) once it has run :data:`PROBE_SECONDS` or more and
its progress, the share of the ideals ``J`` it has extended, projects the rest of the pass to
more than this many times the time left.  The early (small) ideals have the most supersets,
so the projection runs high (a pass that ends in time can project five times its length
early on); without the test, passes that could not finish took the DP's whole share."""
PROBE_SECONDS = 2.0
"""The least time a pass runs before :data:`HOPELESS` may stop it."""
GREEDY_ROUNDS = 40  # bisection steps of the greedy chain over the threshold
GREEDY_TOL = 1e-9  # the greedy bisection stops at this relative width
FRONT_WIDTH = 64
"""The most entries of an ideal's Pareto front in a level pass (module docstring, "Level
form"); the tables' cap :data:`MAX_TABLE` may allow fewer.  A front that would grow past
it drops an entry, and the pass then leaves the decision to the threshold passes."""
FRONT_BYTES = 16  # per front entry: level and predecessor as int32, value as a double


@dataclass(frozen=True)
class IdealDpResult:
    """How the DP ended and what it found.

    ``status``: ``optimal`` (every chain was searched: ``value`` is the optimum,
    or the relaxed optimum for peak-aware costs), ``bound_reached`` (a chain of
    value ``<= lower_bound`` was found: optimal as well), ``no_improvement`` (no
    chain beats ``upper_bound``: the optimum is ``upper_bound``), ``too_wide``
    (more ideals than the cap, or a table too large), ``time_limit``.
    ``value`` is the DP's optimum where the status says it is known;
    ``assignment`` the chain's partition (block per node index) when one was
    found.  ``lower_bound`` is what the run proves: ``value`` lowered by the
    rounding error bound (``rounding`` absolute, module docstring) for
    ``optimal``, the upper bound lowered the same way for ``no_improvement``
    (every chain's true value exceeds it), at most the known lower bound for
    ``bound_reached``."""

    status: str
    value: float | None
    assignment: np.ndarray | None
    ideals: int | None
    wall_time: float
    message: str = ""
    lower_bound: float | None = None
    rounding: float = 0.0


def rounding_margin(problem: Problem) -> tuple[float, float]:
    """``(rel, err)`` with ``|c' - c| <= rel c + err`` for every block cost ``c'`` the
    DP computes (module docstring)."""
    g = problem.graph
    inv_b = (1.0 / problem.bandwidth) * (1.0 + 4.0 * UNIT)
    m = g.n + g.m + 4
    params = float(g.size_param.sum())
    sizes = 4.0 * float(np.dot(g.size_out, np.diff(g.succ_ptr) + 1.0))
    err = 6.0 * (dd_error(m, float(g.work.sum())) + (dd_error(m, sizes) + dd_error(m, params)) * inv_b)
    if math.isfinite(problem.param_budget):
        err += 2.0 * UNIT * (params + abs(problem.param_budget)) * inv_b
    return gamma(g.n + g.m + 16), err * (1.0 + 1e-6)


@njit(cache=True, inline="always")
def rest(sums, last, i, inv_b):
    """``rest(I) = work(V \\\\ I) + boundary(I) / B``: a lower bound on the total cost of
    the blocks after ``I`` (module docstring)."""
    w = dd_diff(sums[last, WORK], sums[last, WORK_LO], sums[i, WORK], sums[i, WORK_LO])
    return w + (sums[i, BOUNDARY] + sums[i, BOUNDARY_LO]) * inv_b


@njit(cache=True, nogil=True)
def region(
    jj, cap, bits, sums, cover_ptr, cover_node, cover_to, pred_ptr, pred_idx, succ_ptr, succ_idx, size_out,
    budget, inv_b, visit, cnt, nout, stack_i, stack_x, cand, cand_cost,
):  # fmt: skip
    """The ideals ``I > J`` (``J = jj``) whose block ``I \\\\ J`` has computed cost ``<= cap``,
    written to ``cand`` with their costs in ``cand_cost``; returns how many and the
    number of search steps.  A depth-first search over the cover edges from ``J``
    (each ``I`` looked at once: ``visit`` holds ``jj + 1``) that stops where the
    block's work, overflow and input tensors, which only grow with ``I``, exceed
    ``cap`` (module docstring)."""
    stamp = jj + 1
    visit[jj] = stamp
    top = 0
    found = 0
    steps = 0
    stack_i[0, 0] = jj
    stack_i[0, 1] = cover_ptr[jj]
    stack_i[0, 2] = -1
    stack_x[0, 0] = -sums[jj, BOUNDARY]
    stack_x[0, 1] = -sums[jj, BOUNDARY_LO]
    stack_x[0, 2] = 0.0
    w_j, wl_j = sums[jj, WORK], sums[jj, WORK_LO]
    p_j, pl_j = sums[jj, PARAM], sums[jj, PARAM_LO]
    while top >= 0:
        s = stack_i[top, 0]
        e = stack_i[top, 1]
        if e == cover_ptr[s + 1]:
            if top > 0:
                v = stack_i[top, 2]
                for a in range(pred_ptr[v], pred_ptr[v + 1]):
                    p = pred_idx[a]
                    if has(bits, jj, p):
                        cnt[p] -= 1
            top -= 1
            continue
        stack_i[top, 1] = e + 1
        c = cover_to[e]
        if visit[c] == stamp:
            continue
        visit[c] = stamp  # every test below depends on (J, c) only, so c needs one look
        w = dd_diff(sums[c, WORK], sums[c, WORK_LO], w_j, wl_j)
        if w > cap:
            continue
        v = cover_node[e]
        x = stack_x[top, 0]
        xl = stack_x[top, 1]
        x_in = stack_x[top, 2]
        for a in range(pred_ptr[v], pred_ptr[v + 1]):
            p = pred_idx[a]
            if has(bits, jj, p):
                before = cnt[p]
                if before == 0:
                    outside = 0
                    for b in range(succ_ptr[p], succ_ptr[p + 1]):
                        if has(bits, jj, succ_idx[b]) == 0:
                            outside += 1
                    nout[p] = outside
                after = before + 1
                # size(p) ([cnt > 0] - [cnt < nout]) before and after
                old = (1.0 if before > 0 else 0.0) - (1.0 if before < nout[p] else 0.0)
                new = 1.0 - (1.0 if after < nout[p] else 0.0)
                x, xl = dd_add(x, xl, size_out[p] * (new - old))
                if before == 0:
                    x_in += size_out[p]
                cnt[p] = after
        ovf = overflow(dd_diff(sums[c, PARAM], sums[c, PARAM_LO], p_j, pl_j), budget, inv_b)
        if w + ovf + x_in * inv_b > cap:  # grows with I: no superset of c can do better
            for a in range(pred_ptr[v], pred_ptr[v + 1]):
                p = pred_idx[a]
                if has(bits, jj, p):
                    cnt[p] -= 1
            continue
        steps += 1
        top += 1
        stack_i[top, 0] = c
        stack_i[top, 1] = cover_ptr[c]
        stack_i[top, 2] = v
        stack_x[top, 0] = x
        stack_x[top, 1] = xl
        stack_x[top, 2] = x_in
        cost = w + ovf + dd_diff(sums[c, BOUNDARY], sums[c, BOUNDARY_LO], -x, -xl) * inv_b
        if cost <= cap:
            cand[found] = c
            cand_cost[found] = cost
            found += 1
    return found, steps


@njit(cache=True, nogil=True)
def dp_chunk(
    first, k, cap, blocks, worst, arg, bits, sums, cover_ptr, cover_node, cover_to, pred_ptr, pred_idx, succ_ptr,
    succ_idx, size_out, budget, inv_b, visit, cnt, nout, stack_i, stack_x, cand, cand_cost, max_steps,
):  # fmt: skip
    """One chunk of the threshold DP at ``cap`` for chains of at most ``k`` blocks:
    relax every pair from the ideals ``J = first, first + 1, ...`` into the
    lexicographic minimum ``(blocks, worst)`` of each ideal (module docstring), and
    stop after ``max_steps`` search steps; returns the next ``J`` to process
    (``N - 1`` when done)."""
    last = sums.shape[0] - 1
    steps = 0
    for jj in range(first, last):
        gj = blocks[jj]
        if gj >= k or rest(sums, last, jj, inv_b) > (k - gj) * cap:
            continue
        found, used = region(
            jj, cap, bits, sums, cover_ptr, cover_node, cover_to, pred_ptr, pred_idx, succ_ptr, succ_idx, size_out,
            budget, inv_b, visit, cnt, nout, stack_i, stack_x, cand, cand_cost,
        )  # fmt: skip
        steps += used
        gn = gj + 1
        room = (k - gn) * cap
        bj = worst[jj]
        for t in range(found):
            c = cand[t]
            if gn > blocks[c]:
                continue
            val = bj if bj > cand_cost[t] else cand_cost[t]
            if gn == blocks[c] and val >= worst[c]:
                continue
            if c != last and rest(sums, last, c, inv_b) > room:
                continue
            blocks[c] = gn
            worst[c] = val
            arg[c] = jj
        if steps >= max_steps:
            return jj + 1
    return last


@njit(cache=True, inline="always")
def front_insert(fn, fj, fw, fa, c, j, w, jj):
    """Insert ``(j, w)`` reached from ``jj`` into the Pareto front of ideal ``c`` (levels
    ascending, values strictly descending: no entry has both at most the level and at most
    the value of another); returns 1 where a full front dropped an entry (lossy), else 0."""
    n = fn[c]
    pos = 0
    while pos < n and fj[c, pos] < j:
        if fw[c, pos] <= w:
            return 0  # dominated by an entry of fewer blocks and at most the value
        pos += 1
    if pos < n and fj[c, pos] == j and fw[c, pos] <= w:
        return 0
    # the entries from pos on have larger levels; those of value >= w are dominated now
    keep = pos
    for t in range(pos, n):
        if fw[c, t] < w:
            fj[c, keep] = fj[c, t]
            fw[c, keep] = fw[c, t]
            fa[c, keep] = fa[c, t]
            keep += 1
    n = keep
    width = fj.shape[1]
    lossy = 0
    if n == width:  # full: drop the entry of the largest level (it may be the new one)
        lossy = 1
        if pos == n:
            return lossy
        n -= 1
    for t in range(n, pos, -1):
        fj[c, t] = fj[c, t - 1]
        fw[c, t] = fw[c, t - 1]
        fa[c, t] = fa[c, t - 1]
    fj[c, pos] = j
    fw[c, pos] = w
    fa[c, pos] = jj
    fn[c] = n + 1
    return lossy


@njit(cache=True, nogil=True)
def front_chunk(
    first, k, cap, fn, fj, fw, fa, bits, sums, cover_ptr, cover_node, cover_to, pred_ptr, pred_idx, succ_ptr,
    succ_idx, size_out, budget, inv_b, visit, cnt, nout, stack_i, stack_x, cand, cand_cost, max_steps,
):  # fmt: skip
    """One chunk of the level DP at ``cap`` for chains of at most ``k`` blocks (module
    docstring, "Level form"): relax every pair from the ideals ``J = first, first + 1,
    ...`` into the Pareto fronts of their supersets, and stop after ``max_steps`` search
    steps; returns the next ``J`` to process (``N - 1`` when done) and whether a full
    front dropped an entry."""
    last = sums.shape[0] - 1
    steps = 0
    lossy = 0
    for jj in range(first, last):
        n = fn[jj]
        if n == 0 or fj[jj, 0] >= k:
            continue
        rj = rest(sums, last, jj, inv_b)
        if rj > (k - fj[jj, 0]) * cap:  # the fewest blocks so far leave too much for the rest
            continue
        found, used = region(
            jj, cap, bits, sums, cover_ptr, cover_node, cover_to, pred_ptr, pred_idx, succ_ptr, succ_idx, size_out,
            budget, inv_b, visit, cnt, nout, stack_i, stack_x, cand, cand_cost,
        )  # fmt: skip
        steps += used
        for t in range(found):
            c = cand[t]
            cost = cand_cost[t]
            if fn[c] > 0 and fj[c, 0] <= fj[jj, 0] + 1 and fw[c, 0] <= cost:
                continue  # every entry from J has at least the level and the value of c's first
            rc = 0.0 if c == last else rest(sums, last, c, inv_b)
            for a in range(n):
                jn = fj[jj, a] + 1
                if jn > k or rc > (k - jn) * cap:
                    break  # the levels only grow along the front
                if rj > (k - fj[jj, a]) * cap:
                    break
                wa = fw[jj, a]
                val = wa if wa > cost else cost
                lossy |= front_insert(fn, fj, fw, fa, c, jn, val, jj)
                if cost >= wa:
                    break  # the later entries (smaller values, more blocks) give the same value
        if steps >= max_steps:
            return jj + 1, lossy
    return last, lossy


@njit(cache=True, nogil=True)
def greedy_chain(
    k, cap, arg, bits, sums, cover_ptr, cover_node, cover_to, pred_ptr, pred_idx, succ_ptr, succ_idx, size_out,
    budget, inv_b, visit, cnt, nout, stack_i, stack_x, cand, cand_cost,
):  # fmt: skip
    """A chain of at most ``k`` blocks of computed cost ``<= cap``, built greedily:
    from each ideal the block that leaves the least ``rest`` (the most progress)
    among those that leave ``rest <= (blocks left) cap``.  Writes the chain's
    predecessors into ``arg`` and returns its largest block cost (``inf`` when the
    greedy gets stuck; there may be a chain all the same)."""
    last = sums.shape[0] - 1
    jj = 0
    worst = 0.0
    for used in range(k):
        found, _ = region(
            jj, cap, bits, sums, cover_ptr, cover_node, cover_to, pred_ptr, pred_idx, succ_ptr, succ_idx, size_out,
            budget, inv_b, visit, cnt, nout, stack_i, stack_x, cand, cand_cost,
        )  # fmt: skip
        room = (k - used - 1) * cap
        best, best_rest, best_cost = -1, np.inf, 0.0
        for t in range(found):
            c = cand[t]
            r = 0.0 if c == last else rest(sums, last, c, inv_b)
            if r <= room and r < best_rest:
                best, best_rest, best_cost = c, r, cand_cost[t]
        if best < 0:
            break
        arg[best] = jj
        worst = max(worst, best_cost)
        jj = best
        if jj == last:
            return worst
    return np.inf


class _Search:
    """The lattice, the graph's arrays and the scratch shared by every pass."""

    def __init__(self, problem: Problem, lattice: IdealLattice, front_width: int = FRONT_WIDTH) -> None:
        g, count = problem.graph, lattice.count
        self.problem, self.lattice = problem, lattice
        self.rel, self.err = rounding_margin(problem)
        self.blocks = np.empty(count, dtype=np.int32)
        self.worst = np.empty(count)
        self.arg = np.empty(count, dtype=np.int32)
        self.visit = np.zeros(count, dtype=np.int32)
        self.cand = np.empty(count, dtype=np.int32)
        self.cand_cost = np.empty(count)
        self.cnt = np.zeros(g.n, dtype=np.int64)
        self.nout = np.zeros(g.n, dtype=np.int64)
        self.stack_i = np.zeros((g.n + 2, 3), dtype=np.int64)
        self.stack_x = np.zeros((g.n + 2, 3))
        self.shared = (
            lattice.bits,
            lattice.sums,
            lattice.cover_ptr,
            lattice.cover_node,
            lattice.cover_to,
            g.pred_ptr,
            g.pred_idx,
            g.succ_ptr,
            g.succ_idx,
            g.size_out,
            problem.param_budget,
            1.0 / problem.bandwidth,
        )
        self.scratch = (self.visit, self.cnt, self.nout, self.stack_i, self.stack_x, self.cand, self.cand_cost)
        self.width = min(front_width, (MAX_TABLE - TABLE_BYTES * count) // (FRONT_BYTES * count))
        self.fronts: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def above(self, upper_bound: float) -> float:
        """The threshold that keeps every block of true cost ``<= upper_bound``."""
        return upper_bound * (1.0 + self.rel) + self.err

    def greedy(self, k: int, cap: float) -> tuple[float, np.ndarray] | None:
        """A greedy chain at ``cap`` (its value and assignment), or ``None``."""
        self.visit[:] = 0
        value = greedy_chain(k, cap, self.arg, *self.shared, *self.scratch)
        return None if math.isinf(value) else (float(value), self.assignment())

    def dp(self, k: int, cap: float, deadline: float | None) -> tuple[float, np.ndarray] | Literal[False] | None:
        """One threshold pass: the chain of the fewest blocks (at most ``k``) of
        computed cost ``<= cap`` and, among those, the least value (its value and
        assignment); ``None`` if there is none, which proves ``OPT(k) >=
        lower_by(cap)``; ``False`` past the deadline, or where the pass would not end by
        it (:data:`HOPELESS`)."""
        count = self.lattice.count
        self.blocks[:] = np.iinfo(np.int32).max
        self.blocks[0] = 0
        self.worst[:] = np.inf
        self.worst[0] = 0.0
        self.visit[:] = 0
        nxt, steps, start = 0, 200_000, time.perf_counter()
        while nxt < count - 1:
            if _past(deadline) or _hopeless(start, nxt / count, deadline):
                return False
            t0 = time.perf_counter()
            nxt = dp_chunk(nxt, k, cap, self.blocks, self.worst, self.arg, *self.shared, *self.scratch, steps)
            elapsed = time.perf_counter() - t0
            steps = int(min(max(steps * CHUNK_SECONDS / max(elapsed, 1e-3), 10_000), 50_000_000))
        if self.blocks[count - 1] > k:
            return None
        return float(self.worst[count - 1]), self.assignment()

    def front(self, k: int, cap: float, deadline: float | None) -> tuple[float, np.ndarray] | bool | None:
        """One level pass (module docstring, "Level form"): the least value of a chain of
        at most ``k`` blocks of computed cost ``<= cap`` (its value and assignment);
        ``None`` if there is none, which proves ``OPT(k) >= lower_by(cap)``; ``False`` past
        the deadline or where the pass would not end by it; ``True`` where a front
        overflowed its width, so the chain found (if any) need not be the best and the
        threshold passes must decide."""
        count, width = self.lattice.count, min(k, self.width)
        if width < 1:
            return True
        if self.fronts is None or self.fronts[1].shape[1] < width:
            self.fronts = (
                np.zeros(count, dtype=np.int32),
                np.empty((count, width), dtype=np.int32),
                np.empty((count, width)),
                np.empty((count, width), dtype=np.int32),
            )
        fn, fj, fw, fa = self.fronts
        fj, fw, fa = fj[:, :width], fw[:, :width], fa[:, :width]
        fn[:] = 0
        fn[0], fj[0, 0], fw[0, 0], fa[0, 0] = 1, 0, 0.0, 0
        self.visit[:] = 0
        nxt, steps, start, lossy = 0, 200_000, time.perf_counter(), False
        while nxt < count - 1:
            if _past(deadline) or _hopeless(start, nxt / count, deadline):
                return False
            t0 = time.perf_counter()
            nxt, dropped = front_chunk(nxt, k, cap, fn, fj, fw, fa, *self.shared, *self.scratch, steps)
            lossy = lossy or bool(dropped)
            elapsed = time.perf_counter() - t0
            steps = int(min(max(steps * CHUNK_SECONDS / max(elapsed, 1e-3), 10_000), 50_000_000))
        last = count - 1
        if lossy:
            return True
        if fn[last] == 0:
            return None
        e = int(fn[last]) - 1  # the entry of the most blocks (<= k) has the least value
        chain = [last]
        level, value = int(fj[last, e]), float(fw[last, e])
        cur, slot = last, e
        while cur != 0:
            prev = int(fa[cur, slot])
            level_c, value_c = int(fj[cur, slot]), float(fw[cur, slot])
            slot = next(
                t for t in range(int(fn[prev])) if fj[prev, t] <= level_c - 1 and fw[prev, t] <= value_c
            )
            chain.append(prev)
            cur = prev
        chain.reverse()
        assert len(chain) - 1 <= level <= k
        return value, self.chain_assignment(chain)

    def assignment(self) -> np.ndarray:
        """Walk ``arg`` back from ``V``: the block of each node, blocks numbered along
        the chain."""
        chain = [self.lattice.count - 1]
        while chain[-1] != 0:
            chain.append(int(self.arg[chain[-1]]))
        chain.reverse()
        return self.chain_assignment(chain)

    def chain_assignment(self, chain: list[int]) -> np.ndarray:
        """The block of each node for the chain of ideals ``chain`` (``{}`` first, ``V``
        last), blocks numbered along it."""
        a = np.full(self.problem.graph.n, -1, dtype=np.int64)
        for j in range(1, len(chain)):
            inside = np.zeros(self.problem.graph.n, dtype=bool)
            inside[self.lattice.members(chain[j])] = True
            inside[self.lattice.members(chain[j - 1])] = False
            a[inside] = j - 1
        return a


def ideal_dp_all(
    problem: Problem,
    ks: Sequence[int],
    *,
    upper_bounds: Sequence[float] | None = None,
    lower_bounds: Sequence[float] | None = None,
    lattice: IdealLattice | None = None,
    max_ideals: int = DEFAULT_MAX_IDEALS,
    time_limit: float | None = None,
    front_width: int = FRONT_WIDTH,
) -> list[IdealDpResult]:
    """The optimum of ``problem`` at every ``k`` of ``ks`` over all chains of ideals
    (module docstring), one :class:`IdealDpResult` per ``k`` in the order given.
    ``upper_bounds[i]`` is the value of a known partition into ``ks[i]`` blocks (the
    search stays below it), ``lower_bounds[i]`` a proven bound (a chain within it
    ends the search: ``bound_reached``); ``time_limit`` caps the whole call.  The ks
    are solved smallest first, one lattice and every chain found shared across
    them.  Once a pass gives up because its progress shows it would not end in time
    (:data:`HOPELESS`), the larger ks are not tried (``time_limit``, no bound): the
    smaller blocks of a larger k do not shorten a pass over the same lattice enough to
    end.
    The bound each run proves, rounding included, is :attr:`IdealDpResult.lower_bound`."""
    start = time.perf_counter()
    ks = [int(k) for k in ks]
    ubs = [math.inf] * len(ks) if upper_bounds is None else [float(u) for u in upper_bounds]
    lbs = [0.0] * len(ks) if lower_bounds is None else [float(b) for b in lower_bounds]
    g = problem.graph
    if lattice is None:
        lattice = enumerate_ideals(g, max_ideals)
    if lattice is None:
        message = f"more than {max_ideals} ideals (the graph is too wide for the ideal DP)"
        return [IdealDpResult("too_wide", None, None, None, time.perf_counter() - start, message) for _ in ks]
    count = lattice.count
    if TABLE_BYTES * count > MAX_TABLE:
        message = f"{count} ideals need more than the DP table cap of {MAX_TABLE} bytes"
        return [IdealDpResult("too_wide", None, None, count, time.perf_counter() - start, message) for _ in ks]
    deadline = None if time_limit is None else start + time_limit
    search = _Search(problem, lattice, front_width)
    results: dict[int, IdealDpResult] = {}
    best: tuple[float, np.ndarray] | None = None  # the best chain so far: it serves every larger k
    hopeless_at: int | None = None  # the k whose pass showed it would not end in time
    for i in sorted(range(len(ks)), key=lambda i: ks[i]):
        if hopeless_at is not None:
            message = f"skipped: a pass at k = {hopeless_at} showed the DP would not end in time"
            results[i] = IdealDpResult("time_limit", None, None, count, 0.0, message)
            continue
        t0 = time.perf_counter()
        res = _solve_k(search, ks[i], ubs[i], lbs[i], best, deadline)
        if res.status == "time_limit" and not _past(deadline):
            hopeless_at = ks[i]
        if res.assignment is not None and res.value is not None and (best is None or res.value < best[0]):
            best = (res.value, res.assignment)
        results[i] = IdealDpResult(
            res.status,
            res.value,
            res.assignment,
            count,
            time.perf_counter() - t0,
            res.message,
            res.lower_bound,
            search.err,
        )
    return [results[i] for i in range(len(ks))]


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline


def _hopeless(start: float, progress: float, deadline: float | None) -> bool:
    """A pass that began at ``start`` and has done ``progress`` of its ideals would not end
    by ``deadline`` (:data:`HOPELESS`)."""
    if deadline is None:
        return False
    now = time.perf_counter()
    spent = now - start
    if spent < PROBE_SECONDS:
        return False
    return spent * (1.0 - progress) > HOPELESS * (deadline - now) * max(progress, 0.0)


def _solve_k(
    search: _Search, k: int, upper_bound: float, lower_bound: float, best: tuple[float, np.ndarray] | None,
    deadline: float | None,
) -> IdealDpResult:  # fmt: skip
    """One k of :func:`ideal_dp_all` (module docstring): the greedy chain bisected
    over the threshold, then DP passes just below the best value until one fails."""
    rel, err = search.rel, search.err
    top = search.above(upper_bound)
    target = lower_bound * (1.0 + SLACK)
    chain = best if best is not None and best[0] <= top else None
    level = True  # the first pass is a level pass (module docstring, "Level form")
    if chain is None:
        chain = search.greedy(k, top)
    if chain is not None and chain[0] > target:
        low = target  # the greedy bisection: it got stuck at or below ``low``
        found = search.greedy(k, target) if target > 0.0 else None
        for _ in range(GREEDY_ROUNDS):
            if found is not None:
                chain = found
            if chain[0] <= max(target, low * (1.0 + GREEDY_TOL)) or _past(deadline):
                break
            mid = 0.5 * (low + chain[0])
            found = search.greedy(k, mid)
            if found is None:
                low = mid
    while True:
        if chain is not None and chain[0] <= target:
            proven = min(lower_by(chain[0], rel, err), lower_bound)
            return IdealDpResult("bound_reached", chain[0], chain[1], None, 0.0, lower_bound=proven)
        cap = top if chain is None else float(np.nextafter(chain[0], -np.inf))
        if level:
            level = False
            exact = search.front(k, cap, deadline)
            if exact is True:
                continue  # a front overflowed: the threshold passes decide
            if exact is not None and exact is not False:
                below = float(np.nextafter(exact[0], -np.inf))  # every chain's computed value is >= exact[0]
                return IdealDpResult("optimal", exact[0], exact[1], None, 0.0, lower_bound=lower_by(below, rel, err))
            passed = exact
        else:
            passed = search.dp(k, cap, deadline)
        if passed is False:
            return IdealDpResult(
                "time_limit",
                None,
                None,
                None,
                0.0,
                "the time limit ran out before every chain was searched"
                + ("" if _past(deadline) else " (a pass's progress showed it would not end in time)"),
            )
        if passed is None:
            if chain is None:
                return IdealDpResult(
                    "no_improvement",
                    None,
                    None,
                    None,
                    0.0,
                    "no chain beats the upper bound",
                    lower_bound=min(upper_bound, lower_by(cap, rel, err)),
                )
            return IdealDpResult("optimal", chain[0], chain[1], None, 0.0, lower_bound=lower_by(cap, rel, err))
        chain = passed


def ideal_dp(
    problem: Problem,
    *,
    upper_bound: float = math.inf,
    lower_bound: float = 0.0,
    lattice: IdealLattice | None = None,
    max_ideals: int = DEFAULT_MAX_IDEALS,
    time_limit: float | None = None,
) -> IdealDpResult:
    """:func:`ideal_dp_all` at the problem's own ``k``: the optimum over all chains of
    ideals, searched below ``upper_bound`` (the value of a known partition); a chain
    within the proven ``lower_bound`` is optimal."""
    return ideal_dp_all(
        problem,
        [problem.k],
        upper_bounds=[upper_bound],
        lower_bounds=[lower_bound],
        lattice=lattice,
        max_ideals=max_ideals,
        time_limit=time_limit,
    )[0]
