import math

import numpy as np
import pytest

import mtpp
from mtpp import Certificate, InvalidParameterError, Problem, certify, evaluate
from mtpp.core.records import OPTIMALITY_TOLERANCE
from mtpp.engine.certify import parse_bounds
from solvers.errors import UnknownSolverError
from tests.oracle import brute_force_optimum, random_dag

MIPS = "simple,bottleneck,guess,exact"  # the MIP hierarchy alone (the ideal DP would close these gaps first)


def test_bounds_sandwich_the_brute_force_optimum():
    rng = np.random.default_rng(50)
    for trial in range(25):
        n, k = int(rng.integers(2, 7)), int(rng.integers(2, 4))
        g = random_dag(rng, n, p=float(rng.random()))
        memory = math.inf if trial % 3 else float(rng.integers(3, 15))
        problem = Problem(g, k, memory=memory)
        opt, _ = brute_force_optimum(problem)
        cert = certify(problem, solver="highs", time_limit=20, orderer="random-5", seed=trial)
        assert cert.upper_bound >= opt - 1e-9
        for record in cert.bounds:
            if record.bound is not None:
                assert record.bound <= opt + 1e-9, record
        # exact solved to optimality pins OPT down (up to the safety margin)
        exact = cert.bound("exact")
        if exact is not None and exact.status == "optimal":
            assert exact.bound == pytest.approx(opt, rel=OPTIMALITY_TOLERANCE)
        assert cert.upper_bound == pytest.approx(opt) and cert.optimal
        ev = evaluate(problem, cert.assignment)  # the ids' text, as in the JSON
        assert ev.bottleneck == pytest.approx(cert.upper_bound)


def test_json_round_trip_and_fields():
    g = random_dag(np.random.default_rng(51), 12, p=0.3)
    cert = certify(g, 3, bounds="simple,bottleneck", solver="highs", time_limit=10, orderer="dfs")
    back = Certificate.model_validate_json(cert.model_dump_json())
    assert back == cert
    assert [b.method for b in cert.bounds] == ["simple", "bottleneck"]
    assert cert.bound("bottleneck").solver_version
    assert cert.ratio == pytest.approx(cert.lower_bound / cert.upper_bound)
    assert cert.gap_percent == pytest.approx(100 * (1 - cert.ratio))


def test_a_failing_solver_leaves_the_simple_bound(monkeypatch):
    import formulations.bounds

    def boom(*args, **kwargs):
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(formulations.bounds, "solve_bound", boom)
    g = random_dag(np.random.default_rng(52), 10, p=0.3)
    cert = certify(g, 3, bounds=MIPS, solver="highs", orderer="kahn")
    assert cert.lower_bound_method == "simple"
    assert cert.lower_bound == mtpp.simple_lower_bound(Problem(g, 3))
    errors = [b for b in cert.bounds if b.status == "error"]
    assert errors and all("solver exploded" in b.message for b in errors)


def test_interrupt_keeps_what_finished(monkeypatch):
    import formulations.bounds

    real = formulations.bounds.solve_bound

    def interrupt_on_exact(problem, method, **kwargs):
        if method == "exact":
            raise KeyboardInterrupt
        return real(problem, method, **kwargs)

    monkeypatch.setattr(formulations.bounds, "solve_bound", interrupt_on_exact)
    g = random_dag(np.random.default_rng(53), 10, p=0.3)
    cert = certify(g, 3, bounds=MIPS, solver="highs", orderer="kahn", time_limit=10)
    statuses = {b.method: b.status for b in cert.bounds}
    assert statuses["exact"] == "interrupted" and "guess" not in statuses  # MIPs run bottleneck, exact, guess
    assert statuses["bottleneck"] in ("optimal", "bound_reached", "skipped")


def test_time_limit_is_reported_and_bound_is_sound():
    g = mtpp.layered_graph(120, seed=3)
    cert = certify(g, 8, bounds="exact", solver="highs", time_limit=1.0, orderer="brkga-100")
    exact = cert.bound("exact")
    assert exact.status in ("time_limit", "optimal", "bound_reached")
    assert cert.lower_bound <= cert.upper_bound


def test_bad_arguments():
    g = random_dag(np.random.default_rng(54), 5, p=0.3)
    with pytest.raises(UnknownSolverError):
        certify(g, 2, solver="cplex")
    with pytest.raises(InvalidParameterError):
        certify(g, 2, bounds="simple,magic")
    with pytest.raises(InvalidParameterError):
        certify(g, 2, time_limit=0)
    combinatorial = ("simple", "cut", "crossing", "clique", "reach", "ideal-dp")
    assert parse_bounds("all") == (*combinatorial, "pigeonhole", "bottleneck", "guess", "exact")
    # k larger than n is fine: every node may have its own block
    cert = certify(g, 9, solver="highs", time_limit=10, orderer="kahn")
    assert cert.lower_bound <= cert.upper_bound


def test_peak_aware_certificate_bounds_stay_below_the_partition():
    rng = np.random.default_rng(55)
    for trial in range(8):
        g = random_dag(rng, int(rng.integers(4, 9)), p=0.4)
        problem = Problem(g, 2, memory=float(np.sum(g.size_out) / 3 + 1), peak_aware=True)
        cert = certify(problem, solver="highs", time_limit=10, orderer="brkga-100", seed=trial)
        assert cert.peak_aware and any("peak" in note for note in cert.notes)
        for record in cert.bounds:
            assert record.bound is None or record.bound <= cert.upper_bound + 1e-9
        order = [g.index(int(v)) for v in cert.order]
        ev = evaluate(problem, cert.assignment, order)
        assert ev.bottleneck == pytest.approx(cert.upper_bound)


def test_presolve_changes_nothing_but_the_work() -> None:
    """certify with and without presolve agree on the optimum (against the exact oracle)
    on graphs full of zero-cost leaves; the certificate covers every op and says what
    presolve removed."""
    import random
    from fractions import Fraction

    from tests.heuristics.partition.test_presolve import leafy_problem
    from tests.oracle import exact_optimum

    rng = random.Random(77)
    reduced = counted = 0
    for _ in range(25):
        problem = leafy_problem(rng)
        opt = exact_optimum(problem)
        with_pre = certify(problem, orderer="kahn", bounds="simple,cut,ideal-dp")
        without = certify(problem, orderer="kahn", bounds="simple,cut,ideal-dp", presolve=False)
        for cert in (with_pre, without):
            assert cert.optimal
            assert abs(Fraction(cert.upper_bound) - opt) <= opt * Fraction(1, 10**6)
            assert Fraction(cert.lower_bound) <= opt * (1 + Fraction(1, 10**9))
            assert sorted(cert.assignment) == sorted(str(i) for i in problem.graph.ids)
            assert sorted(cert.order) == sorted(str(i) for i in problem.graph.ids)
        removed = [note for note in with_pre.notes if note.startswith("presolve:")]
        reduced += bool(removed)
        assert not any(note.startswith("presolve:") for note in without.notes)
        record = with_pre.presolve
        assert record is not None and without.presolve is None
        assert record.ops_before == problem.graph.n and record.edges_before == problem.graph.m
        assert record.ops_before - record.ops_after == sum(record.removed.values())
        assert bool(removed) == (record.ops_after < record.ops_before)
        dp = with_pre.bound("ideal-dp")
        assert record.ideals_after == (dp.ideals if dp is not None else None)
        counted += record.ideals_after is not None
    assert reduced >= 10 and counted >= 1


def test_a_k_already_proven_gives_its_mip_time_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MIPs of an open k share the budget only with the ks still open: here k = 8
    is proven by the cut bound (one op alone outweighs any other block), so k = 2's bottleneck MIP
    may take (nearly) all of it, not half."""
    import mtpp.engine.solver_bounds as cm
    from mtpp.core.records import BoundRecord

    given: list[float] = []

    def fake(problem, method, solver, time_limit, *args, **kwargs):  # type: ignore[no-untyped-def]
        given.append(time_limit)
        return BoundRecord(method=method, bound=None, status="time_limit", proven_optimal=False), None

    monkeypatch.setattr(cm, "bound_record", fake)
    g = mtpp.Graph.from_arrays([10.0, 4, 4, 4, 4, 4, 4], [0.0] * 7, [1.0] * 7, [(i, i + 1) for i in range(6)])
    certs = certify(g, k=[2, 8], bounds="simple,cut,bottleneck", budget=20, time_limit=1000, orderer="kahn")
    assert certs[1].optimal and not certs[0].optimal
    assert len(given) == 1 and given[0] > 0.75 * 20
