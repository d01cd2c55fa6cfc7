"""Where a budgeted certify spends its MIP time (mtpp/engine): the exact and guess
MIPs are skipped where ``auto`` would hand them to a fallback backend, guess runs after the
bounds that were still rising, and the pigeonhole updates go on near the best bound too."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

import mtpp
import mtpp.engine.certificate
import mtpp.engine.solver_bounds
from formulations.pigeonhole import PigeonholeBound
from formulations.size import estimate_model_size
from mtpp.bounds.simple import simple_lower_bound
from mtpp.core.problem import Problem
from mtpp.engine.certify import certify
from solvers.gurobi import SIZE_LIMIT, GurobiBackend
from solvers.registry import AutoBackend, backend_class
from solvers.result import Status

needs_gurobi = pytest.mark.skipif(not backend_class("gurobi").available(), reason="gurobipy is not installed")


@pytest.fixture
def size_limited(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gurobi's pip licence (2,000 variables and rows), whatever licence this machine has."""
    monkeypatch.setattr(GurobiBackend, "size_limited", lambda self: True)


@needs_gurobi
def test_auto_names_the_backend_a_model_of_that_size_would_run_on(size_limited: None) -> None:
    auto = AutoBackend()
    assert auto.runs_on(SIZE_LIMIT, SIZE_LIMIT) == "gurobi"
    for variables, rows in ((SIZE_LIMIT + 1, 10), (10, SIZE_LIMIT + 1)):
        on = auto.runs_on(variables, rows)
        assert on != "gurobi" and on in AutoBackend().order
    assert AutoBackend(order=("gurobi",)).runs_on(SIZE_LIMIT + 1, 10) is None


@needs_gurobi
def test_the_weak_fallback_rule_reads_the_model_size(size_limited: None) -> None:
    g = mtpp.regal_graph(60, seed=4)
    small, large = Problem(g, 2), Problem(g, 16)
    assert estimate_model_size(large, "exact").rows > SIZE_LIMIT >= estimate_model_size(small, "exact").rows
    assert mtpp.engine.solver_bounds.weak_fallback(small, "exact", "auto") == ""
    why = mtpp.engine.solver_bounds.weak_fallback(large, "exact", "AUTO")
    assert "would run its MIP" in why and "not gurobi" in why
    assert mtpp.engine.solver_bounds.weak_fallback(large, "exact", "highs") == ""  # a named solver runs it
    assert mtpp.engine.solver_bounds.weak_fallback(large, "bottleneck", "auto") == ""


@needs_gurobi
def test_a_budgeted_auto_call_skips_the_exact_mip_only_gurobi_would_solve_well(size_limited: None) -> None:
    g = mtpp.regal_graph(60, seed=4)
    kwargs = {"bounds": "simple,exact", "orderer": "kahn"}
    skipped = certify(g, k=16, budget=6, **kwargs).bound("exact")
    assert skipped.status == "skipped" and "would run its MIP" in skipped.message
    for ran in (certify(g, k=16, budget=6, solver="highs", **kwargs), certify(g, k=16, time_limit=1, **kwargs)):
        rec = ran.bound("exact")
        assert rec.status != "skipped" and rec.wall_time > 0.0, rec


def test_with_a_budget_guess_runs_after_the_resumed_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    from mtpp.engine.solver_bounds import Mips, PigeonholeResume

    calls: list[tuple[str, int | None, tuple[str, ...]]] = []
    at_k = Mips.at_k
    resume = PigeonholeResume.run

    def logged_mips(self, call, run, methods, *args):
        stalls = args[-1]
        if stalls is not None or not call.budgeted:  # the MIP methods' own calls, not the exact MIP's probe
            calls.append(("mips", run.problem.k, tuple(methods)))
        return at_k(self, call, run, methods, *args)

    def logged_resume(self, call):
        calls.append(("resume", None, ()))
        return resume(self, call)

    monkeypatch.setattr(Mips, "at_k", logged_mips)
    monkeypatch.setattr(PigeonholeResume, "run", logged_resume)
    g = mtpp.layered_graph(30, seed=2)
    bounds = "simple,pigeonhole,bottleneck,exact,guess"
    certify(g, k=[2, 3], bounds=bounds, orderer="kahn", budget=8)
    first, later = ("bottleneck", "exact"), ("guess",)
    resumed = ("resume", None, ())
    assert calls == [("mips", 2, first), ("mips", 3, first), resumed, ("mips", 2, later), ("mips", 3, later)]
    calls.clear()
    certify(g, k=[2, 3], bounds=bounds, orderer="kahn", time_limit=2)
    assert calls == [("mips", 2, (*first, *later)), ("mips", 3, (*first, *later))]


@pytest.mark.parametrize(("part", "resumed"), [(0.97, True), (0.9, False)])
def test_the_updates_go_on_within_the_resume_gap_of_the_best_bound(monkeypatch, part, resumed) -> None:
    """Stopped by the clock at ``part`` of the simple bound (which leads): the updates go on
    where that is within PIGEONHOLE_RESUME_GAP, a bound still rising."""
    assert 0.9 < mtpp.engine.solver_bounds.PigeonholeResume.GAP <= 0.97
    calls = []

    def simulated(problem, solver, time_limit, target, threads, resume=None, max_mips=64, seed=None):
        calls.append(resume is not None)
        updates = SimpleNamespace(finished=resume is not None, stalled=False)
        bound = part * simple_lower_bound(problem)
        return PigeonholeBound(bound, 1, 1, Status.TIME_LIMIT, solver, "", time_limit, 0.0, updates=updates)

    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", simulated)
    cert = certify(mtpp.layered_graph(60, seed=7), k=4, bounds="simple,pigeonhole", orderer="kahn", budget=6)
    assert cert.lower_bound_method == "simple"
    assert calls == ([False, True] if resumed else [False])


@needs_gurobi
def test_with_a_budget_the_exact_mip_proves_small_ks_before_the_pigeonhole_bound() -> None:
    g = mtpp.regal_graph(40, seed=6)
    certs = certify(g, k=[2, 4], bounds="simple,pigeonhole,exact", orderer="brkga-500", budget=20)
    first = certs[0]
    assert first.optimal and first.lower_bound_method == "exact"
    methods = [r.method for r in first.bounds]
    assert methods.index("exact") < methods.index("pigeonhole")
    assert first.bound("pigeonhole").status == "skipped"
    assert [r.method for r in first.bounds].count("exact") == 1


def test_the_exact_mip_run_first_stops_at_the_first_k_it_does_not_prove(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unproven at k = 2 (simulated, at the simple bound), it is not run first at k = 3 or 4;
    the MIP phase runs it again at k = 2 with its share, a stall there, so not at k = 3, 4;
    one exact record per k."""
    calls: list[tuple[int, str]] = []

    def fake(problem, method, solver, time_limit, *args):
        calls.append((problem.k, method))
        bound = simple_lower_bound(problem)
        return mtpp.core.records.BoundRecord(
            method=method, bound=bound, status="time_limit", proven_optimal=False
        ), None

    monkeypatch.setattr(mtpp.engine.solver_bounds, "bound_record", fake)
    g = mtpp.layered_graph(40, seed=5)
    certs = certify(g, k=[2, 3, 4], bounds="simple,exact", orderer="kahn", budget=8, solver="highs")
    assert calls == [(2, "exact"), (2, "exact")]
    assert [r.method for r in certs[0].bounds].count("exact") == 1
    for cert in certs[1:]:
        rec = cert.bound("exact")
        assert rec.status == "skipped" and "did not lift" in rec.message and "k=2" in rec.message


def test_the_exact_mip_leaves_the_waiting_pigeonhole_updates_their_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pigeonhole updates at k = 2 and 3, stopped by the clock at the best bound (simulated),
    wait to go on after the MIPs: the exact MIP at k = 2 shares the budget left with the exact
    MIP of k = 3 and with the updates of k = 3 (RESUME_WEIGHT), and they go on.  Before, it
    took half of it; where the larger ks had no MIP to run, all of it."""
    limits: list[tuple[int, float, float]] = []
    resumed: list[int] = []

    def stopped(problem, solver, time_limit, target, threads, resume=None, max_mips=64, seed=None):
        if resume is not None:
            resumed.append(problem.k)
        updates = SimpleNamespace(finished=resume is not None, stalled=False)
        bound = simple_lower_bound(problem)
        return PigeonholeBound(bound, 1, 1, Status.TIME_LIMIT, solver, "", 0.0, 0.0, updates=updates)

    def exact(problem, method, solver, time_limit, *args):
        limits.append((problem.k, time_limit, left_now()))
        bound = simple_lower_bound(problem)
        return mtpp.core.records.BoundRecord(
            method=method, bound=bound, status="time_limit", proven_optimal=False
        ), None

    start = time.perf_counter()
    budget = 12.0
    left_now = lambda: budget - (time.perf_counter() - start)  # noqa: E731
    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", stopped)
    monkeypatch.setattr(mtpp.engine.solver_bounds, "bound_record", exact)
    monkeypatch.setattr(mtpp.engine.solver_bounds.ExactFirst, "SHARE", 0.0)  # no probe: the MIP phase only
    g = mtpp.layered_graph(40, seed=5)
    certify(g, k=[2, 3], bounds="simple,pigeonhole,exact", orderer="kahn", budget=budget, solver="highs")
    k, limit, left = limits[0]
    assert k == 2 and limit <= left / (2.0 + mtpp.engine.solver_bounds.Mips.RESUME_WEIGHT) + 0.1
    assert resumed == [2, 3]
