"""``mtpp.place`` is sound (issue 73): the audit's three placement reproducers (read from
``../shared/soundness``, as in :mod:`tests.soundness.test_regressions`), and a
time-boxed fuzz of :func:`tests.soundness.placement_checks.placement_findings` on fresh
random seeds (every method, both objectives, against exact brute force)."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import random
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import mtpp
from mtpp.core.memory import local_lower_bound
from mtpp.core.presets import get_devices
from mtpp.placement.api import OPTIMAL_RTOL
from tests.oracle.placement import exact_optima, replay
from tests.soundness.placement_checks import placement_findings

SHARED = Path(__file__).resolve().parents[3] / "shared" / "soundness"  # the reproducers beside the repository
DEVICES = "cpu-igpu-dgpu"
FUZZ_SECONDS = 45.0
FUZZ_WORKERS = 2


def _shared(name: str) -> mtpp.Graph:
    if not (SHARED / name).exists():
        pytest.skip(f"shared reproducer {name} not found at {SHARED}")
    return mtpp.load_graph(SHARED / name)


def _exact_cost(graph: mtpp.Graph, p: mtpp.Placement, times: np.ndarray | None = None) -> Fraction:
    r = replay(graph, get_devices(DEVICES), list(p.device), list(p.index_order), times)
    return r.exact_makespan if p.objective == "runtime" else max(r.peaks)


def _assert_sound(graph: mtpp.Graph, p: mtpp.Placement, opt: Fraction, times: np.ndarray | None = None) -> None:
    """LB <= OPT <= exact cost <= UB; no failed step; "optimal" only at the optimum."""
    cost = _exact_cost(graph, p, times)
    assert Fraction(p.lower_bound) <= opt <= cost <= Fraction(p.upper_bound), (p.lower_bound, opt, cost, p.upper_bound)
    for st in p.steps:
        assert st.status != "error", st
        assert st.lower_bound is None or Fraction(st.lower_bound) <= opt, st
    if p.optimal:
        assert cost <= opt * (1 + Fraction(OPTIMAL_RTOL))


@pytest.mark.parametrize("method", ["auto", "single", "heft", "brkga"])
def test_zero_time_op_peak_bound_and_simulator_agree(method: str) -> None:
    """``place_peak_zero_time.json``: a -> b with b zero-work.  The simulator freed a's
    tensor before b's output was counted (peak 2e6) while the bound counted both (3e6):
    LB 3e6 > UB 2e6, "optimal".  Both now say 3e6, the exact optimum."""
    g = _shared("place_peak_zero_time.json")
    opt = exact_optima(g, get_devices(DEVICES)).feasible_peak
    assert opt == 3_000_000
    p = mtpp.place(g, DEVICES, objective="peak_memory", method=method, time_limit=0.5)
    _assert_sound(g, p, opt)
    assert p.optimal and p.lower_bound == p.upper_bound == 3e6


def test_peak_false_optimal_is_consistent_across_methods() -> None:
    """``place_peak_false_optimal.json`` (seed 40005, 2 s): ``auto`` stopped at 3e9
    "optimal" while ``brkga`` found 2e9, by running v1 (zero work) without its input.
    Every placement now holds v1's input, parameters and output at once (3e9, the local
    bound), so no method may report less than any method's bound, and auto's optimum is
    real."""
    g = _shared("place_peak_false_optimal.json")
    ds = get_devices(DEVICES)
    results = {
        m: mtpp.place(g, DEVICES, objective="peak_memory", method=m, seed=40005, time_limit=2.0 if m == "auto" else 0.5)
        for m in ("auto", "single", "heft", "brkga")
    }
    lowest = min(Fraction(p.upper_bound) for p in results.values())
    assert local_lower_bound(g) == 3e9
    for m, p in results.items():
        r = replay(g, ds, list(p.device), list(p.index_order))
        assert max(r.peaks) <= Fraction(p.upper_bound), m
        assert max(r.peaks) >= Fraction(local_lower_bound(g)), m  # the bound holds for every placement
        assert Fraction(p.lower_bound) <= lowest, (m, p.lower_bound, lowest)
        assert not p.failures, (m, p.failures)
    assert results["auto"].optimal and results["auto"].upper_bound == 3e9


def test_cpsat_duration_rounding_keeps_the_bound_below_the_optimum() -> None:
    """``place_cpsat_duration_rounding.json``: nine independent ops of time
    ``t = 0.9999999996`` on three devices.  CP-SAT rounded ``t`` to 1 and proved 3.0
    above the optimum ``3 t`` (three ops per device; the six with 21 GB of parameters
    fit only the two 64 GB devices, so 3 t is also the memory-feasible optimum)."""
    g = _shared("place_cpsat_duration_rounding.json")
    t = 0.9999999996
    times = np.full((g.n, 3), t)
    opt = 3 * Fraction(t)
    for memory in (False, True):
        p = mtpp.place(g, DEVICES, method="cpsat", times=times, cpsat_memory=memory, threads=1)
        assert p.cpsat_status in ("optimal", "time_limit"), p.cpsat_status
        assert Fraction(p.lower_bound) <= opt, (p.lower_bound, float(opt))
        for st in p.steps:
            assert st.status != "error", st
            assert st.lower_bound is None or Fraction(st.lower_bound) <= opt, st
        assert p.lower_bound >= float(opt) * (1 - 1e-12)  # and still proves it, to the tolerance
    q = mtpp.place(g, DEVICES, method="auto", times=times, time_limit=2.0, threads=1)
    assert Fraction(q.lower_bound) <= opt <= _exact_cost(g, q, times) <= Fraction(q.upper_bound)
    assert q.optimal and q.memory_feasible


def test_a_method_that_raises_is_a_failed_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A method that raises inside is recorded as a failed step; the call goes on with
    the others, and only an MtppError can leave ``place``."""
    import heuristics.placement.brkga as brkga
    from mtpp.placement import api

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(brkga, "placement_brkga", broken)
    g = _shared("place_peak_false_optimal.json")
    p = mtpp.place(g, DEVICES, method="brkga", time_limit=0.2)
    assert "ZeroDivisionError: boom" in p.failures["brkga"]
    assert [st.status for st in p.steps if st.method == "brkga"] == ["error"]
    assert p.method != "brkga" and set(p.candidates) <= {"heft", "single:cpu", "single:igpu", "single:dgpu"}
    monkeypatch.setattr(api, "_closed_form_bound", broken)  # every bound gone: still a result, never "optimal"
    q = mtpp.place(g, DEVICES, method="heft")
    assert q.lower_bound == 0.0 and not q.optimal and "simple" in q.failures
    monkeypatch.setattr(api, "simulate", broken)  # a bug outside every method: an InternalError
    with pytest.raises(mtpp.core.errors.InternalError, match="ZeroDivisionError"):
        mtpp.place(g, DEVICES, method="heft")


def _chunk(seeds: list[int], deadline: float) -> tuple[int, list[str]]:
    """Run :func:`placement_findings` on ``seeds`` until ``deadline`` (a wall-clock
    time): how many ran and what they found."""
    ran, found = 0, []
    for seed in seeds:
        if time.time() >= deadline:
            break
        found += placement_findings(seed)
        ran += 1
    return ran, found


def test_fresh_seeds_find_nothing_unsound() -> None:
    """A few hundred fresh seeds in about :data:`FUZZ_SECONDS` on two processes (the
    seeds are new every run and named in every finding)."""
    first = random.SystemRandom().randrange(2**40)
    per_worker = 1000
    deadline = time.time() + FUZZ_SECONDS
    chunks = [list(range(first + w * per_worker, first + (w + 1) * per_worker)) for w in range(FUZZ_WORKERS)]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(FUZZ_WORKERS, mp_context=context) as pool:
        results = list(pool.map(_chunk, chunks, [deadline] * FUZZ_WORKERS))
    ran = sum(r for r, _ in results)
    found = [line for _, f in results for line in f]
    assert not found, "\n".join(found[:20])
    assert ran >= 60, f"only {ran} seeds in {FUZZ_SECONDS} s (first seed {first})"
