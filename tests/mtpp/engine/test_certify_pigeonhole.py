"""The pigeonhole bound in certify (mtpp/engine/solver_bounds.py): it leads on a
REGAL-style graph, stands in for the bottleneck MIP whose block it solved, is skipped at the
larger ks after two it could not lift, and reaches the CLI and batch."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

import mtpp
import mtpp.engine.combinatorial
import mtpp.engine.solver_bounds
from formulations.pigeonhole import PigeonholeBound
from mtpp.batch.tasks import NO_SOLVER, Settings, make_tasks, parse_methods
from mtpp.core.budget import Budget
from mtpp.core.records import BoundRecord
from mtpp.engine.call import Call, Options, Run
from mtpp.engine.certify import certify
from mtpp.engine.solver_bounds import STALL_GAP, Pigeonhole, PigeonholeResume
from solvers.result import Status


def call_of(runs: list[Run], time_limit: float = 60.0, left: float = 100.0) -> Call:
    """A budgeted certify call of ``left`` seconds over ``runs`` (the pigeonhole bound on HiGHS)."""
    options = Options(("simple", "pigeonhole"), "highs", time_limit, 1, 1, "kahn", 0, 1, True, True)
    call = Call(options, Budget(left), runs[0].problem, [r.problem for r in runs])
    call.runs.extend(runs)
    return call


def test_the_pigeonhole_bound_leads_and_stands_in_for_the_bottleneck_mip() -> None:
    g = mtpp.regal_graph(50, seed=5)
    certs = certify(g, k=[4, 8], bounds="simple,pigeonhole,bottleneck", orderer="brkga-2000", time_limit=20)
    led = 0
    for cert in certs:
        rec = cert.bound("pigeonhole")
        assert rec is not None and rec.bound is not None and rec.solver
        assert rec.bound <= cert.upper_bound * (1 + 1e-12)
        assert rec.bound > cert.bound("simple").bound
        bottleneck = cert.bound("bottleneck")
        assert bottleneck.status == "skipped" and "work weighting" in bottleneck.message
        led += cert.lower_bound_method == "pigeonhole"
    assert led == 2
    # the bottleneck MIP, run on its own, proves no more than the pigeonhole bound's work weighting
    alone = certify(g, k=8, bounds="simple,bottleneck", orderer="brkga-2000", time_limit=20)
    assert alone.bound("bottleneck").bound <= certs[1].bound("pigeonhole").bound * (1 + 1e-6)


def test_each_k_seeds_the_next_with_its_best_weighting(monkeypatch) -> None:
    """Pigeonhole: the smallest k runs unseeded, each larger k gets the best weighting of
    the last k that had one (a k whose updates found none passes the earlier one on)."""
    import numpy as np

    seeds = []

    def simulated(problem, solver, time_limit, target, threads, seed=None, max_mips=64, resume=None):
        seeds.append(None if seed is None else float(seed[0]))
        best = None if problem.k == 4 else np.full(problem.graph.n, float(problem.k))
        updates = SimpleNamespace(finished=True, stalled=False, best_weights=best)
        return PigeonholeBound(None, 1, 1, Status.OPTIMAL, solver, "", 0.1, 0.0, message="simulated", updates=updates)

    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", simulated)
    certify(mtpp.layered_graph(60, seed=7), k=[2, 4, 8], bounds="simple,pigeonhole", orderer="kahn", budget=10)
    assert seeds == [None, 2.0, 2.0]


def test_the_pigeonhole_bound_is_skipped_after_two_ks_it_could_not_lift(monkeypatch) -> None:
    calls = []

    def timed_out(problem, solver, time_limit, target, threads, seed=None, max_mips=64, resume=None):
        calls.append(problem.k)
        return PigeonholeBound(None, 1, 0, Status.TIME_LIMIT, solver, "", time_limit, 0.0, message="simulated")

    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", timed_out)
    g = mtpp.layered_graph(60, seed=7)
    certs = certify(g, k=[2, 4, 8, 16], bounds="simple,pigeonhole", orderer="kahn", budget=10)
    assert calls == [2, 4]
    assert [c.bound("pigeonhole").status for c in certs] == ["time_limit", "time_limit", "skipped", "skipped"]
    assert "k=2, k=4" in certs[2].bound("pigeonhole").message


def test_a_k_with_nothing_left_to_lift_is_no_stall(monkeypatch) -> None:
    """Pigeonhole: a k whose bound stood within STALL_GAP of its partition before the
    (simulated) bound timed out there does not count towards PIGEONHOLE_STALLS."""
    calls = []

    def timed_out(problem, solver, time_limit, target, threads, seed=None, max_mips=64, resume=None):
        calls.append(problem.k)
        return PigeonholeBound(None, 1, 0, Status.TIME_LIMIT, solver, "", time_limit, 0.0, message="simulated")

    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", timed_out)
    problem = mtpp.Problem(mtpp.layered_graph(60, seed=7), k=2)
    runs = []
    for k, gap in ((2, 0.1 * STALL_GAP), (4, 10 * STALL_GAP), (8, 10 * STALL_GAP), (16, 10 * STALL_GAP)):
        sol = mtpp.partition(replace(problem, k=k), orderer="kahn")
        near = BoundRecord(
            method="simple", bound=sol.evaluation.bottleneck * (1 - gap), status="optimal", proven_optimal=True
        )
        runs.append(Run(sol.problem, sol.evaluation, sol.index_order, "kahn", [near], []))
    Pigeonhole().run(call_of(runs, time_limit=1.0))
    assert calls == [2, 4, 8]
    assert [r.records[-1].status for r in runs] == ["time_limit", "time_limit", "time_limit", "skipped"]
    assert "k=4, k=8" in runs[3].records[-1].message


@pytest.mark.parametrize("solved", [0, 1])
def test_the_first_k_probes_its_first_weighting_before_its_share(monkeypatch, solved) -> None:
    """Pigeonhole with a budget: at the first k its first weighting gets MIP_PROBE_SECONDS
    (max_mips=1); where it solved none and stands below MIP_PROBE_GAP of the best bound
    (simulated), the updates stop there and every MIP is skipped at the larger ks too, else
    they go on from the probe (resume) with the rest of the k's time; later ks get no probe."""
    probe = mtpp.engine.solver_bounds.MIP_PROBE_SECONDS
    calls = []

    def simulated(problem, solver, time_limit, target, threads, seed=None, max_mips=64, resume=None):
        calls.append((problem.k, time_limit, max_mips, resume is not None))
        state = SimpleNamespace(finished=True, stalled=False, best_weights=None)
        return PigeonholeBound(None, 1, solved, Status.TIME_LIMIT, solver, "", probe, 0.0, updates=state)

    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", simulated)
    problem = mtpp.Problem(mtpp.layered_graph(60, seed=7), k=2)
    runs = []
    for k in (2, 4):
        sol = mtpp.partition(replace(problem, k=k), orderer="kahn")
        best = BoundRecord(
            method="simple", bound=0.5 * sol.evaluation.bottleneck, status="optimal", proven_optimal=True
        )
        runs.append(Run(sol.problem, sol.evaluation, sol.index_order, "kahn", [best], []))
    Pigeonhole().run(call_of(runs))
    assert calls[0] == (2, probe, 1, False)
    if solved:
        (k, limit, _, resumed), later = calls[1], calls[2:]
        assert k == 2 and resumed and limit > 0.0  # the k's time less the probe's
        assert [c[0] for c in later] == [4] and later[0][2] != 1 and not later[0][3]
    else:
        assert len(calls) == 1 and runs[1].records[-1].status == "skipped"
        assert "solved no weighting" in runs[0].implied["bottleneck"]


def test_the_updates_go_on_after_the_mips_where_the_bound_leads_and_the_clock_stopped_it(monkeypatch) -> None:
    """PigeonholeResume: at k = 4 the (simulated) pigeonhole bound leads and was
    stopped by the clock, so it goes on, and its record is replaced by the resumed result;
    at k = 2 it was stopped too but the simple bound leads, so it does not.  Both calls get
    certify's solver threads."""
    calls = []

    def simulated(problem, solver, time_limit, target, threads, resume=None, max_mips=64, seed=None):
        calls.append((problem.k, resume is not None, threads))
        bound = (0.0 if problem.k == 2 else target * (0.995 if resume else 0.99)) if target else None
        updates = SimpleNamespace(finished=resume is not None, stalled=False)
        status = Status.OPTIMAL if resume else Status.TIME_LIMIT
        return PigeonholeBound(bound, 1, 1, status, solver, "", time_limit, 0.0, message="simulated", updates=updates)

    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", simulated)
    g = mtpp.layered_graph(60, seed=7)
    certs = certify(g, k=[2, 4], bounds="simple,pigeonhole", orderer="kahn", budget=10, threads=2)
    assert calls == [(2, False, 2), (4, False, 2), (4, True, 2)]
    records = [r for r in certs[1].bounds if r.method == "pigeonhole"]
    assert len(records) == 1 and records[0].status == "optimal"
    assert certs[1].lower_bound_method == "pigeonhole"
    assert certs[1].lower_bound == pytest.approx(0.995 * certs[1].upper_bound, rel=1e-6)


def test_the_resumed_updates_share_the_time_by_gap(monkeypatch) -> None:
    """PigeonholeResume: each k whose updates go on gets the part of the time left that
    its relative gap 1 - LB / UB has among the gaps still waiting (what one k leaves goes to
    the next), not an even split: here k = 2 (gap 2%) and k = 4 (gap 20%, both led by the
    pigeonhole bound and stopped by the clock)."""
    limits: dict[int, float] = {}

    def simulated(problem, solver, time_limit, target, threads, resume=None, max_mips=64, seed=None):
        limits[problem.k] = time_limit
        return resume.result  # the same bound: only the time under test

    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", simulated)
    problem = mtpp.Problem(mtpp.layered_graph(60, seed=7), k=2)
    runs = []
    pigeonhole = Pigeonhole()
    for k, gap in ((2, 0.02), (4, 0.2)):
        sol = mtpp.partition(replace(problem, k=k), orderer="kahn")
        bound = (1.0 - gap) * sol.evaluation.bottleneck
        updates = SimpleNamespace(finished=False, stalled=False, mips=3)
        result = PigeonholeBound(bound, 3, 3, Status.TIME_LIMIT, "highs", "", 1.0, 0.0, updates=updates)
        updates.result = result
        record = BoundRecord(method="pigeonhole", bound=bound, status="time_limit", proven_optimal=False)
        runs.append(Run(sol.problem, sol.evaluation, sol.index_order, "kahn", [record], []))
        pigeonhole.last[k] = result
    gaps = [1.0 - r.lb / r.ub_hi for r in runs]
    total = PigeonholeResume.SHARE * 100.0
    call = call_of(runs)
    call.register(pigeonhole)
    PigeonholeResume().run(call)
    assert limits[2] == pytest.approx(total * gaps[0] / sum(gaps), rel=0.01)
    assert limits[4] == pytest.approx(total, rel=0.01)  # k = 2 took none of its share: all of it is left
    assert limits[2] < 0.1 * total  # an even split would give it half


def test_stalled_updates_go_on_with_a_second_wind_after_the_resumes(monkeypatch) -> None:
    """PigeonholeResume: where the (simulated) updates stalled, near the best bound,
    they go on with a second wind (formulations.pigeonhole.second_wind: a fresh, slower step,
    WIND_MIPS more MIPs), after the updates the clock stopped; the k's record becomes the
    wind's result."""
    import formulations.pigeonhole as module

    calls = []

    def simulated(problem, solver, time_limit, target, threads, resume=None, max_mips=64, seed=None):
        calls.append((problem.k, None if resume is None else (resume.eta, resume.patience, max_mips)))
        if resume is None:  # k = 4 stalls, k = 8 the clock stops
            updates = module.PigeonholeUpdates(problem, None, None, 0.01, [], mips=40, finished=problem.k == 4)
            updates.stalled = problem.k == 4
            share, status = 0.98, Status.OPTIMAL if problem.k == 4 else Status.TIME_LIMIT
        else:
            updates, share, status = resume, 0.99, Status.OPTIMAL
            updates.finished, updates.stalled = True, False
        bound = target * share if target else None
        return PigeonholeBound(bound, 40, 40, status, solver, "", time_limit, 0.0, message="simulated", updates=updates)

    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", simulated)
    lines: list[str] = []
    g = mtpp.layered_graph(60, seed=7)
    certs = certify(g, k=[4, 8], bounds="simple,pigeonhole", orderer="kahn", budget=10, report=lines.append)
    wind = (module.WIND_ETA, module.WIND_PATIENCE, 40 + module.WIND_MIPS)
    assert calls == [(4, None), (8, None), (8, (0.01, module.PATIENCE, module.MAX_MIPS)), (4, wind)]
    assert any(line.startswith("k=4: pigeonhole, second wind: ") for line in lines)
    for cert in certs:
        assert cert.lower_bound_method == "pigeonhole"
        assert cert.lower_bound == pytest.approx(0.99 * cert.upper_bound, rel=1e-6)


def test_a_failing_solver_leaves_an_error_record(monkeypatch) -> None:
    def broken(problem, solver, time_limit, target, threads, seed=None, max_mips=64, resume=None):
        raise RuntimeError("simulated solver crash")

    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", broken)
    cert = certify(mtpp.layered_graph(30, seed=2), k=4, bounds="simple,pigeonhole", orderer="kahn")
    rec = cert.bound("pigeonhole")
    assert rec.status == "error" and "simulated solver crash" in rec.message and rec.bound is None
    assert cert.lower_bound_method == "simple"


def test_batch_and_the_cli_know_the_pigeonhole_bound(tmp_path, capsys) -> None:
    from mtpp.batch.tasks import GraphSource
    from mtpp.cli.main import main

    assert parse_methods("pigeonhole") == ("pigeonhole",)
    assert "pigeonhole" in parse_methods("bounds")
    g = mtpp.regal_graph(40, seed=2)
    source = GraphSource.from_graph(g)
    tasks = make_tasks([source], [4], ["simple", "pigeonhole"], "highs", Settings())
    assert [t.solver for t in tasks] == [NO_SOLVER, "highs"]
    path = tmp_path / "g.json"
    path.write_text(g.to_json())
    args = ["certify", str(path), "-k", "4", "--bounds", "simple,pigeonhole", "--orderer", "kahn", "--time-limit", "3"]
    assert main([*args, "--json"]) == 0
    out = capsys.readouterr().out
    assert '"pigeonhole"' in out


@pytest.mark.parametrize(("solved", "near"), [(0, False), (1, False), (0, True)])
def test_the_larger_mips_are_skipped_where_the_pigeonhole_mip_solved_no_weighting(monkeypatch, solved, near) -> None:
    """The pigeonhole MIP (one block) is the smallest MIP: where it solved none of its
    weightings in MIP_PROBE_SECONDS or more and proved nothing (simulated), the bottleneck,
    exact and guess MIPs are skipped at that k with the reason; where it solved one, or its
    bound came near the best (0.9 of the partition's cost), they run.  The exact MIP may have
    run before the pigeonhole bound (exact_first_phase), and then stands."""
    seconds = mtpp.engine.solver_bounds.MIP_PROBE_SECONDS + 1.0

    def simulated(problem, solver, time_limit, target, threads, seed=None, max_mips=64, resume=None):
        bound = 0.9 * target if near else None
        return PigeonholeBound(bound, 1, solved, Status.TIME_LIMIT, solver, "", seconds, 0.0, message="simulated")

    monkeypatch.setattr(mtpp.engine.solver_bounds, "pigeonhole_bound", simulated)
    g = mtpp.layered_graph(40, seed=3)
    certs = certify(g, k=[4, 8], bounds="simple,pigeonhole,bottleneck,exact,guess", orderer="kahn", budget=20)
    for cert in certs:
        if cert.optimal:
            continue
        for method in ("bottleneck", "exact", "guess"):
            rec = cert.bound(method)
            methods = [r.method for r in cert.bounds]
            if method == "exact" and methods.index("exact") < methods.index("pigeonhole"):
                assert rec.status != "skipped", rec  # it ran first
            elif solved or near:
                assert rec.status != "skipped" or "solved no weighting" not in rec.message
            else:
                assert rec.status == "skipped" and "solved no weighting" in rec.message, rec
    assert any(not c.optimal for c in certs)
    first, second = (c.bound("pigeonhole") for c in certs)
    if first is not None and first.status != "skipped" and not certs[1].optimal:
        # out of reach at k = 4: not tried again at k = 8 (it ran there too where it solved one or came near)
        assert second is not None and (second.status == "skipped") == (not solved and not near), second


def test_with_a_budget_the_clique_bound_runs_after_the_other_bounds(monkeypatch) -> None:
    """The clique bound never led on the wide graphs, so with a budget it gets what the
    pigeonhole bound and the MIPs leave, not time before them."""
    calls: list[str] = []

    def logged(name, fn):
        def wrapper(*args, **kwargs):
            calls.append(name)
            return fn(*args, **kwargs)

        return wrapper

    for module, name in (
        (mtpp.engine.combinatorial, "clique_lower_bounds"),
        (mtpp.engine.solver_bounds, "pigeonhole_bound"),
    ):
        monkeypatch.setattr(module, name, logged(name, getattr(module, name)))
    # the order is under test, not the shares: with PIGEONHOLE_RESUME_SHARE's 85%, the resumed
    # updates can leave the clique bound under MIN_RUN_SECONDS of this 12-s budget on a slow machine
    monkeypatch.setattr(mtpp.engine.solver_bounds.PigeonholeResume, "SHARE", 0.5)
    g = mtpp.layered_graph(80, seed=3)
    cert = certify(g, k=8, bounds="simple,pigeonhole,bottleneck,clique", orderer="kahn", budget=12)
    assert not cert.optimal
    assert calls[-1] == "clique_lower_bounds" and "pigeonhole_bound" in calls
    methods = [r.method for r in cert.bounds]
    assert methods.index("clique") > max(methods.index("pigeonhole"), methods.index("bottleneck"))
    assert cert.bound("clique").status in ("optimal", "time_limit")
