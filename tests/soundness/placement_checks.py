"""Soundness of ``mtpp.place`` on one fresh tiny instance per seed (issue 73), for
``tests/soundness/test_placement_soundness.py`` and ``benchmarks/soundness.py``.

:func:`placement_findings` draws an instance from the seed (:func:`draw_instance`: a
graph of 1 .. :data:`MAX_N` ops with zero-work ops, zero-size tensors and weights of
every scale from ``1e-3`` to ``1e12`` in one graph; 2 or 3 devices with power-of-two,
decimal and infinite bandwidths, zero and non-zero latencies, finite and infinite
memories; the devices' speeds or a drawn time table with zero entries), computes the
optima by replaying every placement and priority order in exact arithmetic
(:func:`tests.oracle.placement.exact_optima`), and checks ``mtpp.place`` with every
method of :data:`mtpp.placement.api.METHODS` for both objectives (``cpsat`` for the
runtime only; CP-SAT's memory model in a third of the calls; in one seed of twenty a
runtime ``auto`` long enough to reach its CP-SAT stage) against them:

* no exception;
* ``upper_bound`` at least the exact cost of the returned placement (its
  makespan, or its largest per-device peak), and at least its re-simulated float value;
* ``memory_feasible`` only if the returned placement's exact peaks fit;
* ``lower_bound`` and every bound step at most the optimum (over the memory-feasible
  placements; over all of them when none fits);
* ``optimal`` only for a placement that fits and whose exact cost is within
  ``OPTIMAL_RTOL`` of the optimum, and the same as ``status == "optimal"``;
* no failed step (a method that raised, or a bound above the upper bound).

Each finding is one line naming the seed, the method, the objective and both numbers;
an empty list means the seed found nothing.
"""

from __future__ import annotations

import math
import random
import traceback
from fractions import Fraction
from typing import Any

import numpy as np

import mtpp
from mtpp.core.device_sets import Device, DeviceSet
from mtpp.core.graph import Graph
from mtpp.core.simulator import simulate
from mtpp.placement.api import METHODS, OPTIMAL_RTOL
from tests.oracle.placement import Optima, exact_optima, fits, replay

MAX_N = 4
SCALES = (1e-3, 1.0, 1e3, 1e6, 1e9, 1e12)
SEARCH_LIMIT = 0.005
"""Seconds for the BRKGA methods (they search until their limit): the fuzz checks
bounds and re-checks, not search quality."""
AUTO_LIMIT = 0.01
AUTO_CPSAT_LIMIT = 1.3
AUTO_CPSAT_SHARE = 0.05
"""The share of seeds whose runtime ``auto`` call gets :data:`AUTO_CPSAT_LIMIT`: half goes
to its BRKGA, and CP-SAT needs ``CPSAT_MIN_SECONDS`` of the rest to start."""
CPSAT_LIMIT = 5.0  # CP-SAT needs CPSAT_MIN_SECONDS to start; tiny models finish in milliseconds
REL = Fraction(OPTIMAL_RTOL)


def _weight(rng: random.Random) -> float:
    """Zero, or a decimal at its own scale in 1e-3 .. 1e12."""
    if rng.random() < 0.25:
        return 0.0
    return round(rng.uniform(0.0, 10.0), rng.choice([0, 1, 3])) * rng.choice(SCALES)


def draw_instance(seed: int) -> tuple[Graph, DeviceSet, np.ndarray | None]:
    """A graph of 1 .. :data:`MAX_N` ops, a device set of 2 or 3 devices and a time
    table (``None``: the devices' speeds) drawn from ``seed`` (module docstring)."""
    rng = random.Random(seed)
    n = rng.randint(1, MAX_N)
    perm = list(range(n))
    rng.shuffle(perm)
    p = rng.choice([0.3, 0.6, 0.9])
    edges = [(perm[i], perm[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    weights = [[_weight(rng) for _ in range(n)] for _ in range(3)]
    ids = [f"op{x}" for x in rng.sample(range(100), n)]
    g = Graph.from_arrays(*weights, edges, ids=ids, name=f"place-fuzz-{seed}")
    d = rng.choice([2, 3])
    total = float(g.size_out.sum() + g.size_param.sum())
    memory = [math.inf if rng.random() < 0.5 else max(total * rng.uniform(0.2, 0.9), 1e-3) for _ in range(d)]
    devices = tuple(Device(name=f"d{j}", speed=rng.choice([0.5, 1.0, 2.0, 3.0]), memory=memory[j]) for j in range(d))
    bw = [[1.0] * d for _ in range(d)]
    lat = [[0.0] * d for _ in range(d)]
    for a in range(d):
        for b in range(a + 1, d):
            bw[a][b] = bw[b][a] = rng.choice([math.inf, 2.0 ** rng.randint(-3, 30), 3e5, 76.8e3, 0.7])
            lat[a][b] = lat[b][a] = rng.choice([0.0, 0.0, 1.0, 5e-3, 2.5e6])
    ds = DeviceSet(devices=devices, bandwidth=tuple(map(tuple, bw)), latency=tuple(map(tuple, lat)))
    times = None if rng.random() < 0.5 else np.array([[_weight(rng) for _ in range(d)] for _ in range(n)])
    return g, ds, times


def _checks(tag: str, p: Any, g: Graph, ds: DeviceSet, times: np.ndarray | None, opt: Optima) -> list[str]:
    found: list[str] = []
    r = replay(g, ds, list(p.device), list(p.index_order), times)
    true = r.exact_makespan if p.objective == "runtime" else max(r.peaks)
    fit = fits(ds, r.peaks)
    sim = simulate(g, mtpp.core.simulator.PlacementContext(g, ds, times), list(p.device), list(p.index_order))
    value = sim.makespan if p.objective == "runtime" else float(sim.peak_memory.max())
    ub, lb = Fraction(p.upper_bound), Fraction(p.lower_bound)
    target = opt.of(p.objective, feasible=True)
    if target is None:  # nothing fits: every bound must still be below the optimum over all placements
        target = opt.of(p.objective, feasible=False)
    if ub < true:
        found.append(f"{tag}: upper bound {p.upper_bound!r} below the exact cost {float(true)!r} of its placement")
    if p.upper_bound < value:
        found.append(f"{tag}: upper bound {p.upper_bound!r} below the re-simulated cost {value!r}")
    if p.memory_feasible and ub < target:
        found.append(f"{tag}: upper bound {p.upper_bound!r} below the optimum {float(target)!r}")
    if p.memory_feasible and not fit:
        found.append(f"{tag}: memory_feasible, but the exact peaks {[float(x) for x in r.peaks]} do not fit")
    if lb > target:
        found.append(
            f"{tag}: lower bound {p.lower_bound!r} ({p.lower_bound_method}) above the optimum {float(target)!r}"
        )
    for st in p.steps:
        if st.lower_bound is not None and Fraction(st.lower_bound) > target:
            found.append(f"{tag}: step {st.method} bound {st.lower_bound!r} above the optimum {float(target)!r}")
        if st.status == "error":
            found.append(f"{tag}: step {st.method} failed: {st.detail}")
    if p.optimal and (not fit or true > target * (1 + REL)):
        found.append(
            f"{tag}: called optimal, but its exact cost is {float(true)!r} (fits: {fit}), optimum {float(target)!r}"
        )
    if p.optimal != (p.status == "optimal"):
        found.append(f"{tag}: optimal {p.optimal} disagrees with status {p.status!r}")
    return found


def placement_findings(seed: int) -> list[str]:
    """Every unsound finding on the instance drawn from ``seed`` (module docstring): a
    lower bound above the optimum, an upper bound below the optimum or below the exact
    or re-simulated cost of the returned placement, a false ``optimal`` or
    ``memory_feasible``, a failed step, an exception."""
    g, ds, times = draw_instance(seed)
    found: list[str] = []
    try:
        opt = exact_optima(g, ds, times)
    except Exception as exc:  # the reference itself: report, nothing to check against
        return [f"seed={seed}: the exact optima raised {type(exc).__name__}: {exc}"]
    rng = random.Random(seed ^ 0x91ACE)
    for objective in ("runtime", "peak_memory"):
        for method in METHODS:
            if method == "cpsat" and objective != "runtime":
                continue
            limit = {"auto": AUTO_LIMIT, "cpsat": CPSAT_LIMIT}.get(method, SEARCH_LIMIT)
            if method == "auto" and objective == "runtime" and rng.random() < AUTO_CPSAT_SHARE:
                limit = AUTO_CPSAT_LIMIT  # long enough for auto's CP-SAT stage to start after its BRKGA
            memory = rng.random() < 1 / 3
            tag = f"seed={seed} n={g.n} d={ds.d} objective={objective} method={method} cpsat_memory={memory}"
            try:
                p = mtpp.place(
                    g,
                    ds,
                    objective=objective,
                    method=method,
                    time_limit=limit,
                    seed=seed,
                    times=times,
                    cpsat_memory=memory,
                    threads=1,
                )
                found += _checks(tag, p, g, ds, times, opt)
            except Exception as exc:
                found.append(f"{tag}: raised {type(exc).__name__}: {exc} | {traceback.format_exc(limit=-2)!r}")
    if found:
        times_note = "speeds" if times is None else repr(times.tolist())
        found.append(f"seed={seed}: graph {g.to_json()} devices {ds.model_dump_json()} times {times_note}")
    return found
