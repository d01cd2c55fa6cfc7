"""``place``: one entry point for heterogeneous placement and scheduling (issue 8).

Methods: ``"single"`` (the best all-on-one-device placement), ``"heft"``,
``"brkga"`` (REGAL chromosome, seeded with HEFT and the single devices), ``"cpsat"``
(:mod:`formulations.cpsat_placement`, hinted with the best of HEFT and the single
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
with ``memory_feasible`` false), re-checked by :func:`mtpp.placement.simulator.simulate`.

Bounds (runtime only): CP-SAT's proven bound where it ran, and always
:func:`formulations.placement.simple_lower_bound`.  By default the CP-SAT model
ignores memory (``cpsat_memory=False``): a relaxation, so its bound stays valid and a
solution it returns is accepted only if the simulator finds it memory-feasible.  For
``objective="peak_memory"`` the bound is the largest single-op footprint (its
inputs, output and parameters are on its device at once) and CP-SAT is not used.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr

from mtpp.errors import InvalidParameterError
from mtpp.graph import Graph, NodeId
from mtpp.placement.devices import DeviceSet
from mtpp.placement.simulator import PlacementContext, simulate
from mtpp.presets import get_devices
from mtpp.result import FieldsEqual, Result, ResultStatus, Step, finite_or_none, relative_gap
from mtpp.validation import (
    check_bool,
    check_choice,
    check_count,
    check_instance,
    check_int,
    check_optional_count,
    check_optional_time_limit,
    check_seed,
    legacy_positional,
)

METHODS = ("auto", "single", "heft", "brkga", "cpsat", "coarse-brkga")
LEGACY_ARGS = (
    "objective",
    "method",
    "time_limit",
    "seed",
    "times",
    "cpsat_memory",
    "cpsat_max_ops",
    "threads",
    "coarse_target",
)
"""The order :func:`place` took these positionally before they became keyword-only."""
#: ``"auto"`` adds coarse-BRKGA on graphs with more ops than this.
COARSE_AUTO_OPS = 300
#: A placement is proven optimal when ``(value - bound) / value`` is at most this.
OPTIMAL_RTOL = 1e-9
CPSAT_OVERRUN_PER_OP = 1.5e-4
"""Seconds per op CP-SAT is given less than the time left, for it ends past its own
``max_time_in_seconds`` (presolve and loading the model are not interrupted): on the
10,000-op layered graph (seed 4242, two devices) 0.24-0.6 s past a 4-8 s limit on an
idle 2-core machine, 0.6-2.3 s under a load of 2-3 (issue 24: ``place --method cpsat
--time-limit 10`` took 12.7 s); 1.5 s at 10,000 ops covers the idle figures, the
tolerance of ``max(2 s, 10%)`` the rest."""
CPSAT_MIN_SECONDS = 0.5
"""The least time CP-SAT is started with; with less left (after the overrun margin)
it is not started and ``cpsat_status`` is ``"skipped"`` (``method="cpsat"`` then
returns its hint, the best of HEFT and the single devices)."""


class Placement(FieldsEqual, Result, BaseModel):
    """A placement and schedule with its simulated cost and proven bound: a
    :class:`mtpp.result.Result`.

    ``device[v]`` is the device index of op ``v`` (node index order),
    ``index_order`` the priority order (node indices; ``order``: node ids),
    ``start``/``end`` the simulated times; ``upper_bound`` is the objective's value,
    the makespan (also ``makespan``) or the largest per-device peak;
    ``lower_bound`` a proven bound on that objective over every placement;
    ``gap = (upper_bound - lower_bound) / upper_bound``; ``optimal``: the gap is
    zero (to ``1e-9``) for a placement that fits in memory.  ``candidates`` maps each
    method tried to its objective value (``inf`` if its placement overflows memory).
    ``objective_value`` and ``proven_optimal`` are the old names of ``upper_bound``
    and ``optimal`` (deprecated)."""

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
    def objective_value(self) -> float:
        """Deprecated name of :attr:`upper_bound`."""
        warnings.warn("Placement.objective_value is now Placement.upper_bound", DeprecationWarning, stacklevel=2)
        return self.upper_bound

    @property
    def proven_optimal(self) -> bool:
        """Deprecated name of :attr:`optimal`."""
        warnings.warn("Placement.proven_optimal is now Placement.optimal", DeprecationWarning, stacklevel=2)
        return self.optimal

    @property
    def status(self) -> ResultStatus:
        """``optimal`` when proven, else ``feasible`` (also for a placement that
        overflows memory: see ``memory_feasible``)."""
        return ResultStatus.OPTIMAL if self.optimal else ResultStatus.FEASIBLE

    @property
    def steps(self) -> tuple[Step, ...]:
        """Each method tried (its objective value) and the bound."""
        tried = tuple(
            Step(name, ResultStatus.FEASIBLE, finite_or_none(v), None, 0.0, "") for name, v in self.candidates.items()
        )
        bound = "cpsat" if self.cpsat_status is not None else "simple"
        status = ResultStatus(self.cpsat_status) if self.cpsat_status is not None else ResultStatus.BOUND
        return (*tried, Step(bound, status, None, self.lower_bound, 0.0, ""))

    def _document(self) -> Any:
        from mtpp.results_schema import placement_document

        if self._graph is None:
            raise InvalidParameterError("this placement has no graph: build it with mtpp.place()")
        return placement_document(self, self._graph)


def _score(sim: Any, objective: str) -> tuple[int, float]:
    from heuristics.placement.brkga import objective_value

    return (0, objective_value(sim, objective)) if sim.memory_feasible else (1, sim.overflow)


def _closed_form_bound(ctx: PlacementContext, objective: str) -> float:
    """The bound that costs no search: :func:`formulations.placement.simple_lower_bound`
    for the runtime; for the peak memory the largest single-op footprint (its inputs,
    output and parameters are on its device at once).  ``O(n d + m)``."""
    if objective == "runtime":
        from formulations.placement import simple_lower_bound

        return float(simple_lower_bound(ctx))
    graph = ctx.graph
    inputs = np.zeros(graph.n)
    np.add.at(inputs, graph.edge_dst, graph.size_out[graph.edge_src])
    return float((graph.size_out + graph.size_param + inputs).max())


def _proves(candidate: Any, objective: str, bound: float) -> bool:
    """True when ``candidate`` fits in memory and its value meets ``bound`` to
    :data:`OPTIMAL_RTOL` (the test :func:`place` reports ``optimal`` by): proven optimal."""
    feasible, value = _score(candidate.sim, objective)
    return feasible == 0 and relative_gap(value, bound) <= OPTIMAL_RTOL


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

    t0 = time.perf_counter()
    co = coarsen(ctx.graph, target)
    cctx = PlacementContext(co.graph, ctx.devices, co.times(ctx.times))
    projected = evaluate(cctx, "projected-heft", co.project(heft_fine.place, ctx.times), co.graph.topological_order)
    seeds = [heft(cctx), projected, *all_single_devices(cctx)]
    half = None if time_limit is None else time_limit / 2
    params = BrkgaParams(population=50, generations=10**6) if half is not None else BrkgaParams()
    res = placement_brkga(cctx, objective, params, seed, seeds, time_limit=half)
    order = co.expand_order(res.best.order)
    rest = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - t0))
    fine, _ = refine_moves(ctx, co.expand(res.best.place), order, objective, rest)
    return evaluate(ctx, "coarse-brkga", fine, order)


@legacy_positional(2, LEGACY_ARGS)
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
    Everything after ``devices`` is keyword-only (by position it still works for one
    release, with a ``DeprecationWarning``)."""
    from formulations.placement import build_placement
    from heuristics.brkga import BrkgaParams
    from heuristics.placement.baselines import PlacementCandidate, all_single_devices, evaluate, heft
    from heuristics.placement.brkga import OBJECTIVES, placement_brkga

    t0 = time.perf_counter()
    check_instance("graph", graph, Graph, "an mtpp.Graph")
    check_choice("objective", objective, OBJECTIVES)
    check_choice("method", method, METHODS)
    if method == "cpsat" and objective != "runtime":
        raise InvalidParameterError("method 'cpsat' minimises the runtime; use objective='runtime'")
    time_limit = check_optional_time_limit(time_limit)
    seed = check_seed(seed)
    check_bool("cpsat_memory", cpsat_memory)
    cpsat_max_ops = check_int("cpsat_max_ops", cpsat_max_ops, low=0)
    threads = check_count("threads", threads)
    coarse_target = check_optional_count("coarse_target", coarse_target)
    ds = get_devices(devices)
    ctx = PlacementContext(graph, ds, times)

    cands: list[PlacementCandidate] = []
    singles = all_single_devices(ctx)
    h = heft(ctx)
    base = [h, *singles]
    if method in ("auto", "single"):
        cands += singles
    if method in ("auto", "heft"):
        cands.append(h)
    closed = _closed_form_bound(ctx, objective)
    # "auto" stops where a baseline meets the closed-form bound (proven optimal: no search can improve it)
    search = "none" if method == "auto" and any(_proves(c, objective, closed) for c in base) else method
    use_coarse = search == "coarse-brkga" or (search == "auto" and graph.n > COARSE_AUTO_OPS)
    share = 1 / 4 if search == "auto" and use_coarse else 1 / 2 if search == "auto" else 1.0
    budget = None if time_limit is None else time_limit * share
    if search in ("auto", "brkga"):
        params = BrkgaParams(population=50, generations=10**6) if budget is not None else BrkgaParams()
        res = placement_brkga(ctx, objective, params, seed, base, time_limit=budget)
        cands.append(res.best)
    if use_coarse:
        cands.append(coarse_brkga(ctx, objective, h, budget, seed, coarse_target))
    bound = closed
    status: str | None = None
    if objective == "runtime":
        run_cp = search == "cpsat" or (search == "auto" and graph.n <= cpsat_max_ops)
        if run_cp:
            hint = min(base if search == "cpsat" else cands, key=lambda c: _score(c.sim, objective))
            ub = hint.sim.makespan if (hint.sim.memory_feasible or not cpsat_memory) else None
            model = build_placement(ctx, memory=cpsat_memory, upper_bound=ub)
            left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
            remaining = None if left is None else left - CPSAT_OVERRUN_PER_OP * graph.n
            cp = None
            if remaining is None or remaining >= CPSAT_MIN_SECONDS:  # else it would end past the limit
                from formulations.cpsat_placement import solve_placement

                cp = solve_placement(model, (hint.place, hint.sim.start), remaining, threads, seed)
            status = ResultStatus.SKIPPED.value if cp is None else cp.status.value
            if cp is not None and math.isfinite(cp.bound):
                bound = max(bound, model.to_time(cp.bound))
            if cp is not None and cp.place is not None and cp.order is not None:
                cands.append(evaluate(ctx, "cpsat", cp.place, cp.order))
            elif search == "cpsat":
                cands.append(hint)

    best = min(cands, key=lambda c: _score(c.sim, objective))
    sim = simulate(graph, ctx, best.place, best.order)  # re-checked through the public, validating entry
    value = sim.makespan if objective == "runtime" else float(sim.peak_memory.max())
    optimal = False
    if sim.memory_feasible:
        bound = min(bound, value) if math.isclose(bound, value, rel_tol=OPTIMAL_RTOL) else bound
        optimal = relative_gap(value, bound) <= OPTIMAL_RTOL
    table = {c.method: (_score(c.sim, objective)[1] if c.sim.memory_feasible else math.inf) for c in cands}
    placement = Placement(
        objective=objective,
        method=best.method,
        devices=ds.names,
        device=tuple(int(j) for j in best.place),
        index_order=tuple(int(v) for v in best.order),
        start=tuple(float(t) for t in sim.start),
        end=tuple(float(t) for t in sim.end),
        makespan=sim.makespan,
        peak_memory=tuple(float(p) for p in sim.peak_memory),
        memory_feasible=sim.memory_feasible,
        upper_bound=value,
        lower_bound=bound,
        optimal=optimal,
        candidates=table,
        cpsat_status=status,
        wall_time=time.perf_counter() - t0,
    )
    placement._graph = graph
    return placement
