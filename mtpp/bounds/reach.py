"""The *reach* lower bound: how far ``k`` blocks of cost at most ``T`` reach into the graph.

Chains.  Number the blocks of an acyclic partition ``S_1, .., S_k`` in a topological
order of its quotient graph (blocks may be empty); the prefixes ``I_j = S_1 | .. |
S_j`` are ideals, ``I_0 = {}`` and ``I_k = V``.  For a threshold ``T`` a *forward*
sweep computes ideals ``U_0 <= U_1 <= .. <= U_k``, the ops that may lie in the first
``j`` blocks of a partition of bottleneck at most ``T``, and a *backward* sweep the
filters ``D_0 <= .. <= D_k``, the ops that may lie in the last ``m`` blocks; each
sweep uses the other's sets (initially ``D_m = V`` for ``m >= 1``):

    U_0 = {},   F_j = (V - D_(k-j)) - U_(j-1)   (ops that must be in the first j blocks
                                                  and cannot be in the first j - 1),
    U_j = U_(j-1) | { v in D_(k-j+1) : preds(v) <= U_j, c(H(X_j(v))) <= T },
    X_j(v) = {v} | (anc(v) - U_(j-1)) | F_j,

with ``anc(v)`` the ancestors of ``v``, ``H`` the hull (every op on a path between
two members) and ``c(H) = min { f(S) : S contains H }`` bounded from below by one
minimum cut (:class:`mtpp.bounds.hull_cuts.HullCuts`).  The backward sweep is the same on
the reversed order (descendants for ancestors, ``F'_m = (V - U_(k-m)) - D_(m-1)``,
``v`` in ``U_(k-m+1)``).

Claim: every partition ``P`` into ``k`` blocks of bottleneck at most ``T`` has
``I_j(P) <= U_j`` and ``V - I_(k-m)(P) <= D_m``.  By induction over the sweeps and,
within a sweep, over ``j`` and the topological order: if ``I_(j-1) <= U_(j-1)`` and
``V - I_(k-j) <= D_(k-j)`` (the last ``k - j`` blocks lie in ``D_(k-j)``), then
``F_j <= I_j - I_(j-1) = S_j``; an op ``v`` of ``S_j`` has ``anc(v) <= I_j``
(an ideal), so ``anc(v) - U_(j-1) <= S_j``, and ``v`` lies in the last ``k - j + 1``
blocks, ``D_(k-j+1)``; hence ``X_j(v) <= S_j``, a convex set, so ``H(X_j(v)) <= S_j``
and ``c(H(X_j(v))) <= f(S_j) <= T``; its predecessors lie in ``I_j`` and come first
in the order, so they are in ``U_j`` already.  The backward sweep is the mirror image.
Block ``S_j`` holds only ops of ``D_(k-j+1)`` and of the last sweep's ``U_j`` (both
contain it), so the minimum cut runs over the sets that hold ``H`` and none of the
other ops (``banned``, :class:`mtpp.bounds.hull_cuts.HullCuts`), and a hull that holds one
of them refuses ``v`` at once.
So ``OPT(k) > T`` as soon as a sweep finds ``c(H(F_j)) > T``, an op of ``V - D_(k-j)``
outside ``U_j`` (it must be in the first ``j`` blocks and cannot), or ``U_k != V``.
The sweeps alternate while a set still shrinks (at most :data:`ROUNDS`).

Shaving (singleton consistency, as in constraint programming).  Once the sweeps stop,
each op ``v`` has a window of blocks ``[first, last]`` (``v`` enters ``U`` at
``first`` and ``D`` at ``k + 1 - last``).  For a ``t`` of it the sweeps run
again with ``v`` forced into block ``t`` (outside ``U_(t-1)`` and ``D_(k-t)``, the
sets it starts from; the claim holds for the partitions that put ``v`` in ``t``): a
``t`` they refute is dropped, since no partition of bottleneck at most ``T`` puts
``v`` there.  The ``t`` are tried from ``first`` up until one stands, then from
``last`` down until one stands; the window shrinks to ``[first standing, last
standing]`` (a window, so a refuted block between two that stand could not shrink it
and is not tried) and the sweeps run on from the shrunk sets; an op with no block
left refutes ``T``.  Every op is tried, the
narrowest windows first, in passes until one shrinks no window: an op tried early in a
pass met wider sets than the pass left, and against them it may refute a block it could
not before (500-op layered graph of seed 9102, ``k = 8``: 163,712 and 167,000 stood after
one pass of 23 s and fell in the second, after 6.7 and 12.3 s more; at 172,000 the second
pass, 9.5 s, shrank nothing).  It is far stronger and far slower (a fixpoint per op and
block): on the 150-op graph below at ``k = 8`` it lifts the bound from 0.93 to
0.9996 of the optimum in a minute.  A threshold below one where shaving stood starts
from the sets that pass left (:attr:`_Sweeps.stood`): a partition of bottleneck at most
the lower threshold is one of bottleneck at most the higher, so those sets meet the
claim for it, and the narrower windows take fewer probes.  The bisection tests below
each threshold that stood: on the 500-op layered graph of seed 9102, shaving from the
best other bound reached 165,131 instead of 163,460 in 120 s at ``k = 8`` (10 thresholds
instead of 7) and 85,326 instead of 83,359 in 90 s at ``k = 16``.

The bound is the largest ``T`` so refuted, found by galloping and bisection between a proven
lower bound and the cost of a partition; each refuted ``T`` is a proof on its own
(the bisection's monotonicity is only for speed).  Rounding: ``c`` is at most its
true value, so ``c > T`` in floats means the true minimum exceeds ``T``; the sweeps
are exact set operations; the bound is ``T`` itself, below ``OPT(k)``.  An op passes
without a cut when the block ``H`` itself costs at most ``T`` (``c(H) <= f(H)``):
passing is the safe side whatever the rounding, it only keeps a set larger.

Where it pays: a block of a wide graph pays the IO of everything it cuts through,
and a chain of ``k`` blocks must cover the graph; on 150- to 500-op layered graphs
at ``k = 4`` and ``8`` it lifted the best of the other combinatorial bounds by 5-25%
(a 150-op graph whose optimum the ideal DP proves: ``k = 8`` from 0.81 to 0.93 of
it, 0.9996 with shaving).  Cost: a minimum cut (about a millisecond at 500 ops) per op that fails a
sweep's test, and ``O(n + m)`` per op tested.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from mtpp.bounds.hull_cuts import HullCuts
from mtpp.bounds.reach_sweeps import FITS, LATE, Refusals, reach_step
from mtpp.core.problem import Problem

ROUNDS = 8
"""Forward and backward sweeps alternate at most this many times per threshold."""
RTOL = 1e-3
"""The bisection stops when its interval is this small relative to the upper end."""
PROBE = 1 / 64
"""The first threshold lies this part of the interval above its lower end; each threshold refuted
doubles the step, until one stands (then bisection)."""
RISING_PROBE = 1 / 8
"""The first step of a shaving search that goes on where shaving already beat the other bounds
(:class:`mtpp.engine.combinatorial.ReachResume`): no test need say that it cannot.  From where
certify's first shaving stopped, 35 s on unseen 500- and 250-op layered graphs at k = 8 reached
161,339 / 164,681 / 74,796 (seeds 9102 / 9104 / 9103) against 154,017 / 160,487 / 73,906 with
:data:`PROBE` (20 s on 9103)."""
GALLOP_CAP = 0.25
"""A galloping step is at most this part of the interval left: a threshold far above the bound
that stands costs shaving a whole pass, and the further above, the longer (500-op layered graph of
seed 9104, k = 8: 22 s at 0.996 of the partition's cost, 10 s at 0.896, 4.5 s for one it refutes
near the bound)."""
SETUP_SECONDS_PER_ELEMENT = 2e-6
"""What building the sweeps' data (:class:`_Sweeps`: the minimum-cut network of
:class:`mtpp.bounds.hull_cuts.HullCuts`) costs per op and edge, before any deadline can be
looked at: 0.5 s on a layered graph of 20,000 ops (598,000 ops and edges), 2.2-5 s on a
chain of 10^6 ops on a loaded 2-core machine (the bound ran 12.7 s where its share
was a few).  :func:`reach_lower_bound` does not start where this estimate exceeds its time."""
MEMO_BITS = 8 * 2**27
"""The sweeps' remembered steps (:meth:`_Sweeps._level`) are forgotten when their keys
would pass this many bits (128 MiB)."""


@dataclass(frozen=True)
class ReachBound:
    """The reach bound at one k: the largest threshold refuted, if any."""

    bound: float | None
    """A float below ``OPT(k)``, or ``None`` when no threshold tried was refuted."""
    tried: int
    """Thresholds tested."""
    shaved: int
    """Of them, tested with shaving."""
    complete: bool
    """The bisection closed its interval (else the time limit stopped it)."""
    wall_time: float
    spared: int = 0
    """Minimum cuts that the refusals kept per op spared (:class:`mtpp.bounds.reach_sweeps.Refusals`)."""


Stood = dict[int, tuple[float, tuple[list[np.ndarray], list[np.ndarray]]]]
"""Per k, the lowest threshold at which shaving stood on one problem and the sets ``(U, D)``
that pass left (:attr:`_Sweeps.stood`)."""


class _Late(Exception):
    """The time limit passed inside a sweep: the threshold is not refuted."""


class _Sweeps:
    """The two sweeps of one problem (module docstring), with their fixed data."""

    def __init__(self, problem: Problem, deadline: float, stood: Stood | None = None) -> None:
        g = problem.graph
        self.problem, self.g, self.n, self.deadline = problem, g, g.n, deadline
        self.cut = HullCuts(problem)
        self.io = g.size_out / problem.bandwidth
        self.order = np.asarray(g.topological_order, dtype=np.int64)
        self.reversed = self.order[::-1].copy()
        self.memo: dict[bytes, np.ndarray | None] = {}
        """Steps of the sweeps at :attr:`memo_threshold` (:meth:`_level`)."""
        self.memo_threshold = np.nan
        self.refusals = Refusals(g.n)
        self.stood: Stood = {} if stood is None else stood
        """Per k, the lowest threshold at which shaving stood, with the sets it left: a lower
        threshold's shaving starts from them (module docstring)."""

    def sweep(
        self,
        threshold: float,
        k: int,
        back: bool,
        sure: list[np.ndarray],
        allowed: list[np.ndarray],
        within: list[np.ndarray],
    ) -> list[np.ndarray] | None:
        """``may[0..k]`` of one sweep (``U`` forward, ``D`` backward), or ``None`` when it
        refutes ``threshold``; ``sure[j]``: ops that must lie in the first ``j`` blocks (of
        this direction), ``allowed[j]``: ops that may lie in block ``j``, ``within[j]``:
        the last sweep's ``may[j]`` in this direction (block ``j`` holds only ops of both)."""
        may = [np.zeros(self.n, dtype=np.bool_)]
        for j in range(1, k + 1):
            prev = may[-1]
            cur = self._level(threshold, back, prev, sure[j] & ~prev, ~(allowed[j] & within[j]))
            if cur is None or (sure[j] & ~cur).any():
                return None
            may.append(cur)
        return may if may[k].all() else None

    def _level(
        self, threshold: float, back: bool, prev: np.ndarray, forced: np.ndarray, banned: np.ndarray
    ) -> np.ndarray | None:
        """One step of a sweep: ``prev`` and the ops that may join it (``None`` when the ops
        ``forced`` into the block cannot fit without ``banned`` ones).  A function of its
        arguments alone, so remembered per threshold (:attr:`memo`): shaving's probes
        and the fixpoint's later rounds meet the same steps again (82% of the steps at
        ``k = 8`` on a 250-op layered graph)."""
        if threshold != self.memo_threshold:
            self.memo, self.memo_threshold = {}, threshold
        key = bytes([back]) + np.packbits(np.concatenate((prev, forced, banned))).tobytes()
        if key in self.memo:
            return self.memo[key]
        if time.perf_counter() > self.deadline:
            raise _Late
        g, c, p = self.g, self.cut, self.problem
        status, step = reach_step(
            threshold, back, prev, forced, banned, self.reversed if back else self.order,
            g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx,
            g.work, self.io, g.size_param, p.param_budget, p.bandwidth,
            c.ptr, c.head, c.rev, c.cap, c.tie, c.ban, c.source, c.sink, c.upper, c.upper_banned, c.own, c.level,
            self.refusals.arrays(), self.deadline,
        )  # fmt: skip
        if status == LATE:
            raise _Late
        cur = step if status == FITS else None
        if len(self.memo) * 3 * self.n > MEMO_BITS:
            self.memo.clear()
        self.memo[key] = cur
        return cur

    def fixpoint(
        self, threshold: float, k: int, up: list[np.ndarray], down: list[np.ndarray]
    ) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
        """The sweeps, alternating from ``up`` (``U_0..U_k``) and ``down`` (``D_0..D_k``)
        until nothing changes or :data:`ROUNDS`: the sets, or ``None`` when they refute
        ``threshold`` (raises :class:`_Late` past the deadline)."""
        none = np.zeros(self.n, dtype=np.bool_)
        previous = None
        for _ in range(ROUNDS):
            forward = [~down[k - j] for j in range(k + 1)], [none, *down[k:0:-1]]
            ups = self.sweep(threshold, k, False, *forward, up)
            if ups is None:
                return None
            up = ups
            backward = [~up[k - m] for m in range(k + 1)], [none, *up[k:0:-1]]
            downs = self.sweep(threshold, k, True, *backward, down)
            if downs is None:
                return None
            down = downs
            state = [*up, *down]
            if previous is not None and all((a == b).all() for a, b in zip(previous, state)):
                break
            previous = state
        return up, down

    def _start(self, k: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        none, every = np.zeros(self.n, dtype=np.bool_), np.ones(self.n, dtype=np.bool_)
        return [none] + [every] * k, [none] + [every] * k

    def refutes(self, threshold: float, k: int) -> bool:
        """The sweeps prove ``OPT(k) > threshold`` (raises :class:`_Late` past the deadline)."""
        return self.fixpoint(threshold, k, *self._start(k)) is None

    def shaves(self, threshold: float, k: int) -> bool:
        """The sweeps with shaving (module docstring) prove ``OPT(k) > threshold``: every op,
        narrowest window of blocks first, forced into the blocks of its window in turn from
        each end until one stands (:meth:`_ends`), in passes until one shrinks no window
        (raises :class:`_Late` past the deadline)."""
        stood = self.stood.get(k)
        sets = self.fixpoint(threshold, k, *(stood[1] if stood and threshold <= stood[0] else self._start(k)))
        if sets is None:
            return True
        shrunk = True
        while shrunk:  # passes until one shrinks no window (module docstring)
            shrunk = False
            first = np.argmax(np.array(sets[0]), axis=0)  # earliest block of each op (U_k = V)
            last = k + 1 - np.argmax(np.array(sets[1]), axis=0)  # latest block (D_k = V)
            for v in np.argsort(last - first, kind="stable"):
                up, down = sets
                first_v, last_v = int(np.argmax([u[v] for u in up])), k + 1 - int(np.argmax([d[v] for d in down]))
                if first_v == last_v:
                    continue
                ends = self._ends(threshold, k, v, first_v, last_v, up, down)
                if ends is None:
                    return True
                lo, hi = ends
                if lo > first_v or hi < last_v:
                    window = _window(v, lo, hi, k, up, down)
                    shaved = self.fixpoint(threshold, k, *window)
                    if shaved is None:
                        return True
                    sets, shrunk = shaved, True
        if stood is None or threshold < stood[0]:
            self.stood[k] = threshold, sets
        return False

    def _ends(
        self, threshold: float, k: int, v: int, first: int, last: int, up: list[np.ndarray], down: list[np.ndarray]
    ) -> tuple[int, int] | None:
        """The first and the last block of ``first..last`` that the sweeps do not refute
        with op ``v`` forced into it, or ``None`` when they refute every one.  Only the
        window's ends shrink it, so the blocks between two that stand are not tried: the
        same window as trying all of them (a shaving pass on a 250-op layered graph tried
        every block of windows up to ``k`` wide)."""

        def stands(t: int) -> bool:
            return self.fixpoint(threshold, k, *_window(v, t, t, k, up, down)) is not None

        lo = next((t for t in range(first, last + 1) if stands(t)), None)
        if lo is None:
            return None
        return lo, next((t for t in range(last, lo, -1) if stands(t)), lo)


def _window(
    v: int, first: int, last: int, k: int, up: list[np.ndarray], down: list[np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Copies of ``up`` and ``down`` that put op ``v`` in blocks ``first..last`` only:
    outside ``U_j`` for ``j < first`` and outside ``D_m`` for ``m <= k - last``."""
    up, down = [u.copy() for u in up], [d.copy() for d in down]
    for j in range(first):
        up[j][v] = False
    for m in range(k - last + 1):
        down[m][v] = False
    return up, down


def reach_lower_bound(
    problem: Problem,
    lower: float,
    upper: float,
    time_limit: float | None = None,
    target: float | None = None,
    shave: bool = True,
    sweeps_first: bool = True,
    stood: Stood | None = None,
    probe: float = PROBE,
) -> ReachBound:
    """The reach bound (module docstring) at ``problem.k``: bisection for the largest
    threshold the sweeps refute in ``(lower, upper)``, ``lower`` a proven bound and
    ``upper`` the cost of a partition, until :data:`RTOL`; then, with ``shave`` and
    where the sweeps beat ``lower``, the same from there with shaving, until
    :data:`RTOL` or ``time_limit`` seconds (where the sweeps cannot beat the other
    bounds, e.g. REGAL-style graphs whose work dominates, shaving would not either).
    Each search gallops up from its lower end (``probe`` of the interval, then twice the
    step after each threshold refuted, at most ``GALLOP_CAP`` of the interval left) until a
    threshold stands, then bisects: where
    the test cannot beat the bound already known, one test says so, and a test that
    is stopped keeps the largest threshold refuted so far (a shaving test that stands
    costs a whole pass, 13 s on a 250-op layered graph at ``k = 8``; one it refutes
    near the bound, 2-9 s).  Last in each,
    ``target`` (a bound that would prove the partition optimal) is tried when the
    bisection left it open.  Without ``sweeps_first`` the sweeps' bisection is skipped
    and shaving's starts from ``lower`` (the caller's sweeps' bound: certify runs the
    sweeps at every k before it shares the time to shave among the ks they lead).  ``stood``
    (a dict, empty at first, for this problem only) keeps where shaving stood from one call
    to the next, so a later call's shaving starts from those sets (:attr:`_Sweeps.stood`).

    With a ``time_limit``, nothing starts where building the sweeps' data would take longer
    (:data:`SETUP_SECONDS_PER_ELEMENT`) or the time is spent, and no threshold is tested
    past the deadline: the result then holds no bound, nothing tried, and ``complete`` false."""
    t0 = time.perf_counter()
    deadline = np.inf if time_limit is None else t0 + time_limit
    if time_limit is not None:
        g = problem.graph
        if not time_limit > 0 or SETUP_SECONDS_PER_ELEMENT * (g.n + g.m) > time_limit:
            return ReachBound(None, 0, 0, False, time.perf_counter() - t0)
    sweeps = _Sweeps(problem, deadline, stood)
    if time.perf_counter() > deadline:  # the set-up took the time: no threshold is tested
        return ReachBound(None, 0, 0, False, time.perf_counter() - t0)
    best, lo, complete = None, float(lower), True
    tried = [0, 0]  # thresholds tested by the sweeps alone, and with shaving
    for stage, test in enumerate((sweeps.refutes, sweeps.shaves)):
        if stage == 0 and not sweeps_first:
            continue
        if stage == 1 and (not shave or (sweeps_first and best is None)):
            break
        hi = float(upper)
        step, galloping = probe * (hi - lo), True
        mid = lo + step
        try:
            while hi - lo > RTOL * hi:
                tried[stage] += 1
                if test(mid, problem.k):
                    best = lo = mid
                    step *= 2
                else:
                    hi, galloping = mid, False
                mid = lo + min(step, GALLOP_CAP * (hi - lo)) if galloping else 0.5 * (lo + hi)
            if target is not None and lo < target < hi:
                tried[stage] += 1
                if test(target, problem.k):
                    best = lo = target
        except _Late:
            tried[stage] -= 1
            complete = False
            break
    spared = int(sweeps.refusals.spared[0])
    return ReachBound(best, sum(tried), tried[1], complete, time.perf_counter() - t0, spared)
