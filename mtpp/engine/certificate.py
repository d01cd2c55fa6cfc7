"""``mtpp.certify``: a partition plus the lower-bound hierarchy of Section 3.

A :class:`Certificate` holds the best partition found (SliceGraph's, or an exact-MIP
incumbent if that is better; either way re-checked by :func:`mtpp.evaluate`) and
every lower bound computed for it, cheapest first:

``simple``      Lemma 3.3, always present, needs no solver;
``cut``         ``max_v min_{S contains v} f(S)`` by one minimum cut per op, independent of k
                (:mod:`mtpp.bounds.cut`);
``crossing``    work plus every tensor once per block its net (producer and consumers) must meet
                below the bound, over k (averaging), by minimum cuts per net and per pair of its
                members (:mod:`mtpp.bounds.crossing`);
``clique``      ``k + 1`` ops of which any two sharing a block cost at least the bound (pigeonhole),
                one minimum cut per pair (:mod:`mtpp.bounds.clique`);
``reach``       no chain of k blocks below the bound covers the graph: forward and backward sweeps
                of the ops each prefix of blocks may hold, one minimum cut per op refused
                (:mod:`mtpp.bounds.reach`), bisection per k;
``ideal-dp``    the exact DP over the ideal lattice (:mod:`heuristics.partition.ideal_dp`): on narrow
                graphs it proves the optimum and its partition becomes the certificate's;
``pigeonhole``  the cheapest convex block that carries a ``1/k`` share of a weighting of the ops, one
                small MIP per weighting, weights improved by multiplicative updates
                (:mod:`formulations.pigeonhole`; the ``work`` weighting is ``bottleneck``'s block);
``bottleneck``  three-superblock MIP (Section 3.2);
``guess``       guess-the-bottleneck, ``min_j`` of k sub-MIPs (Section 3.3);
``exact``       the MIP of Figure 3.

MIP bounds are the solvers' *proven dual bounds*, never incumbents, on models scaled
to ``O(1)`` data and lowered by the margin each solver's own tolerances allow
(:mod:`formulations.bounds`); a solve that stops at its time limit contributes the
bound it proved, and a solver that fails (an error, or "infeasible" for a model that
has solutions) only adds an ``error`` record: the simple bound always stands.

Defence in depth: a MIP bound above the re-checked upper bound is a solver failure
and is dropped (an ``error`` record says so); a claim of optimality from a MIP is
cross-checked with the exact MIP on a second backend where that is cheap, and when
two proofs disagree the smaller bound is reported and a note says so.

``optimal`` means ``LB >= (1 - OPTIMALITY_TOLERANCE) (UB + e)``, with ``e`` the
evaluator's bound on the rounding error of ``UB`` (:attr:`mtpp.Evaluation.rounding`):
the partition is within a relative ``5e-7`` of the optimum.  Every exact method's
bound is already lowered by its own rounding error (:mod:`mtpp.core.rounding`): where
that margin is too large for a proof (a graph mixing huge and tiny magnitudes), the
certificate reports the bound it can prove, not "optimal", and a note says why.

Several k in one call (``k=[2, 4, 8, 16]``) share bounds both ways: ``OPT(k)`` does not
increase with k (blocks may be empty), so a lower bound proven for ``k' >= k`` holds
for ``k`` and a partition for ``k'' <= k`` is one for ``k`` (re-checked by the
evaluator at ``k``); a shared bound's record says which k proved it (``from_k``).
With a total ``budget`` the call spends its time cheapest first: a quick partition
(SliceGraph on Kahn's order, each k with ``QUICK_SHARE`` of the time left split over
the ks to do; a DP that does not fit gives the best equal-work split), the cut bound,
the ideal DP (smallest k first, so each k starts from the optimal partition of the
next smaller k), the crossing bound (``CROSSING_SHARE`` of what is left) and the
reach bound (``REACH_SHARE``) for the ks still open, the orderer's search
(BRKGA by default) for the ks still open (``PARTITION_SHARE`` of what is left,
split evenly among them), annealing, the exact MIP at the smallest open ks while it
runs on ``auto``'s first backend and proves each
(:func:`mtpp.engine.phases.exact_first_phase`), the pigeonhole bound (``PIGEONHOLE_SHARE``; skipped at the
larger ks after two that it could not lift), then the MIPs with what is left: at each k ``bottleneck``
(not where the pigeonhole bound solved its block's MIP), then ``exact``,
each with its share of the time left over the methods
and the ks still open (a k already proven gives its time back; the bottleneck MIP
weighs twice); a MIP that stopped at its time limit without lifting the bound of the
methods before it is skipped at the larger ks, and with ``solver="auto"`` ``exact`` and
``guess`` are skipped where ``auto`` would hand their model to a fallback backend
(:data:`mtpp.engine.phases.FALLBACK_SKIPPED`).  Where the pigeonhole bound leads (or stands
within ``PIGEONHOLE_RESUME_GAP`` of the best bound) and the
clock stopped its updates, they go on (``PIGEONHOLE_RESUME_SHARE`` of what the MIPs left;
where they stalled instead, with a second wind: a fresh, slower step),
then the reach bound's shaving where it leads and where its sweeps did not lead and a
shaving pass fits (``REACH_RESUME_SHARE``, widest relative gap first), then ``guess`` (``DEMOTED``: it never beat
``bottleneck`` in our measurements); the clique bound comes last of the bounds
(``CLIQUE_SHARE`` of what is left: it never led on the wide graphs we measured).
Of the time left at the end, ``BAND_SHARE`` goes to the ideal DP on bands of the best
partitions' orders, which moves every block boundary at once
(:mod:`heuristics.partition.band_dp`); what it leaves goes to annealing and a last, larger
search (the orderer's evaluations sized to fill each open k's share), in rounds until it
is spent (``time_limit`` caps each k's part of a round), less ``MERGE_SHARE`` for the multi-order
DP, which cuts each open k's partition from the prefixes of all the orders the searches
found (:mod:`heuristics.partition.merge_dp`).  From the end of the ideal DP to the end of
the bounds, a budgeted call that may improve its partitions (``fill_budget``) anneals on
a spare core, if the process has one beside the solver's threads
(:mod:`mtpp.engine.background`): the solvers and the compiled kernels release the
interpreter lock.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, PrivateAttr

from heuristics.partition.ideals import DEFAULT_MAX_IDEALS
from heuristics.partition.orderers import get_orderer
from heuristics.partition.presolve import Presolved
from heuristics.partition.presolve import presolve as presolve_problem
from mtpp.bounds.cut import cut_lower_bound
from mtpp.core.errors import InvalidParameterError, entry_point
from mtpp.core.evaluate import evaluate
from mtpp.core.graph import Graph
from mtpp.core.problem import Problem
from mtpp.core.records import BOUND_METHODS, MIP_METHODS, SOLVER_METHODS, BoundRecord, PresolveRecord, checked, closes
from mtpp.core.records import OPTIMALITY_TOLERANCE as OPTIMALITY_TOLERANCE  # its old home: kept one release
from mtpp.core.result import FieldsEqual, Result, ResultStatus, Step
from mtpp.core.validation import check_bool, check_count, check_instance, check_k, check_seed, check_time_limit
from mtpp.engine.background import background_annealer
from mtpp.engine.phases import (
    DEMOTED,
    MIP_PHASE_ORDER,
    QUICK_ORDERER,
    QUICK_SHARE,
    Report,
    Run,
    Stalls,
    anneal_phase,
    band_phase,
    clique_phase,
    crossing_phase,
    exact_first_phase,
    fill_phase,
    ideal_dp_phase,
    merge_phase,
    mip_phase,
    pigeonhole_phase,
    pigeonhole_resume_phase,
    reach_phase,
    reach_resume_phase,
    recorded_failure,
    search_phase,
    share_lower_bounds,
)
from mtpp.partitioner import as_problem, partition

METHODS = BOUND_METHODS


class Certificate(FieldsEqual, Result, BaseModel):
    """A partition (upper bound) and the lower bounds proven for it: a
    :class:`mtpp.core.result.Result`.

    The optimum lies in ``[lower_bound, upper_bound]``; ``ratio`` is their quotient,
    ``gap`` is ``(UB - LB) / UB`` and ``gap_percent`` the same in percent.
    ``optimal`` is true when the gap is within ``OPTIMALITY_TOLERANCE`` (relative).
    ``order`` lists node ids (as strings).  ``steps`` are the partition search and the
    bound records; ``notes`` say how the bounds were obtained, and record any
    disagreement between proofs.  ``to_json()`` is the ``mtpp-certificate`` document
    (its partition re-checked on the problem certify was given); ``model_dump_json()``
    the raw fields.
    """

    model_config = ConfigDict(frozen=True)
    _problem: Problem | None = PrivateAttr(default=None)

    mtpp_version: str
    graph: str | None
    n: int
    m: int
    k: int
    bandwidth: float
    memory: float | None
    reserve: float
    peak_aware: bool
    upper_bound: float
    partition_source: str
    assignment: dict[str, int]
    order: list[str]
    block_costs: list[float]
    bounds: list[BoundRecord]
    lower_bound: float
    lower_bound_method: str
    ratio: float
    gap_percent: float
    optimal: bool
    wall_time: float
    notes: list[str]
    presolve: PresolveRecord | None = None
    """What presolve removed (``None``: presolve was off)."""

    def bound(self, method: str) -> BoundRecord | None:
        """The record of ``method``, if it was computed."""
        return next((b for b in self.bounds if b.method == method), None)

    @property
    def status(self) -> ResultStatus:
        """``optimal`` when proven, ``time_limit`` when a bound method was stopped by
        its time limit or the budget, else ``feasible``."""
        if self.optimal:
            return ResultStatus.OPTIMAL
        stopped = any(b.status in ("time_limit", "interrupted") for b in self.bounds)
        return ResultStatus.TIME_LIMIT if stopped else ResultStatus.FEASIBLE

    @property
    def steps(self) -> tuple[Step, ...]:
        """The partition (upper bound) and every bound record, in the order run."""
        found = Step(self.partition_source, ResultStatus.FEASIBLE, self.upper_bound, None, 0.0, "upper bound")
        return (
            found,
            *(Step(b.method, ResultStatus(b.status), None, b.bound, b.wall_time, b.message) for b in self.bounds),
        )

    def _document(self) -> Any:
        from mtpp.results_schema import certificate_document

        if self._problem is None:
            raise InvalidParameterError(
                "this certificate was not made by certify() in this process: build its document with "
                "mtpp.results_schema.certificate_document(cert, problem)"
            )
        return certificate_document(self, self._problem)


def parse_bounds(bounds: str | Iterable[str]) -> tuple[str, ...]:
    """Normalise ``"all"``, a comma-separated string or a list of method names."""
    if isinstance(bounds, str):
        names = [b.strip() for b in bounds.split(",")]
    elif isinstance(bounds, Iterable) and all(isinstance(b, str) for b in bounds):
        names = list(bounds)
    else:
        raise InvalidParameterError(f"bounds must be 'all', a comma-separated string or a list of names: {bounds!r}")
    if names == ["all"]:
        return METHODS
    unknown = [b for b in names if b not in METHODS]
    if unknown:
        raise InvalidParameterError(f"unknown bound method(s) {unknown}; choose from {', '.join(METHODS)} or 'all'")
    return tuple(m for m in METHODS if m in names)


def _check_solver(solver: str) -> None:
    """Fail fast on an unknown or missing solver, before any work is done."""
    from solvers.registry import get_backend

    get_backend(solver)


@overload
def certify(
    graph_or_problem: Graph | Problem,
    k: int | None = None,
    *,
    bounds: str | Iterable[str] = ...,
    solver: str = ...,
    time_limit: float = ...,
    budget: float | None = ...,
    threads: int = ...,
    n_jobs: int = ...,
    orderer: str = ...,
    seed: int = ...,
    bandwidth: float | None = ...,
    memory: float | None = ...,
    reserve: float | None = ...,
    peak_aware: bool | None = ...,
    max_ideals: int = ...,
    report: Report | None = ...,
    presolve: bool = ...,
    fill_budget: bool = ...,
) -> Certificate: ...
@overload
def certify(
    graph_or_problem: Graph | Problem,
    k: Sequence[int],
    *,
    bounds: str | Iterable[str] = ...,
    solver: str = ...,
    time_limit: float = ...,
    budget: float | None = ...,
    threads: int = ...,
    n_jobs: int = ...,
    orderer: str = ...,
    seed: int = ...,
    bandwidth: float | None = ...,
    memory: float | None = ...,
    reserve: float | None = ...,
    peak_aware: bool | None = ...,
    max_ideals: int = ...,
    report: Report | None = ...,
    presolve: bool = ...,
    fill_budget: bool = ...,
) -> list[Certificate]: ...
@entry_point
def certify(
    graph_or_problem: Graph | Problem,
    k: int | Sequence[int] | None = None,
    *,
    bounds: str | Iterable[str] = METHODS,
    solver: str = "auto",
    time_limit: float = 60.0,
    budget: float | None = None,
    threads: int = 1,
    n_jobs: int = 1,
    orderer: str = "brkga",
    seed: int = 0,
    bandwidth: float | None = None,
    memory: float | None = None,
    reserve: float | None = None,
    peak_aware: bool | None = None,
    max_ideals: int = DEFAULT_MAX_IDEALS,
    report: Report | None = None,
    presolve: bool = True,
    fill_budget: bool = True,
) -> Certificate | list[Certificate]:
    """Partition the graph and prove how good the partition is.

    ``k`` is one number of blocks (a :class:`Certificate` is returned) or a list of
    them (one certificate per k, in increasing k, sharing bounds across k).
    ``bounds`` selects the methods (``"all"`` or names from ``simple``, ``cut``,
    ``crossing``, ``clique``, ``reach``, ``ideal-dp``, ``pigeonhole``, ``bottleneck``, ``guess``, ``exact``;
    ``simple`` is always computed).  ``time_limit`` caps each MIP method and each
    partition search; ``budget`` (seconds, default none) caps the whole call, spent
    cheapest first (module docstring); what the methods leave of it goes to a last,
    larger partition search at the ks not proven optimal, in rounds until the budget is
    spent (``fill_budget=False``: return as soon as the methods are done).  After the
    searches (without a budget, or with one and ``fill_budget``) the multi-order DP cuts
    each open k's partition
    from the prefixes of the orders every search found, never worse than the best of
    them (each k at most ``time_limit``).
    ``max_ideals`` caps the ideal DP's lattice: a wider graph gets a ``too_wide``
    record and the MIPs go on.  ``threads`` goes to the solver; ``n_jobs`` runs
    guess-the-bottleneck's sub-MIPs in parallel.  ``solver`` is ``auto`` (Gurobi
    where its licence allows, else HiGHS, SCIP, CP-SAT), ``highs``, ``scip``,
    ``gurobi`` or ``cpsat``.  ``report(line)`` is called as each method finishes.
    Ctrl-C during a MIP keeps everything finished so far and returns the
    certificate with that method marked ``interrupted``.  ``presolve`` (default on)
    runs every method on the graph without the ops that provably cost nothing where
    they join their neighbour (:mod:`heuristics.partition.presolve`: the optimum is the same,
    every bound holds for the original), and lifts the partition back; the notes say
    what was removed.
    """
    start = time.perf_counter()
    many = isinstance(k, Sequence) and not isinstance(k, str)
    ks = sorted({check_k(x) for x in k}) if many else [None if k is None else check_k(k)]  # type: ignore[union-attr]
    if not ks:
        raise InvalidParameterError("k must name at least one number of blocks")
    first = None if many and isinstance(graph_or_problem, Problem) else ks[0]  # a Problem's own k is replaced
    original = as_problem(graph_or_problem, first, bandwidth, memory, reserve, peak_aware)
    if many:  # k > n is the same problem as k = n (see Problem): one certificate for them
        ks = sorted({min(kk, original.graph.n) for kk in ks if kk is not None})
    check_bool("presolve", presolve)
    check_bool("fill_budget", fill_budget)
    methods = parse_bounds(bounds)
    time_limit = check_time_limit(time_limit)
    deadline = None if budget is None else start + check_time_limit(budget, "budget")
    seed = check_seed(seed)
    threads = check_count("threads", threads)
    n_jobs = check_count("n_jobs", n_jobs)
    max_ideals = check_count("max_ideals", max_ideals)
    check_instance("solver", solver, str, "a solver name")
    check_instance("orderer", orderer, str, "an orderer name")
    if report is not None and not callable(report):
        raise InvalidParameterError(f"report must be a callable or None, got {report!r}")
    if any(m in SOLVER_METHODS for m in methods):
        _check_solver(solver)
    if orderer != QUICK_ORDERER:
        get_orderer(orderer)  # an unknown name fails before any work
    pre = presolve_problem(original) if presolve else None
    base = original if pre is None else pre.problem
    # ks that presolve made equal (k >= the reduced graph's ops) are one problem, asked for several times
    asked: dict[int | None, list[int | None]] = {}
    for kk in ks:
        asked.setdefault(None if kk is None else min(kk, base.graph.n), []).append(kk)
    problems = [base if group[0] is None else replace(base, k=group[0]) for group in asked.values()]
    say = report or (lambda line: None)
    if pre is not None and pre.reduced:
        say(pre.summary())

    def left() -> float:
        return math.inf if deadline is None else deadline - time.perf_counter()

    def tag(problem: Problem) -> str:
        return f"k={problem.k}: " if many else ""

    if deadline is not None:  # numba's cache loading must not count as a DP's time: that sizes the search
        _warm_up()
    runs: list[Run] = []
    for i, problem in enumerate(problems):  # cheapest first: one SliceGraph pass over Kahn's order
        quick = None if deadline is None else max(1e-6, QUICK_SHARE * left() / (len(problems) - i))
        sol = partition(problem, orderer=QUICK_ORDERER, seed=seed, presolve=False, time_limit=quick)
        run = Run(
            problem,
            sol.evaluation,
            sol.index_order,
            f"slicegraph ({QUICK_ORDERER})" + (", equal-work split: the DP did not fit" if sol.stopped_by_time else ""),
            [BoundRecord(method="simple", bound=sol.lower_bound, status="optimal", proven_optimal=True)],
            _notes(problem),
            decode_seconds=sol.wall_time if quick is None or not sol.stopped_by_time else max(quick, sol.wall_time),
            found=[sol.index_order],
        )
        for smaller in runs:  # a partition into fewer blocks is one into k blocks
            shared = evaluate(problem, smaller.best_eval.assignment, smaller.best_order)
            run.adopt(shared, smaller.best_order, f"{smaller.source}, found for k={smaller.problem.k}")
        say(f"{tag(problem)}partition: {run.source}: upper bound {run.ub:.6g}; simple: {sol.lower_bound:.6g}")
        runs.append(run)

    if "cut" in methods:
        with recorded_failure(runs, say, "cut"):
            _cut_phase(runs, base, say)

    if "ideal-dp" in methods:
        with recorded_failure(runs, say, "ideal-dp"):
            ideal_dp_phase(runs, max_ideals, left, say, tag)

    # the partitions go on improving on a spare core while the bounds are proven (after
    # the ideal DP, which proves tiny and narrow graphs at once)
    background = None
    if deadline is not None and fill_budget and orderer != QUICK_ORDERER:
        background = background_annealer(runs, left, say, tag, threads, n_jobs, seed + 2)
    try:
        relay = say if background is None else background.relay
        anneal = deadline is None or fill_budget  # a batch row's partition stays its orderer's
        _search_phases(runs, methods, orderer, seed, time_limit, anneal, left, relay, tag)
        _bound_phases(runs, methods, solver, time_limit, threads, n_jobs, seed, deadline, left, relay, tag)
    finally:
        if background is not None:
            background.stop()
            say(background.summary())
    if fill_budget and deadline is not None and orderer != QUICK_ORDERER:
        with recorded_failure(runs, say, "band DP"):
            band_phase(runs, time_limit, left, say, tag)
        with recorded_failure(runs, say, "partition search"):
            fill_phase(runs, orderer, seed, time_limit, left, say, tag)
    if orderer != QUICK_ORDERER and (deadline is None or fill_budget):
        with recorded_failure(runs, say, "multi-order DP"):
            merge_phase(runs, time_limit, left, say, tag)

    share_lower_bounds(runs)
    certificates = [_certificate(run, start, pre, kk) for run, group in zip(runs, asked.values()) for kk in group]
    return certificates if many else certificates[0]


def _search_phases(
    runs: list[Run],
    methods: Sequence[str],
    orderer: str,
    seed: int,
    time_limit: float,
    anneal: bool,
    left: Callable[[], float],
    say: Report,
    tag: Callable[[Problem], str],
) -> None:
    """The crossing and reach bounds and the partition search of a certify call, in the
    order of the module docstring: the orderer's search, then (with ``anneal``) the
    annealing."""
    if "crossing" in methods:
        with recorded_failure(runs, say, "crossing"):
            crossing_phase(runs, time_limit, left, say, tag)

    if "reach" in methods:
        with recorded_failure(runs, say, "reach"):
            reach_phase(runs, time_limit, left, say, tag)

    if orderer != QUICK_ORDERER:
        with recorded_failure(runs, say, "partition search"):
            search_phase(runs, orderer, seed, time_limit, left, say, tag)
        if anneal:
            with recorded_failure(runs, say, "annealing"):
                anneal_phase(runs, time_limit, left, say, tag, seed=seed)


def _bound_phases(
    runs: list[Run],
    methods: Sequence[str],
    solver: str,
    time_limit: float,
    threads: int,
    n_jobs: int,
    seed: int,
    deadline: float | None,
    left: Callable[[], float],
    say: Report,
    tag: Callable[[Problem], str],
) -> None:
    """The MIP-based and last bounds of a certify call, in the order of the module docstring."""
    stalls = None if deadline is None else Stalls({})
    if "exact" in methods and stalls is not None:
        with recorded_failure(runs, say, "exact"):
            exact_first_phase(runs, solver, time_limit, threads, n_jobs, seed, left, say, tag)

    if "pigeonhole" in methods:
        with recorded_failure(runs, say, "pigeonhole"):
            pigeonhole_phase(runs, solver, threads, time_limit, left, say, tag)

    mip_methods = [m for m in MIP_PHASE_ORDER if m in methods]
    demoted = [] if deadline is None else [m for m in mip_methods if m in DEMOTED]

    def mips(chosen: list[str], resuming: Sequence[Run] = ()) -> None:
        for i, run in enumerate(runs):
            later = runs[i + 1 :]
            with recorded_failure([run], say, *chosen):
                mip_phase(
                    run, chosen, solver, time_limit, threads, n_jobs, seed, left, later, say, tag, stalls, resuming
                )

    resuming = runs if "pigeonhole" in methods and deadline is not None else ()
    mips([m for m in mip_methods if m not in demoted], resuming)
    if "pigeonhole" in methods and deadline is not None:
        with recorded_failure(runs, say, "pigeonhole"):
            pigeonhole_resume_phase(runs, solver, threads, left, say, tag)
    if "reach" in methods and deadline is not None:
        with recorded_failure(runs, say, "reach"):
            reach_resume_phase(runs, time_limit, left, say, tag)
    if demoted:  # after the bounds that were still rising (DEMOTED)
        mips(demoted)
    if "clique" in methods:  # last of the bounds: it never led on the wide graphs (CLIQUE_SHARE)
        with recorded_failure(runs, say, "clique"):
            clique_phase(runs, time_limit, left, say, tag)


def _cut_phase(runs: list[Run], base: Problem, say: Report) -> None:
    """The cut bound (:mod:`mtpp.bounds.cut`): independent of k, one record at every k."""
    t0 = time.perf_counter()
    value, op = cut_lower_bound(base)
    for run in runs:
        run.records.append(
            BoundRecord(
                method="cut",
                bound=value,
                status="optimal",
                proven_optimal=True,
                wall_time=time.perf_counter() - t0,
                message="" if op < 0 else f"attained at op {base.graph.ids[op]!r}",
            )
        )
    say(f"cut: {value:.6g} ({time.perf_counter() - t0:.2f} s)")


def _warm_up() -> None:
    """Load the compiled SliceGraph kernels (a few tenths of a second on the first call
    in a process) on a four-op graph."""
    import numpy as np

    g = Graph.from_arrays(np.ones(4), np.zeros(4), np.ones(4), np.array([[0, 1], [1, 2], [0, 3]]), name="warm-up")
    partition(g, 2, orderer=QUICK_ORDERER, presolve=False)


def _certificate(run: Run, start: float, pre: Presolved | None, k: int | None) -> Certificate:
    """The certificate of ``k`` (one of the ks ``run`` answers; ``None``: the problem's
    own), its partition lifted to the original graph (and re-checked there) when
    presolve reduced it."""
    import mtpp

    problem, best_eval, best_order, notes = run.problem, run.best_eval, run.best_order, list(run.notes)
    if pre is not None and pre.reduced:
        best_order = pre.lift_order(best_order)
        asked = problem.requested_k if k is None else k  # the k asked for (the reduced graph may be smaller)
        problem = replace(pre.original, k=asked)
        best_eval = evaluate(problem, pre.lift(best_eval.assignment), best_order if problem.peak_aware else None)
        notes.append(pre.summary())
    ub = best_eval.upper_bound  # the exact cost rounded up (mtpp.core.result.upper_rounded)
    records = [checked(r, ub) for r in run.records]  # a better partition may expose a bad bound
    proven = [r for r in records if r.bound is not None]
    top = max(proven, key=lambda r: r.bound or 0.0)
    lb = float(top.bound or 0.0)
    g = problem.graph
    ratio = 1.0 if ub == 0 else lb / ub
    cert = Certificate(
        mtpp_version=mtpp.__version__,
        graph=g.name,
        n=g.n,
        m=g.m,
        k=problem.k,
        bandwidth=problem.bandwidth,
        memory=None if math.isinf(problem.memory) else problem.memory,
        reserve=problem.reserve,
        peak_aware=problem.peak_aware,
        upper_bound=ub,
        partition_source=run.source,
        assignment={str(g.ids[i]): int(b) for i, b in enumerate(best_eval.assignment.tolist())},
        order=[str(g.ids[i]) for i in best_order.tolist()],
        block_costs=[float(c) for c in best_eval.block_costs],
        bounds=records,
        lower_bound=lb,
        lower_bound_method=top.method if top.from_k is None else f"{top.method} (from k={top.from_k})",
        ratio=ratio,
        gap_percent=0.0 if ub == 0 else 100.0 * (ub - lb) / ub,
        optimal=closes(lb, ub),
        wall_time=time.perf_counter() - start,
        notes=notes,
        presolve=None if pre is None else PresolveRecord(**pre.record(), ideals_after=_ideals(records)),
    )
    cert._problem = problem
    return cert


def _ideals(records: list[BoundRecord]) -> int | None:
    """The ideals the DP enumerated on the (reduced) graph, where it counted them."""
    return next((r.ideals for r in records if r.method == "ideal-dp" and r.ideals is not None), None)


def _notes(problem: Problem) -> list[str]:
    notes = ["MIP bounds are proven dual bounds on models scaled to O(1), lowered by each solver's tolerance margin"]
    if problem.peak_aware:
        notes.append(
            "peak-aware overflow (size_param(S) + peak(S) - M)^+ / B, each block running its ops in 'order'; "
            "the simple and MIP bounds ignore peak(S) >= 0, which only lowers them: they remain valid"
        )
    else:
        notes.append("overflow uses a fixed activation reserve R: (size_param(S) - (M - R))^+ / B")
    return notes


def export_models(problem: Problem, bounds: str | Iterable[str], directory: str | os.PathLike[str]) -> list[Path]:
    """Write the MIP(s) of each requested method as MPS files into ``directory``
    (guess-the-bottleneck gives one file per ``j``), so anyone can re-solve them
    with any solver.  The models are the plain formulations, without the fixings
    that depend on a particular upper bound.  Returns the paths written."""
    from formulations.bounds import build_models

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for method in (m for m in parse_bounds(bounds) if m in MIP_METHODS):
        for name, model in build_models(problem, method):
            path = out / f"{name}.mps"
            model.write_mps(path)
            paths.append(path)
    return paths
