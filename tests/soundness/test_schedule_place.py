"""The same discipline for the peak-memory and placement bounds: on fresh random tiny
graphs at weight scales 1e-3 .. 1e12, the proven bound never exceeds the brute-force
optimum and the returned order / placement is re-checked to cost at least that, on
both paths of the kernels (:mod:`tests.kernel_paths`); the schedule's in exact
arithmetic (:class:`tests.oracle.peak_memory.ExactPeak`)."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mtpp
from mtpp.core.memory import REL_TOL
from mtpp.core.presets import get_devices
from mtpp.core.simulator import PlacementContext
from tests.kernel_paths import PATHS, kernel_path
from tests.oracle import ExactPeak
from tests.oracle.placement import brute_force
from tests.soundness.instances import SCALES


def tiny_graph(seed: int, max_n: int) -> mtpp.Graph:
    rng = random.Random(seed)
    n = rng.randint(1, max_n)
    order = list(range(n))
    rng.shuffle(order)
    edges = [(order[i], order[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.45]
    scale = rng.choice(SCALES)
    w = [[round(rng.uniform(0, 10), rng.choice([0, 2, 6])) * scale for _ in range(n)] for _ in range(3)]
    return mtpp.Graph.from_arrays(*w, edges, ids=[f"op{x}" for x in rng.sample(range(50), n)])


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32), method=st.sampled_from(["auto", "exact-dp", "cpsat"]), path=st.sampled_from(PATHS))
def test_schedule_bound_never_exceeds_the_optimum(seed: int, method: str, path: str) -> None:
    g = tiny_graph(seed, 6)
    exact = ExactPeak(g)  # the optimum and the order's peak in exact arithmetic (issue 73)
    opt, _ = exact.optimum()
    with kernel_path(path):
        s = mtpp.schedule(g, method=method, time_limit=10)
    assert Fraction(s.lower_bound) <= opt
    order = np.array([g.index(v) for v in s.order])
    assert mtpp.peak_memory(g, order) == pytest.approx(s.peak, rel=1e-12)
    assert Fraction(s.peak) >= exact.peak(order) >= opt
    assert not s.optimal or exact.peak(order) <= opt * (1 + Fraction(REL_TOL))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32), path=st.sampled_from(PATHS))
def test_placement_bound_never_exceeds_the_optimum(seed: int, path: str) -> None:
    g = tiny_graph(seed, 4)
    devices = get_devices("two-devices")
    rng = np.random.default_rng(seed)
    times = rng.uniform(0.1, 10, (g.n, devices.d)) * float(rng.choice(SCALES))
    opt, _, _ = brute_force(g, devices, run=PlacementContext(g, devices, times))
    with kernel_path(path):
        p = mtpp.place(g, devices, method="cpsat", time_limit=10, times=times, threads=1)
    assert p.lower_bound <= opt * (1 + 1e-9)
    assert p.makespan >= opt * (1 - 1e-9)
