"""CP-SAT for the placement model of :mod:`formulations.placement`.

One optional fixed-size interval per (op, device) under ``add_exactly_one`` on the
presence literals; ``add_no_overlap`` per device; precedence rows, plus one
reified row per edge and ordered pair of distinct devices with a positive delay;
with ``model.memory``, one ``add_cumulative`` per device of finite capacity over the
parameter intervals and the optional tensor-lifetime intervals (a relaxation of the
simulator's memory: :mod:`formulations.placement`).  A known placement
and its simulated start times are given as a complete hint.  ``ortools`` is
imported only when a model is solved.

The model comes as its plain integer data (:class:`PlacementData`, which
:class:`formulations.placement.PlacementModel` is); this adapter translates it into a
CP-SAT model, solves it and translates the answer back (:class:`CpPlacementResult`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from solvers.cpsat_common import cp_solver, neutral_status, proven_bound
from solvers.result import Status


class PlacementData(Protocol):
    """What the translation reads of a placement model
    (:class:`formulations.placement.PlacementModel`, whose docstring has the model):
    ops, devices and edges; integer durations (``n x d``), transfer delays (``m x d x
    d``) and the horizon; whether memory is modelled, with integer bytes and
    capacities (``-1``: unlimited); the ops each device may run; each op's
    topological position (to break ties between starts); and the map of graph times
    to model units (for the hint)."""

    @property
    def n(self) -> int: ...
    @property
    def d(self) -> int: ...
    @property
    def edge_src(self) -> np.ndarray: ...
    @property
    def edge_dst(self) -> np.ndarray: ...
    @property
    def dur(self) -> np.ndarray: ...
    @property
    def delay(self) -> np.ndarray: ...
    @property
    def horizon(self) -> int: ...
    @property
    def memory(self) -> bool: ...
    @property
    def out_bytes(self) -> np.ndarray: ...
    @property
    def param_bytes(self) -> np.ndarray: ...
    @property
    def capacity(self) -> np.ndarray: ...
    @property
    def allowed(self) -> np.ndarray: ...
    @property
    def topo_pos(self) -> np.ndarray: ...
    def to_units(self, t: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class CpPlacementResult:
    """What CP-SAT returned: the best placement and priority order (starts sorted) or
    ``None``, its model makespan, the proven bound (model units), the neutral status,
    wall time and the ortools version."""

    status: Status
    place: np.ndarray | None
    order: np.ndarray | None
    makespan: int | None
    bound: float
    wall_time: float
    version: str
    message: str = ""


def solve_placement(
    model: PlacementData,
    hint: tuple[np.ndarray, np.ndarray] | None = None,
    time_limit: float | None = 60.0,
    threads: int = 8,
    seed: int = 0,
    verbose: bool = False,
) -> CpPlacementResult:
    """Minimise the makespan of ``model``; ``hint = (placement, start times in graph
    units)``.  ``OPTIMAL`` means CP-SAT proved the model optimum.  ``time_limit`` caps
    the whole call: building the CP-SAT model in Python (seconds on large graphs) comes
    off the solver's limit."""
    from importlib.metadata import version

    from ortools.sat.python import cp_model as cp

    t0 = time.perf_counter()
    n, d, horizon = model.n, model.d, model.horizon
    m = cp.CpModel()
    s = [m.new_int_var(0, horizon, f"s{v}") for v in range(n)]
    e = [m.new_int_var(0, horizon, f"e{v}") for v in range(n)]
    x = [[m.new_bool_var(f"x{v}_{j}") for j in range(d)] for v in range(n)]
    dur = model.dur.tolist()
    per_dev: list[list[cp.IntervalVar]] = [[] for _ in range(d)]
    for v in range(n):
        m.add_exactly_one(x[v])
        for j in range(d):
            if not model.allowed[v, j]:
                m.add(x[v][j] == 0)
                continue
            per_dev[j].append(m.new_optional_fixed_size_interval_var(s[v], dur[v][j], x[v][j], f"i{v}_{j}"))
            m.add(e[v] == s[v] + dur[v][j]).only_enforce_if(x[v][j])
    for j in range(d):
        m.add_no_overlap(per_dev[j])
    src, dst = model.edge_src.tolist(), model.edge_dst.tolist()
    for k, (u, v) in enumerate(zip(src, dst)):
        m.add(s[v] >= e[u])
        for a in range(d):
            for b in range(d):
                c = int(model.delay[k, a, b])
                if a != b and c > 0:
                    m.add(s[v] >= e[u] + c).only_enforce_if([x[u][a], x[v][b]])
    mk = m.new_int_var(0, horizon, "makespan")
    m.add_max_equality(mk, e)
    if model.memory:
        _memory(m, model, s, e, x)
    m.minimize(mk)

    if hint is not None:
        place, start = hint
        st = model.to_units(start)
        for v in range(n):
            for j in range(d):
                m.add_hint(x[v][j], int(place[v]) == j)
            m.add_hint(s[v], int(st[v]))
            m.add_hint(e[v], int(st[v] + model.dur[v, place[v]]))

    left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - t0))
    solver = cp_solver(left, threads, seed, verbose)
    status = solver.solve(m)
    neutral = neutral_status(status, time_limit)
    place_out = order = None
    makespan = None
    if status in (cp.OPTIMAL, cp.FEASIBLE):
        place_out = np.array([next(j for j in range(d) if solver.value(x[v][j])) for v in range(n)], dtype=np.int64)
        starts = np.array([solver.value(s[v]) for v in range(n)], dtype=np.int64)
        ends = np.array([solver.value(e[v]) for v in range(n)], dtype=np.int64)
        # ties at one start: zero-length ops first (earlier end), then topological position
        order = np.lexsort((model.topo_pos, ends, starts)).astype(np.int64)
        makespan = int(solver.value(mk))
    message = f"CP-SAT: model invalid: {m.validate()}" if neutral is Status.ERROR else ""
    bound = float("nan") if neutral is Status.ERROR else proven_bound(solver, status)
    return CpPlacementResult(
        neutral, place_out, order, makespan, bound, time.perf_counter() - t0, version("ortools"), message
    )


def _memory(m: Any, model: PlacementData, s: list[Any], e: list[Any], x: list[list[Any]]) -> None:
    """The per-device cumulatives of :mod:`formulations.placement` ("Memory"): a
    relaxation of the simulator's memory, because every buffer's model interval can be
    placed inside the image of its simulated lifetime (a copy's start is free between
    its producer's end and its first consumer's start for that reason), and CP-SAT's
    cumulative counts an interval ``[a, b)`` at the integer times ``a .. b - 1`` only,
    which are live sets at a prefix of the simulator's event sweep (proof there)."""
    n, d, horizon = model.n, model.d, model.horizon
    succ: list[list[int]] = [[] for _ in range(n)]
    for k, u in enumerate(model.edge_src.tolist()):
        succ[u].append(k)
    dst = model.edge_dst
    out, par = model.out_bytes.tolist(), model.param_bytes.tolist()
    for b in range(d):
        cap = int(model.capacity[b])
        if cap < 0:
            continue
        ivs, dem = [], []
        for v in range(n):
            if par[v] > 0 and model.allowed[v, b]:
                ivs.append(m.new_optional_fixed_size_interval_var(s[v], int(model.dur[v, b]), x[v][b], f"p{v}_{b}"))
                dem.append(par[v])
        for u in range(n):
            if out[u] <= 0:
                continue
            here = x[u][b]
            users = [x[int(dst[k])][b] for k in succ[u]]
            z = m.new_bool_var(f"z{u}_{b}")
            m.add_bool_or([here, *users]).only_enforce_if(z)
            for lit in (here, *users):
                m.add_implication(lit, z)
            st = m.new_int_var(0, horizon, f"ts{u}_{b}")
            en = m.new_int_var(0, horizon, f"te{u}_{b}")
            size = m.new_int_var(0, horizon, f"tl{u}_{b}")
            m.add(st == s[u]).only_enforce_if(here)
            m.add(st >= e[u]).only_enforce_if(~here)  # a copy: from the transfer's start ...
            m.add(en >= e[u])
            for k in succ[u]:
                w = int(dst[k])
                m.add(st <= s[w]).only_enforce_if([~here, x[w][b]])  # ... at the latest by its consumers' starts
                m.add(en >= e[w]).only_enforce_if(x[w][b])
                for c in range(d):
                    if c != b:
                        m.add(en >= e[u] + int(model.delay[k, b, c])).only_enforce_if([here, x[w][c]])
            ivs.append(m.new_optional_interval_var(st, size, en, z, f"t{u}_{b}"))
            dem.append(out[u])
        if ivs:
            m.add_cumulative(ivs, dem, cap)
