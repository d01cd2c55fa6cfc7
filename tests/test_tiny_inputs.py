"""Tiny inputs (issue 24, item 3): one-op and single-chain graphs get proven answers
without a search.  Timings live in ``benchmarks/tiny_inputs.py``; these tests check
the results and that the early exit is a real proof (UB <= LB to the call's tolerance)."""

from __future__ import annotations

import numpy as np
import pytest

import mtpp
from mtpp.core.device_sets import Device, DeviceSet
from mtpp.core.graph import Graph
from mtpp.core.result import relative_gap
from mtpp.core.simulator import simulate
from mtpp.placement.api import OPTIMAL_RTOL, place
from tests.oracle.placement import brute_force


def chain(n: int) -> Graph:
    return Graph.from_arrays([1.0] * n, [1.0] * n, [1.0] * n, [(i, i + 1) for i in range(n - 1)])


BASELINES = {"heft", "single:cpu", "single:igpu", "single:dgpu"}


@pytest.mark.parametrize("n", [1, 20])
@pytest.mark.parametrize("objective", ["runtime", "peak_memory"])
def test_place_stops_at_a_baseline_that_meets_the_closed_form_bound(n: int, objective: str) -> None:
    g = chain(n)
    p = place(g, "cpu-igpu-dgpu", objective=objective, time_limit=30.0)
    assert set(p.candidates) == BASELINES  # no BRKGA, no CP-SAT
    assert p.cpsat_status is None
    assert p.optimal and p.memory_feasible
    assert relative_gap(p.upper_bound, p.lower_bound) <= OPTIMAL_RTOL
    sim = simulate(g, "cpu-igpu-dgpu", list(p.device), list(p.index_order))
    value = sim.makespan if objective == "runtime" else float(sim.peak_memory.max())
    assert value == p.upper_bound
    assert p.wall_time < 30.0 / 2  # not the BRKGA's half of the time limit (a result, not a timing)


def test_one_op_runtime_is_the_fastest_device() -> None:
    g = chain(1)
    p = place(g, "cpu-igpu-dgpu")
    best, _, _ = brute_force(g, mtpp.core.presets.get_devices("cpu-igpu-dgpu"))
    assert p.upper_bound == pytest.approx(best) == p.lower_bound


def test_search_still_runs_when_no_baseline_meets_the_bound() -> None:
    # Two independent ops on two equal devices with a slow link: the simple bound is
    # below every baseline's value until a search puts one op on each device.
    g = Graph.from_arrays([4.0, 4.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [(0, 2), (1, 2)])
    ds = DeviceSet.uniform([Device(name="a"), Device(name="b")], 1.0)
    p = place(g, ds, time_limit=2.0)
    assert {"brkga", "cpsat"} <= set(p.candidates)
    best, _, _ = brute_force(g, ds)
    assert p.upper_bound == pytest.approx(best)


def test_explicit_methods_still_search() -> None:
    g = chain(3)
    p = place(g, "cpu-igpu-dgpu", method="brkga", time_limit=0.2)
    assert "brkga" in p.candidates and p.optimal


@pytest.mark.parametrize("n", [1, 20])
def test_tiny_partition_certify_schedule_are_proven(n: int) -> None:
    g = chain(n)
    cert = mtpp.certify(g, k=4)
    assert cert.optimal and cert.lower_bound <= cert.upper_bound
    sol = mtpp.partition(g, k=4)
    assert sol.upper_bound == pytest.approx(cert.upper_bound)
    sched = mtpp.schedule(g)
    assert sched.optimal
    assert np.isfinite(sched.peak)
    assert [st.method for st in sched.stages] == ["local", "forced-live", "dfs"]  # no bfs, no random orders
