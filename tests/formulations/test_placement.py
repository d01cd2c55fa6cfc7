"""CP-SAT placement model: equal to brute force over placements and priority orders
(positive op times, no memory limit), a lower bound with memory, and never above the
best simulated placement."""

from __future__ import annotations

import numpy as np
import pytest

from formulations.placement import build_placement
from heuristics.placement.baselines import heft
from mtpp.core.device_sets import Device, DeviceSet
from mtpp.core.graph import Graph
from mtpp.core.simulator import PlacementContext
from solvers.cpsat_placement import solve_placement
from solvers.result import Status
from tests.oracle.placement import brute_force

pytest.importorskip("ortools")


def tiny(rng: np.random.Generator, n: int) -> Graph:
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.4]
    return Graph.from_arrays(rng.integers(1, 6, n), rng.integers(0, 3, n), rng.integers(0, 7, n), edges)


def devices(d: int, mem: float = float("inf")) -> DeviceSet:
    speeds = [1.0, 2.0, 0.5][:d]
    bw = tuple(tuple(2.0 if a != b else 1.0 for b in range(d)) for a in range(d))
    lat = tuple(tuple(1.0 if a != b else 0.0 for b in range(d)) for a in range(d))
    return DeviceSet(
        devices=tuple(Device(name=f"d{j}", speed=speeds[j], memory=mem) for j in range(d)), bandwidth=bw, latency=lat
    )


@pytest.mark.parametrize(("n", "d", "seed"), [(4, 2, 0), (5, 2, 1), (5, 2, 2), (4, 3, 3), (4, 3, 4), (6, 2, 5)])
def test_optimum_equals_brute_force(n: int, d: int, seed: int) -> None:
    g = tiny(np.random.default_rng(seed), n)
    ds = devices(d)
    ctx = PlacementContext(g, ds)
    best, _, _ = brute_force(g, ds, run=ctx)
    model = build_placement(ctx)
    assert model.exact
    h = heft(ctx)
    res = solve_placement(model, hint=(h.place, h.sim.start), time_limit=30, threads=1)
    assert res.status is Status.OPTIMAL
    assert model.to_time(res.bound) == pytest.approx(best)
    assert model.proven_bound(res.bound) <= best
    assert res.place is not None and res.order is not None
    # the solver's schedule, re-simulated, attains it
    assert ctx.run(res.place, res.order).makespan == pytest.approx(best)


@pytest.mark.parametrize("seed", [6, 7, 8])
def test_memory_model_is_a_lower_bound(seed: int) -> None:
    """With a memory cap the model may also delay ops (the simulator cannot), so its
    optimum is <= the best memory-feasible simulated makespan."""
    g = tiny(np.random.default_rng(seed), 5)
    total = float(g.size_out.sum() + g.size_param.sum())
    ds = devices(2, mem=max(1.0, total / 2))
    ctx = PlacementContext(g, ds)
    best, _, _ = brute_force(g, ds, memory=True, run=ctx)
    model = build_placement(ctx, memory=True)
    res = solve_placement(model, time_limit=30, threads=1)
    if np.isinf(best):
        return
    assert res.status is Status.OPTIMAL
    assert model.proven_bound(res.bound) <= best


def test_bound_never_exceeds_heuristic_on_fractional_data() -> None:
    """Times on no grid fine enough for their sums are scaled by a power of two and
    rounded down: still a valid bound."""
    rng = np.random.default_rng(9)
    g = Graph.from_arrays(
        rng.random(12) * 3 + 0.1,
        np.zeros(12),
        rng.random(12) * 5,
        [(u, v) for u in range(12) for v in range(u + 1, 12) if rng.random() < 0.2],
    )
    ds = devices(3)
    ctx = PlacementContext(g, ds)
    model = build_placement(ctx)
    assert not model.exact
    h = heft(ctx)
    res = solve_placement(model, hint=(h.place, h.sim.start), time_limit=5, threads=1)
    assert res.status in (Status.OPTIMAL, Status.TIME_LIMIT)
    assert model.proven_bound(res.bound) <= h.sim.makespan


def test_the_time_limit_covers_building_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the CP-SAT model comes off the solver's time limit."""
    import solvers.cpsat_placement as module
    from solvers.cpsat_common import cp_solver

    class Clock:  # the build takes 3 s on this clock
        calls = 0

        def perf_counter(self) -> float:
            self.calls += 1
            return 0.0 if self.calls == 1 else 3.0

    limits: list[float | None] = []

    def solver(time_limit: float | None, *args: object, **kwargs: object) -> object:
        limits.append(time_limit)
        return cp_solver(time_limit, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "time", Clock())
    monkeypatch.setattr(module, "cp_solver", solver)
    g = tiny(np.random.default_rng(0), 5)
    model = build_placement(PlacementContext(g, devices(2)))
    res = solve_placement(model, time_limit=10.0, threads=1)
    assert limits == [7.0]
    assert res.status is Status.OPTIMAL


def test_place_keeps_cpsats_overrun_out_of_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """``place`` gives CP-SAT the time left less its overrun per op (CP-SAT ends past its
    own limit)."""
    import solvers.cpsat_placement as module
    from mtpp.placement import api

    limits: list[float | None] = []

    def solve(model: object, hint: object, time_limit: float | None, *args: object) -> object:
        limits.append(time_limit)
        return solve_placement(model, hint, time_limit, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "solve_placement", solve)
    monkeypatch.setattr(api, "CPSAT_OVERRUN_PER_OP", 0.5)  # 3 s on these 6 ops
    g = tiny(np.random.default_rng(1), 6)
    api.place(g, devices=devices(2), method="cpsat", time_limit=20.0)
    assert limits[0] is not None and 16.0 < limits[0] <= 17.0
    p = api.place(g, devices=devices(2), method="cpsat", time_limit=2.0)  # nothing left after the margin
    assert len(limits) == 1 and p.cpsat_status == "skipped" and p.method != "cpsat"  # not started: the hint
    assert [st.status for st in p.steps if st.method == "cpsat"] == ["skipped"]
