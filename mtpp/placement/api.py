"""``place``: one entry point for heterogeneous placement and scheduling.

Methods: ``"single"`` (the best all-on-one-device placement), ``"heft"``,
``"brkga"`` (REGAL chromosome, seeded with HEFT and the single devices), ``"cpsat"``
(the model of :mod:`formulations.placement` solved by :mod:`solvers.cpsat_placement`,
hinted with the best of HEFT and the single
devices; proves a lower bound and solves small graphs exactly), ``"coarse-brkga"``
(:func:`heuristics.placement.coarsen.coarsen` the graph by acyclic heavy-edge matching to
``coarse_target`` nodes, run the BRKGA on the coarse graph for half the time limit
with per-device times summed over each cluster, seeded with the coarse HEFT, the
coarse single devices and the fine HEFT projected onto the clusters; map the best
back to the fine graph and refine it with single-op moves the simulator accepts for
the rest) and ``"auto"`` (HEFT and single devices, then BRKGA for half the time limit,
or BRKGA and coarse-BRKGA for a quarter each on graphs of more than
``COARSE_AUTO_OPS`` ops, then CP-SAT for the rest on graphs of at most
``cpsat_max_ops`` ops); ``"auto"`` stops after HEFT and the single devices when one of
them fits in memory and meets the closed-form bound below (to ``OPTIMAL_RTOL``): it is
proven optimal, so a one-op graph or a chain answers in milliseconds.  Coarsening only
proposes placements: each is scored on the original graph, and bounds are always
computed on the original graph.  Every candidate is scored by the simulator; the
best memory-feasible one is returned (if none fits, the one that overflows least,
with ``memory_feasible`` false), re-checked by :func:`mtpp.core.simulator.simulate`.

Bounds (runtime only): CP-SAT's proven bound where it ran
(:meth:`formulations.placement.PlacementModel.proven_bound`), and always
:func:`formulations.placement.simple_lower_bound`.  By default the CP-SAT model
ignores memory (``cpsat_memory=False``): a relaxation, so its bound stays valid and a
solution it returns is accepted only if the simulator finds it memory-feasible.  For
``objective="peak_memory"`` the bound is the largest single-op footprint (its
inputs, output and parameters are on its device at once, zero-time ops included:
:mod:`mtpp.core.simulator`), :func:`mtpp.core.memory.local_lower_bound`, and CP-SAT
is not used.

The result contract (:mod:`mtpp.core.result`): the returned placement is
re-simulated and its value rounded *upwards* by the simulator's error bound
(:meth:`PlacementContext.makespan_error`, ``SimResult.peak_error``), every bound
rounded downwards by its own method; :func:`mtpp.core.result.settle` drops a bound above
the upper bound (the method *failed*: a step with status ``error`` names both
numbers) and ``optimal`` comes only from a kept bound, on a memory-feasible
placement, to :data:`OPTIMAL_RTOL`.  The early stop of ``"auto"`` (:func:`_proves`)
applies the same test to each baseline.  A method that raises inside (a solver, the
BRKGA) becomes a failed step and the call goes on with the others; only bad
arguments raise, up front (:class:`mtpp.core.errors.InvalidParameterError`), and anything
else that escapes is an :class:`mtpp.core.errors.InternalError`.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr

from mtpp.core.budget import Budget
from mtpp.core.device_sets import DeviceSet
from mtpp.core.errors import InternalError, InvalidParameterError, entry_point
from mtpp.core.graph import Graph, NodeId
from mtpp.core.memory import local_lower_bound
from mtpp.core.presets import get_devices
from mtpp.core.result import (
    FieldsEqual,
    Result,
    ResultStatus,
    Step,
    finite_or_none,
    relative_gap,
    settle,
    upper_rounded,
)
from mtpp.core.simulator import PlacementContext, SimResult, simulate
from mtpp.core.validation import (
    check_bool,
    check_choice,
    check_count,
    check_instance,
    check_int,
    check_optional_count,
    check_optional_time_limit,
    check_seed,
)
from mtpp.results_schema import PlacementDocument, document_gap, finite, graph_fields

METHODS = ("auto", "single", "heft", "brkga", "cpsat", "coarse-brkga")
#: ``"auto"`` adds coarse-BRKGA on graphs with more ops than this.
COARSE_AUTO_OPS = 300
#: A placement is proven optimal when ``(value - bound) / value`` is at most this.
OPTIMAL_RTOL = 1e-9
CPSAT_OVERRUN_PER_OP = 1.5e-4
"""Seconds per op CP-SAT is given less than the time left, for it ends past its own
``max_time_in_seconds`` (presolve and loading the model are not interrupted)."""
CPSAT_MIN_SECONDS = 0.5
"""The least time CP-SAT is started with; with less left (after the overrun margin)
it is not started and ``cpsat_status`` is ``"skipped"`` (``method="cpsat"`` then
returns its hint, the best of HEFT and the single devices)."""
COARSEN_SECONDS_PER_EDGE = 2e-5
"""What coarsening a graph costs per edge (all its matching rounds; measured on layered
graphs of 20,000 ops on a loaded 2-core machine: 12-25 s for 578,000 edges); the call
does not start coarse-BRKGA where that estimate exceeds its share of the time limit (the
coarse graph would be little smaller than the graph: coarsening stops at half that share,
:func:`coarse_brkga`, whatever the estimate)."""


class Placement(FieldsEqual, Result, BaseModel):
    """A placement and schedule with its simulated cost and proven bound: a
    :class:`mtpp.core.result.Result`.

    ``device[v]`` is the device index of op ``v`` (node index order),
    ``index_order`` the priority order (node indices; ``order``: node ids),
    ``start``/``end`` the simulated times; ``makespan`` and ``peak_memory`` (per
    device) the re-simulated values rounded upwards by the simulator's error bound, so
    never below the placement's exact ones; ``upper_bound`` is the objective's value,
    the makespan (also ``makespan``) or the largest per-device peak;
    ``lower_bound`` the best proven bound on that objective over every placement
    that does not exceed ``upper_bound`` (``lower_bound_method`` names it; ``bounds``
    lists every bound kept); ``gap = (upper_bound - lower_bound) / upper_bound``;
    ``optimal``: the gap is zero (to :data:`OPTIMAL_RTOL`) for a placement that fits
    in memory.  ``candidates`` maps each method tried to its objective value (``inf``
    if its placement overflows memory); ``failures`` maps each method that failed (it
    raised, or its bound exceeded the upper bound) to what happened."""

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="constants")
    _graph: Graph | None = PrivateAttr(default=None)

    objective: str
    method: str
    devices: tuple[str, ...]
    device: tuple[int, ...]
    index_order: tuple[int, ...]
    start: tuple[float, ...]
    end: tuple[float, ...]
    makespan: float
    peak_memory: tuple[float, ...]
    memory_feasible: bool
    upper_bound: float
    lower_bound: float
    optimal: bool
    candidates: dict[str, float]
    cpsat_status: str | None = None
    wall_time: float = 0.0
    times: dict[str, float] = {}
    """Seconds each method took (the steps' ``wall_time``)."""
    bounds: dict[str, float] = {}
    lower_bound_method: str = "simple"
    failures: dict[str, str] = {}

    def assignment(self, graph: Graph | None = None) -> dict[NodeId, str]:
        """Op id -> device name."""
        ids = self._ids() if graph is None else graph.ids
        return {ids[v]: self.devices[j] for v, j in enumerate(self.device)}

    def _ids(self) -> list[NodeId]:
        if self._graph is None:
            raise InvalidParameterError("this placement has no graph: build it with mtpp.place()")
        return list(self._graph.ids)

    @property
    def order(self) -> tuple[NodeId, ...]:
        """The priority order as node ids."""
        ids = self._ids()
        return tuple(ids[v] for v in self.index_order)

    @property
    def status(self) -> ResultStatus:
        """``optimal`` when proven, else ``feasible`` (also for a placement that
        overflows memory: see ``memory_feasible``)."""
        return ResultStatus.OPTIMAL if self.optimal else ResultStatus.FEASIBLE

    @property
    def steps(self) -> tuple[Step, ...]:
        """Each method tried (its objective value), each that failed (status
        ``error``, what happened in its detail), CP-SAT's run where it proved no kept
        bound, and the bounds kept, the best (``lower_bound_method``) last."""

        def took(name: str, default: float) -> float:  # every single device's step: their one run's time
            return self.times.get(name, self.times.get(name.split(":")[0], default))

        tried = tuple(
            Step(name, ResultStatus.FEASIBLE, finite_or_none(v), None, took(name, 0.0), "")
            for name, v in self.candidates.items()
        )
        failed = tuple(
            Step(name, ResultStatus.ERROR, None, None, took(name, 0.0), why) for name, why in self.failures.items()
        )

        def status(name: str) -> ResultStatus:
            return ResultStatus(self.cpsat_status) if name == "cpsat" and self.cpsat_status else ResultStatus.BOUND

        cpsat: tuple[Step, ...] = ()
        if self.cpsat_status is not None and "cpsat" not in self.bounds and "cpsat" not in self.failures:
            cpsat = (Step("cpsat", status("cpsat"), None, None, took("cpsat", 0.0), ""),)
        kept = [Step(name, status(name), None, b, took(name, 0.0), "") for name, b in self.bounds.items()]
        kept.sort(key=lambda st: st.method == self.lower_bound_method)  # the best last
        if not kept:
            kept = [
                Step(
                    self.lower_bound_method,
                    ResultStatus.BOUND,
                    None,
                    self.lower_bound,
                    took(self.lower_bound_method, 0.0),
                    "no bound kept",
                )
            ]
        return (*tried, *failed, *cpsat, *kept)

    def _document(self) -> PlacementDocument:
        """The ``mtpp-placement`` document (:mod:`mtpp.results_schema`)."""
        if self._graph is None:
            raise InvalidParameterError("this placement has no graph: build it with mtpp.place()")
        ids = self._graph.ids
        return PlacementDocument(
            **graph_fields(self._graph),
            objective=self.objective,
            upper_bound=finite(self.upper_bound),
            lower_bound=finite(self.lower_bound),
            lower_bound_method=self.steps[-1].method,
            gap=document_gap(self.upper_bound, finite(self.lower_bound)),
            optimal=self.optimal,
            wall_time=self.wall_time,
            method=self.method,
            devices=list(self.devices),
            assignment={str(ids[v]): self.devices[j] for v, j in enumerate(self.device)},
            order=[ids[v] for v in self.index_order],
            start=list(self.start),
            end=list(self.end),
            makespan=self.makespan,
            peak_memory=dict(zip(self.devices, self.peak_memory)),
            memory_feasible=self.memory_feasible,
            candidates={name: finite(v) for name, v in self.candidates.items()},
            cpsat_status=self.cpsat_status,
        )


def _score(sim: Any, objective: str) -> tuple[int, float]:
    from heuristics.placement.brkga import objective_value

    return (0, objective_value(sim, objective)) if sim.memory_feasible else (1, sim.overflow)


def _closed_form_bound(ctx: PlacementContext, objective: str) -> float:
    """The bound that costs no search: :func:`formulations.placement.simple_lower_bound`
    for the runtime; for the peak memory the largest single-op footprint (its inputs,
    output and parameters are on its device at once), lowered for its float sums by
    :func:`mtpp.core.memory.local_lower_bound`.  ``O(n d + m)``."""
    if objective == "runtime":
        from formulations.placement import simple_lower_bound

        return float(simple_lower_bound(ctx))
    return float(local_lower_bound(ctx.graph)) if ctx.graph.n else 0.0


def _value_and_error(ctx: PlacementContext, sim: SimResult, place: np.ndarray, objective: str) -> tuple[float, float]:
    """The objective of ``sim`` and the simulator's bound on its error (module
    :mod:`mtpp.core.simulator`, "Rounding"): the makespan and
    :meth:`PlacementContext.makespan_error`, or the largest per-device peak *rounded up*
    by its own device's error, with error 0 (so a device with a small peak and a large
    error is not missed)."""
    if objective == "runtime":
        return sim.makespan, ctx.makespan_error(place, sim.makespan)
    return float(_rounded_peaks(sim).max(initial=0.0)), 0.0


def _rounded_peaks(sim: SimResult) -> np.ndarray:
    """Each device's peak rounded upwards by its error bound."""
    return np.array([upper_rounded(float(p), float(e)) for p, e in zip(sim.peak_memory, sim.peak_error)])


def _proves(ctx: PlacementContext, candidate: Any, objective: str, bound: float | None) -> bool:
    """True when ``candidate`` fits in memory and ``bound`` proves it optimal by the test
    :func:`place` reports ``optimal`` by: the bound is kept (at most the candidate's
    value rounded up by its error) and within :data:`OPTIMAL_RTOL` of it."""
    if bound is None or not candidate.sim.memory_feasible:
        return False
    value, error = _value_and_error(ctx, candidate.sim, candidate.place, objective)
    settled = settle(value, error, [("bound", bound)])
    return not settled.failed and relative_gap(settled.upper_bound, settled.lower_bound) <= OPTIMAL_RTOL


def _failure(exc: BaseException) -> str:
    """The detail line of a method that raised."""
    return f"failed: {type(exc).__name__}: {exc}"


def coarse_brkga(
    ctx: PlacementContext,
    objective: str,
    heft_fine: Any,
    time_limit: float | None,
    seed: int = 0,
    target: int | None = None,
) -> Any:
    """The ``"coarse-brkga"`` candidate (module docstring), scored on ``ctx``'s graph:
    a :class:`heuristics.placement.baselines.PlacementCandidate` named ``"coarse-brkga"``."""
    from heuristics.brkga import BrkgaParams
    from heuristics.placement.baselines import all_single_devices, evaluate, heft
    from heuristics.placement.brkga import placement_brkga
    from heuristics.placement.coarsen import coarsen, refine_moves

    clock = Budget(time_limit)
    # coarsening stops with the rounds it has made by half the limit (49 rounds took
    # 24.7 s on a layered graph of 20,000 ops); BRKGA gets half of what is left, refining the rest
    co = coarsen(ctx.graph, target, deadline=None if time_limit is None else clock.start + time_limit / 2)
    cctx = PlacementContext(co.graph, ctx.devices, co.times(ctx.times))
    projected = evaluate(cctx, "projected-heft", co.project(heft_fine.place, ctx.times), co.graph.topological_order)
    seeds = [heft(cctx), projected, *all_single_devices(cctx)]
    left = clock.left_or_none()
    half = None if left is None or time_limit is None else min(time_limit / 2, left / 2)
    params = BrkgaParams(population=50, generations=10**6) if half is not None else BrkgaParams()
    res = placement_brkga(cctx, objective, params, seed, seeds, time_limit=half)
    order = co.expand_order(res.best.order)
    rest = clock.left_or_none()
    fine, _ = refine_moves(ctx, co.expand(res.best.place), order, objective, rest)
    return evaluate(ctx, "coarse-brkga", fine, order)


@entry_point
def place(
    graph: Graph,
    devices: str | DeviceSet,
    *,
    objective: str = "runtime",
    method: str = "auto",
    time_limit: float | None = 10.0,
    seed: int = 0,
    times: np.ndarray | None = None,
    cpsat_memory: bool = False,
    cpsat_max_ops: int = 2000,
    threads: int = 1,
    coarse_target: int | None = None,
) -> Placement:
    """Place and schedule ``graph`` on ``devices`` (a preset name or a
    :class:`DeviceSet`); ``times`` (``n x d``) overrides the device set's op times;
    ``coarse_target`` is the coarse graph's size for ``"coarse-brkga"`` (default
    :func:`heuristics.placement.coarsen.default_target`); ``threads`` sets CP-SAT's
    workers (default 1, as in every call: deterministic; raise it for speed).
    Everything after ``devices`` is keyword-only."""
    from heuristics.brkga import BrkgaParams
    from heuristics.placement.baselines import PlacementCandidate, all_single_devices, evaluate, heft
    from heuristics.placement.brkga import OBJECTIVES, placement_brkga

    start = time.perf_counter()
    check_instance("graph", graph, Graph, "an mtpp.Graph")
    check_choice("objective", objective, OBJECTIVES)
    check_choice("method", method, METHODS)
    if method == "cpsat" and objective != "runtime":
        raise InvalidParameterError("method 'cpsat' minimises the runtime; use objective='runtime'")
    time_limit = check_optional_time_limit(time_limit)
    budget = Budget(time_limit, start=start)
    seed = check_seed(seed)
    check_bool("cpsat_memory", cpsat_memory)
    cpsat_max_ops = check_int("cpsat_max_ops", cpsat_max_ops, low=0)
    threads = check_count("threads", threads)
    coarse_target = check_optional_count("coarse_target", coarse_target)
    ds = get_devices(devices)
    ctx = PlacementContext(graph, ds, times)

    failures: dict[str, str] = {}
    seconds: dict[str, float] = {}

    def attempt(name: str, run: Any, timed: bool = True) -> Any:
        """``run()``, or ``None`` with the failure recorded: a method that raises fails alone.
        Its wall time is added to ``seconds[name]`` (``timed``)."""
        t0 = time.perf_counter()
        try:
            return run()
        except Exception as exc:  # any method's own failure, recorded; the call goes on
            failures[name] = _failure(exc)
            return None
        finally:
            if timed:
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t0

    cands: list[PlacementCandidate] = []
    singles = attempt("single", lambda: all_single_devices(ctx)) or []
    h = attempt("heft", lambda: heft(ctx))
    base = [c for c in (h, *singles) if c is not None]
    if method in ("auto", "single"):
        cands += singles
    if method in ("auto", "heft") and h is not None:
        cands.append(h)
    closed = attempt("simple", lambda: _closed_form_bound(ctx, objective))
    # "auto" stops where a baseline meets the closed-form bound (proven optimal: no search can improve it)
    proven = method == "auto" and any(_proves(ctx, c, objective, closed) for c in base)
    search = "none" if proven else method
    use_coarse = search == "coarse-brkga" or (search == "auto" and graph.n > COARSE_AUTO_OPS)
    share = 1 / 4 if search == "auto" and use_coarse else 1 / 2 if search == "auto" else 1.0
    search_seconds = None if time_limit is None else time_limit * share
    coarsening = COARSEN_SECONDS_PER_EDGE * graph.m
    if use_coarse and search_seconds is not None and coarsening > search_seconds:
        # coarsening would stop (at its deadline) far from its target: not worth the share
        failures["coarse-brkga"] = (
            f"not run: coarsening {graph.m:,} edges takes about {coarsening:.2g} s, more than its "
            f"{search_seconds:.2g} s share of the time limit"
        )
        use_coarse = False
        if search == "auto":  # BRKGA takes coarse-BRKGA's share too
            share, search_seconds = 1 / 2, 2 * search_seconds
    if search_seconds is not None:  # the share of what is left: the baselines took their time
        search_seconds = max(0.0, min(search_seconds, share * budget.left()))
    if search in ("auto", "brkga"):
        params = BrkgaParams(population=50, generations=10**6) if search_seconds is not None else BrkgaParams()
        res = attempt("brkga", lambda: placement_brkga(ctx, objective, params, seed, base, time_limit=search_seconds))
        if res is not None:
            cands.append(res.best)
    if use_coarse and h is not None:
        found = attempt("coarse-brkga", lambda: coarse_brkga(ctx, objective, h, search_seconds, seed, coarse_target))
        if found is not None:
            cands.append(found)
    elif use_coarse:
        failures["coarse-brkga"] = "not run: it starts from HEFT, which failed"
    bounds: list[tuple[str, float]] = [] if closed is None else [("simple", closed)]
    status: str | None = None
    if objective == "runtime" and (search == "cpsat" or (search == "auto" and graph.n <= cpsat_max_ops)):
        pool = base if search == "cpsat" else cands
        hint = min(pool, key=lambda c: _score(c.sim, objective)) if pool else None
        ran = attempt("cpsat", lambda: _run_cpsat(ctx, hint, cpsat_memory, budget, threads, seed))
        solved = False
        if ran is None:
            status = ResultStatus.ERROR.value
        else:
            cp, model = ran
            status = ResultStatus.SKIPPED.value if cp is None else cp.status.value
            if cp is not None and math.isfinite(cp.bound) and cp.bound > 0:
                bounds.append(("cpsat", model.proven_bound(cp.bound)))
            if cp is not None and cp.place is not None and cp.order is not None:
                cands.append(evaluate(ctx, "cpsat", cp.place, cp.order))
                solved = True
        if search == "cpsat" and not solved and hint is not None:
            cands.append(hint)  # CP-SAT failed, found nothing or did not start: its hint stands

    if not cands and base:  # the method asked for failed: the baselines it starts from stand
        cands.append(min(base, key=lambda c: _score(c.sim, objective)))
    best, sim = None, None
    for cand in sorted(cands, key=lambda c: _score(c.sim, objective)):
        # re-checked through the public, validating entry; a candidate it refuses failed
        sim = attempt(cand.method, lambda: simulate(graph, ctx, cand.place, cand.order), timed=False)  # noqa: B023
        if sim is not None:
            best = cand
            break
    if best is None or sim is None:
        raise InternalError(f"mtpp.place: every method failed: {failures}")
    cands = [c for c in cands if c.method not in failures]
    value, error = _value_and_error(ctx, sim, best.place, objective)
    if cpsat_memory and not sim.memory_feasible:
        # CP-SAT's memory model bounds memory-feasible placements only: not this one
        bounds = [(name, b) for name, b in bounds if name != "cpsat"]
    settled = settle(value, error, bounds)
    for name, b in settled.failed:
        failures[name] = settled.failure_message(b)
    optimal = sim.memory_feasible and relative_gap(settled.upper_bound, settled.lower_bound) <= OPTIMAL_RTOL
    kept = {name: b for name, b in bounds if (name, b) not in settled.failed}
    table = {c.method: (_score(c.sim, objective)[1] if c.sim.memory_feasible else math.inf) for c in cands}
    makespan = upper_rounded(sim.makespan, ctx.makespan_error(best.place, sim.makespan))
    placement = Placement(
        objective=objective,
        method=best.method,
        devices=ds.names,
        device=tuple(int(j) for j in best.place),
        index_order=tuple(int(v) for v in best.order),
        start=tuple(float(t) for t in sim.start),
        end=tuple(float(t) for t in sim.end),
        makespan=makespan,
        peak_memory=tuple(float(p) for p in _rounded_peaks(sim)),
        memory_feasible=sim.memory_feasible,
        upper_bound=settled.upper_bound,
        lower_bound=settled.lower_bound,
        optimal=optimal,
        candidates=table,
        cpsat_status=status,
        wall_time=budget.elapsed(),
        times=seconds,
        bounds=kept,
        lower_bound_method=settled.bound_method,
        failures=failures,
    )
    placement._graph = graph
    return placement


def _run_cpsat(
    ctx: PlacementContext,
    hint: Any,
    memory: bool,
    budget: Budget,
    threads: int,
    seed: int,
) -> tuple[Any, Any]:
    """Build the CP-SAT model (its horizon capped by the hint's makespan where that
    bounds the model's optimum) and solve it with the time left, hinted; ``(None,
    model)`` when too little time is left to start it (:data:`CPSAT_MIN_SECONDS`)."""
    from formulations.placement import build_placement

    ub = None
    if hint is not None and (hint.sim.memory_feasible or not memory):
        ub = hint.sim.makespan
    model = build_placement(ctx, memory=memory, upper_bound=ub)
    left = budget.left_or_none()
    remaining = None if left is None else left - CPSAT_OVERRUN_PER_OP * ctx.graph.n
    if remaining is not None and remaining < CPSAT_MIN_SECONDS:  # it would end past the limit
        return None, model
    from solvers.cpsat_placement import solve_placement

    start = None if hint is None else (hint.place, hint.sim.start)
    # CP-SAT's random_seed is an int32: a larger seed (valid for place) raised TypeError
    return solve_placement(model, start, remaining, threads, seed), model
