"""CP-SAT for the minimum-peak order model of :mod:`formulations.schedule`.

The model comes as its plain integer data (:class:`ScheduleData`, which
:class:`formulations.schedule.ScheduleModel` is); this adapter translates it into a
CP-SAT model, solves it and translates the answer back (:class:`CpScheduleResult`).

Positions are integer variables under ``AddAllDifferent`` and precedence rows; each
tensor's last use is an ``AddMaxEquality`` over its consumers' positions; tensors and
parameters are intervals of one ``AddCumulative`` whose capacity variable is
minimised (OR-Tools accepts a variable capacity).  A known order is given as a
complete hint (positions, ends, interval sizes and capacity), so CP-SAT starts from
it and always returns an order at least as good; the redundant ``C >= L`` row carries
bounds proven elsewhere.  ``ortools`` is imported only when a model is solved.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from solvers.cpsat_common import cp_solver, neutral_status, proven_bound
from solvers.result import Status


class ScheduleData(Protocol):
    """What the translation reads of a minimum-peak order model
    (:class:`formulations.schedule.ScheduleModel`, whose docstring has the model): per
    node its earliest and latest position and its integer output and parameter
    demands, the edges and the successor lists (CSR), the bounds of the capacity row,
    and the model's positions, ends and capacity of a known order (for the hint)."""

    @property
    def n(self) -> int: ...
    @property
    def edge_src(self) -> np.ndarray: ...
    @property
    def edge_dst(self) -> np.ndarray: ...
    @property
    def succ_ptr(self) -> np.ndarray: ...
    @property
    def succ_idx(self) -> np.ndarray: ...
    @property
    def out_demand(self) -> np.ndarray: ...
    @property
    def param_demand(self) -> np.ndarray: ...
    @property
    def earliest(self) -> np.ndarray: ...
    @property
    def latest(self) -> np.ndarray: ...
    @property
    def lower_bound(self) -> int: ...
    @property
    def upper_bound(self) -> int | None: ...
    def positions(self, order: np.ndarray) -> np.ndarray: ...
    def ends(self, pos: np.ndarray) -> np.ndarray: ...
    def capacity(self, order: np.ndarray) -> int: ...


@dataclass(frozen=True)
class CpScheduleResult:
    """What CP-SAT returned: the best order found (node indices) or ``None``, its
    model capacity, the proven bound on the capacity (model units), the neutral
    status (:class:`solvers.result.Status`), wall time and the ortools version."""

    status: Status
    order: np.ndarray | None
    capacity: int | None
    bound: float
    wall_time: float
    version: str
    message: str = ""


def solve_schedule(
    model: ScheduleData,
    hint: np.ndarray | None = None,
    time_limit: float | None = 60.0,
    threads: int = 8,
    seed: int = 0,
    verbose: bool = False,
) -> CpScheduleResult:
    """Minimise the capacity of ``model`` with CP-SAT, hinted with the topological
    order ``hint`` (node indices).  ``OPTIMAL`` means CP-SAT proved the model optimum;
    the caller maps it back (exact only when ``model.exact``)."""
    from importlib.metadata import version

    from ortools.sat.python import cp_model as cp

    t0 = time.perf_counter()
    n = model.n
    m = cp.CpModel()
    pos = [m.new_int_var(int(model.earliest[v]), int(model.latest[v]), f"p{v}") for v in range(n)]
    m.add_all_different(pos)
    for u, v in zip(model.edge_src.tolist(), model.edge_dst.tolist()):
        m.add(pos[u] + 1 <= pos[v])
    top = (
        model.upper_bound
        if model.upper_bound is not None
        else int(model.out_demand.sum() + model.param_demand.max(initial=0))
    )
    cap = m.new_int_var(int(model.lower_bound), max(int(model.lower_bound), int(top)), "capacity")
    intervals, demands = [], []
    ends: dict[int, cp.IntVar] = {}
    sizes: dict[int, cp.IntVar] = {}
    ptr, idx = model.succ_ptr.tolist(), model.succ_idx.tolist()
    out, param = model.out_demand.tolist(), model.param_demand.tolist()
    for u in range(n):
        consumers = idx[ptr[u] : ptr[u + 1]]
        if consumers:
            lo = max(int(model.earliest[w]) for w in consumers)
            e = m.new_int_var(lo, n - 1, f"e{u}")
            m.add_max_equality(e, [pos[w] for w in consumers])
            size = m.new_int_var(1, n, f"len{u}")
            ends[u], sizes[u] = e, size
            if out[u] > 0:
                intervals.append(m.new_interval_var(pos[u], size, e + 1, f"t{u}"))
                demands.append(out[u])
            if param[u] > 0:
                intervals.append(m.new_fixed_size_interval_var(pos[u], 1, f"o{u}"))
                demands.append(param[u])
        elif out[u] + param[u] > 0:  # a sink's output lives during its own step only
            intervals.append(m.new_fixed_size_interval_var(pos[u], 1, f"t{u}"))
            demands.append(out[u] + param[u])
    if intervals:
        m.add_cumulative(intervals, demands, cap)
    m.minimize(cap)

    if hint is not None:
        p = model.positions(hint)
        e_val = model.ends(p)
        for v in range(n):
            m.add_hint(pos[v], int(p[v]))
        for u, e in ends.items():
            m.add_hint(e, int(e_val[u]))
            m.add_hint(sizes[u], int(e_val[u] - p[u] + 1))
        m.add_hint(cap, max(int(model.lower_bound), model.capacity(hint)))

    solver = cp_solver(time_limit, threads, seed, verbose)
    status = solver.solve(m)
    st = neutral_status(status, time_limit)
    order = None
    capacity = None
    if status in (cp.OPTIMAL, cp.FEASIBLE):
        values = np.array([solver.value(x) for x in pos], dtype=np.int64)
        order = np.argsort(values, kind="stable").astype(np.int64)
        capacity = int(solver.value(cap))
    message = f"CP-SAT: model invalid: {m.validate()}" if st is Status.ERROR else ""
    bound = proven_bound(solver, status) if st is not Status.ERROR else float("nan")
    return CpScheduleResult(st, order, capacity, bound, time.perf_counter() - t0, version("ortools"), message)
