"""The bound methods of a certify call that need a MIP solver: the weighted pigeonhole
bound (:mod:`formulations.pigeonhole`, many small MIPs) and the MIPs of Section 3
(:mod:`formulations.bounds`: the three-superblock ``bottleneck``, guess-the-bottleneck
and the ``exact`` MIP of Fig. 3), their bounds the solvers' proven dual bounds, and a
claim of optimality cross-checked on a second backend (:mod:`mtpp.engine.cross_check`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from formulations.bounds import bound_record
from formulations.pigeonhole import MAX_MIPS, WIND_MIPS, PigeonholeBound, pigeonhole_bound, second_wind
from formulations.size import estimate_model_size
from mtpp.core.problem import Problem
from mtpp.core.records import BoundRecord, checked, closes, failed, skipped
from mtpp.engine.call import MIN_RUN_SECONDS, Call, Run, gap_part, open_runs_or_skip
from mtpp.engine.cross_check import CROSS_CHECK_TIME, cross_check
from mtpp.engine.method import EACH_K, Method
from solvers.registry import AutoBackend
from solvers.result import Status

MIP_ORDER = ("bottleneck", "exact", "guess")
"""The order the MIPs run in at each k."""
STALL_GAP = 1e-3
"""A method that stopped at its time limit without lifting the bound counts as no stall at a
k whose bound already stood within this part of the partition's cost: nothing was left there
to lift, so it says nothing of the larger ks."""
MIP_PROBE_SECONDS = 2.0
"""With a budget, where the pigeonhole MIP (one block: the smallest of the MIPs) solved none
of its weightings in this many seconds at a k and its bound stood below :data:`MIP_PROBE_GAP`
of the best bound there, the larger MIPs are skipped there and at the larger ks.  At the
first k it runs at, its first weighting gets this long before the rest of its share."""
MIP_PROBE_GAP = 0.5
"""See :data:`MIP_PROBE_SECONDS`."""


def little_left(run: Run) -> bool:
    """Whether ``run``'s bound stands within :data:`STALL_GAP` of its partition's cost."""
    return run.lb >= run.ub_hi * (1.0 - STALL_GAP)


def unsolved_and_low(res: PigeonholeBound, run: Run) -> bool:
    """The pigeonhole bound's clock stopped it before it solved a weighting, below
    :data:`MIP_PROBE_GAP` of ``run``'s best bound (:data:`MIP_PROBE_SECONDS`)."""
    return res.optimal == 0 and res.status is Status.TIME_LIMIT and (res.bound or 0.0) < MIP_PROBE_GAP * run.lb


class Pigeonhole(Method):
    """The cheapest convex block that carries a ``1/k`` share of a weighting of the ops,
    one small MIP per weighting, the weights improved by multiplicative updates, at every
    open k smallest first, stopping at the partition's cost.  Each k after the first seeds
    its updates with the best weighting of the last k that had one.  Where it solved the
    ``work`` weighting and no parameters overflow, its bound holds the bottleneck MIP's
    optimum and that MIP is skipped.  With a budget, its first weighting at the first k is
    a probe: where it solved no weighting in :data:`MIP_PROBE_SECONDS` and stands below
    :data:`MIP_PROBE_GAP` of the best bound, every MIP is skipped there and this bound and
    the MIPs at the larger ks.  Its last result per k is what :class:`PigeonholeResume`
    goes on from."""

    name = "pigeonhole"
    records = ("pigeonhole",)
    scope = EACH_K
    needs = "requested in `bounds`, a solver"
    SHARE = 0.3
    STALLS = 2
    share = (
        f"{SHARE:g} of the budget left, split over the open ks smallest first (what one k leaves goes to the "
        "next), at most time_limit each"
    )
    skipped = (
        f"at the larger ks after {STALLS} ks where it ran out of time without lifting the bound (more than "
        f"{STALL_GAP:g} of the cost left to lift), or after the probe found the MIPs out of reach; with a "
        "budget, where the solver's lateness on the bottleneck MIP (a larger model than its own) exceeds its share"
    )

    def __init__(self) -> None:
        self.last: dict[int, PigeonholeBound] = {}
        """Per k, its last result (kept unless the check against the partition dropped its bound)."""

    def run(self, call: Call) -> None:
        solver, threads, time_limit = call.options.solver, call.options.threads, call.options.time_limit
        share = self.SHARE * call.left()
        runs, _ = open_runs_or_skip(call, "pigeonhole", share)
        stop = time.perf_counter() + share
        stalls: list[int] = []
        out_of_reach = ""
        seed = None  # the best weighting of a smaller k: the next k's seed (formulations.pigeonhole)
        probed = False  # the first k it runs at has probed its first MIP (MIP_PROBE_SECONDS)
        for i, run in enumerate(runs):
            problem = run.problem
            if run.interrupted:
                break
            if len(stalls) >= self.STALLS or out_of_reach:
                at = ", ".join(f"k={k}" for k in stalls)
                run.records.append(skipped("pigeonhole", f"it ran out of time without lifting the bound at {at}"))
                run.implied.update(dict.fromkeys(MIP_ORDER, out_of_reach) if out_of_reach else {})
                continue
            limit = min(time_limit, (stop - time.perf_counter()) / (len(runs) - i))
            if limit < MIN_RUN_SECONDS:
                run.records.append(skipped("pigeonhole", "the budget is spent"))
                continue
            late = solver_lateness(problem, "bottleneck")  # its one-block model is smaller than this MIP's
            if call.budgeted and late > limit:  # building the model alone would overrun its share
                run.records.append(
                    skipped(
                        "pigeonhole",
                        f"its MIP of this graph would take about {late:.2g} s past its time limit, more than "
                        f"its {limit:.2g} s share",
                    )
                )
                continue
            before, tight, t0 = run.lb, little_left(run), time.perf_counter()
            probing, probed = not probed and call.budgeted and limit > MIP_PROBE_SECONDS, True
            try:
                res = pigeonhole_bound(
                    problem, solver=solver, time_limit=MIP_PROBE_SECONDS if probing else limit, target=run.proving,
                    max_mips=1 if probing else MAX_MIPS, threads=threads, seed=seed,
                )  # fmt: skip
                if probing and not unsolved_and_low(res, run) and (res.bound or 0.0) < run.proving:
                    res = pigeonhole_bound(
                        problem, solver=solver, time_limit=limit - res.wall_time, target=run.proving,
                        resume=res.updates, threads=threads,
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
            record = self.record(run, res)
            run.records.append(record)
            if res.work_solved and not problem.has_overflow and record.bound is not None:
                run.implied["bottleneck"] = "the pigeonhole bound solved its work weighting, this MIP's block"
            if res.status is Status.TIME_LIMIT and (record.bound or 0.0) <= before and not tight:
                stalls.append(problem.k)
            probed_long = probing or res.wall_time >= MIP_PROBE_SECONDS
            if unsolved_and_low(res, run) and probed_long and call.budgeted:
                out_of_reach = (
                    f"the pigeonhole MIP (one block, the smallest of the MIPs) solved no weighting in "
                    f"{res.wall_time:.2g} s at k={problem.k} and stood below {MIP_PROBE_GAP:g} of the best bound: "
                    "this larger MIP would not lift the bound in its share"
                )
                run.implied.update(dict.fromkeys(MIP_ORDER, out_of_reach))
            shown = "none" if record.bound is None else f"{record.bound:.6g}"
            call.say(f"{call.tag(problem)}pigeonhole: {shown} ({res.message}, {res.wall_time:.2f} s)")

    def record(self, run: Run, res: PigeonholeBound) -> BoundRecord:
        """``res`` as the k's pigeonhole record, checked against its partition (kept for
        :class:`PigeonholeResume` unless the check dropped its bound)."""
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
        if record.bound is not None:
            self.last[run.k] = res
        else:
            self.last.pop(run.k, None)
        return record

    def waits(self, run: Run) -> bool:
        """:class:`PigeonholeResume` would take the bound on at ``run``'s k: it stands within
        :data:`PigeonholeResume.GAP` of the best bound of an open k, and its updates were
        stopped by the clock or stalled (a second wind may take them on)."""
        ph = self.last.get(run.k)
        return (
            ph is not None
            and ph.updates is not None
            and (ph.resumable or ph.updates.stalled)
            and not run.interrupted
            and not run.closed
            and ph.bound is not None
            and ph.bound >= PigeonholeResume.GAP * run.lb
        )


class PigeonholeResume(Method):
    """Where the pigeonhole bound leads at an open k, or stands within :data:`GAP` of the
    best bound, and the clock stopped its updates, they go on after the MIPs, smallest k
    first; then, where they stalled instead, they go on with a second wind
    (:func:`formulations.pigeonhole.second_wind`: a fresh, slower step, up to ``WIND_MIPS``
    more MIPs).  The k's pigeonhole record is replaced by the best over the calls."""

    name = "pigeonhole, resumed"
    records = ("pigeonhole",)
    scope = EACH_K
    needs = "pigeonhole requested, a budget, a solver"
    SHARE = 0.85
    GAP = 0.95
    share = (
        f"{SHARE:g} of the budget the MIPs left; each k the part of the time left that its relative gap "
        "1 - LB / UB has among the gaps still waiting (what one k leaves goes to the next)"
    )
    skipped = f"at ks proven meanwhile and where its part is below {MIN_RUN_SECONDS} s"

    def wanted(self, call: Call) -> bool:
        return "pigeonhole" in call.options.methods and call.budgeted

    def run(self, call: Call) -> None:
        pigeonhole: Pigeonhole | None = call.method(Pigeonhole)
        if pigeonhole is None:
            return
        near = [r for r in call.runs if pigeonhole.waits(r)]
        rising = [r for r in near if pigeonhole.last[r.k].resumable]
        rising += [r for r in near if not pigeonhole.last[r.k].resumable]
        stop = time.perf_counter() + self.SHARE * call.left()
        for i, run in enumerate(rising):
            if run.closed:  # the spare core's annealing may have closed it meanwhile
                continue
            limit = gap_part(run, [other for other in rising[i:] if not other.closed], stop)
            if limit < MIN_RUN_SECONDS:
                continue
            before, t0 = run.lb, time.perf_counter()
            earlier = pigeonhole.last[run.k].updates if run.k in pigeonhole.last else None
            wind = earlier is not None and second_wind(earlier)
            mips = earlier.mips + WIND_MIPS if wind and earlier is not None else MAX_MIPS
            try:
                res = pigeonhole_bound(
                    run.problem,
                    solver=call.options.solver,
                    time_limit=limit,
                    target=run.proving,
                    max_mips=mips,
                    resume=earlier,
                    threads=call.options.threads,
                )
            except KeyboardInterrupt:
                run.interrupted = True
                return
            except Exception as exc:  # the first call's record stands
                call.say(f"{call.tag(run.problem)}pigeonhole, resumed: {type(exc).__name__}: {exc}")
                continue
            at = max(j for j, r in enumerate(run.records) if r.method == "pigeonhole")
            run.records[at] = pigeonhole.record(run, res)
            call.say(
                f"{call.tag(run.problem)}pigeonhole, {'second wind' if wind else 'resumed'}: {before:.6g} -> "
                f"{run.lb:.6g} ({res.message}, {time.perf_counter() - t0:.2f} s more)"
            )


def weak_fallback(problem: Problem, method: str, solver: str, n_jobs: int = 1) -> str:
    """Why a budgeted call skips ``method`` at ``problem``'s k (:data:`Mips.FALLBACK_SKIPPED`),
    or ``""``: with ``solver="auto"``, its model (estimated before it is built,
    :func:`formulations.size.estimate_model_size`; a guess sub-MIP for ``guess``) would run on
    a fallback backend, not on the first of :data:`solvers.registry.AUTO_ORDER` (Gurobi,
    whose pip licence refuses models of more than 2,000 variables or rows)."""
    if method not in Mips.FALLBACK_SKIPPED or solver.lower() != "auto":
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
    ``guess``) may stop: :data:`Mips.STOP_SECONDS_PER_NONZERO` per estimated non-zero
    (:func:`formulations.size.estimate_model_size`, ``O(m)``)."""
    return Mips.STOP_SECONDS_PER_NONZERO * estimate_model_size(problem, method).nonzeros


class Mips(Method):
    """The MIPs of Section 3 at each open k, smallest first, in :data:`MIP_ORDER`
    (``guess`` after the resumed bounds with a budget: :class:`DemotedMips`); a MIP's
    incumbent that beats the partition is adopted, and a claim of optimality is
    cross-checked with the exact MIP on a second backend where that is cheap.  With a
    budget, a MIP that stopped at its time limit without lifting the bound of the methods
    before it at :data:`STALLS_TO_SKIP` smaller ks is skipped at the larger ones, and
    with ``solver="auto"`` ``exact`` and ``guess`` are skipped where ``auto`` would hand
    their model to a fallback backend (:func:`weak_fallback`)."""

    name = "MIPs"
    records = MIP_ORDER
    scope = EACH_K
    needs = "requested in `bounds`, a solver"
    WEIGHTS: ClassVar[dict[str, float]] = {"bottleneck": 2.0, "exact": 1.0, "guess": 1.0}
    RESUME_WEIGHT = 1.0
    STALLS_TO_SKIP: ClassVar[dict[str, int]] = {"bottleneck": 2, "exact": 1, "guess": 1}
    FALLBACK_SKIPPED = ("exact", "guess")
    DEMOTED = ("guess",)
    STOP_SECONDS_PER_NONZERO = 5e-6
    share = (
        "the budget left, weighted over this k's MIPs still to run and those of the larger open ks "
        f"({', '.join(f'{m} {w:g}' for m, w in WEIGHTS.items())}), with {RESUME_WEIGHT:g} for each other k whose "
        f"pigeonhole updates wait; less the solver's lateness ({STOP_SECONDS_PER_NONZERO:g} s per non-zero), "
        "at most time_limit"
    )
    skipped = (
        "at ks proven or implied by another bound (the pigeonhole bound solved the bottleneck MIP's block, "
        "or found the MIPs out of reach); with a budget, at the larger ks after stalls (a MIP stopped by its "
        f"time limit without lifting the bound: {', '.join(f'{m} after {c}' for m, c in STALLS_TO_SKIP.items())}), "
        f"where auto would use a fallback backend ({', '.join(FALLBACK_SKIPPED)}), and where the solver's "
        "lateness exceeds the time it could have"
    )
    demoted = False

    def __init__(self) -> None:
        self.stalls: dict[str, list[tuple[int, float]]] = {}
        """Per MIP, the ks where it stopped at its time limit without lifting the bound, with
        the seconds it ran there (a budgeted call only)."""

    def chosen(self, call: Call) -> list[str]:
        mips = [m for m in MIP_ORDER if m in call.options.methods]
        if not call.budgeted:
            return [] if self.demoted else mips
        return [m for m in mips if (m in self.DEMOTED) == self.demoted]

    def wanted(self, call: Call) -> bool:
        return bool(self.chosen(call))

    def run(self, call: Call) -> None:
        chosen = self.chosen(call)
        resuming = "pigeonhole" in call.options.methods and call.budgeted and not self.demoted
        pigeonhole = call.method(Pigeonhole) if resuming else None
        stalls = self.stalls if call.budgeted else None
        for i, run in enumerate(call.runs):
            self.at_k(call, run, chosen, call.options.time_limit, call.runs[i + 1 :], pigeonhole, stalls)

    def at_k(
        self,
        call: Call,
        run: Run,
        mip_methods: list[str],
        time_limit: float,
        later: Sequence[Run],
        pigeonhole: Pigeonhole | None,
        stalls: dict[str, list[tuple[int, float]]] | None,
    ) -> None:
        """The MIPs at one k, each capped by ``time_limit`` and by its share (:data:`WEIGHTS`)
        of the budget left over this k's remaining methods that can still fit, the methods of
        the ``later`` ks that are still open (a k proven meanwhile takes no share) and the
        pigeonhole updates waiting at the other ks (:data:`RESUME_WEIGHT`; ``pigeonhole``:
        the call's pigeonhole bound where its updates will resume).  With
        ``stalls`` (a budgeted call), a method that stalled at :data:`STALLS_TO_SKIP` smaller
        ks is skipped.  Each method's :func:`solver_lateness` comes off the budget before it is
        shared, and off ``time_limit``; a method that cannot cover it is skipped with a record,
        its time left to the others (earlier methods first)."""
        problem, solver, n_jobs = run.problem, call.options.solver, call.options.n_jobs
        late = {method: solver_lateness(problem, method) for method in mip_methods}
        seen = {} if stalls is None else stalls
        stalled = {m for m, at in seen.items() if len(at) >= self.STALLS_TO_SKIP[m]}
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
            if method in ran:  # it ran first (ExactFirst)
                continue
            if run.closed:
                run.records.append(skipped(method, "the partition is already proven optimal"))
                continue
            if method in run.implied:
                run.records.append(skipped(method, run.implied[method]))
                continue
            if method in stalled:
                at = ", ".join(f"{seconds:.2g} s at k={k}" for k, seconds in seen[method])
                why = f"it did not lift the bound of the methods before it in {at}; "
                run.records.append(skipped(method, why + "its time goes to the other methods and the last search"))
                continue
            if weak(problem, method):
                run.records.append(skipped(method, weak(problem, method)))
                continue
            most = min(time_limit, call.left())
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
            waiting = 0 if pigeonhole is None else sum(pigeonhole.waits(r) for r in call.runs if r is not run)
            after = self.RESUME_WEIGHT * waiting + sum(
                self.WEIGHTS[m]
                for r in later
                if not r.closed
                for m in mip_methods
                if m not in stalled and m not in r.implied and not weak(r.problem, m)
            )
            while True:
                weights = sum(self.WEIGHTS[m] for m in fits) + after
                spare = self.WEIGHTS[method] * (call.left() - sum(late[m] for m in fits)) / weights
                if spare >= MIN_RUN_SECONDS or len(fits) == 1:
                    break
                fits.pop()
            limit = min(time_limit - late[method], spare)
            if limit < MIN_RUN_SECONDS:
                run.records.append(skipped(method, "the budget is spent"))
                continue
            self._solve(call, run, method, limit, stalls, stalled)
            if run.interrupted:
                break

    def _solve(
        self,
        call: Call,
        run: Run,
        method: str,
        limit: float,
        stalls: dict[str, list[tuple[int, float]]] | None,
        stalled: set[str],
    ) -> None:
        """One MIP at ``run``'s k for ``limit`` seconds: its record, its incumbent, a stall,
        and the cross-check of a claim of optimality."""
        problem, o = run.problem, call.options
        before = run.lb
        record, incumbent = bound_record(
            problem, method, o.solver, limit, o.threads, o.n_jobs, run.ub, run.best_eval.assignment, o.seed
        )
        if incumbent is not None and run.adopt(
            incumbent, problem.graph.topological_order, f"exact MIP incumbent ({record.solver})"
        ):
            call.say(f"{call.tag(problem)}exact MIP found a better partition: {incumbent.bottleneck:.6g}")
        record = checked(record, run.ub_hi)
        run.records.append(record)
        if (
            stalls is not None
            and record.status == "time_limit"
            and (record.bound or 0.0) <= before
            and not little_left(run)  # a bound already tight is no stall
        ):
            stalls.setdefault(method, []).append((problem.k, record.wall_time))
            if len(stalls[method]) >= self.STALLS_TO_SKIP[method]:
                stalled.add(method)
        call.say(
            f"{call.tag(problem)}{method}: {record.status}"
            + (f", bound {record.bound:.6g}" if record.bound is not None else "")
            + (f" ({record.message})" if record.message and record.status == "error" else "")
        )
        if record.status == "interrupted":
            run.interrupted = True
            return
        if record.bound is not None and closes(record.bound, run.ub_hi):
            seconds = min(CROSS_CHECK_TIME, max(call.left(), 1.0))
            run.records, extra = cross_check(
                problem, run.records, record, o.solver, run.ub_hi, o.seed, call.say, seconds
            )
            run.notes.extend(extra)


class DemotedMips(Mips):
    """With a budget, the MIPs of :data:`Mips.DEMOTED` (guess-the-bottleneck: it never gave a
    better bound than the bottleneck MIP it refines) run after the pigeonhole and reach
    bounds have gone on, with what they leave; they share the stalls of :class:`Mips`."""

    name = "MIPs, demoted"
    needs = "guess requested, a budget, a solver"
    demoted = True

    def run(self, call: Call) -> None:
        main = call.method(Mips)
        if main is not None:
            self.stalls = main.stalls
        super().run(call)


class ExactFirst(Method):
    """With a budget, the exact MIP before the pigeonhole bound at the smallest open ks,
    while it runs on ``auto``'s first backend (:func:`weak_fallback`) and proves each k it
    runs at: a k it proves takes no time from the bounds after it.  At the first k it does
    not prove it stops and its record is dropped: :class:`Mips` runs it there again with
    its share (a partition it found stays adopted)."""

    name = "exact, first"
    records = ("exact",)
    scope = EACH_K
    needs = "exact requested, a budget, a solver"
    SHARE = 0.1
    share = f"{SHARE:g} of the budget left at each k, at most time_limit"
    skipped = f"at the first k it does not prove, where auto would use a fallback backend, below {MIN_RUN_SECONDS} s"

    def wanted(self, call: Call) -> bool:
        return "exact" in call.options.methods and call.budgeted

    def run(self, call: Call) -> None:
        mips = Mips()
        for run in call.runs:
            if run.interrupted:
                return
            if run.closed:
                continue
            if weak_fallback(run.problem, "exact", call.options.solver, call.options.n_jobs):
                return
            limit = min(call.options.time_limit, self.SHARE * call.left())
            if limit < MIN_RUN_SECONDS:
                return
            before = len(run.records)
            mips.at_k(call, run, ["exact"], limit, [], None, None)
            if not run.closed:  # the MIPs run it here again, with their share
                del run.records[before:]
                return
