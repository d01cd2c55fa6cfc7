"""The phases of one :func:`mtpp.certify` call (its module docstring says how the
budget is spent): the state of each k (:class:`Run`), the partition search, the ideal
DP for every open k at once, the MIPs per k with the cross-check, and the sharing of
bounds across k.  :mod:`mtpp.engine.certificate` composes them."""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from formulations.bounds import bound_record
from formulations.pigeonhole import MAX_MIPS, WIND_MIPS, PigeonholeBound, pigeonhole_bound, second_wind
from formulations.size import estimate_model_size
from heuristics.partition.anneal import Annealed, anneal_partition
from heuristics.partition.band_dp import band_dp, partition_order
from heuristics.partition.ideal_dp import IdealDpResult, ideal_dp_all
from heuristics.partition.ideals import enumerate_ideals
from heuristics.partition.merge_dp import merge_orders
from heuristics.partition.orderers import with_budget
from mtpp.bounds.clique import clique_lower_bounds
from mtpp.bounds.crossing import crossing_lower_bounds
from mtpp.bounds.reach import PROBE, RISING_PROBE, ReachBound, Stood, reach_lower_bound
from mtpp.core.evaluate import Evaluation, evaluate
from mtpp.core.problem import Problem
from mtpp.core.records import BOUND_METHODS, OPTIMALITY_TOLERANCE, BoundRecord, checked, closes, failed, skipped
from mtpp.engine.cross_check import CROSS_CHECK_TIME, cross_check
from mtpp.partitioner import partition
from solvers.registry import AutoBackend
from solvers.result import Status

QUICK_ORDERER = "kahn"
"""The first partition of every k: one SliceGraph pass, milliseconds (seconds at 20,000 ops)."""
QUICK_SHARE = 0.5
"""With a budget, each k's first partition may use this part of the time left, split evenly over
the ks still to do; a DP cut off there returns the best equal-work split (always feasible)."""
PARTITION_SHARE = 0.2
"""Part of the budget left that the orderer's search may use, split evenly over the ks still open."""
FINAL_RESERVE = 1.0
"""Seconds of a budget kept back from the last search for lifting and re-checking the partitions."""
ANNEAL_SHARE = 0.15
"""Part of the budget left after the first search that annealing (:func:`anneal_phase`) may use,
split over the open ks; the last search gives it half of its time again."""
ANNEAL_MOVES = 1 << 22
"""Without a budget, annealing makes this many moves per k (about half a second compiled at 150-500 ops),
at most :data:`ANNEAL_MOVES_PER_OP_SQUARED` times ``n^2`` (a tiny graph anneals in plain Python,
microseconds a move: 16,384 moves at 8 ops)."""
ANNEAL_MOVES_PER_OP_SQUARED = 256
MERGE_SHARE = 0.05
"""Part of the budget left that the last search leaves to the multi-order DP (:func:`merge_phase`):
at 250 and 500 ops it merges a dozen orders in 0.05-0.6 s per k."""
BAND_SHARE = 0.3
"""Part of the budget left after the bounds that the ideal DP on bands of the best partitions'
orders may use (:func:`band_phase`, before the last search, which takes what it leaves)."""
BANDS = (8, 12, 16, 24, 32)
"""The band widths :func:`band_phase` tries in turn, each until it finds nothing better."""
BAND_MAX_IDEALS = 1_000_000
"""A band of more ideals is not tried (about 2 s to enumerate on 250 ops)."""
BAND_IDEALS_PER_SECOND = 200_000
"""With less time left, a band gets at most this many ideals per second of it."""
SEARCH_MIN_DECODES = 2
"""The search runs at a k only if its share fits this many DPs as long as the first partition's
(its first decode repeats that partition's order)."""
SOLVER_STOP_SECONDS_PER_NONZERO = 5e-6
"""How late a MIP solver may stop after its time limit, per non-zero of the model: HiGHS 1.16's
presolve does not look at the clock in some steps (measured on layered graphs: the exact MIP at
2,000 ops and k = 8, 1.33 M non-zeros, stopped 3.2 s after a 2 s limit; the three-block MIP at
5,000 ops and k = 4, 1.55 M non-zeros, spent 7 s in its first presolve pass and once stopped
12 s after an 11.7 s limit on a loaded machine).  A MIP gets its share less this, and is
skipped when its share cannot cover it: a MIP stopped inside presolve proves nothing anyway."""
MIP_PHASE_ORDER = ("bottleneck", "exact", "guess")
"""The order the MIPs run in at each k (:mod:`mtpp.engine.certificate`)."""
STALLS_TO_SKIP = {"bottleneck": 2, "exact": 1, "guess": 1}
"""After how many ks where a MIP stopped at its time limit without lifting the bound of the
methods before it the MIP is not tried at the larger ks of a budgeted call.  One for the MIPs
whose models grow with k (k blocks; k sub-MIPs); two for the bottleneck MIP: its model does not
grow and its target ``W / k`` falls (on the earlier REGAL-style generator it stalled at k = 4
and gave the best bound at k = 8 and 16), but on 250- and 500-op layered graphs it stalled at
every k >= 4, 12 s each of a 120 s budget, while the crossing bound led."""
FALLBACK_SKIPPED = ("exact", "guess")
"""MIPs that a budgeted call with ``solver="auto"`` skips at a k where ``auto`` would not run
them on its first backend (Gurobi), whose pip licence refuses models of more than 2,000
variables or rows (:func:`weak_fallback`).  Unfinished, they never gave the best bound on the
graphs measured; on the fallback (SCIP) they rarely finish: REGAL-style graphs of 57-190 ops,
120 s for k = 2..64, the exact MIP ran 4-22 s per k on SCIP from k = 4 or 8 on and ended at
1,253 where the pigeonhole bound stood at 1,593 (57 ops, k = 8).  Unlike the stalls rule, this
needs no k to waste its time first."""
EXACT_FIRST_SHARE = 0.1
"""Part of the budget left that the exact MIP may take at a k when it runs before the
pigeonhole bound (:func:`exact_first_phase`)."""
DEMOTED = ("guess",)
"""MIPs that a budgeted call runs after the pigeonhole and reach bounds have gone on
(:mod:`mtpp.engine.certificate`), with what they leave: guess-the-bottleneck never gave a better
bound than the bottleneck MIP it refines (equal when both finished, below when stopped), and
the pigeonhole bound, which holds the bottleneck MIP's, still rose when resumed (REGAL-style,
57 ops, k = 8: 1,593 -> 1,633 in 10.6 s, where guess had ended at 1,382 after 13 s)."""
MIP_WEIGHTS = {"bottleneck": 2.0, "exact": 1.0, "guess": 1.0}
"""Each MIP's weight in the share of the budget: the bottleneck MIP gave the best bound at
most ks of REGAL-style graphs and was still rising when stopped (``benchmarks/wide_bounds.py``)."""
RESUME_WEIGHT = 1.0
"""The weight, beside the MIPs', of each other k whose pigeonhole updates
:func:`pigeonhole_resume_phase` will take on after them (:func:`pigeonhole_waits`; the MIP's
own k is left out: there the MIP may prove the k, which the updates cannot).  Without it,
where the larger ks had no MIP left to run (implied by the pigeonhole bound, or refused by
Gurobi's pip licence), the exact MIP of the smallest open k took all the budget left: on a
REGAL-style graph of 145 ops, 59 s of 120 at k = 4, ending below the pigeonhole bound there,
while the updates at k = 32, which rise with time (531 -> 550 with 120 s for that k alone),
got none."""
ENUMERATION_SHARE = 0.25
IDEALS_PER_SECOND = 100_000
IDEAL_BITS_PER_SECOND = 8e8
"""With a budget, the ideal lattice is capped at what a quarter of the time left enumerates at
the (slow) rate ``min(IDEALS_PER_SECOND, IDEAL_BITS_PER_SECOND / n)`` (each ideal is an ``n``-bit
set: measured 500,000 a second at 2,000 ops, 41,000 at 20,000)."""
DP_SHARE = 0.5
"""Part of the budget left that the ideal DP may use once its lattice is built: on a 250-op
layered graph of 1.9 M ideals it proved k = 2 and then ran out the whole 120 s budget on
the larger ks, leaving nothing to the other bounds (LB / UB 0.40 at k = 4, 0.80 with them)."""
CLIQUE_SHARE = 0.15
"""Part of the budget left that the clique bound's minimum cuts may use (at most ``time_limit``).
It runs after the other bounds: in certify at 120 s it never gave the best bound on the
REGAL-style and layered graphs of ``benchmarks/wide_bounds.py`` (on the shared 250-op layered
graph it reached 0.999 of the best at k = 2 and 0.24-0.85 at k = 4..64), and before them it
took 12 s of each 500-op layered graph's 120 (43 s of 300 at k = 16 alone)."""
CROSSING_SHARE = 0.1
"""Part of the budget left that the crossing bound's minimum cuts may use (at most ``time_limit``):
one per tensor (0.2-0.8 s on 500-op layered graphs), then the pairs of each net's members
(4-12 s there, lifting the bound by 1.5-3.5% at k = 4..32), then the pairs of nets that share
an op (about 8 s more for all 7,000; in the 11 s of a 120-s budget about 4,500 of them, the
heaviest first, which gave 9102 at k = 16 83,316 of the 83,405 that all give)."""
REACH_SHARE = 0.3
"""Part of the budget left that the reach bound's sweeps may use, split over the ks still
open smallest first (what one k leaves goes to the next; each at most ``time_limit``): on
250- and 500-op layered graphs their bisection takes 0.3-3 s per k and lifts k = 4 and 8 most."""
SHAVE_SHARE = 0.3
"""Part of the budget left after the sweeps that shaving's searches may use, split over the
ks where the sweeps beat the other bounds (:func:`reach_phase`): on a 250-op layered graph at
k = 8, 60 s of shaving lifted the sweeps' bound from 0.74 to 0.81 of the partition's cost; in
certify (dev layered seeds 9201-9202, 120 s) 0.3 did better than 0.5 at every k, the rest going
to the MIPs and the last partition search (geometric mean LB / UB at k = 8: 0.762 and 0.756)."""
PIGEONHOLE_SHARE = 0.3
"""Part of the budget left that the pigeonhole bound's MIPs may use, split over the open ks
smallest first (what one k leaves goes to the next; each at most ``time_limit``)."""
PIGEONHOLE_RESUME_GAP = 0.95
"""The updates go on where they stopped within this part of the best bound, not only where they
lead: they rise for a while (REGAL-style, 57 ops, k = 16: 903 when stopped after 6 s, below the
cut bound's 906; 945 after 31 s)."""
PIGEONHOLE_RESUME_SHARE = 0.85
"""Part of the budget the MIPs left that :func:`pigeonhole_resume_phase` may use where the
pigeonhole bound leads and was still going (nothing where it was not: the rest goes on to
the reach shaving, the clique bound and the last partition searches, while the spare core
anneals throughout).  Against 0.5, 120 s for k = 2..64: on REGAL-style dev graphs
9301-9306 the lower bounds at k = 4 / 8 / 16 / 32 rose 0.44 / 0.30 / 0.16 / 0.22%
(geometric mean, none lower), on unseen 8001-8004 0.28 / 0.50 / 0.64 / 0.43% (none lower),
and the partitions moved within their run-to-run noise (-1.4% to +0.4%).  On unseen layered
graphs 9101-9102 no resume ran (the pigeonhole bound is skipped there after its first MIP)."""
REACH_RESUME_SHARE = 0.75
"""Part of the budget the MIPs left that :func:`reach_resume_phase` may use where the reach
bound leads and its shaving did not finish, and where shaving never ran (before, half for
the first, then half of the rest for the second: the 0.75 they could take together).
The ks where the bound leads take their turns first, widest gap first (:func:`reach_resume_phase`);
with shaving's passes repeated until they shrink no window and the refusals kept per op
(:mod:`mtpp.bounds.reach`), against all ks widest gap first and one pass, 120 s for k = 2..64
on unseen layered graphs 9101-9104: the lower bounds at k = 8 / 16 rose 1.5 / 1.1% (geometric
mean; 9104 at k = 8 +2.6%, 9101 at k = 16 +4.3%; none fell by more than 0.03%), LB / UB at
k = 8 from 0.885 to 0.897; with the resumed search's first step :data:`mtpp.bounds.reach.RISING_PROBE`
as well, +3.5 / +1.1% (9102 at k = 8: 151,735 -> 162,409), LB / UB at k = 8 0.918."""
SHAVE_IO_HEAVY = 1.0
"""Where the sweeps did not lead, :func:`reach_resume_phase` shaves only on graphs whose tensors
(those with a consumer, ``size_out / B``) weigh at least this times the work: the reach bound
lives on input/output.  REGAL-style graphs weigh 0.25-0.28 (unseen seeds 8001-8002: shaving
lifted nothing in 0.5-2.7 s per k), layered ones 4.1-4.5."""
SHAVE_PASS_SWEEPS = 0.25
"""A shaving pass is taken to cost this many times the sweeps' seconds per threshold per op
(:func:`reach_resume_phase`; twice what it took on a 64-op layered graph at k = 8)."""
MIP_PROBE_SECONDS = 2.0
"""With a budget, where the pigeonhole MIP (one block: the smallest of the MIPs) solved none
of its weightings in this many seconds at a k and its bound stood below :data:`MIP_PROBE_GAP`
of the best bound there, the larger MIPs are skipped there and at the larger ks
(:func:`pigeonhole_phase`).  At the first k it runs at, its first weighting gets this long
before the rest of its share: a call for one k had no smaller k to probe for it (a 500-op
layered graph at k = 32: 24 s on one weighting, none solved)."""
MIP_PROBE_GAP = 0.5
"""See :data:`MIP_PROBE_SECONDS`.  Without this condition the rule skipped the bottleneck MIP
on REGAL-style graphs of 150-200 ops (HiGHS: too large for Gurobi's licence), whose simple
bound is 0.8 of the partition's cost and where that MIP had proven k = 2 optimal; on layered
graphs the best bound is 4-5 times the MIPs' starting point."""
PIGEONHOLE_STALLS = 2
"""After this many ks where the pigeonhole bound stopped at its time limit without lifting
the bound, it is not tried at the larger ks (on graphs whose one-block MIP a solver cannot
finish in its share, such as 250-op layered graphs on HiGHS, it proves little)."""
STALL_GAP = 1e-3
"""A method that stopped at its time limit without lifting the bound counts as no stall (for
:data:`PIGEONHOLE_STALLS` and :data:`STALLS_TO_SKIP`) at a k whose bound already stood within
this part of the partition's cost: nothing was left there to lift, so it says nothing of the
larger ks (unseen REGAL-style 8002 at k = 4: the simple bound within 6e-5 of the partition;
the pigeonhole bound's stall there skipped it at k = 16 in one of two runs)."""
MIN_RUN_SECONDS = 0.5
"""A method is skipped when less than this is left of the budget."""

Report = Callable[[str], None]
_ADOPT_LOCK = threading.Lock()


@contextmanager
def recorded_failure(runs: Sequence[Run], say: Report, *methods: str) -> Iterator[None]:
    """Run one phase of ``methods``; an exception inside it (a bug in that method: the
    methods record their own solver failures) becomes an ``error`` record of each
    bound method at every k where it had not recorded one yet (a note for a partition
    search), and the call goes on with what it has: no finished partition or bound is
    lost."""
    t0 = time.perf_counter()
    try:
        yield
    except Exception as exc:
        message = f"internal error: {type(exc).__name__}: {exc}"
        for run, method in itertools.product(runs, methods):
            if method not in BOUND_METHODS or any(r.method == method for r in run.records):
                run.notes.append(f"{method}: {message}")
            else:
                run.records.append(
                    BoundRecord(
                        method=method,
                        bound=None,
                        status="error",
                        proven_optimal=False,
                        wall_time=time.perf_counter() - t0,
                        message=message,
                    )
                )
        say(f"{', '.join(methods)}: {message}")


@dataclass(eq=False)
class Run:
    """The state of one k during a certify call."""

    problem: Problem
    best_eval: Evaluation
    best_order: np.ndarray
    source: str
    records: list[BoundRecord]
    notes: list[str]
    interrupted: bool = False
    decode_seconds: float = 0.0
    """What one SliceGraph DP costs at this k: the first partition's time (its time limit
    if the DP was cut off there); the search is sized by it."""
    search_pace: float = 0.0
    """Evaluations a second of the last search at this k (0 before any)."""
    found: list[np.ndarray] = field(default_factory=list)
    """The best order of every partition search at this k, for :func:`merge_phase`."""
    implied: dict[str, str] = field(default_factory=dict)
    """Methods :func:`mip_phase` skips at this k, and why: another method already proved their
    bound, or the smallest MIP showed theirs out of reach."""
    reach_rising: bool = False
    """The reach bound's sweeps beat the other bounds at this k and its shaving did not finish
    (the clock stopped it or it had no time): :func:`reach_resume_phase` goes on."""
    reach_pace: float | None = None
    """Where the reach bound's sweeps did not beat the other bounds at this k (so shaving never
    ran), their seconds per threshold; :func:`reach_resume_phase` shaves there last."""
    pigeonhole: PigeonholeBound | None = None
    """The pigeonhole bound's last result at this k, for :func:`pigeonhole_resume_phase`."""
    reach_stood: Stood = field(default_factory=dict)
    """Where the reach bound's shaving stood at this k, for its next search
    (:func:`mtpp.bounds.reach.reach_lower_bound`)."""

    @property
    def ub(self) -> float:
        return self.best_eval.bottleneck

    @property
    def ub_hi(self) -> float:
        """The upper bound rounded up by the evaluator's bound on its rounding error."""
        return self.best_eval.upper_bound

    @property
    def proving(self) -> float:
        """A lower bound that reaches this proves the partition optimal (:func:`mtpp.core.records.closes`)."""
        return self.ub_hi * (1.0 - 0.5 * OPTIMALITY_TOLERANCE)

    @property
    def lb(self) -> float:
        return max(r.bound for r in self.records if r.bound is not None)

    def adopt(self, candidate: Evaluation, order: np.ndarray, source: str) -> bool:
        """Take ``candidate`` (already re-checked at this k) if it is better (one at a time:
        :mod:`mtpp.engine.background` adopts from its own thread)."""
        with _ADOPT_LOCK:
            if candidate.bottleneck >= self.best_eval.bottleneck:
                return False
            self.best_eval, self.best_order, self.source = candidate, order, source
            return True


def search_phase(
    runs: list[Run],
    orderer: str,
    seed: int,
    time_limit: float,
    left: Callable[[], float],
    say: Report,
    tag: Callable[[Problem], str],
    total: float | None = None,
    fill: bool = False,
) -> None:
    """The user's orderer (BRKGA by default) for every k still open, each with an
    even share of ``total`` seconds (default ``PARTITION_SHARE`` of the budget left when
    the phase starts; a search that stops early leaves its time to the next) and at
    most ``time_limit`` (like every method); a better partition is adopted at its k and
    at every larger k.
    A k whose share cannot fit :data:`SEARCH_MIN_DECODES` DPs as long as its first
    partition's is skipped with a note (at 20,000 ops one DP takes seconds).
    With ``fill``, an orderer with an evaluation budget (``brkga-N``, ``random-T``, ...)
    gets the budget that fills its share at the pace of the last search at that k
    (the share still caps it), never less than its own: a fresh, larger search beat both the
    default and one seeded with the best order so far (REGAL-style graphs at k = 8 and
    16, 60,000 evaluations: 2.7% and 4.4% below brkga-10000, seeded 1.6% and 4.2%)."""
    open_runs = [r for r in runs if not closes(r.lb, r.ub_hi)]
    if total is None:
        total = PARTITION_SHARE * left()
    phase_end = None if math.isinf(total) else time.perf_counter() + total
    for i, run in enumerate(open_runs):
        share = (
            time_limit
            if phase_end is None
            else min(time_limit, (phase_end - time.perf_counter()) / (len(open_runs) - i))
        )
        if share < MIN_RUN_SECONDS:
            break
        need = SEARCH_MIN_DECODES * run.decode_seconds
        if share < need:
            note = (
                f"partition search ({orderer}) skipped: one SliceGraph DP takes about {run.decode_seconds:.2g} s "
                f"here, and {SEARCH_MIN_DECODES} do not fit in its {share:.2g} s share of the budget"
            )
            run.notes.append(note)
            say(f"{tag(run.problem)}{note}")
            continue
        name = orderer
        if fill and run.search_pace > 0:
            name = with_budget(orderer, int(run.search_pace * share)) or orderer
        sol = partition(run.problem, orderer=name, seed=seed, time_limit=share, presolve=False)
        run.search_pace = sol.evaluations / max(sol.wall_time, 1e-9)
        run.found.append(sol.index_order)
        source = f"slicegraph ({sol.orderer}, seed {seed})"
        share_partition(runs, run, sol.evaluation, sol.index_order, source, say, tag)


def share_partition(
    runs: list[Run],
    run: Run,
    found: Evaluation,
    order: np.ndarray,
    source: str,
    say: Report,
    tag: Callable[[Problem], str],
) -> bool:
    """Adopt a partition found at ``run``'s k there (saying so if it is better) and, re-checked,
    at every larger k: a partition into at most k blocks is one into more.  Whether it was
    better at ``run``'s k."""
    better = run.adopt(found, order, source)
    if better:
        say(f"{tag(run.problem)}partition: {source}: upper bound {run.ub:.6g}")
    for other in runs:
        if other.problem.k > run.problem.k:
            other.adopt(
                evaluate(other.problem, found.assignment, order), order, f"{source}, found for k={run.problem.k}"
            )
    return better


def anneal_phase(
    runs: list[Run],
    time_limit: float,
    left: Callable[[], float],
    say: Report,
    tag: Callable[[Problem], str],
    total: float | None = None,
    seed: int = 0,
) -> None:
    """Simulated annealing (:func:`heuristics.partition.anneal.anneal_partition`) from the best
    partition of every open k, smallest first, each with an even share of ``total`` seconds
    (default :data:`ANNEAL_SHARE` of the budget left; what one k leaves goes to the next; at
    most ``time_limit``), or :data:`ANNEAL_MOVES` moves without a budget; a better partition
    is adopted at its k and every larger k (re-checked by the evaluator), and its order
    joins the others for :func:`merge_phase`.  It moves one op at a time between blocks, so
    it reshapes blocks that no order's slicing reaches (REGAL-style and layered graphs of
    150-250 ops, k = 8 and 16: 5-12% below brkga-10000 in 3 s)."""
    open_runs = [r for r in runs if not closes(r.lb, r.ub_hi)]
    budgeted = math.isfinite(left())
    if total is None:
        total = ANNEAL_SHARE * left()
    stop = time.perf_counter() + total
    for i, run in enumerate(open_runs):
        problem = run.problem
        if budgeted:
            share = min(time_limit, (stop - time.perf_counter()) / (len(open_runs) - i))
            if share < MIN_RUN_SECONDS:
                break
            res = anneal_partition(problem, run.best_eval.assignment, time_limit=share, seed=seed, stop_at=run.lb)
        else:
            moves = min(ANNEAL_MOVES, ANNEAL_MOVES_PER_OP_SQUARED * problem.graph.n**2)
            res = anneal_partition(
                problem, run.best_eval.assignment, time_limit=time_limit, seed=seed, moves=moves, stop_at=run.lb
            )
        if res is not None:
            share_annealed(runs, run, res, "annealing", say, tag)


def fill_phase(
    runs: list[Run],
    orderer: str,
    seed: int,
    time_limit: float,
    left: Callable[[], float],
    say: Report,
    tag: Callable[[Problem], str],
) -> None:
    """What the bounds left of a budget (every k proven, MIPs finished or skipped as
    stalled) after :func:`band_phase`, less :data:`MERGE_SHARE` of it for :func:`merge_phase` and
    :data:`FINAL_RESERVE`: annealing again from the best partitions (half of it), then a
    larger search on another stream of the orderer (the rest), in rounds until that time
    is spent or every k is proven.  ``time_limit`` caps each k's annealing and search in a
    round, so one round can leave most of a long budget (``budget=1200`` for k = 8 and 16
    on a 72-op graph returned after 293 s with one); each round anneals and searches on
    streams of its own.  A later round whose search would not fit at every open k
    (:data:`SEARCH_MIN_DECODES` DPs) only anneals, with all of what is left."""
    end = time.perf_counter() + (1.0 - MERGE_SHARE) * left() - FINAL_RESERVE
    for again in itertools.count():
        start = time.perf_counter()
        open_runs = [r for r in runs if not closes(r.lb, r.ub_hi)]
        if end - start < MIN_RUN_SECONDS or not open_runs:
            return
        slowest = max(MIN_RUN_SECONDS, SEARCH_MIN_DECODES * max(r.decode_seconds for r in open_runs))
        search = not again or end - start >= len(open_runs) * slowest  # else it would only say it was skipped
        total = 0.5 * (end + FINAL_RESERVE - start) if search else end - start
        anneal_phase(runs, time_limit, left, say, tag, total=total, seed=seed + 1 + again)
        if search:
            total = end - time.perf_counter()
            search_phase(runs, orderer, seed + 1 + again, time_limit, left, say, tag, total=total, fill=True)
        if time.perf_counter() - start < MIN_RUN_SECONDS:  # nothing fit in what is left
            return


def share_annealed(
    runs: list[Run], run: Run, res: Annealed, source: str, say: Report, tag: Callable[[Problem], str]
) -> bool:
    """Re-check an annealed partition and share it (:func:`share_partition`), its order (block by
    block, so its blocks are segments of it) joining the others for :func:`merge_phase`.  Whether
    it was better at ``run``'s k."""
    problem = run.problem
    found = evaluate(problem, res.assignment)
    order = np.asarray(problem.graph.topological_order, dtype=np.int64)
    order = order[np.argsort(res.assignment[order], kind="stable")]
    run.found.append(order)
    return share_partition(runs, run, found, order, f"{source} ({res.moves:,} moves)", say, tag)


def band_phase(
    runs: list[Run], time_limit: float, left: Callable[[], float], say: Report, tag: Callable[[Problem], str]
) -> None:
    """The ideal DP on bands of each open k's best partition's order
    (:func:`heuristics.partition.band_dp.band_dp`: every block boundary may move by up to
    the band's width, each op on its own), smallest k first, each with an even share of
    :data:`BAND_SHARE` of what the bounds left (at most ``time_limit``):
    the widths of :data:`BANDS` in turn, each again from every better partition it finds,
    a better partition adopted at its k and every larger k.  It reshapes what annealing,
    one op at a time, left stuck: after a 60-s certify, layered graphs of 110-200 ops at
    k = 16 from 23,311 / 31,245 / 32,811 / 53,669 to 22,977 / 29,836 / 32,460 / 51,351
    (seeds 8131, 8132, 8141, 8142; the first two are their proven optima).  In
    certify (120 s, k = 2..64, layered seeds 8161-8164 of 130-200 ops) it lowered 4 of the
    12 partitions at k = 8 / 16 / 32 by 0.7-3.9% in 6-20 s (the fill after it beat one of the
    four); at 250 ops (seeds 9101, 9103) it found nothing in 7-10 s."""
    open_runs = [r for r in runs if not closes(r.lb, r.ub_hi) and not r.problem.peak_aware]
    total = BAND_SHARE * (left() - FINAL_RESERVE)
    stop = time.perf_counter() + total
    for i, run in enumerate(open_runs):
        end = time.perf_counter() + min(time_limit, (stop - time.perf_counter()) / (len(open_runs) - i))
        for band in BANDS:
            while end - time.perf_counter() >= MIN_RUN_SECONDS and not closes(run.lb, run.ub_hi):
                seconds = end - time.perf_counter()
                ideals = int(min(BAND_MAX_IDEALS, BAND_IDEALS_PER_SECOND * seconds))
                res = band_dp(run.problem, run.best_eval.assignment, band, run.ub, ideals, seconds)
                if res is None:
                    break
                order = partition_order(run.problem, res[1])
                found = evaluate(run.problem, res[1], order)
                if not share_partition(runs, run, found, order, f"ideal DP on a band of {band}", say, tag):
                    break
                run.found.append(order)


def merge_phase(
    runs: list[Run], time_limit: float, left: Callable[[], float], say: Report, tag: Callable[[Problem], str]
) -> None:
    """The multi-order DP (:func:`heuristics.partition.merge_dp.merge_orders`) at every open k,
    smallest first, over the best order of this k and then the orders every search found,
    nearest k first: its blocks may start at a prefix of one order and end at a prefix of
    another, so it never does worse than the best of them.  Each k gets an even share of
    the budget left (at most ``time_limit``); a better partition is adopted at its k and
    every larger k, and its order joins the others for the larger ks.  Orders from
    independent searches at other ks make the difference: a single search's elite is too
    alike (250-op layered graph, two brkga-4000 orders per k at k = 4..32: 1.2-3.2% lower
    at k = 8, 16, 32, 0.1 s per k)."""
    open_runs = [r for r in runs if not closes(r.lb, r.ub_hi)]
    for i, run in enumerate(open_runs):
        share = min(time_limit, (left() - FINAL_RESERVE) / (len(open_runs) - i))
        if share < MIN_RUN_SECONDS / 10:
            break
        near = sorted(runs, key=lambda r: abs(math.log(r.problem.k / run.problem.k)))
        orders = [run.best_order] + [r.best_order for r in near] + [o for r in near for o in reversed(r.found)]
        seg = merge_orders(run.problem, orders, run.ub, run.lb, deadline=time.perf_counter() + share)
        if seg is None:
            continue
        run.found.append(seg.order)
        found = evaluate(run.problem, seg.assignment, seg.order)
        share_partition(runs, run, found, seg.order, "multi-order DP", say, tag)


def ideal_dp_phase(
    runs: list[Run], max_ideals: int, left: Callable[[], float], say: Report, tag: Callable[[Problem], str]
) -> None:
    """The exact DP for every k not yet proven optimal, all in one call with
    ``DP_SHARE`` of what is left of the budget (:func:`heuristics.partition.ideal_dp.ideal_dp_all`: smallest k
    first, one lattice and every chain found shared across the ks, so the optimum at
    k is a tight upper bound at the next k); a better partition is adopted at its k
    and at every larger k (re-checked there); a lower bound already proven for a
    larger k serves as the DP's target."""
    open_runs = [r for r in runs if not closes(r.lb, r.ub_hi)]
    for run in runs:
        if run not in open_runs:
            run.records.append(skipped("ideal-dp", "the partition is already proven optimal"))
    if not open_runs:
        return
    if left() < MIN_RUN_SECONDS:
        for run in open_runs:
            run.records.append(skipped("ideal-dp", "the budget is spent"))
        return
    t0 = time.perf_counter()
    rate = min(IDEALS_PER_SECOND, IDEAL_BITS_PER_SECOND / max(runs[0].problem.graph.n, 1))
    cap = max_ideals if math.isinf(left()) else min(max_ideals, int(ENUMERATION_SHARE * left() * rate))
    lattice = enumerate_ideals(runs[0].problem.graph, cap)
    t_enum = time.perf_counter() - t0
    if lattice is None:
        message = f"more than {cap} ideals: the graph is too wide for the ideal DP" + (
            "" if cap == max_ideals else " in the time left"
        )
        for run in open_runs:
            run.records.append(
                BoundRecord(
                    method="ideal-dp",
                    bound=None,
                    status="too_wide",
                    proven_optimal=False,
                    wall_time=t_enum,
                    message=message,
                )
            )
        say(f"ideal-dp: {message} ({t_enum:.2f} s)")
        return
    say(f"ideal lattice: {lattice.count} ideals ({t_enum:.2f} s)")
    todo, targets = [], []
    for run in open_runs:
        lb = max([run.lb, *(r.lb for r in runs if r.problem.k > run.problem.k)])
        if closes(lb, run.ub_hi):
            run.records.append(skipped("ideal-dp", "proven optimal by a bound shared from a larger k"))
        else:
            todo.append(run)
            targets.append(lb)
    if not todo:
        return
    budget = DP_SHARE * left()
    results = ideal_dp_all(
        todo[0].problem,
        [run.problem.k for run in todo],
        upper_bounds=[run.ub for run in todo],
        lower_bounds=targets,
        lattice=lattice,
        time_limit=None if math.isinf(budget) else budget,
    )
    for i, (run, res) in enumerate(zip(todo, results)):
        problem = run.problem
        record = dp_record(res, problem.peak_aware, t_enum if i == 0 else 0.0)
        if res.assignment is not None:
            found = evaluate(problem, res.assignment)
            order = problem.graph.topological_order
            if run.adopt(found, order, "ideal DP"):
                say(f"{tag(problem)}ideal DP found a better partition: {found.bottleneck:.6g}")
            for other in runs:
                if other.problem.k > problem.k:
                    other.adopt(evaluate(other.problem, res.assignment), order, f"ideal DP, found for k={problem.k}")
        record = checked(record, run.ub_hi)  # at once: a failed DP must not make the other methods skip
        run.records.append(record)
        if res.status == "optimal" and record.bound is not None and not closes(record.bound, run.ub_hi):
            run.notes.append(
                f"ideal DP: the rounding error of this graph's magnitudes (up to {res.rounding:.3g} "
                f"per block) keeps its optimum {res.value!r} from a proof; it proves "
                f"{record.bound!r}"
            )
        say(
            f"{tag(problem)}ideal-dp: {record.status}"
            + (f", bound {record.bound:.6g}" if record.bound is not None else f" ({record.message})")
        )


def _open_runs(runs: list[Run], method: str, limit: float) -> tuple[list[Run], float]:
    """The runs not yet proven optimal, and ``limit``; a skip record for ``method`` in
    every other run, and in every run (no runs returned) when ``limit`` is below
    :data:`MIN_RUN_SECONDS`."""
    open_runs = [r for r in runs if not closes(r.lb, r.ub_hi)]
    for run in runs:
        if run not in open_runs:
            run.records.append(skipped(method, "the partition is already proven optimal"))
    if open_runs and limit < MIN_RUN_SECONDS:
        for run in open_runs:
            run.records.append(skipped(method, "the budget is spent"))
        return [], limit
    return open_runs, limit


def crossing_phase(
    runs: list[Run], time_limit: float, left: Callable[[], float], say: Report, tag: Callable[[Problem], str]
) -> None:
    """The crossing bound (:mod:`mtpp.bounds.crossing`) for every k not yet proven
    optimal, one set of minimum cuts for all of them (per tensor, then per pair of its
    net's members), within ``CROSSING_SHARE`` of the budget left and ``time_limit``."""
    open_runs, limit = _open_runs(runs, "crossing", min(time_limit, CROSSING_SHARE * left()))
    if not open_runs:
        return
    res = crossing_lower_bounds(open_runs[0].problem, [r.problem.k for r in open_runs], time_limit=limit)
    cover = (
        f"{res.nets} of {res.total_nets} tensors' nets cut, {res.paired} with their members' pairs, "
        f"{res.net_pairs} of {res.total_net_pairs} pairs of nets that share an op"
    )
    for run in open_runs:
        k = run.problem.k
        record = BoundRecord(
            method="crossing",
            bound=res.bounds[k],
            status="optimal" if res.complete else "time_limit",
            proven_optimal=False,
            wall_time=res.wall_time,
            message=f"work plus every tensor once per block its net must meet below the bound, over k; {cover}",
        )
        run.records.append(checked(record, run.ub_hi))
        say(f"{tag(run.problem)}crossing: {res.bounds[k]:.6g} ({cover}, {res.wall_time:.2f} s)")


def reach_phase(
    runs: list[Run], time_limit: float, left: Callable[[], float], say: Report, tag: Callable[[Problem], str]
) -> None:
    """The reach bound (:mod:`mtpp.bounds.reach`) for every k not yet proven optimal:
    first the sweeps' search (galloping, then bisection) at each k, smallest first,
    between its best bound so far and its partition's cost, within its part of
    ``REACH_SHARE`` of the budget left; then, only with a budget, shaving's search
    from the sweeps' bound at the ks where
    the sweeps beat the other bounds, within ``SHAVE_SHARE`` of what is left (each part
    at most ``time_limit``; what one k leaves goes to the next).  Without a budget the
    phase stops after the sweeps (well under a second per k at 250 ops).  A k whose first
    threshold was not decided within its part (the first call compiles the sweeps' step: 5.3 s
    on a 250-op layered graph at k = 4, where the search then takes 0.5 s) is tried once more
    with what the others left of the phase."""
    open_runs, _ = _open_runs(runs, "reach", REACH_SHARE * left())
    found: list[tuple[Run, float, ReachBound]] = []
    stop = time.perf_counter() + REACH_SHARE * left()
    for i, run in enumerate(open_runs):
        limit = min(time_limit, (stop - time.perf_counter()) / (len(open_runs) - i))
        if limit < MIN_RUN_SECONDS:
            run.records.append(skipped("reach", "the budget is spent"))
            continue
        found.append((run, run.lb, reach_lower_bound(run.problem, run.lb, run.ub, limit, run.proving, shave=False)))
    for i, (run, lower, res) in enumerate(found):  # a first test that ran out of its share: once more
        limit = min(time_limit, stop - time.perf_counter())
        if res.tried == 0 and not res.complete and math.isfinite(stop) and limit >= MIN_RUN_SECONDS:
            again = reach_lower_bound(run.problem, lower, run.ub, limit, run.proving, shave=False)
            found[i] = run, lower, replace(again, wall_time=res.wall_time + again.wall_time)
    leading = [(run, res.bound, res.wall_time) for run, _, res in found if res.bound is not None]
    leading = [(run, bound, seconds) for run, bound, seconds in leading if not closes(bound, run.ub_hi)]
    shaved: dict[int, ReachBound] = {}
    stop = time.perf_counter() + SHAVE_SHARE * left()
    for i, (run, bound, seconds) in enumerate(leading if math.isfinite(left()) else []):
        limit = min(time_limit - seconds, (stop - time.perf_counter()) / (len(leading) - i))
        if limit >= MIN_RUN_SECONDS:
            shaved[id(run)] = reach_lower_bound(
                run.problem, bound, run.ub, limit, run.proving, sweeps_first=False, stood=run.reach_stood
            )
    for run, _, _ in leading:
        more = shaved.get(id(run))
        run.reach_rising = more is None or not more.complete
    heavy = bool(found) and io_heavy(found[0][0].problem)  # one graph for every k
    for run, _, res in found:
        if heavy and res.tried and all(run is not other for other, _, _ in leading):
            run.reach_pace = res.wall_time / res.tried
    for run, lower, res in found:
        more = shaved.get(id(run))
        best = res.bound if more is None or more.bound is None else more.bound
        tried, with_shaving = res.tried + (0 if more is None else more.tried), 0 if more is None else more.tried
        complete = res.complete and (more is None or more.complete)
        seconds = res.wall_time + (0.0 if more is None else more.wall_time)
        what = f"{tried} thresholds tried between {lower:.6g} and {run.ub:.6g}, {with_shaving} with shaving"
        record = BoundRecord(
            method="reach",
            bound=best,
            status="optimal" if complete else "time_limit",
            proven_optimal=False,
            wall_time=seconds,
            message=f"no chain of k blocks below the bound covers the graph; {what}"
            + ("" if best is not None else ", none refuted"),
        )
        run.records.append(checked(record, run.ub_hi))
        say(f"{tag(run.problem)}reach: {'none' if best is None else f'{best:.6g}'} ({what}, {seconds:.2f} s)")


def _little_left(run: Run) -> bool:
    """Whether ``run``'s bound stands within :data:`STALL_GAP` of its partition's cost."""
    return run.lb >= run.ub_hi * (1.0 - STALL_GAP)


def pigeonhole_phase(
    runs: list[Run],
    solver: str,
    threads: int,
    time_limit: float,
    left: Callable[[], float],
    say: Report,
    tag: Callable[[Problem], str],
) -> None:
    """The weighted pigeonhole bound (:mod:`formulations.pigeonhole`) for every k not yet
    proven optimal, smallest first, each within its part of ``PIGEONHOLE_SHARE`` of the
    budget left (at most ``time_limit``), stopping at the partition's cost; after
    :data:`PIGEONHOLE_STALLS` ks where it ran out of time without lifting the bound (and more
    than :data:`STALL_GAP` was left to lift) it is skipped at the larger ks.  Where it solved
    the ``work`` weighting and no parameters overflow, its bound holds the bottleneck MIP's
    optimum and :func:`mip_phase` skips that MIP.
    Each k after the first seeds its updates with the best weighting of the last k that had one
    (``pigeonhole_bound(seed=...)``: REGAL-style dev graphs, 12 s per k, +3.6% at k = 32).
    With a budget, where it solved no weighting in :data:`MIP_PROBE_SECONDS` or more and stands
    below :data:`MIP_PROBE_GAP` of the best bound, :func:`mip_phase` skips every MIP at that k,
    and this bound and every MIP are skipped at the larger ks (a 250-op layered graph, HiGHS: the
    pigeonhole MIP reached 1.2 times the simple bound in 7 s at k = 8, where the bottleneck,
    exact and guess MIPs then ended at the simple bound after 25 s together, a fifth of a 120 s
    budget, while the reach bound stood at 5 times it; on 500-op layered graphs it solved no
    weighting in 4 s at k = 4, and again at k = 8 before this skipped it there).  At the first k
    it runs at, its first weighting is that probe: the updates go on with the rest of its time
    (``resume``) unless it solved none in :data:`MIP_PROBE_SECONDS` and stands below that part."""
    share = PIGEONHOLE_SHARE * left()
    open_runs, _ = _open_runs(runs, "pigeonhole", share)
    stop = time.perf_counter() + share
    stalls: list[int] = []
    out_of_reach = ""
    seed = None  # the best weighting of a smaller k: the next k's seed (formulations.pigeonhole)
    probed = False  # the first k it runs at has probed its first MIP (MIP_PROBE_SECONDS)
    for i, run in enumerate(open_runs):
        problem = run.problem
        if run.interrupted:
            break
        if len(stalls) >= PIGEONHOLE_STALLS or out_of_reach:
            at = ", ".join(f"k={k}" for k in stalls)
            run.records.append(skipped("pigeonhole", f"it ran out of time without lifting the bound at {at}"))
            run.implied.update(dict.fromkeys(MIP_PHASE_ORDER, out_of_reach) if out_of_reach else {})
            continue
        limit = min(time_limit, (stop - time.perf_counter()) / (len(open_runs) - i))
        if limit < MIN_RUN_SECONDS:
            run.records.append(skipped("pigeonhole", "the budget is spent"))
            continue
        before, tight, t0 = run.lb, _little_left(run), time.perf_counter()
        probing, probed = not probed and math.isfinite(left()) and limit > MIP_PROBE_SECONDS, True
        try:
            res = pigeonhole_bound(
                problem, solver=solver, time_limit=MIP_PROBE_SECONDS if probing else limit, target=run.proving,
                max_mips=1 if probing else MAX_MIPS, threads=threads, seed=seed,
            )  # fmt: skip
            if probing and not _unsolved_and_low(res, run) and (res.bound or 0.0) < run.proving:
                res = pigeonhole_bound(
                    problem, solver=solver, time_limit=limit - res.wall_time, target=run.proving, resume=res.updates,
                    threads=threads,
                )  # fmt: skip
        except KeyboardInterrupt:
            run.records.append(failed("pigeonhole", solver, t0, "interrupted", "interrupted by the user"))
            run.interrupted = True
            break
        except Exception as exc:  # a solver failure must not break the certificate
            run.records.append(failed("pigeonhole", solver, t0, "error", f"{type(exc).__name__}: {exc}"))
            continue
        found = getattr(res.updates, "best_weights", None)
        seed = found if found is not None else seed
        record = _pigeonhole_record(run, res)
        run.records.append(record)
        if res.work_solved and not problem.has_overflow and record.bound is not None:
            run.implied["bottleneck"] = "the pigeonhole bound solved its work weighting, this MIP's block"
        if res.status is Status.TIME_LIMIT and (record.bound or 0.0) <= before and not tight:
            stalls.append(problem.k)
        probed_long = probing or res.wall_time >= MIP_PROBE_SECONDS
        if _unsolved_and_low(res, run) and probed_long and math.isfinite(left()):
            out_of_reach = (
                f"the pigeonhole MIP (one block, the smallest of the MIPs) solved no weighting in "
                f"{res.wall_time:.2g} s at k={problem.k} and stood below {MIP_PROBE_GAP:g} of the best bound: "
                "this larger MIP would not lift the bound in its share"
            )
            run.implied.update(dict.fromkeys(MIP_PHASE_ORDER, out_of_reach))
        shown = "none" if record.bound is None else f"{record.bound:.6g}"
        say(f"{tag(problem)}pigeonhole: {shown} ({res.message}, {res.wall_time:.2f} s)")


def _unsolved_and_low(res: PigeonholeBound, run: Run) -> bool:
    """The pigeonhole bound's clock stopped it before it solved a weighting, below
    :data:`MIP_PROBE_GAP` of ``run``'s best bound (:data:`MIP_PROBE_SECONDS`)."""
    return res.optimal == 0 and res.status is Status.TIME_LIMIT and (res.bound or 0.0) < MIP_PROBE_GAP * run.lb


def pigeonhole_resume_phase(
    runs: list[Run],
    solver: str,
    threads: int,
    left: Callable[[], float],
    say: Report,
    tag: Callable[[Problem], str],
) -> None:
    """Where the pigeonhole bound leads at a k not yet proven optimal, or stands within
    :data:`PIGEONHOLE_RESUME_GAP` of the best bound, and the clock stopped its updates, they
    go on (``pigeonhole_bound(resume=...)``) after the MIPs, smallest k first, within
    :data:`PIGEONHOLE_RESUME_SHARE` of the budget left, each k with the part of the time left
    that its relative gap ``1 - LB / UB`` has among the gaps still waiting (what one k leaves
    goes to the next; as :func:`reach_resume_phase` shares its time).  Against an even split,
    120 s for k = 2..64, geometric mean LB / UB at k = 4 / 8 / 16 / 32: unseen REGAL-style
    8001-8004 0.984 / 0.969 / 0.925 / 0.941 -> 0.982 / 0.966 / 0.936 / 0.942, dev 9311-9314
    0.986 / 0.957 / 0.929 / 0.906 -> 0.988 / 0.956 / 0.923 / 0.923 (one run each; single ks move
    about 1% from run to run, but the widest gap narrowed on both sets).  The updates still rise
    where the gap is widest: on 8004 (199 ops) at k = 16 they reached 2,201 in certify's 120 s
    for six ks, and 2,290 in 240 s for k = 16 and 32 alone.
    Then, where they stalled instead (no progress for a while, or ``max_mips``), they go on with
    a second wind (:func:`formulations.pigeonhole.second_wind`: a fresh, slower step), up to
    :data:`WIND_MIPS` more MIPs, after the resumes and in the same share (a wind first, at k = 4..16,
    took the time a resume at k = 32 had lifted its bound with: REGAL-style 8004, 1,139 -> 1,137);
    the k's pigeonhole record is replaced by the best over the calls."""
    near = [r for r in runs if pigeonhole_waits(r)]
    rising = [r for r in near if r.pigeonhole is not None and r.pigeonhole.resumable]
    rising += [r for r in near if r.pigeonhole is not None and not r.pigeonhole.resumable]
    stop = time.perf_counter() + PIGEONHOLE_RESUME_SHARE * left()
    for i, run in enumerate(rising):
        if closes(run.lb, run.ub_hi):  # the spare core's annealing may have closed it meanwhile
            continue
        limit = _gap_part(run, [other for other in rising[i:] if not closes(other.lb, other.ub_hi)], stop)
        if limit < MIN_RUN_SECONDS:
            continue
        before, t0 = run.lb, time.perf_counter()
        earlier = run.pigeonhole.updates if run.pigeonhole is not None else None
        wind = earlier is not None and second_wind(earlier)
        mips = earlier.mips + WIND_MIPS if wind and earlier is not None else MAX_MIPS
        try:
            res = pigeonhole_bound(
                run.problem,
                solver=solver,
                time_limit=limit,
                target=run.proving,
                max_mips=mips,
                resume=earlier,
                threads=threads,
            )
        except KeyboardInterrupt:
            run.interrupted = True
            return
        except Exception as exc:  # the first call's record stands
            say(f"{tag(run.problem)}pigeonhole, resumed: {type(exc).__name__}: {exc}")
            continue
        at = max(j for j, r in enumerate(run.records) if r.method == "pigeonhole")
        run.records[at] = _pigeonhole_record(run, res)
        say(
            f"{tag(run.problem)}pigeonhole, {'second wind' if wind else 'resumed'}: {before:.6g} -> {run.lb:.6g} "
            f"({res.message}, {time.perf_counter() - t0:.2f} s more)"
        )


def pigeonhole_waits(run: Run) -> bool:
    """:func:`pigeonhole_resume_phase` would take the pigeonhole bound on at ``run``'s k:
    it stands within :data:`PIGEONHOLE_RESUME_GAP` of the best bound of an open k, and its
    updates were stopped by the clock or stalled (a second wind may take them on)."""
    ph = run.pigeonhole
    return (
        ph is not None
        and ph.updates is not None
        and (ph.resumable or ph.updates.stalled)
        and not run.interrupted
        and not closes(run.lb, run.ub_hi)
        and ph.bound is not None
        and ph.bound >= PIGEONHOLE_RESUME_GAP * run.lb
    )


def io_heavy(problem: Problem) -> bool:
    """The tensors with a consumer weigh at least :data:`SHAVE_IO_HEAVY` times the work."""
    return problem.consumed_io >= SHAVE_IO_HEAVY * float(problem.graph.work.sum())


def reach_resume_phase(
    runs: list[Run], time_limit: float, left: Callable[[], float], say: Report, tag: Callable[[Problem], str]
) -> None:
    """Shaving (:func:`mtpp.bounds.reach.reach_lower_bound`) after the MIPs, from the best
    bound to the partition's cost, within :data:`REACH_RESUME_SHARE` of the budget left
    (with the k's first reach search at most ``time_limit``); a higher bound replaces the
    k's reach record.  It goes on where the sweeps lead and shaving did not finish
    (:attr:`Run.reach_rising`), and on graphs heavy with input/output (:func:`io_heavy`)
    it starts where the sweeps did not lead, so shaving never ran (:attr:`Run.reach_pace`),
    if a pass (about :data:`SHAVE_PASS_SWEEPS` sweeps' searches per op) fits in the k's
    share: on small IO-heavy graphs shaving from the pigeonhole or crossing bound beats both
    (64-op layered graph, k = 8: 0.90 of the optimum -> 0.96 in 2.5 s), where on 500 ops a
    pass would not end.  Each k takes the share of the time left that its relative gap
    ``1 - LB / UB`` has among the gaps still waiting in its group (what one k leaves goes to
    the next).  The ks where the bound leads go first, widest gap first (where the crossing
    bound leads at k = 16 and 32 on a 500-op layered graph, seed 9104, 120 s, their shaving
    had taken 14 and 11 s first without finishing one threshold, leaving the k = 8 bound,
    which leads, 9.5 s).  Then the others, smallest k first, until one whose shaving lifts
    nothing: shaving is cheapest and strongest at the small ks, and the larger ones are
    skipped (on the 500-op layered graph of seed 9202, 120 s for k = 2..64, the sweeps led
    nowhere; widest gap first, k = 16, 32 and 64 took 14.5, 13.6 and 11.1 s without deciding
    one threshold, and k = 8 lifted its bound 8.7% in 12.9 s; alone, k = 16 decided four
    thresholds in 44 s, refuting none, and k = 8 lifted it 15.8% in 50 s).  Last, what is left
    goes again to the ks whose shaving lifted the bound and was stopped by the clock, widest
    gap first, each from where it stopped (on 9202, k = 8 reached 172,156, where widest gap
    first in both groups reached 165,689).  Against widest gap first in both groups, on unseen
    layered 9101-9104 (120 s, the same session), the bound at k = 8 on 9104 rose 2.1%
    (160,619 -> 164,005), three others by 0.03%, none fell."""
    queue = []
    for run in runs:
        held = [j for j, r in enumerate(run.records) if r.method == "reach"]
        if not held or run.interrupted or closes(run.lb, run.ub_hi):
            continue
        record = run.records[held[-1]]
        if run.reach_rising and record.bound is not None and record.bound >= run.lb:
            queue.append((True, run, held[-1], 0.0))
        elif run.reach_pace is not None:
            queue.append((False, run, held[-1], SHAVE_PASS_SWEEPS * run.reach_pace * run.problem.graph.n))
    stop = time.perf_counter() + REACH_RESUME_SHARE * left()
    leading = sorted((item[1:] for item in queue if item[0]), key=lambda item: -_gap(item[0]))
    others = sorted((item[1:] for item in queue if not item[0]), key=lambda item: item[0].problem.k)
    again = _shaving_turns(leading, stop, time_limit, say, tag)
    again += _shaving_turns(others, stop, time_limit, say, tag, until_stall=True)
    _shaving_turns(sorted(again, key=lambda item: -_gap(item[0])), stop, time_limit, say, tag)


def _shaving_turns(
    turns: list[tuple[Run, int, float]],
    stop: float,
    time_limit: float,
    say: Report,
    tag: Callable[[Problem], str],
    until_stall: bool = False,
) -> list[tuple[Run, int, float]]:
    """One turn of resumed shaving for each ``(run, reach record's index, seconds a pass
    needs)`` in order, each with its gap's part of the time until ``stop``
    (:func:`reach_resume_phase`); with ``until_stall``, none after one that lifted nothing.
    The turns that lifted the bound and were stopped by the clock, to go again."""
    stopped = []
    for i, (run, at, needs) in enumerate(turns):
        if closes(run.lb, run.ub_hi):  # the spare core's annealing may have closed it meanwhile
            continue
        limit = min(time_limit - run.records[at].wall_time, _gap_part(run, [r for r, *_ in turns[i:]], stop))
        if limit < MIN_RUN_SECONDS or needs > limit:
            continue
        before = run.lb
        res = _resume_shaving(run, at, limit, say, tag)
        if run.lb > before and not res.complete:
            stopped.append((run, at, 0.0))
        elif until_stall and run.lb <= before:
            break
    return stopped


def _gap(run: Run) -> float:
    """``run``'s relative gap ``1 - LB / UB``."""
    return 1.0 - run.lb / run.ub_hi


def _gap_part(run: Run, waiting: list[Run], stop: float) -> float:
    """The seconds until ``stop`` that ``run``'s gap earns among the gaps of the ks ``waiting``
    (``run`` among them) for a resumed bound: what one k leaves goes to the next."""
    return (stop - time.perf_counter()) * _gap(run) / sum(_gap(other) for other in waiting)


def _resume_shaving(run: Run, at: int, limit: float, say: Report, tag: Callable[[Problem], str]) -> ReachBound:
    """Shaving from ``run``'s best bound for at most ``limit`` seconds (:func:`reach_resume_phase`):
    a higher bound replaces the reach record at ``at``.  The search ends at the lowest threshold
    where shaving stood at this k (:attr:`Run.reach_stood`), if below the partition's cost: a
    higher one meets larger sets, so it stands as well, and each test that stands costs a whole
    pass.  Its search's result."""
    record = run.records[at]
    pace = run.reach_pace
    before = run.lb
    probe = RISING_PROBE if pace is None else PROBE  # shaving already beat the other bounds, or never ran
    stood = run.reach_stood.get(run.problem.k)  # the lowest threshold shaving could not refute, if any
    upper = run.ub if stood is None else min(run.ub, stood[0])
    res = reach_lower_bound(
        run.problem, before, upper, limit, run.proving, sweeps_first=False, stood=run.reach_stood, probe=probe
    )
    more = f"; after the MIPs, {res.tried} more with shaving between {before:.6g} and {upper:.6g}"
    lifted = res.bound is not None and res.bound > before
    run.reach_rising, run.reach_pace = not res.complete and pace is None, None
    run.records[at] = checked(
        record.model_copy(
            update={
                "bound": res.bound if lifted else record.bound,
                "status": "optimal" if res.complete else "time_limit",
                "wall_time": record.wall_time + res.wall_time,
                "message": record.message + more,
            }
        ),
        run.ub_hi,
    )
    shown = f"{before:.6g} -> {run.lb:.6g}"
    say(f"{tag(run.problem)}reach, resumed: {shown} ({res.tried} thresholds, {res.wall_time:.2f} s)")
    return res


def _pigeonhole_record(run: Run, res: PigeonholeBound) -> BoundRecord:
    """``res`` as the k's pigeonhole record, checked against its partition (kept on ``run``
    for :func:`pigeonhole_resume_phase` unless the check dropped its bound)."""
    record = BoundRecord(
        method="pigeonhole",
        bound=res.bound,
        status=res.status.value,
        proven_optimal=False,
        solver=res.solver,
        solver_version=res.solver_version,
        wall_time=res.wall_time,
        message=f"the cheapest convex block carrying a 1/k share of a weighting of the ops; {res.message}",
        margin=res.margin,
    )
    record = checked(record, run.ub_hi)
    run.pigeonhole = res if record.bound is not None else None
    return record


def clique_phase(
    runs: list[Run], time_limit: float, left: Callable[[], float], say: Report, tag: Callable[[Problem], str]
) -> None:
    """The clique bound (:mod:`mtpp.bounds.clique`) for every k not yet proven optimal,
    one set of minimum cuts for all of them, within ``CLIQUE_SHARE`` of the budget
    left and ``time_limit``: candidates are added (every op, heaviest first) while
    time is left, since more of them give larger cliques (on a 250-op layered graph,
    128 -> 250 candidates lifted k = 4 from 88,121 to 98,350)."""
    open_runs, limit = _open_runs(runs, "clique", min(time_limit, CLIQUE_SHARE * left()))
    if not open_runs:
        return
    g = open_runs[0].problem.graph
    res = clique_lower_bounds(
        open_runs[0].problem, [r.problem.k for r in open_runs], time_limit=limit, max_candidates=g.n
    )
    cover = f"{res.pairs} of {res.total_pairs} pairs of {res.candidates} ops cut"
    for run in open_runs:
        k = run.problem.k
        if k not in res.bounds:
            run.records.append(skipped("clique", f"no {k + 1} ops with a conflict found ({cover})"))
            continue
        ops = ", ".join(repr(g.ids[v]) for v in res.cliques[k][:4].tolist())
        record = BoundRecord(
            method="clique",
            bound=res.bounds[k],
            status="optimal" if res.complete else "time_limit",
            proven_optimal=False,
            wall_time=res.wall_time,
            message=f"{k + 1} ops pairwise too dear to share a block ({ops}{', ...' if k > 3 else ''}); {cover}",
        )
        run.records.append(checked(record, run.ub_hi))
        say(f"{tag(run.problem)}clique: {res.bounds[k]:.6g} ({cover}, {res.wall_time:.2f} s)")


def dp_record(res: IdealDpResult, peak_aware: bool, extra_time: float) -> BoundRecord:
    """The bound an ideal-DP run proves (:attr:`IdealDpResult.lower_bound`, its
    rounding error already taken off).  ``optimal``: its value is the optimum (the
    optimum without activation peaks if peak-aware: a lower bound); ``bound_reached``:
    it found a chain within the known lower bound (nothing new below it);
    ``no_improvement``: every chain costs more than the upper bound, so ``OPT >= UB``."""
    wall = res.wall_time + extra_time
    peak_note = "; peak-aware: blocks are priced without their activation peak, so the value is a lower bound"
    note = peak_note if peak_aware else ""
    proofs = {  # status -> (record status, proven optimal, message)
        "optimal": ("optimal", not peak_aware, f"{res.ideals} ideals, every chain searched{note}"),
        "bound_reached": (
            "bound_reached",
            False,
            f"{res.ideals} ideals; a partition within the known lower bound{note}",
        ),
        "no_improvement": ("optimal", not peak_aware, f"{res.ideals} ideals; no partition beats the upper bound"),
    }
    if res.status in proofs and res.lower_bound is not None:
        status, optimal, message = proofs[res.status]
        return BoundRecord(
            method="ideal-dp",
            bound=res.lower_bound,
            status=status,
            proven_optimal=optimal,
            wall_time=wall,
            message=message,
            ideals=res.ideals,
        )
    return BoundRecord(
        method="ideal-dp",
        bound=None,
        status=res.status,
        proven_optimal=False,
        wall_time=wall,
        message=res.message,
        ideals=res.ideals,
    )


@dataclass
class Stalls:
    """MIP methods that made no progress at a smaller k of a budgeted call (:func:`mip_phase`)."""

    methods: dict[str, list[tuple[int, float]]]
    """method -> the ks where it stopped at its time limit without lifting the
    bound, with the seconds it ran there."""


def mip_phase(
    run: Run,
    mip_methods: list[str],
    solver: str,
    time_limit: float,
    threads: int,
    n_jobs: int,
    seed: int,
    left: Callable[[], float],
    later: list[Run],
    say: Report,
    tag: Callable[[Problem], str],
    stalls: Stalls | None = None,
    resuming: Sequence[Run] = (),
) -> None:
    """The MIP methods at one k, each capped by ``time_limit`` and by its share
    (:data:`MIP_WEIGHTS`) of the budget left over this k's remaining methods that can
    still fit, the methods of the ``later`` ks that are still open (a k proven
    meanwhile takes no share) and the pigeonhole updates waiting at the other ks among
    ``resuming`` (:data:`RESUME_WEIGHT`).  With ``stalls`` (a budgeted call), a method that stopped
    at its time limit without lifting the bound the methods before it had proven, at
    :data:`STALLS_TO_SKIP` smaller ks, is skipped, its time left to the others and to
    the last partition search (on 500-op
    layered graphs every MIP ended at the simple bound at every k, 65 s of a 120 s
    budget; on REGAL-style graphs the exact and guess MIPs took 40-60 s of 120 at
    k >= 8 and never beat the bottleneck MIP).  Each
    method's :func:`solver_lateness` (how late its solver may stop) comes off the budget
    before it is shared, and off ``time_limit``; a method that cannot cover it is
    skipped with a record, its time left to the others (earlier methods first)."""
    problem = run.problem
    late = {method: solver_lateness(problem, method) for method in mip_methods}
    stalls_seen = {} if stalls is None else stalls.methods
    stalled = {m for m, seen in stalls_seen.items() if len(seen) >= STALLS_TO_SKIP[m]}
    seen_weak: dict[tuple[int, str], str] = {}

    def weak(on: Problem, method: str) -> str:
        """:func:`weak_fallback` with a budget (asked only where a MIP would run: it imports
        the solver adapters), remembered per k."""
        if stalls is None:
            return ""
        if (on.k, method) not in seen_weak:
            seen_weak[on.k, method] = weak_fallback(on, method, solver, n_jobs)
        return seen_weak[on.k, method]

    ran = {r.method for r in run.records if r.from_k is None}
    for j, method in enumerate(mip_methods):
        if run.interrupted:
            break
        if method in ran:  # it ran first (exact_first_phase)
            continue
        if closes(run.lb, run.ub_hi):
            run.records.append(skipped(method, "the partition is already proven optimal"))
            continue
        if method in run.implied:
            run.records.append(skipped(method, run.implied[method]))
            continue
        if method in stalled:
            at = ", ".join(f"{seconds:.2g} s at k={k}" for k, seconds in stalls_seen[method])
            run.records.append(
                skipped(
                    method,
                    f"it did not lift the bound of the methods before it in {at}; "
                    "its time goes to the other methods and the last search",
                )
            )
            continue
        if weak(problem, method):
            run.records.append(skipped(method, weak(problem, method)))
            continue
        most = min(time_limit, left())
        if most < MIN_RUN_SECONDS:
            run.records.append(skipped(method, "the budget is spent"))
            continue
        if late[method] + MIN_RUN_SECONDS > most:
            size = estimate_model_size(problem, method, n_jobs)
            run.records.append(
                skipped(
                    method,
                    f"its MIP ({size.nonzeros:,} non-zeros) may keep the solver about {late[method]:.2g} s past "
                    f"its time limit, more than the {most:.2g} s it could have",
                )
            )
            continue
        # the methods still to run here that fit, latest dropped first while the time beyond
        # their lateness, shared with the later ks, gives less than MIN_RUN_SECONDS each
        fits = [
            m
            for m in mip_methods[j:]
            if m not in stalled and m not in run.implied and m not in ran and not weak(problem, m)
        ]
        fits = [m for m in fits if late[m] + MIN_RUN_SECONDS <= most]  # this one first
        after = sum(
            MIP_WEIGHTS[m]
            for r in later
            if not closes(r.lb, r.ub_hi)
            for m in mip_methods
            if m not in stalled and m not in r.implied and not weak(r.problem, m)
        ) + RESUME_WEIGHT * sum(pigeonhole_waits(r) for r in resuming if r is not run)
        while True:
            weights = sum(MIP_WEIGHTS[m] for m in fits) + after
            spare = MIP_WEIGHTS[method] * (left() - sum(late[m] for m in fits)) / weights
            if spare >= MIN_RUN_SECONDS or len(fits) == 1:
                break
            fits.pop()
        limit = min(time_limit - late[method], spare)
        if limit < MIN_RUN_SECONDS:
            run.records.append(skipped(method, "the budget is spent"))
            continue
        before = run.lb
        record, incumbent = bound_record(
            problem, method, solver, limit, threads, n_jobs, run.ub, run.best_eval.assignment, seed
        )
        if incumbent is not None and run.adopt(
            incumbent, problem.graph.topological_order, f"exact MIP incumbent ({record.solver})"
        ):
            say(f"{tag(problem)}exact MIP found a better partition: {incumbent.bottleneck:.6g}")
        record = checked(record, run.ub_hi)
        run.records.append(record)
        if (
            stalls is not None
            and record.status == "time_limit"
            and (record.bound or 0.0) <= before
            and not _little_left(run)  # a bound already tight is no stall
        ):
            stalls_seen.setdefault(method, []).append((problem.k, record.wall_time))
            if len(stalls_seen[method]) >= STALLS_TO_SKIP[method]:
                stalled.add(method)
        say(
            f"{tag(problem)}{method}: {record.status}"
            + (f", bound {record.bound:.6g}" if record.bound is not None else "")
            + (f" ({record.message})" if record.message and record.status == "error" else "")
        )
        if record.status == "interrupted":
            run.interrupted = True
            break
        if record.bound is not None and closes(record.bound, run.ub_hi):
            run.records, extra = cross_check(
                problem, run.records, record, solver, run.ub_hi, seed, say, min(CROSS_CHECK_TIME, max(left(), 1.0))
            )
            run.notes.extend(extra)


def exact_first_phase(
    runs: list[Run],
    solver: str,
    time_limit: float,
    threads: int,
    n_jobs: int,
    seed: int,
    left: Callable[[], float],
    say: Report,
    tag: Callable[[Problem], str],
) -> None:
    """With a budget, the exact MIP before the pigeonhole bound at the smallest open ks, each
    within :data:`EXACT_FIRST_SHARE` of the budget left (and ``time_limit``), while it runs on
    ``auto``'s first backend (:func:`weak_fallback`) and proves each k it runs at: a k it
    proves takes no time from the bounds after it (REGAL-style graphs: Gurobi proved k = 2 in
    0.2-0.7 s and, at 57 ops, k = 4 in 4 s, after the pigeonhole bound had spent 6.7 s at
    each).  At the first k it does not prove it stops, and its record is dropped: the MIP phase
    runs it there again with its share of the budget (a single-k call whose exact MIP needs
    more than this probe still gets it), so a failed probe costs its time once."""
    for run in runs:
        if run.interrupted:
            return
        if closes(run.lb, run.ub_hi):
            continue
        if weak_fallback(run.problem, "exact", solver, n_jobs):
            return
        limit = min(time_limit, EXACT_FIRST_SHARE * left())
        if limit < MIN_RUN_SECONDS:
            return
        before = len(run.records)
        mip_phase(run, ["exact"], solver, limit, threads, n_jobs, seed, left, [], say, tag)
        if not closes(run.lb, run.ub_hi):  # the MIP phase runs it here again, with its share
            del run.records[before:]  # (a partition it found stays adopted)
            return


def weak_fallback(problem: Problem, method: str, solver: str, n_jobs: int = 1) -> str:
    """Why a budgeted call skips ``method`` at ``problem``'s k (:data:`FALLBACK_SKIPPED`), or
    ``""``: with ``solver="auto"``, its model (estimated before it is built,
    :func:`formulations.size.estimate_model_size`; a guess sub-MIP for ``guess``) would run on
    a fallback backend, not on the first of :data:`solvers.registry.AUTO_ORDER`."""
    if method not in FALLBACK_SKIPPED or solver.lower() != "auto":
        return ""
    auto = AutoBackend()
    size = estimate_model_size(problem, method, n_jobs)
    on = auto.runs_on(size.variables, size.rows)
    if on == auto.order[0]:
        return ""
    return (
        f"solver 'auto' would run its MIP (about {size.variables:,} variables, {size.rows:,} rows) on "
        f"{on or 'no backend'}, not {auto.order[0]}, which does not take it; there it never gave the best "
        f"bound within a budget (name a solver to run it anyway)"
    )


def solver_lateness(problem: Problem, method: str) -> float:
    """How long after its time limit the solver of ``method``'s MIP (one sub-MIP for
    ``guess``) may stop: :data:`SOLVER_STOP_SECONDS_PER_NONZERO` per estimated
    non-zero (:func:`formulations.size.estimate_model_size`, ``O(m)``)."""
    return SOLVER_STOP_SECONDS_PER_NONZERO * estimate_model_size(problem, method).nonzeros


def share_lower_bounds(runs: list[Run]) -> None:
    """Give each k the best lower bound proven for a larger k (``OPT`` does not
    increase with k), recorded with the k that proved it."""
    for i, run in enumerate(runs):
        donors = [
            (r.bound, r, other.problem.k)
            for other in runs[i + 1 :]
            for r in other.records
            if r.bound is not None and r.from_k is None
        ]
        if not donors:
            continue
        bound, record, from_k = max(donors, key=lambda d: d[0])
        if bound > run.lb:
            run.records.append(
                record.model_copy(
                    update={
                        "from_k": from_k,
                        "wall_time": 0.0,
                        "message": f"proven for k={from_k}; OPT does not increase with k",
                    }
                )
            )
