"""The bound methods of a certify call that need no solver: the cut, crossing, clique and
reach bounds of :mod:`mtpp.bounds`, and the exact ideal DP
(:mod:`heuristics.partition.ideal_dp`), which proves the optimum on narrow graphs and
then gives every k its optimal partition."""

from __future__ import annotations

import math
import time
from dataclasses import replace

from heuristics.partition.ideal_dp import IdealDpResult, ideal_dp_all
from heuristics.partition.ideals import enumerate_ideals
from mtpp.bounds.clique import clique_lower_bounds
from mtpp.bounds.crossing import crossing_lower_bounds
from mtpp.bounds.cut import cut_bound
from mtpp.bounds.reach import PROBE, RISING_PROBE, ReachBound, Stood, reach_lower_bound
from mtpp.core.evaluate import evaluate
from mtpp.core.problem import Problem
from mtpp.core.records import BoundRecord, checked, closes, skipped
from mtpp.engine.call import MIN_RUN_SECONDS, Call, Run, gap_part, open_runs_or_skip
from mtpp.engine.method import ALL_KS, EACH_K, Method


class Cut(Method):
    """``max_v min_{S ∋ v} f(S)`` (:mod:`mtpp.bounds.cut`): independent of k, one record at
    every k.  One minimum cut per op, by decreasing estimate; stopped by its share of the
    budget, it proves the maximum over the ops it cut (a ``time_limit`` record)."""

    name = "cut"
    records = ("cut",)
    scope = ALL_KS
    SHARE = 0.25
    share = f"{SHARE:g} of the budget left, at most time_limit; the ops not cut by then are left out"
    skipped = f"once less than {MIN_RUN_SECONDS} s of its share is left"

    def run(self, call: Call) -> None:
        t0 = time.perf_counter()
        limit = min(call.options.time_limit, self.SHARE * call.left())
        if limit < MIN_RUN_SECONDS:
            for run in call.runs:
                run.records.append(skipped("cut", "the budget is spent"))
            return
        res = cut_bound(call.base, deadline=t0 + limit)
        op = "" if res.op < 0 else f"attained at op {call.base.graph.ids[res.op]!r}"
        cover = "" if res.complete else f"stopped by its time limit after {res.tried:,} of {res.ops:,} ops"
        for run in call.runs:
            run.records.append(
                BoundRecord(
                    method="cut",
                    bound=res.bound,
                    status="optimal" if res.complete else "time_limit",
                    proven_optimal=res.complete,
                    wall_time=time.perf_counter() - t0,
                    message="; ".join(part for part in (op, cover) if part),
                )
            )
        call.say(f"cut: {res.bound:.6g}{', ' + cover if cover else ''} ({time.perf_counter() - t0:.2f} s)")


class IdealDp(Method):
    """The exact DP over the ideal lattice for every open k in one call
    (:func:`heuristics.partition.ideal_dp.ideal_dp_all`: smallest k first, one lattice and
    every chain found shared across the ks, so the optimum at k is a tight upper bound at
    the next k); a better partition is adopted at its k and at every larger k, and a
    lower bound already proven for a larger k serves as the DP's target."""

    name = "ideal-dp"
    records = ("ideal-dp",)
    scope = ALL_KS
    ENUMERATION_SHARE = 0.25
    IDEALS_PER_SECOND = 100_000
    IDEAL_BITS_PER_SECOND = 1.5e8
    DP_SHARE = 0.5
    share = (
        f"the lattice is capped at max_ideals and, with a budget, at what {ENUMERATION_SHARE:g} of the budget "
        f"left enumerates at min({IDEALS_PER_SECOND:,}, {IDEAL_BITS_PER_SECOND:g} / n) ideals a second; the DP "
        f"then has {DP_SHARE:g} of the budget left"
    )
    skipped = "where the lattice is over its cap (a too_wide record), and at ks already proven"

    def run(self, call: Call) -> None:
        runs = call.open_runs()
        for run in call.runs:
            if run not in runs:
                run.records.append(skipped("ideal-dp", "the partition is already proven optimal"))
        if not runs:
            return
        if call.left() < MIN_RUN_SECONDS:
            for run in runs:
                run.records.append(skipped("ideal-dp", "the budget is spent"))
            return
        t0 = time.perf_counter()
        max_ideals = call.options.max_ideals
        rate = min(self.IDEALS_PER_SECOND, self.IDEAL_BITS_PER_SECOND / max(call.runs[0].problem.graph.n, 1))
        left = call.left()
        cap = max_ideals if math.isinf(left) else min(max_ideals, int(self.ENUMERATION_SHARE * left * rate))
        lattice = enumerate_ideals(call.runs[0].problem.graph, cap)
        t_enum = time.perf_counter() - t0
        if lattice is None:
            message = f"more than {cap} ideals: the graph is too wide for the ideal DP" + (
                "" if cap == max_ideals else " in the time left"
            )
            for run in runs:
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
            call.say(f"ideal-dp: {message} ({t_enum:.2f} s)")
            return
        call.say(f"ideal lattice: {lattice.count} ideals ({t_enum:.2f} s)")
        todo, targets = [], []
        for run in runs:
            lb = max([run.lb, *(r.lb for r in call.runs if r.problem.k > run.problem.k)])
            if closes(lb, run.ub_hi):
                run.records.append(skipped("ideal-dp", "proven optimal by a bound shared from a larger k"))
            else:
                todo.append(run)
                targets.append(lb)
        if not todo:
            return
        budget = self.DP_SHARE * call.left()
        results = ideal_dp_all(
            todo[0].problem,
            [run.problem.k for run in todo],
            upper_bounds=[run.ub for run in todo],
            lower_bounds=targets,
            lattice=lattice,
            time_limit=None if math.isinf(budget) else budget,
        )
        for i, (run, res) in enumerate(zip(todo, results)):
            self._adopt(call, run, res, t_enum if i == 0 else 0.0)

    def _adopt(self, call: Call, run: Run, res: IdealDpResult, t_enum: float) -> None:
        """The DP's partition at ``run``'s k (and the larger ks) and its record."""
        problem = run.problem
        record = dp_record(res, problem.peak_aware, t_enum)
        if res.assignment is not None:
            found = evaluate(problem, res.assignment)
            order = problem.graph.topological_order
            if run.adopt(found, order, "ideal DP"):
                call.say(f"{call.tag(problem)}ideal DP found a better partition: {found.bottleneck:.6g}")
            for other in call.runs:
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
        call.say(
            f"{call.tag(problem)}ideal-dp: {record.status}"
            + (f", bound {record.bound:.6g}" if record.bound is not None else f" ({record.message})")
        )


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


def add_record(
    call: Call, run: Run, method: str, bound: float, complete: bool, seconds: float, what: str, cover: str
) -> None:
    """The record of a bound that one computation gave every open k: ``optimal`` where it
    finished, else ``time_limit``; checked against the partition and reported."""
    record = BoundRecord(
        method=method,
        bound=bound,
        status="optimal" if complete else "time_limit",
        proven_optimal=False,
        wall_time=seconds,
        message=f"{what}; {cover}",
    )
    run.records.append(checked(record, run.ub_hi))
    call.say(f"{call.tag(run.problem)}{method}: {bound:.6g} ({cover}, {seconds:.2f} s)")


class Crossing(Method):
    """Work plus every tensor once per block its net (producer and consumers) must meet
    below the bound, over k (:mod:`mtpp.bounds.crossing`): one set of minimum cuts for
    every open k (per tensor, then per pair of its net's members, then per pair of nets
    that share an op)."""

    name = "crossing"
    records = ("crossing",)
    scope = ALL_KS
    SHARE = 0.1
    share = f"{SHARE:g} of the budget left, at most time_limit"
    skipped = f"at ks already proven, and everywhere once less than {MIN_RUN_SECONDS} s is left"

    def run(self, call: Call) -> None:
        runs, limit = open_runs_or_skip(call, "crossing", min(call.options.time_limit, self.SHARE * call.left()))
        if not runs:
            return
        res = crossing_lower_bounds(runs[0].problem, [r.problem.k for r in runs], time_limit=limit)
        cover = (
            f"{res.nets} of {res.total_nets} tensors' nets cut, {res.paired} with their members' pairs, "
            f"{res.net_pairs} of {res.total_net_pairs} pairs of nets that share an op"
        )
        what = "work plus every tensor once per block its net must meet below the bound, over k"
        for run in runs:
            add_record(call, run, "crossing", res.bounds[run.k], res.complete, res.wall_time, what, cover)


class Clique(Method):
    """``k + 1`` ops of which any two sharing a block cost at least the bound
    (:mod:`mtpp.bounds.clique`), one set of minimum cuts for every open k; candidates are
    added (every op, heaviest first) while time is left, since more of them give larger
    cliques.  It runs last of the bounds: it never led on the wide graphs measured."""

    name = "clique"
    records = ("clique",)
    scope = ALL_KS
    SHARE = 0.15
    share = f"{SHARE:g} of the budget left, at most time_limit"
    skipped = f"at ks already proven, where no k + 1 ops conflict, once less than {MIN_RUN_SECONDS} s is left"

    def run(self, call: Call) -> None:
        runs, limit = open_runs_or_skip(call, "clique", min(call.options.time_limit, self.SHARE * call.left()))
        if not runs:
            return
        g = runs[0].problem.graph
        res = clique_lower_bounds(runs[0].problem, [r.problem.k for r in runs], time_limit=limit, max_candidates=g.n)
        cover = f"{res.pairs} of {res.total_pairs} pairs of {res.candidates} ops cut"
        for run in runs:
            k = run.problem.k
            if k not in res.bounds:
                run.records.append(skipped("clique", f"no {k + 1} ops with a conflict found ({cover})"))
                continue
            ops = ", ".join(repr(g.ids[v]) for v in res.cliques[k][:4].tolist())
            what = f"{k + 1} ops pairwise too dear to share a block ({ops}{', ...' if k > 3 else ''})"
            add_record(call, run, "clique", res.bounds[k], res.complete, res.wall_time, what, cover)


def io_heavy(problem: Problem) -> bool:
    """The tensors with a consumer weigh at least :data:`Reach.SHAVE_IO_HEAVY` times the work."""
    return problem.consumed_io >= Reach.SHAVE_IO_HEAVY * float(problem.graph.work.sum())


class Reach(Method):
    """No chain of k blocks below the bound covers the graph (:mod:`mtpp.bounds.reach`):
    first the sweeps' search (galloping, then bisection) at each open k, smallest first,
    between its best bound so far and its partition's cost; then, only with a budget,
    shaving's search from the sweeps' bound at the ks where the sweeps beat the other
    bounds.  A k whose first threshold was not decided within its part (the first call
    compiles the sweeps' step) is tried once more with what the others left.  Its state
    per k (whether shaving was stopped while it led, the sweeps' pace, where shaving
    stood) is what :class:`ReachResume` goes on from."""

    name = "reach"
    records = ("reach",)
    scope = EACH_K
    SHARE = 0.3
    SHAVE_SHARE = 0.3
    SHAVE_IO_HEAVY = 1.0
    share = (
        f"{SHARE:g} of the budget left for the sweeps, split over the open ks smallest first (what one k "
        f"leaves goes to the next), then {SHAVE_SHARE:g} of what is left for shaving where the sweeps lead; "
        "each part at most time_limit"
    )
    skipped = f"at ks already proven, and at a k whose part is below {MIN_RUN_SECONDS} s"

    def __init__(self) -> None:
        self.rising: dict[int, bool] = {}
        """Per k: the sweeps beat the other bounds and shaving did not finish (:class:`ReachResume` goes on)."""
        self.pace: dict[int, float] = {}
        """Per k where the sweeps did not beat the other bounds (shaving never ran): their seconds per threshold."""
        self.stood: Stood = {}
        """Where shaving stood, for its next search (:func:`mtpp.bounds.reach.reach_lower_bound`)."""

    def run(self, call: Call) -> None:
        time_limit = call.options.time_limit
        runs, _ = open_runs_or_skip(call, "reach", self.SHARE * call.left())
        found: list[tuple[Run, float, ReachBound]] = []
        stop = time.perf_counter() + self.SHARE * call.left()
        for i, run in enumerate(runs):
            limit = min(time_limit, (stop - time.perf_counter()) / (len(runs) - i))
            if limit < MIN_RUN_SECONDS:
                run.records.append(skipped("reach", "the budget is spent"))
                continue
            lower = run.lb
            found.append((run, lower, reach_lower_bound(run.problem, lower, run.ub, limit, run.proving, shave=False)))
        for i, (run, lower, res) in enumerate(found):  # a first test that ran out of its share: once more
            limit = min(time_limit, stop - time.perf_counter())
            if res.tried == 0 and not res.complete and math.isfinite(stop) and limit >= MIN_RUN_SECONDS:
                again = reach_lower_bound(run.problem, lower, run.ub, limit, run.proving, shave=False)
                found[i] = run, lower, replace(again, wall_time=res.wall_time + again.wall_time)
        leading = [(run, res.bound, res.wall_time) for run, _, res in found if res.bound is not None]
        leading = [(run, bound, seconds) for run, bound, seconds in leading if not closes(bound, run.ub_hi)]
        shaved: dict[int, ReachBound] = {}
        stop = time.perf_counter() + self.SHAVE_SHARE * call.left()
        for i, (run, bound, seconds) in enumerate(leading if call.budgeted else []):
            limit = min(time_limit - seconds, (stop - time.perf_counter()) / (len(leading) - i))
            if limit >= MIN_RUN_SECONDS:
                shaved[run.k] = reach_lower_bound(
                    run.problem, bound, run.ub, limit, run.proving, sweeps_first=False, stood=self.stood
                )
        for run, _, _ in leading:
            more = shaved.get(run.k)
            self.rising[run.k] = more is None or not more.complete
        heavy = bool(found) and io_heavy(found[0][0].problem)  # one graph for every k
        for run, _, res in found:
            if heavy and res.tried and all(run is not other for other, _, _ in leading):
                self.pace[run.k] = res.wall_time / res.tried
        for run, lower, res in found:
            self._record(call, run, lower, res, shaved.get(run.k))

    def _record(self, call: Call, run: Run, lower: float, res: ReachBound, more: ReachBound | None) -> None:
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
        call.say(f"{call.tag(run.problem)}reach: {'none' if best is None else f'{best:.6g}'} ({what}, {seconds:.2f} s)")


class ReachResume(Method):
    """Shaving after the MIPs, from the best bound to the partition's cost; a higher bound
    replaces the k's reach record.  It goes on where the sweeps lead and shaving did not
    finish, and on graphs heavy with input/output it starts where the sweeps did not lead,
    if a pass fits in the k's share.  The ks where the bound leads go first, widest gap
    first; then the others, smallest k first, until one whose shaving lifts nothing;
    last, what is left goes again to the ks whose shaving lifted the bound and was
    stopped by the clock, widest gap first."""

    name = "reach, resumed"
    records = ("reach",)
    scope = EACH_K
    needs = "reach requested, a budget"
    SHARE = 0.75
    PASS_SWEEPS = 0.25
    share = (
        f"{SHARE:g} of the budget the MIPs left; each k the part of the time left that its relative gap "
        "1 - LB / UB has among the gaps still waiting in its group (what one k leaves goes to the next)"
    )
    skipped = (
        f"at ks proven meanwhile, where its part is below {MIN_RUN_SECONDS} s, and where a shaving pass "
        f"(about {PASS_SWEEPS:g} sweeps' searches per op) does not fit"
    )

    def wanted(self, call: Call) -> bool:
        return "reach" in call.options.methods and call.budgeted

    def run(self, call: Call) -> None:
        reach: Reach | None = call.method(Reach)
        if reach is None:
            return
        queue = []
        for run in call.runs:
            held = [j for j, r in enumerate(run.records) if r.method == "reach"]
            if not held or run.interrupted or run.closed:
                continue
            record = run.records[held[-1]]
            if reach.rising.get(run.k, False) and record.bound is not None and record.bound >= run.lb:
                queue.append((True, run, held[-1], 0.0))
            elif run.k in reach.pace:
                queue.append((False, run, held[-1], self.PASS_SWEEPS * reach.pace[run.k] * run.problem.graph.n))
        stop = time.perf_counter() + self.SHARE * call.left()
        leading = sorted((item[1:] for item in queue if item[0]), key=lambda item: -item[0].gap)
        others = sorted((item[1:] for item in queue if not item[0]), key=lambda item: item[0].problem.k)
        again = self._turns(call, reach, leading, stop)
        again += self._turns(call, reach, others, stop, until_stall=True)
        self._turns(call, reach, sorted(again, key=lambda item: -item[0].gap), stop)

    def _turns(
        self,
        call: Call,
        reach: Reach,
        turns: list[tuple[Run, int, float]],
        stop: float,
        until_stall: bool = False,
    ) -> list[tuple[Run, int, float]]:
        """One turn of resumed shaving for each ``(run, reach record's index, seconds a pass
        needs)`` in order, each with its gap's part of the time until ``stop``; with
        ``until_stall``, none after one that lifted nothing.  The turns that lifted the
        bound and were stopped by the clock, to go again."""
        stopped = []
        for i, (run, at, needs) in enumerate(turns):
            if run.closed:  # the spare core's annealing may have closed it meanwhile
                continue
            waiting = [r for r, *_ in turns[i:]]
            limit = min(call.options.time_limit - run.records[at].wall_time, gap_part(run, waiting, stop))
            if limit < MIN_RUN_SECONDS or needs > limit:
                continue
            before = run.lb
            res = self._shave(call, reach, run, at, limit)
            if run.lb > before and not res.complete:
                stopped.append((run, at, 0.0))
            elif until_stall and run.lb <= before:
                break
        return stopped

    def _shave(self, call: Call, reach: Reach, run: Run, at: int, limit: float) -> ReachBound:
        """Shaving from ``run``'s best bound for at most ``limit`` seconds: a higher bound
        replaces the reach record at ``at``.  The search ends at the lowest threshold where
        shaving stood at this k, if below the partition's cost: a higher one meets larger
        sets, so it stands as well, and each test that stands costs a whole pass."""
        record = run.records[at]
        pace = reach.pace.get(run.k)
        before = run.lb
        probe = RISING_PROBE if pace is None else PROBE  # shaving already beat the other bounds, or never ran
        stood = reach.stood.get(run.problem.k)  # the lowest threshold shaving could not refute, if any
        upper = run.ub if stood is None else min(run.ub, stood[0])
        res = reach_lower_bound(
            run.problem, before, upper, limit, run.proving, sweeps_first=False, stood=reach.stood, probe=probe
        )
        more = f"; after the MIPs, {res.tried} more with shaving between {before:.6g} and {upper:.6g}"
        lifted = res.bound is not None and res.bound > before
        reach.rising[run.k] = not res.complete and pace is None
        reach.pace.pop(run.k, None)
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
        call.say(f"{call.tag(run.problem)}reach, resumed: {shown} ({res.tried} thresholds, {res.wall_time:.2f} s)")
        return res
