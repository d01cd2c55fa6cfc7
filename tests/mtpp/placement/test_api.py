"""``place``: every method returns a placement the simulator re-checks, with bounds."""

from __future__ import annotations

import numpy as np
import pytest

from mtpp.core.device_sets import Device, DeviceSet
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.presets import DEVICE_SETS as PRESETS
from mtpp.core.result import upper_rounded
from mtpp.core.simulator import PlacementContext, simulate
from mtpp.placement.api import Placement, place
from tests.formulations.test_placement import devices, tiny
from tests.heuristics.placement.test_baselines import random_dag
from tests.oracle.placement import brute_force


@pytest.mark.parametrize("method", ["single", "heft", "brkga", "cpsat", "auto"])
def test_every_method_is_rechecked_and_bounded(method: str) -> None:
    g = random_dag(np.random.default_rng(11), 20, 0.2)
    ds = PRESETS["cpu-igpu-dgpu"]
    p = place(g, ds, method=method, time_limit=2.0, threads=1)
    r = simulate(g, ds, list(p.device), list(p.index_order))
    ctx = PlacementContext(g, ds)
    # the re-simulated makespan rounded upwards by the simulator's error bound
    assert p.makespan == upper_rounded(r.makespan, ctx.makespan_error(np.array(p.device), r.makespan))
    assert r.makespan <= p.makespan <= r.makespan * (1 + 1e-12) and p.memory_feasible
    assert p.lower_bound is not None and p.lower_bound <= p.makespan + 1e-9
    assert 0 <= p.gap < 1
    assert Placement.model_validate_json(p.model_dump_json()) == p
    assert set(p.assignment(g).values()) <= set(ds.names)


def test_auto_proves_tiny_optimum() -> None:
    g = tiny(np.random.default_rng(1), 5)
    ds = devices(2)
    p = place(g, ds, time_limit=5.0, threads=1)
    best, _, _ = brute_force(g, ds)
    assert p.makespan == pytest.approx(best) and p.optimal and p.cpsat_status == "optimal"


def test_memory_limit_respected_and_peak_objective() -> None:
    g = Graph.from_arrays([1, 100], [0, 0], [10, 10], [(0, 1)])
    ds = DeviceSet.uniform([Device(name="a", memory=15), Device(name="b", memory=25, speed=0.01)], 1.0)
    p = place(g, ds, method="brkga", time_limit=0.5)
    assert p.memory_feasible and p.device == (0, 1)
    q = place(g, ds, objective="peak_memory", method="brkga", time_limit=0.5)
    assert q.upper_bound == max(q.peak_memory) and q.lower_bound == 20.0


def test_bad_arguments() -> None:
    g = random_dag(np.random.default_rng(0), 4)
    with pytest.raises(InvalidParameterError, match="method"):
        place(g, "two-devices", method="magic")
    with pytest.raises(InvalidParameterError, match="objective"):
        place(g, "two-devices", objective="energy")
    with pytest.raises(InvalidParameterError, match="cpsat"):
        place(g, "two-devices", objective="peak_memory", method="cpsat")
    with pytest.raises(InvalidParameterError, match="preset"):
        place(g, "quantum")


def test_a_bound_above_the_upper_bound_is_a_failed_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """The result contract (mtpp.core.result.settle): a bound above the re-checked upper
    bound is no bound; its method is a step with status "error" naming both numbers,
    and the result is not "optimal" by it (nor does "auto" stop early on it)."""
    from mtpp.placement import api

    g = random_dag(np.random.default_rng(4), 6, 0.4)
    honest = place(g, "two-devices", method="heft")
    monkeypatch.setattr(api, "_closed_form_bound", lambda ctx, objective: 2 * honest.upper_bound)
    p = place(g, "two-devices", method="auto", time_limit=1.0, cpsat_max_ops=0)
    assert "brkga" in p.candidates  # no early stop on the false bound
    (step,) = [st for st in p.steps if st.method == "simple"]
    assert step.status == "error" and step.lower_bound is None
    assert repr(2 * honest.upper_bound) in step.detail and repr(p.upper_bound) in step.detail
    assert p.upper_bound > 0 and "simple" not in p.bounds
    assert p.lower_bound == 0.0 and p.lower_bound_method == "none" and not p.optimal
    assert p.steps[-1].method == "none"  # the document's lower_bound_method
