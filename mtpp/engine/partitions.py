"""The methods of a certify call that improve the partitions (upper bounds): the quick
first partition of every k, the orderer's search, annealing, the ideal DP on bands,
the last searches that fill the budget, and the multi-order DP.  Every partition is
re-checked by :func:`mtpp.evaluate` and shared with the larger ks
(:func:`mtpp.engine.call.share_partition`)."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from heuristics.partition.anneal import anneal_partition
from heuristics.partition.band_dp import band_dp, partition_order
from heuristics.partition.merge_dp import merge_orders
from heuristics.partition.orderers import with_budget
from mtpp.core.evaluate import evaluate
from mtpp.core.graph import Graph
from mtpp.core.problem import Problem
from mtpp.core.records import BoundRecord
from mtpp.engine.call import (
    FINAL_RESERVE,
    MIN_RUN_SECONDS,
    QUICK_ORDERER,
    Call,
    Run,
    share_annealed,
    share_partition,
)
from mtpp.engine.method import EACH_K, Method
from mtpp.partitioner import partition


def initial_notes(problem: Problem) -> list[str]:
    """What every certificate says about its cost model."""
    notes = ["MIP bounds are proven dual bounds on models scaled to O(1), lowered by each solver's tolerance margin"]
    if problem.peak_aware:
        notes.append(
            "peak-aware overflow (size_param(S) + peak(S) - M)^+ / B, each block running its ops in 'order'; "
            "the simple and MIP bounds ignore peak(S) >= 0, which only lowers them: they remain valid"
        )
    else:
        notes.append("overflow uses a fixed activation reserve R: (size_param(S) - (M - R))^+ / B")
    return notes


def warm_up() -> None:
    """Load the compiled SliceGraph kernels (a few tenths of a second on the first call
    in a process) on a four-op graph, so that it does not count as a DP's time."""
    g = Graph.from_arrays(np.ones(4), np.zeros(4), np.ones(4), np.array([[0, 1], [1, 2], [0, 3]]), name="warm-up")
    partition(g, 2, orderer=QUICK_ORDERER, presolve=False)


class QuickPartition(Method):
    """The first partition of every k, smallest first: SliceGraph on Kahn's order, with the
    simple bound (Lemma 3.3); each k also takes the smaller ks' partitions."""

    name = "partition (kahn)"
    essential = True
    scope = EACH_K
    needs = "always"
    SHARE = 0.5
    share = (
        f"with a budget, {SHARE:g} of the budget left split over the ks still to do; a DP cut off "
        "there gives the best equal-work split of the order"
    )
    skipped = "never"

    def wanted(self, call: Call) -> bool:
        return True

    def run(self, call: Call) -> None:
        if call.budgeted:
            warm_up()
        problems = call.problems
        for i, problem in enumerate(problems):
            quick = None if not call.budgeted else max(1e-6, self.SHARE * call.left() / (len(problems) - i))
            sol = partition(problem, orderer=QUICK_ORDERER, seed=call.options.seed, presolve=False, time_limit=quick)
            split = ", equal-work split: the DP did not fit" if sol.stopped_by_time else ""
            run = Run(
                problem,
                sol.evaluation,
                sol.index_order,
                f"slicegraph ({QUICK_ORDERER}){split}",
                [BoundRecord(method="simple", bound=sol.lower_bound, status="optimal", proven_optimal=True)],
                initial_notes(problem),
                decode_seconds=sol.wall_time if quick is None or not sol.stopped_by_time else max(quick, sol.wall_time),
                found=[sol.index_order],
            )
            for smaller in call.runs:  # a partition into fewer blocks is one into k blocks
                shared = evaluate(problem, smaller.best_eval.assignment, smaller.best_order)
                run.adopt(shared, smaller.best_order, f"{smaller.source}, found for k={smaller.problem.k}")
            call.say(
                f"{call.tag(problem)}partition: {run.source}: upper bound {run.ub:.6g}; simple: {sol.lower_bound:.6g}"
            )
            call.runs.append(run)


class Search(Method):
    """The user's orderer (BRKGA by default) at every open k, smallest first; a better
    partition is adopted at its k and at every larger k."""

    name = "partition search"
    scope = EACH_K
    needs = "an orderer other than kahn"
    SHARE = 0.2
    MIN_DECODES = 2
    share = (
        f"{SHARE:g} of the budget left, split evenly over the open ks (what one leaves goes to the next), "
        "at most time_limit each"
    )
    skipped = (
        f"at a k where its share cannot fit {MIN_DECODES} SliceGraph DPs as long as the first partition's "
        "(a note says so)"
    )

    def __init__(self) -> None:
        self.pace: dict[int, float] = {}
        """Per k, the evaluations a second of the last search there."""

    def wanted(self, call: Call) -> bool:
        return call.options.orderer != QUICK_ORDERER

    def run(self, call: Call) -> None:
        self.search(call, call.options.seed)

    def search(self, call: Call, seed: int, total: float | None = None, fill: bool = False) -> None:
        """One search at every open k, each with an even share of ``total`` seconds (default
        :data:`SHARE` of the budget left; a search that stops early leaves its time to the
        next) and at most ``time_limit``.  With ``fill``, an orderer with an evaluation budget
        (``brkga-N``, ``random-T``, ...) gets the budget that fills its share at the pace of
        the last search at that k (the share still caps it), never less than its own: a fresh,
        larger search beats both the default and one seeded with the best order so far
        (``docs/decisions.md``)."""
        orderer, time_limit = call.options.orderer, call.options.time_limit
        runs = call.open_runs()
        if total is None:
            total = self.SHARE * call.left()
        phase_end = None if math.isinf(total) else time.perf_counter() + total
        for i, run in enumerate(runs):
            share = (
                time_limit
                if phase_end is None
                else min(time_limit, (phase_end - time.perf_counter()) / (len(runs) - i))
            )
            if share < MIN_RUN_SECONDS:
                break
            if share < self.MIN_DECODES * run.decode_seconds:
                note = (
                    f"partition search ({orderer}) skipped: one SliceGraph DP takes about {run.decode_seconds:.2g} s "
                    f"here, and {self.MIN_DECODES} do not fit in its {share:.2g} s share of the budget"
                )
                run.notes.append(note)
                call.say(f"{call.tag(run.problem)}{note}")
                continue
            name = orderer
            pace = self.pace.get(run.k, 0.0)
            if fill and pace > 0:
                name = with_budget(orderer, int(pace * share)) or orderer
            sol = partition(run.problem, orderer=name, seed=seed, time_limit=share, presolve=False)
            self.pace[run.k] = sol.evaluations / max(sol.wall_time, 1e-9)
            run.found.append(sol.index_order)
            share_partition(call, run, sol.evaluation, sol.index_order, f"slicegraph ({sol.orderer}, seed {seed})")


class Anneal(Method):
    """Simulated annealing (:func:`heuristics.partition.anneal.anneal_partition`) from the
    best partition of every open k, smallest first: it moves one op at a time between
    blocks, so it reshapes blocks that no order's slicing reaches."""

    name = "annealing"
    scope = EACH_K
    needs = "an orderer other than kahn, and without a budget or with fill_budget"
    SHARE = 0.15
    MOVES = 1 << 22
    MOVES_PER_OP_SQUARED = 256
    share = (
        f"with a budget, {SHARE:g} of the budget left split over the open ks (what one leaves goes to the next), "
        f"at most time_limit each; without one, min({MOVES:,}, {MOVES_PER_OP_SQUARED} n^2) moves per k"
    )
    skipped = f"once less than {MIN_RUN_SECONDS} s of its share is left"

    def wanted(self, call: Call) -> bool:
        return call.options.orderer != QUICK_ORDERER and (not call.budgeted or call.options.fill_budget)

    def run(self, call: Call) -> None:
        self.anneal(call, call.options.seed)

    def anneal(self, call: Call, seed: int, total: float | None = None) -> None:
        """One annealing at every open k within ``total`` seconds (default :data:`SHARE` of
        the budget left); a better partition is adopted at its k and every larger k, and its
        order joins the others for the multi-order DP."""
        time_limit = call.options.time_limit
        runs = call.open_runs()
        if total is None:
            total = self.SHARE * call.left()
        stop = time.perf_counter() + total
        for i, run in enumerate(runs):
            problem = run.problem
            if call.budgeted:
                share = min(time_limit, (stop - time.perf_counter()) / (len(runs) - i))
                if share < MIN_RUN_SECONDS:
                    break
                res = anneal_partition(problem, run.best_eval.assignment, time_limit=share, seed=seed, stop_at=run.lb)
            else:
                moves = min(self.MOVES, self.MOVES_PER_OP_SQUARED * problem.graph.n**2)
                res = anneal_partition(
                    problem, run.best_eval.assignment, time_limit=time_limit, seed=seed, moves=moves, stop_at=run.lb
                )
            if res is not None:
                share_annealed(call, run, res, "annealing")


class Band(Method):
    """The ideal DP on bands of each open k's best partition's order
    (:func:`heuristics.partition.band_dp.band_dp`: every block boundary may move by up to
    the band's width, each op on its own), smallest k first, the widths of :data:`BANDS`
    in turn, each again from every better partition it finds: it reshapes what annealing,
    one op at a time, left stuck."""

    name = "band DP"
    scope = EACH_K
    needs = "a budget and fill_budget, an orderer other than kahn"
    SHARE = 0.3
    BANDS = (8, 12, 16, 24, 32)
    MAX_IDEALS = 1_000_000
    IDEALS_PER_SECOND = 200_000
    share = (
        f"{SHARE:g} of what the bounds left (less {FINAL_RESERVE:g} s), split over the open ks, at most "
        f"time_limit each; a band gets at most {IDEALS_PER_SECOND:,} ideals a second of its time and "
        f"{MAX_IDEALS:,} in all"
    )
    skipped = "for peak-aware costs, and once less than its minimum is left"

    def wanted(self, call: Call) -> bool:
        return call.budgeted and call.options.fill_budget and call.options.orderer != QUICK_ORDERER

    def run(self, call: Call) -> None:
        runs = [r for r in call.open_runs() if not r.problem.peak_aware]
        stop = time.perf_counter() + self.SHARE * (call.left() - FINAL_RESERVE)
        for i, run in enumerate(runs):
            end = time.perf_counter() + min(call.options.time_limit, (stop - time.perf_counter()) / (len(runs) - i))
            for band in self.BANDS:
                while end - time.perf_counter() >= MIN_RUN_SECONDS and not run.closed:
                    seconds = end - time.perf_counter()
                    ideals = int(min(self.MAX_IDEALS, self.IDEALS_PER_SECOND * seconds))
                    res = band_dp(run.problem, run.best_eval.assignment, band, run.ub, ideals, seconds)
                    if res is None:
                        break
                    order = partition_order(run.problem, res[1])
                    found = evaluate(run.problem, res[1], order)
                    if not share_partition(call, run, found, order, f"ideal DP on a band of {band}"):
                        break
                    run.found.append(order)


class Fill(Method):
    """What the bounds left of a budget, in rounds until it is spent or every k is
    proven: annealing again from the best partitions (half of a round), then a larger
    search on another stream of the orderer (the rest); each round on streams of its own.
    A later round whose search would not fit at every open k only anneals."""

    name = "last searches"
    scope = EACH_K
    needs = "a budget and fill_budget, an orderer other than kahn"
    share = (
        f"all of what is left, less the multi-order DP's share and {FINAL_RESERVE:g} s; time_limit caps each "
        "k's annealing and search in a round"
    )
    skipped = "once a round fits nothing"

    def wanted(self, call: Call) -> bool:
        return call.budgeted and call.options.fill_budget and call.options.orderer != QUICK_ORDERER

    def run(self, call: Call) -> None:
        anneal, search = Anneal(), call.method(Search) or Search()
        seed = call.options.seed
        end = time.perf_counter() + (1.0 - Merge.SHARE) * call.left() - FINAL_RESERVE
        for again in itertools.count():
            start = time.perf_counter()
            runs = call.open_runs()
            if end - start < MIN_RUN_SECONDS or not runs:
                return
            slowest = max(MIN_RUN_SECONDS, search.MIN_DECODES * max(r.decode_seconds for r in runs))
            searching = not again or end - start >= len(runs) * slowest  # else it would only say it was skipped
            total = 0.5 * (end + FINAL_RESERVE - start) if searching else end - start
            anneal.anneal(call, seed + 1 + again, total=total)
            if searching:
                search.search(call, seed + 1 + again, total=end - time.perf_counter(), fill=True)
            if time.perf_counter() - start < MIN_RUN_SECONDS:  # nothing fit in what is left
                return


class Merge(Method):
    """The multi-order DP (:func:`heuristics.partition.merge_dp.merge_orders`) at every
    open k, smallest first, over the best order of this k and then the orders every search
    found, nearest k first: its blocks may start at a prefix of one order and end at a
    prefix of another, so it never does worse than the best of them."""

    name = "multi-order DP"
    scope = EACH_K
    needs = "an orderer other than kahn, and without a budget or with fill_budget"
    SHARE = 0.05
    share = (
        f"an even share of the budget left (less {FINAL_RESERVE:g} s) per open k, at most time_limit; the last "
        f"searches leave it {SHARE:g} of theirs"
    )
    skipped = f"once less than {MIN_RUN_SECONDS / 10:g} s is left per k"

    def wanted(self, call: Call) -> bool:
        return call.options.orderer != QUICK_ORDERER and (not call.budgeted or call.options.fill_budget)

    def run(self, call: Call) -> None:
        runs = call.open_runs()
        for i, run in enumerate(runs):
            share = min(call.options.time_limit, (call.left() - FINAL_RESERVE) / (len(runs) - i))
            if share < MIN_RUN_SECONDS / 10:
                break
            near = sorted(call.runs, key=lambda r: abs(math.log(r.problem.k / run.problem.k)))
            orders = [run.best_order] + [r.best_order for r in near] + [o for r in near for o in reversed(r.found)]
            seg = merge_orders(run.problem, orders, run.ub, run.lb, deadline=time.perf_counter() + share)
            if seg is None:
                continue
            run.found.append(seg.order)
            found = evaluate(run.problem, seg.assignment, seg.order)
            share_partition(call, run, found, seg.order, "multi-order DP")
