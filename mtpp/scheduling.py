"""``mtpp.schedule``: a minimum-peak-memory topological order with a proven lower bound.

Runs the heuristics of :mod:`heuristics.peak_memory.orders` and
:mod:`heuristics.peak_memory.state_dp` and the CP-SAT model of :mod:`formulations.schedule`
(solved by :mod:`solvers.cpsat_schedule`), re-scores every order with the evaluator of
:mod:`mtpp.core.memory` (Topoformer Eq. 1-3, 15) and keeps the best order and the best
proven bound.
"""

from __future__ import annotations

import math
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from mtpp.core.budget import Budget
from mtpp.core.errors import InvalidParameterError, MissingDependencyError, WeightsError, entry_point
from mtpp.core.graph import Graph, NodeId
from mtpp.core.memory import REL_TOL, local_lower_bound, peak_memory, profile_error
from mtpp.core.result import Result, ResultStatus, Settled, Step, finite_or_none, settle, upper_rounded
from mtpp.core.rounding import UNIT, lower_by
from mtpp.core.validation import (
    check_bool,
    check_choice,
    check_instance,
    check_optional_count,
    check_optional_time_limit,
    check_seed,
)
from mtpp.results_schema import ScheduleDocument, StageDocument, document_gap, finite, graph_fields

if TYPE_CHECKING:
    from formulations.schedule import ScheduleModel

OBJECTIVES = ("peak_memory",)
LEARNED = {"topoformer": "greedy", "topoformer-sample": "sample", "topoformer-beam": "beam"}
LEARNED_BRKGA = ("regal-brkga", "topoformer-brkga")  # BRKGA with learned mutant distributions
RULES = ("learned-rule", "learned-rule-sample")  # the learned dispatch rule, greedy and sampled
NEURAL_WIDTH = 16  # samples / beam width of the learned decoders (Topoformer Section 5)
REGAL_EVALUATIONS = 5000  # the REGAL paper's budget
DEFAULT_BEAM_WIDTH = 1000
RANDOM_ORDERS = 100
AUTO_BEAM_SHARE = 0.15  # share of the time left that "auto" gives the beam
AUTO_WIDE_BEAM = 10  # then a beam this many times wider, if twice that many first beams fit in
AUTO_WIDE_SHARE = 0.25  # this share of the time left
AUTO_BRKGA_SHARE = 0.2  # then BRKGA (seeded with the best order), before the exact search
AUTO_BRKGA_GENERATIONS = 2000
SEARCH_MEMORY_MB = 512  # state arrays of one best-first search (one part at a time)
RANDOM_SHARE = 0.1  # of the time left, for the random orders (fewer than RANDOM_ORDERS where they would not fit)
RANDOM_SECONDS_PER_ELEMENT = 2e-8
"""Seconds per op and edge of one random order (8-18 ns on layered graphs of 20,000 and 50,000
ops: 100 orders took 1.7 s at 50,000)."""
CUT_LIVE_SETUP_PER_ELEMENT = 1.5e-6
"""Seconds per op and edge before the min-cut live bound looks at its deadline (3.7 s on a
layered graph of 50,000 ops and 2.3 million edges): not started with less time left."""
SEARCH_SETUP_PER_ELEMENT = 3e-6
"""Seconds per op and edge that the exact search spends before its deadline can stop it
(splitting the graph, the parts' live bounds, the search's own set-up: 7-8 s on a layered
graph of 50,000 ops: ``schedule --time-limit 10`` took 16.5 s there): not started
with less time left."""
CPSAT_BUILD_PER_ELEMENT = 2e-6
"""Seconds per op and edge to build CP-SAT's schedule model (0.75 s on a layered graph of
20,000 ops and 578,000 edges, loaded 2-core machine)."""
CPSAT_OVERRUN_PER_ELEMENT = 8e-6
"""Seconds per op and edge that CP-SAT runs past its own time limit (loading and presolving
the model are not interrupted): given 0.5 s it took 4.7 s on that graph (``schedule
--time-limit 10`` took 14.2 s there).  With a time limit, ``cpsat`` gets the time left less
this, and does not start where less than :data:`CPSAT_MIN_SECONDS` would remain."""
CPSAT_MIN_SECONDS = 0.5


@dataclass(frozen=True)
class Stage:
    """One method run inside :func:`schedule`: the peak of its order, re-evaluated and
    rounded upwards like :attr:`Schedule.peak` (``inf`` if it found none), the lower
    bound it proved (``0`` if none), its status and time.  A failed method (status
    ``"error"``: it raised, returned an invalid order, or proved a bound above the
    schedule's upper bound) says why in ``detail`` and its bound is ``0``."""

    method: str
    peak: float
    lower_bound: float
    status: str
    wall_time: float
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "peak": None if math.isinf(self.peak) else self.peak,
            "lower_bound": self.lower_bound,
            "status": self.status,
            "wall_time": self.wall_time,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Schedule(Result):
    """A topological order with its peak memory and a proven lower bound on the
    minimum peak: a :class:`mtpp.core.result.Result`.

    ``order`` lists node ids (``index_order`` the same as indices); ``upper_bound``
    (alias ``peak``) is its peak re-evaluated by :func:`peak_memory` and rounded upwards
    by :func:`mtpp.core.memory.profile_error` (:func:`mtpp.core.result.upper_rounded`), so it is
    never below the order's true peak; ``lower_bound`` is the best bound proven by
    any stage that does not exceed it (a stage whose bound does failed,
    :func:`mtpp.core.result.settle`; ``0`` if none); ``bound_method`` names its stage
    (``"local"`` for :func:`local_lower_bound`, ``"forced-live"`` for
    :func:`mtpp.bounds.peak_memory.forced_live_bound`, ``"cut-live"`` for
    :mod:`mtpp.bounds.peak_cut`, ``"search"`` for the best-first search,
    ``"exact-dp"`` / ``"beam"`` for the state DP, ``"cpsat"``); ``gap = (peak -
    lower_bound) / peak``.  ``status`` is ``"optimal"`` when the order is proven
    optimal to within the relative tolerance ``mtpp.core.memory.REL_TOL`` (the upper bound
    is at most ``1 + REL_TOL`` times the lower bound), else ``"feasible"``.  Every
    bound is lowered for its own rounding, so it never exceeds the true optimum
    (exact arithmetic on the float sizes).  ``stages`` records every method run,
    failed ones included (``steps``: the same as :class:`mtpp.core.result.Step`).
    ``to_json()`` is the ``mtpp-schedule`` document.
    """

    order: tuple[NodeId, ...]
    index_order: np.ndarray = field(repr=False)
    peak: float
    lower_bound: float
    method: str
    status: ResultStatus
    wall_time: float
    bound_method: str
    objective: str = "peak_memory"
    stages: tuple[Stage, ...] = ()
    graph_name: str | None = None
    graph: Graph | None = field(default=None, repr=False, compare=False)

    @property
    def upper_bound(self) -> float:
        """The peak of ``order``, re-evaluated by :func:`peak_memory` and rounded upwards."""
        return self.peak

    @property
    def optimal(self) -> bool:
        return self.status == ResultStatus.OPTIMAL

    @property
    def steps(self) -> tuple[Step, ...]:
        """Every method run, as :class:`mtpp.core.result.Step` records."""
        return tuple(
            Step(s.method, ResultStatus(s.status), finite_or_none(s.peak), s.lower_bound, s.wall_time, s.detail)
            for s in self.stages
        )

    def _document(self) -> ScheduleDocument:
        """The ``mtpp-schedule`` document (:mod:`mtpp.results_schema`)."""
        if self.graph is None:
            raise InvalidParameterError("this schedule has no graph: build it with mtpp.schedule()")
        stages = [
            StageDocument(
                method=s.method,
                peak=finite(s.peak),
                lower_bound=s.lower_bound,
                status=s.status,
                wall_time=s.wall_time,
                detail=s.detail,
            )
            for s in self.stages
        ]
        return ScheduleDocument(
            **graph_fields(self.graph),
            upper_bound=finite(self.peak),
            lower_bound=self.lower_bound,
            lower_bound_method=self.bound_method,
            gap=document_gap(self.peak, self.lower_bound),
            optimal=self.optimal,
            wall_time=self.wall_time,
            method=self.method,
            status=self.status,
            order=list(self.order),
            stages=stages,
        )


# ---------------------------------------------------------------------- search
def _check_args(objective: object, method: object, time_limit: object, beam_width: object, threads: object) -> None:
    check_choice("objective", objective, OBJECTIVES)
    check_choice("method", method, METHODS)
    check_optional_time_limit(time_limit)
    check_optional_count("beam_width", beam_width)
    check_optional_count("threads", threads)


class _Search:
    """Keeps the best order and every stage's bound over the stages of one call.

    The result contract (:mod:`mtpp.core.result`): the upper bound is the best
    order's evaluated peak rounded upwards by :func:`mtpp.core.memory.profile_error`; a
    stage whose bound exceeds it failed (its bound cannot be one) and never counts,
    neither for the result nor, while the call runs, for :attr:`lower` and
    :attr:`proven` (:func:`mtpp.core.result.settle`); a stage that raises is a failed
    stage too (:meth:`attempt`)."""

    def __init__(self, graph: Graph, time_limit: float | None) -> None:
        self.graph = graph
        self.budget = Budget(time_limit)
        self.order: np.ndarray | None = None
        self.peak = math.inf
        self.order_method = ""
        self.stages: list[Stage] = []
        self._settled: tuple[tuple[int, float], Settled] | None = None
        for name in ("local", "forced-live"):
            self.attempt(name, self._order_free_bound, name)

    def _order_free_bound(self, name: str) -> None:
        from mtpp.bounds.peak_memory import forced_live_bound

        t = time.perf_counter()
        lower = local_lower_bound(self.graph) if name == "local" else forced_live_bound(self.graph)
        self.offer(name, None, lower, time.perf_counter() - t, "bound")

    def attempt(self, method: str, run: Callable[..., None], *args: Any) -> None:
        """``run(*args)``, a stage of ``method``; an exception inside it (a solver or
        kernel error) is recorded as a failed stage and the call goes on with what it
        has.  Only a missing optional dependency or an unusable weights
        file, faults of the call's arguments or installation, propagate."""
        t = time.perf_counter()
        try:
            run(*args)
        except (MissingDependencyError, WeightsError):
            raise
        except Exception as exc:  # any failure inside a method is that method's
            where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            at = f" (at {os.path.basename(where.filename)}:{where.lineno} in {where.name})" if where else ""
            detail = f"failed: {type(exc).__name__}: {exc}{at}"
            self.stages.append(Stage(method, math.inf, 0.0, "error", time.perf_counter() - t, detail))

    def add_cut_bound(self) -> None:
        """The min-cut live bound (:mod:`mtpp.bounds.peak_cut`), within the time left."""
        from mtpp.bounds.peak_cut import cut_live_memory, proven_bound
        from mtpp.core.memory_cap import memory_limit

        t = time.perf_counter()
        values, done, _ = cut_live_memory(self.graph, self.left(), max_bytes=memory_limit())
        lower = proven_bound(self.graph, values)
        self.offer("cut-live", None, lower, time.perf_counter() - t, "bound", f"cuts={int(done.sum())}")

    def left(self) -> float | None:
        """Seconds left of the call's time limit (``None``: no limit)."""
        return self.budget.left_or_none()

    def incumbent(self) -> np.ndarray:
        """The best order so far, or the graph's topological order before there is one."""
        return self.graph.topological_order if self.order is None else self.order

    def upper(self, peak: float) -> float:
        """An evaluated ``peak`` rounded upwards by the evaluator's error: at least the
        order's true peak (:func:`mtpp.core.result.upper_rounded`)."""
        if not math.isfinite(peak):
            return peak
        return upper_rounded(peak, profile_error(self.graph, peak))

    def offer(
        self, method: str, order: np.ndarray | None, lower: float, t: float, status: str, detail: str = ""
    ) -> None:
        """Records a stage: its ``order`` is re-scored by the independent evaluator
        (with validation: an invalid order fails the stage, bound and all) and kept if
        best; its bound ``lower`` is settled against the upper bound later."""
        peak = math.inf
        if order is not None:
            try:
                peak = peak_memory(self.graph, order)
            except InvalidParameterError as exc:
                self.stages.append(Stage(method, math.inf, 0.0, "error", t, f"failed: an invalid order: {exc}"))
                return
            if self.order is None or peak < self.peak:
                self.order, self.peak, self.order_method = np.asarray(order, dtype=np.int64), peak, method
        lower = float(lower) if lower >= 0 else 0.0  # NaN (nothing proven) as 0
        self.stages.append(Stage(method, self.upper(peak), lower, status, t, detail))

    def settled(self) -> Settled:
        """The bounds so far under the result contract (:func:`mtpp.core.result.settle`),
        recomputed only when a stage or a better order came since the last call."""
        key = (len(self.stages), self.peak)
        if self._settled is None or self._settled[0] != key:
            error = profile_error(self.graph, self.peak) if math.isfinite(self.peak) else 0.0
            self._settled = key, settle(self.peak, error, [(s.method, s.lower_bound) for s in self.stages])
        return self._settled[1]

    @property
    def lower(self) -> float:
        """The best bound so far that does not exceed the upper bound."""
        return self.settled().lower_bound

    @property
    def proven(self) -> bool:
        """Whether the order is optimal to within the relative ``REL_TOL``: the upper
        bound (at least its true peak) is at most ``(1 + REL_TOL)`` times the best
        bound that does not exceed it, compared in rationals (relative only: an
        absolute tolerance would prove anything on graphs measured in tiny units)."""
        return _within_tolerance(self.settled())

    def result_stages(self, settled: Settled) -> tuple[Stage, ...]:
        """The stages as the result reports them: a stage whose bound exceeds the
        upper bound failed (status ``error``, both numbers in its detail, its bound
        dropped)."""
        out = []
        for st in self.stages:
            if st.lower_bound > settled.upper_bound:
                detail = settled.failure_message(st.lower_bound) + (f"; {st.detail}" if st.detail else "")
                st = replace(st, status="error", lower_bound=0.0, detail=detail)
            out.append(st)
        return tuple(out)


def _within_tolerance(settled: Settled) -> bool:
    """``upper <= (1 + REL_TOL) lower`` in exact rationals (false for an infinite upper
    bound)."""
    ub, lb = settled.upper_bound, settled.lower_bound
    if not math.isfinite(ub):
        return False
    return Fraction(ub) <= Fraction(lb) * (1 + Fraction(REL_TOL))


def _run_fixed(search: _Search, method: str, seed: int, time_limit: float | None = None) -> None:
    """A traversal order, or the best of :data:`RANDOM_ORDERS` random ones (as many as
    ``time_limit`` holds at :data:`RANDOM_SECONDS_PER_ELEMENT`, at least one)."""
    from heuristics.peak_memory.orders import random_orders, traversal_order

    t = time.perf_counter()
    detail = ""
    if method == "random":
        count = RANDOM_ORDERS
        if time_limit is not None:
            each = RANDOM_SECONDS_PER_ELEMENT * (search.graph.n + search.graph.m)
            count = int(min(RANDOM_ORDERS, max(1, time_limit // max(each, 1e-12))))
        res = random_orders(search.graph, count, seed)
        detail = f"orders={count}" if count < RANDOM_ORDERS else ""
    else:
        res = traversal_order(search.graph, method)
    search.offer(method, res.order, 0.0, time.perf_counter() - t, "feasible", detail)


def _too_costly(search: _Search, method: str, per_element: float, time_limit: float | None, what: str) -> bool:
    """Record ``method`` as skipped where its set-up (``per_element`` seconds per op and
    edge, before it can look at a deadline) exceeds ``time_limit``; whether it did."""
    cost = per_element * (search.graph.n + search.graph.m)
    if time_limit is None or cost <= time_limit:
        return False
    detail = f"not started: {what} takes about {cost:.2g} s, more than the {max(time_limit, 0.0):.2g} s it has"
    search.offer(method, None, 0.0, 0.0, "skipped", detail)
    return True


def _run_beam(search: _Search, method: str, width: int | None, seed: int, time_limit: float | None) -> None:
    from heuristics.peak_memory.state_dp import FINISH_SECONDS_PER_LEVEL, state_dp

    if time_limit is not None and FINISH_SECONDS_PER_LEVEL * search.graph.n > time_limit:
        cost = FINISH_SECONDS_PER_LEVEL * search.graph.n
        detail = f"not started: its {search.graph.n:,} levels take at least {cost:.2g} s, more than the "
        search.offer(method, None, 0.0, 0.0, "skipped", detail + f"{max(time_limit, 0.0):.2g} s it has")
        return
    res = state_dp(search.graph, beam_width=width, upper_order=search.order, time_limit=time_limit, seed=seed)
    status = "optimal" if res.exact else "feasible"
    detail = f"states={res.states} widest={res.max_level}"
    if res.truncated_at >= 0:
        detail += f" cut_from_level={res.truncated_at}"
    if res.stopped_by_time:
        detail += " stopped_by_limit"
    search.offer(method, res.order, res.lower_bound, res.wall_time, status, detail)


def _backward_first(graph: Graph) -> bool:
    """Whether the backward search (over the sets of ops run last) likely has the
    smaller plateau: the op of largest forced-live memory has fewer descendants than
    ancestors.  Until the search passes that op, nearly every set around it has the
    same key, so the side of the graph the search starts from is enumerated in full."""
    from mtpp.bounds.peak_memory import ancestor_bits, forced_live_memory

    v = int(np.argmax(forced_live_memory(graph)))
    anc = ancestor_bits(graph.topological_order, graph.pred_ptr, graph.pred_idx)
    word, bit = v >> 6, np.uint64(1) << np.uint64(v & 63)
    ancestors = int(np.unpackbits(anc[v].view(np.uint8)).sum())
    descendants = int(np.count_nonzero(anc[:, word] & bit))
    return descendants < ancestors


def _run_search(search: _Search, seed: int) -> None:
    """Split the graph at its cut nodes (:mod:`heuristics.peak_memory.split`) and solve each
    part by the anytime best-first search (:mod:`heuristics.peak_memory.best_first`), smallest
    parts first, each with an equal share of the time left among the parts still to
    run, started from the best order so far restricted to the part, and stopped early
    once its order cannot raise the peak above the best bound known.  Each part is
    searched in the direction :func:`_backward_first` picks with half its share,
    then, unless that proved it, in the other with the rest (both bounds are proven:
    the larger counts).  The combined order is the parts' orders concatenated; the
    bound is the largest part bound (both exact by the proof in
    :mod:`heuristics.peak_memory.split`)."""
    from heuristics.peak_memory.best_first import best_first_search, search_memory_bytes
    from heuristics.peak_memory.split import split_graph
    from mtpp.bounds.peak_cut import MAX_NODES, cut_live_memory
    from mtpp.core.memory_cap import GB, memory_limit

    t = time.perf_counter()
    cap, n = memory_limit(), search.graph.n
    need = search_memory_bytes(n, SEARCH_MEMORY_MB, residuals=n <= MAX_NODES)
    if need > cap:  # skipped with a record, not attempted
        detail = f"skipped: would need about {need / GB:.1f} GB, more than the {cap / GB:.1f} GB memory cap"
        search.offer("search", None, 0.0, time.perf_counter() - t, "skipped", detail)
        return
    parts = split_graph(search.graph)  # in run order
    orders: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * len(parts)
    lower, solved, states, memory_hit, timed_out = 0.0, 0, 0, 0, 0
    for count, i in enumerate(sorted(range(len(parts)), key=lambda j: parts[j].graph.n)):
        part = parts[i]
        left = search.left()
        share = None if left is None else left / (len(parts) - count)
        start, part_lower, t_part = part.restrict(search.incumbent()), 0.0, time.perf_counter()
        if share is not None and share <= 0:  # the time is spent: the part keeps the best order so far
            orders[i], timed_out = part.lift(start), timed_out + 1
            continue
        backward = _backward_first(part.graph)
        static, _, resid = cut_live_memory(
            part.graph, None if share is None else share / 2, every_op=True, max_bytes=cap
        )
        setup = 0.0  # seconds the first search took to set up (a second or so at 20,000 ops)
        for turn in (0, 1):
            used = time.perf_counter() - t_part
            if turn == 1 and share is not None and share - used < setup:
                break  # the other direction could not even set up in the time left
            res = best_first_search(
                part.graph,
                start,
                time_limit=None if share is None else max(0.0, (share / 2 if turn == 0 else share) - used),
                memory_mb=SEARCH_MEMORY_MB,
                target=max(search.lower, lower),
                seed=seed,
                static_bound=static,
                residuals=resid,
                backward=backward != (turn == 1),
            )
            start, setup = res.order, res.setup_time
            part_lower = max(part_lower, res.lower_bound)  # lowered for rounding (heuristics.peak_memory.best_first)
            states += res.states
            memory_hit += res.memory_hit
            timed_out += res.stopped_by_time
            if res.optimal or res.target_reached or part_lower >= res.peak:
                break
        orders[i] = part.lift(res.order)
        lower = max(lower, part_lower)
        solved += res.optimal or part_lower >= res.peak
    order = np.concatenate(orders)
    status = "optimal" if solved == len(parts) else "feasible"
    detail = f"parts={len(parts)} solved={solved} states={states}"
    if memory_hit:
        detail += f" memory_cap_hit={memory_hit}"
    if timed_out:
        detail += f" stopped_by_limit={timed_out}"
    search.offer("search", order, lower, time.perf_counter() - t, status, detail)


def _run_cpsat(search: _Search, threads: int | None, seed: int, time_limit: float | None, verbose: bool) -> None:
    """CP-SAT from the incumbent; with a ``time_limit``, not started where building its model
    and what the solver runs past its own limit (:data:`CPSAT_OVERRUN_PER_ELEMENT`) would
    leave it less than :data:`CPSAT_MIN_SECONDS`; the stage's time is its whole wall time."""
    from formulations.schedule import build_schedule
    from solvers.cpsat_schedule import solve_schedule

    t = time.perf_counter()
    size = search.graph.n + search.graph.m
    overrun = CPSAT_OVERRUN_PER_ELEMENT * size

    def too_little(seconds: float, what: str) -> bool:
        if seconds >= CPSAT_MIN_SECONDS:
            return False
        detail = (
            f"not started: {what} leaves {max(seconds, 0.0):.2g} s, after the {overrun:.2g} s that CP-SAT runs "
            f"past its limit on {size:,} ops and edges (at least {CPSAT_MIN_SECONDS:g} s needed)"
        )
        search.offer("cpsat", None, 0.0, time.perf_counter() - t, "skipped", detail)
        return True

    if time_limit is not None and too_little(time_limit - CPSAT_BUILD_PER_ELEMENT * size - overrun, "the time left"):
        return
    start = search.incumbent()
    model = build_schedule(search.graph, lower_bound=search.lower, upper_order=start)
    if time_limit is not None:
        time_limit -= time.perf_counter() - t + overrun
        if too_little(time_limit, "building its model"):
            return
    workers = threads if threads is not None else min(8, os.cpu_count() or 1)
    res = solve_schedule(model, hint=start, time_limit=time_limit, threads=workers, seed=seed, verbose=verbose)
    lower = _cpsat_lower(search.graph, model, res.bound)
    detail = f"ortools {res.version}; scale={model.scale:g}"
    if not model.exact:
        detail += f" (rounded: excess {model.excess:.3g}, deficit {model.deficit:.3g})"
    if res.message:
        detail += f"; {res.message}"
    search.offer("cpsat", res.order, lower, time.perf_counter() - t, res.status.value, detail)


def _cpsat_lower(graph: Graph, model: ScheduleModel, bound: float) -> float:
    """A proven bound on the true minimum peak ``OPT`` from CP-SAT's ``bound`` ``B`` on
    the model's integer optimum.  Every demand is at most ``(1 + rho) scale`` times its
    size (``rho = model.excess``, measured in rationals by
    :func:`formulations.schedule.build_schedule`, rounding up *and* down counted:
    a demand rounded down, even to 0, only lowers the model), and a model peak is a
    sum of demands, so the model optimum is at most ``(1 + rho) scale OPT`` and ``OPT
    >= B / ((1 + rho) scale)``.  ``fl(B / scale)`` is within ``u`` of ``B / scale`` (exact
    when ``scale`` is a power of two: ``B`` is an integer below ``2^53``), so
    :func:`mtpp.core.rounding.lower_by` with relative ``rho (1 + 4u) + 2u`` covers both; with
    ``rho = 0`` and a power-of-two scale nothing is lowered.  ``graph`` is unused
    (kept for the callers)."""
    del graph
    if not math.isfinite(bound) or bound <= 0:
        return 0.0
    value = model.to_size(bound)
    if model.excess == 0 and math.frexp(model.scale)[0] == 0.5:
        return value
    return lower_by(value, model.excess * (1 + 4 * UNIT) + 2 * UNIT, 0.0)


def _run_brkga(search: _Search, seed: int, time_limit: float | None, generations: int = 200) -> None:
    from heuristics.brkga import BrkgaParams
    from heuristics.peak_memory.orders import brkga_order
    from heuristics.peak_memory.state_dp import finish_seconds, state_dp

    t = time.perf_counter()
    seeds = [search.order] if search.order is not None else []
    if time_limit is None or 2 * finish_seconds(search.graph) <= time_limit:  # the greedy order, n levels
        seeds.insert(0, state_dp(search.graph, beam_width=1).order)
    left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - t))
    res = brkga_order(search.graph, BrkgaParams(population=50, generations=generations), seed, seeds, left)
    search.offer("brkga", res.order, 0.0, time.perf_counter() - t, "feasible", f"evaluations={res.evaluations}")


def _run_learned(
    search: _Search, method: str, weights: str | None, width: int | None, seed: int, time_limit: float | None
) -> None:
    t = time.perf_counter()
    from heuristics.neural.objectives import PeakMemory
    from heuristics.neural.weights import require_torch

    require_torch()  # a typed error naming the extra, before any torch import
    from heuristics.neural.inference import topoformer_order
    from heuristics.neural.prior_mutants import topoformer_brkga
    from heuristics.neural.regal import regal_brkga

    # importing torch comes off the limit
    left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - t))
    if method in LEARNED_BRKGA:
        run = regal_brkga if method == "regal-brkga" else topoformer_brkga  # None: the shipped <family>-peak
        res = run(search.graph, PeakMemory(), weights or None, REGAL_EVALUATIONS, seed=seed, time_limit=left)
        order, detail, note = res.order, f"evaluations={res.evaluations}", res.note
    else:
        count = NEURAL_WIDTH if width is None else width
        found = topoformer_order(
            search.graph, PeakMemory(), weights or "topoformer-peak", LEARNED[method], count, seed, left
        )
        order, detail, note = found.order, f"orders={found.evaluations}", found.note
    detail = f"{detail}; {note}" if note else detail  # a skipped forward pass
    search.offer(method, order, 0.0, time.perf_counter() - t, "feasible", detail)


@dataclass(frozen=True)
class _Options:
    """The arguments of one :func:`schedule` call that its methods read."""

    method: str
    seed: int
    beam_width: int | None
    threads: int | None
    verbose: bool
    weights: str | None
    incumbent: str | None = None

    @property
    def width(self) -> int:
        return DEFAULT_BEAM_WIDTH if self.beam_width is None else int(self.beam_width)


def _fixed(search: _Search, o: _Options) -> None:
    _run_fixed(search, o.method, o.seed)


def _greedy(search: _Search, o: _Options) -> None:
    _run_beam(search, "greedy", 1, o.seed, None)


def _beam(search: _Search, o: _Options) -> None:
    _run_beam(search, "beam", o.width, o.seed, search.left())


def _brkga(search: _Search, o: _Options) -> None:
    _run_brkga(search, o.seed, search.left())


def _run_rule(search: _Search, method: str, weights: str | None, width: int | None, seed: int) -> None:
    """The learned dispatch rule (:mod:`heuristics.peak_memory.learned_rule`), greedy or
    the best of ``width`` (default 16) samples: no torch."""
    from heuristics.peak_memory.learned_rule import RuleWeights, rule_order, rule_sample

    t = time.perf_counter()
    w = RuleWeights.load(weights)
    if method == "learned-rule":
        order = rule_order(search.graph, w)
    else:
        count = NEURAL_WIDTH if width is None else width
        order = rule_sample(search.graph, w, count, seed=seed, time_limit=search.left())
    search.offer(method, order, 0.0, time.perf_counter() - t, "feasible")


def _rule(search: _Search, o: _Options) -> None:
    _run_rule(search, o.method, o.weights, o.beam_width, o.seed)


def _learned(search: _Search, o: _Options) -> None:
    _run_learned(search, o.method, o.weights, o.beam_width, o.seed, search.left())


def _pipeline(search: _Search, o: _Options) -> None:
    """``auto``, ``search``, ``exact-dp``, ``cpsat``: the quick orders first, then the
    stages of the method (:func:`schedule`'s docstring), each while the gap is open;
    a stage that fails inside is recorded and the next one runs (:meth:`_Search.attempt`)."""
    method, seed, width = o.method, o.seed, o.width
    for quick in ("dfs", "bfs", "random"):
        if quick == "dfs" or not search.proven:  # a chain's one order is proven at once
            left = search.left()
            share = None if left is None or quick != "random" else RANDOM_SHARE * left
            search.attempt(quick, _run_fixed, search, quick, seed, share)
    if o.incumbent in RULES:  # a learned order as a first incumbent
        search.attempt(o.incumbent, _run_rule, search, o.incumbent, o.weights, None, seed)
    elif o.incumbent is not None:
        search.attempt(o.incumbent, _run_learned, search, o.incumbent, o.weights, None, seed, search.left())
    if method in ("auto", "search") and not search.proven:
        if not _too_costly(search, "cut-live", CUT_LIVE_SETUP_PER_ELEMENT, search.left(), "its set-up"):
            search.attempt("cut-live", search.add_cut_bound)
    if method in ("auto", "exact-dp") and not search.proven:
        left = search.left()
        search.attempt("beam", _run_beam, search, "beam", width, seed, None if left is None else AUTO_BEAM_SHARE * left)
    if method == "auto" and not search.proven:
        left, first = search.left(), search.stages[-1].wall_time
        if left is None or 2 * AUTO_WIDE_BEAM * first <= AUTO_WIDE_SHARE * left:
            share = None if left is None else AUTO_WIDE_SHARE * left
            search.attempt("beam", _run_beam, search, "beam", AUTO_WIDE_BEAM * width, seed, share)
    if method == "auto" and not search.proven:
        left = search.left()
        share = None if left is None else AUTO_BRKGA_SHARE * left
        search.attempt("brkga", _run_brkga, search, seed, share, AUTO_BRKGA_GENERATIONS)
    if method == "exact-dp" and not search.proven:
        search.attempt("exact-dp", _run_beam, search, "exact-dp", None, seed, search.left())
    if method in ("auto", "search") and not search.proven:
        if not _too_costly(search, "search", SEARCH_SETUP_PER_ELEMENT, search.left(), "its set-up"):
            search.attempt("search", _run_search, search, seed)
    if method in ("auto", "cpsat") and not search.proven:
        left = search.left()
        if left is None or left > 0:
            search.attempt("cpsat", _run_cpsat, search, o.threads, seed, left, o.verbose)


RUNNERS: dict[str, Callable[[_Search, _Options], None]] = {
    "auto": _pipeline,
    "search": _pipeline,
    "exact-dp": _pipeline,
    "cpsat": _pipeline,
    "beam": _beam,
    "greedy": _greedy,
    "brkga": _brkga,
    "dfs": _fixed,
    "bfs": _fixed,
    "random": _fixed,
    **dict.fromkeys(RULES, _rule),
    **dict.fromkeys(LEARNED, _learned),
    **dict.fromkeys(LEARNED_BRKGA, _learned),
}
"""Method name -> what runs it: the one table :func:`schedule` dispatches by."""
METHODS = tuple(RUNNERS)


@entry_point
def schedule(
    graph: Graph,
    *,
    objective: str = "peak_memory",
    method: str = "auto",
    time_limit: float | None = 60.0,
    seed: int = 0,
    beam_width: int | None = None,
    threads: int = 1,
    verbose: bool = False,
    weights: str | None = None,
    incumbent: str | None = None,
) -> Schedule:
    """A topological order of ``graph`` minimising peak memory (Topoformer Eq. 1-3, 15),
    with a proven lower bound.

    ``method``:

    * ``"dfs"``, ``"bfs"``: depth-/breadth-first Kahn; ``"random"``: best of 100
      random topological orders (the baselines of Topoformer Table 1);
    * ``"greedy"``: the state DP with a beam of one; ``"beam"``: the approximate DP
      with state collapsing, ``beam_width`` states per level (default 1000);
    * ``"brkga"``: BRKGA over Kahn priorities (50 x 200, stops at ``time_limit``),
      seeded with the dfs, bfs and greedy orders;
    * ``"exact-dp"``: the state DP with every state kept (up to a memory cap), pruned
      by the best of the baselines and the beam; optimal when it finishes uncut;
    * ``"cpsat"``: the CP-SAT model of :mod:`formulations.schedule`, hinted with the
      best of the dfs, bfs and random orders, with the local and forced-live bounds as
      the redundant row ``C >= L``;
    * ``"topoformer"``, ``"topoformer-sample"``, ``"topoformer-beam"``: the learned
      Topoformer policy (extra ``mtpp[neural]``; shipped weights ``topoformer-peak``
      unless ``weights`` names a file) decoded greedily, as the best of 16 samples,
      or by a beam of 16 with state collapsing (``beam_width`` overrides the 16);
    * ``"regal-brkga"``: BRKGA (5000 evaluations) with the mutant distributions of
      the REGAL GNN (weights ``regal-peak``), seeded with the kahn, dfs and bfs orders;
      ``"topoformer-brkga"``: the same with mutants drawn around the Topoformer
      priorities (:mod:`heuristics.neural.prior_mutants`, weights ``topoformer-peak``);
    * ``"learned-rule"``: Kahn's algorithm running the ready op of least learned score,
      a static perceptron priority plus the step's memory terms
      (:mod:`heuristics.peak_memory.learned_rule`; shipped weights ``rule-peak`` unless
      ``weights`` names a ``.npz`` file); linear in time, no torch;
      ``"learned-rule-sample"``: the best of the greedy rule and 15 orders sampled
      from its scores (``beam_width`` overrides the 16; stops at ``time_limit``);
    * ``"search"``: the baselines, the min-cut live bound, then the graph split at
      its cut nodes and every part solved by the anytime best-first search of
      :mod:`heuristics.peak_memory.best_first`, forward and backward (first the
      direction with fewer ops beyond the critical op, half the part's time each;
      optimal when a part finishes; otherwise its bound is the larger of the two
      smallest open keys, proven at any stop);
    * ``"auto"`` (default): the baselines (bfs and random only while the local and
      forced-live bounds leave the dfs order's gap open: not on a chain), the min-cut
      live bound, the beam with 15% of the time left, a 10 times wider beam if it
      likely fits in 25% of the rest, BRKGA (2000 generations, seeded with the best
      order) with 20% of the rest, then ``"search"`` with the rest, then CP-SAT if time
      is left (a search stopped by its memory cap) and the gap is still open.

    ``incumbent``: a learned method (``"topoformer"``, ``"topoformer-sample"``,
    ``"topoformer-beam"``, ``"regal-brkga"``, ``"topoformer-brkga"``, ``"learned-rule"``,
    ``"learned-rule-sample"``;
    ``weights`` then names its weights) run right after the quick orders of ``auto``,
    ``search``, ``exact-dp`` and ``cpsat``, so that its order, when better, is the first
    incumbent of everything after it
    (default ``None``: none; ``benchmarks/neural_incumbent.py`` measures what it buys).

    ``time_limit`` (seconds, ``None`` = none) caps the wall time of the whole call
    (every stage gets a share of what is left; within a second or so on 1000 ops);
    ``threads`` sets CP-SAT's workers (default 1, as in every call: deterministic;
    raise it for speed).  Everything after ``graph`` is keyword-only.  The lower
    bound is the best of :func:`local_lower_bound`, the forced-live bound, the
    min-cut live bound and every bound proven on the way that does not exceed the
    upper bound (the result contract of :mod:`mtpp.core.result`: a stage whose bound does,
    or that raises inside, or returns an invalid order, is a failed stage, status
    ``"error"`` with the reason in its detail, and the call goes on with what it has).
    Raises :class:`InvalidParameterError` for a bad argument (before any work),
    :class:`mtpp.core.errors.MissingDependencyError` or :class:`mtpp.core.errors.WeightsError`
    when a learned method's extra or weights are missing, and
    :class:`mtpp.core.errors.InternalError` should a bug escape every stage's own record
    (:func:`mtpp.core.errors.entry_point`): no exception but an :class:`mtpp.MtppError`.
    """
    check_instance("graph", graph, Graph, "an mtpp.Graph")
    _check_args(objective, method, time_limit, beam_width, threads)
    seed = check_seed(seed)
    check_bool("verbose", verbose)
    learned = (*LEARNED, *LEARNED_BRKGA, *RULES)
    if incumbent is not None:
        check_choice("incumbent", incumbent, learned)
        if RUNNERS[method] is not _pipeline:
            raise InvalidParameterError(f"method {method!r} takes no incumbent; auto, search, exact-dp and cpsat do")
    if weights is not None and method not in learned and incumbent is None:
        raise InvalidParameterError(f"method {method!r} takes no weights; only the learned methods and an incumbent do")
    if method in RULES or incumbent in RULES:  # a bad weights file fails here, before any work
        from heuristics.peak_memory.learned_rule import RuleWeights

        RuleWeights.load(weights)
    search = _Search(graph, None if time_limit is None else float(time_limit))
    opts = _Options(method, seed, beam_width, threads, verbose, weights, incumbent)
    search.attempt(method, RUNNERS[method], search, opts)
    if search.order is None:  # every method failed: the graph's own topological order stands in
        search.offer("topological", graph.topological_order, 0.0, 0.0, "feasible", "every method failed")
    assert search.order is not None
    settled = search.settled()
    return Schedule(
        order=tuple(graph.ids[i] for i in search.order.tolist()),
        index_order=search.order,
        peak=settled.upper_bound,
        lower_bound=settled.lower_bound,
        method=method,
        status=ResultStatus.OPTIMAL if _within_tolerance(settled) else ResultStatus.FEASIBLE,
        wall_time=search.budget.elapsed(),
        bound_method=settled.bound_method,
        stages=search.result_stages(settled),
        graph_name=graph.name,
        graph=graph,
    )
