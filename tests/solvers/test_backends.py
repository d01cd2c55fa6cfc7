"""Every installed backend on small MIPs with known optima."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mtpp.core.status import SOLVER_STATUSES
from solvers.base import Backend, SolveOptions
from solvers.errors import SolverLicenseError, SolverNotInstalledError, UnknownSolverError
from solvers.model import Model, ObjSense
from solvers.registry import AutoBackend, backend_class, get_backend
from solvers.result import Status

W = np.array([3.0, 4.0, 5.0, 6.0, 2.0, 7.0])
V = np.array([4.0, 5.0, 6.0, 7.0, 3.0, 8.5])


def knapsack(capacity: float = 12.0) -> tuple[Model, float]:
    m = Model("knapsack")
    x = m.add_variables(W.size, "binary", name="x")
    m.add_rows(x[None, :], W[None, :], upper=capacity)
    m.set_objective(x, V, ObjSense.MAXIMIZE)
    best = max(float(V @ np.array(s)) for s in itertools.product((0, 1), repeat=W.size) if W @ np.array(s) <= capacity)
    return m, best


def assignment(cost: np.ndarray) -> tuple[Model, float]:
    """Min-cost assignment with a real-valued cost matrix and a continuous makespan
    variable ``t >= cost of each worker's job`` (mixes continuous and binary)."""
    n = cost.shape[0]
    m = Model("assignment")
    x = m.add_variables((n, n), "binary", name="x")
    t = m.add_variables(1, "continuous", lower=0.0, upper=float(cost.sum()), name="t")
    m.add_rows(x, 1.0, lower=1.0, upper=1.0)  # each worker one job
    m.add_rows(x.T, 1.0, lower=1.0, upper=1.0)  # each job one worker
    m.add_rows(np.c_[np.repeat(t, n), x], np.c_[np.ones(n), -cost], lower=0.0)  # t >= chosen cost of worker i
    m.set_objective(np.r_[x.reshape(-1), t], np.r_[cost.reshape(-1), float(n)], offset=0.25)
    best = min(
        float(cost[np.arange(n), list(p)].sum() + n * cost[np.arange(n), list(p)].max())
        for p in itertools.permutations(range(n))
    )
    return m, best + 0.25


def hard_model() -> Model:
    """A 0-1 model that no backend closes in a few milliseconds."""
    rng = np.random.default_rng(7)
    n, r = 60, 6
    m = Model("multi-knapsack")
    x = m.add_variables(n, "binary")
    a = rng.integers(10, 100, (r, n)).astype(float)
    m.add_rows(np.tile(x, (r, 1)), a, upper=a.sum(axis=1) / 2)
    m.set_objective(x, rng.integers(10, 100, n).astype(float) + rng.random(n), ObjSense.MAXIMIZE)
    return m


def market_split() -> Model:
    """Cornuejols and Dawande's market split: 0-1 rows ``a x + s+ - s- = sum(a) / 2``,
    minimise the slacks; branch and bound takes minutes at 5 rows and 40 variables."""
    rng = np.random.default_rng(11)
    r, n = 5, 40
    a = rng.integers(0, 100, (r, n)).astype(float)
    m = Model("market-split")
    x = m.add_variables(n, "binary")
    plus = m.add_variables(r, "continuous", lower=0.0, upper=float(a.sum()))
    minus = m.add_variables(r, "continuous", lower=0.0, upper=float(a.sum()))
    cols = np.c_[np.tile(x, (r, 1)), plus[:, None], minus[:, None]]
    coef = np.c_[a, np.ones(r), -np.ones(r)]
    rhs = np.floor(a.sum(axis=1) / 2)
    m.add_rows(cols, coef, lower=rhs, upper=rhs)
    m.set_objective(np.r_[plus, minus], np.ones(2 * r))
    return m


def test_knapsack(backend_name: str) -> None:
    m, best = knapsack()
    r = get_backend(backend_name).solve(m)
    assert r.status is Status.OPTIMAL and r.proven_optimal
    assert r.objective == pytest.approx(best) and r.dual_bound == pytest.approx(best, abs=1e-6)
    assert r.solver == backend_name and r.version and r.wall_time >= 0
    assert m.is_feasible(r.solution)


@pytest.mark.parametrize("seed", [0, 1])
def test_assignment_real_costs(backend_name: str, seed: int) -> None:
    cost = np.random.default_rng(seed).random((4, 4)) * 10
    m, best = assignment(cost)
    r = get_backend(backend_name).solve(m)
    assert r.status in (Status.OPTIMAL, Status.RELAXED_OPTIMAL)
    assert r.dual_bound <= best + 1e-6 * best  # a bound, never above the optimum
    assert r.dual_bound == pytest.approx(best, rel=1e-6)
    assert r.objective == pytest.approx(best, rel=1e-6)


def test_infeasible(backend_name: str) -> None:
    m = Model()
    y = m.add_variables(3, "integer", lower=0, upper=2)
    m.add_rows(y[None, :], 1.0, lower=7.0)
    m.set_objective(y, 1.0)
    r = get_backend(backend_name).solve(m)
    assert r.status is Status.INFEASIBLE and r.dual_bound == math.inf and not r.has_solution


def test_time_limit_gives_a_valid_bound(backend_name: str) -> None:
    m = hard_model()
    ref = get_backend("highs").solve(m, SolveOptions(time_limit=30))
    assert ref.status is Status.OPTIMAL
    r = get_backend(backend_name).solve(m, SolveOptions(time_limit=0.02))
    assert r.status in (Status.TIME_LIMIT, Status.OPTIMAL)
    assert r.dual_bound >= ref.objective - 1e-6 * ref.objective  # maximisation: an upper bound
    if r.has_solution:
        assert r.objective <= ref.dual_bound + 1e-6 * ref.objective


def test_mip_start_and_bound_target(backend_name: str) -> None:
    m, best = knapsack()
    start = np.array([1.0, 0, 0, 0, 1, 1])  # value 15.5, weight 12
    r = get_backend(backend_name).solve(m, SolveOptions(mip_start=start))
    assert r.objective == pytest.approx(best)
    r = get_backend(backend_name).solve(hard_model(), SolveOptions(mip_start=np.zeros(60), time_limit=0.05))
    assert r.has_solution or not getattr(get_backend(backend_name), "uses_mip_start", True)  # at least the start
    # stop as soon as the (upper) dual bound falls to a target above the optimum
    r = get_backend(backend_name).solve(m, SolveOptions(dual_bound_target=best + 100))
    assert r.status in (Status.BOUND_REACHED, Status.OPTIMAL) and r.dual_bound >= best - 1e-6
    with pytest.raises(ValueError):
        get_backend(backend_name).solve(m, SolveOptions(mip_start=np.zeros(2)))


def test_lp_without_integers(backend_name: str) -> None:
    m = Model()
    x = m.add_variables(2, lower=0.0, upper=4.0)
    m.add_rows(x[None, :], np.array([[1.0, 2.0]]), lower=3.0)
    m.set_objective(x, [2.0, 3.0])
    backend = get_backend(backend_name)
    r = backend.solve(m)
    assert r.dual_bound <= 4.5 + 1e-9
    if backend.integral_data:  # CP-SAT: two continuous variables in one row, the rounding is loose but sound
        assert r.dual_bound >= 3.0
    else:
        assert r.dual_bound == pytest.approx(4.5, rel=1e-6)


def test_registry_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UnknownSolverError, match="unknown solver 'cplex'"):
        get_backend("cplex")
    cls = backend_class("highs")

    def missing(_cls: type) -> None:
        raise ImportError("No module named 'highspy'")

    monkeypatch.setattr(cls, "_import", classmethod(missing))
    with pytest.raises(SolverNotInstalledError, match="highspy"):
        get_backend("highs")
    assert not cls.available()


def test_auto_falls_back_past_gurobi_size_limit() -> None:
    gurobi = backend_class("gurobi")
    if not gurobi.available():
        pytest.skip("gurobipy not installed")
    big = Model()
    z = big.add_variables(2100, "binary")
    big.add_rows(z[None, :], 1.0, lower=3)
    big.set_objective(z, np.arange(2100) % 7 + 1.0)
    g = gurobi()
    if not g.size_limited():
        pytest.skip("full Gurobi licence")
    with pytest.raises(SolverLicenseError, match="size-limited"):
        g.solve(big)
    r = AutoBackend().solve(big)
    assert r.solver != "gurobi" and r.objective == pytest.approx(3.0)
    assert f"auto fell back to {r.solver}" in r.message and "size-limited" in r.message
    small, _ = knapsack()
    first = AutoBackend().solve(small)
    assert first.solver == "gurobi" and "fell back" not in first.message


def test_robust_solves_run_under_the_robust_tolerances(backend_name: str) -> None:
    """``SolveOptions(robust=True)`` sets the backend's robust tolerances (HiGHS: a looser
    integrality tolerance) and its margin follows them; the option survives the checks and
    the ``auto`` backend."""
    m, best = knapsack()
    cls = backend_class(backend_name)
    tight = get_backend(backend_name).solve(m, SolveOptions())
    robust = get_backend(backend_name).solve(m, SolveOptions(robust=True))
    assert robust.status is Status.OPTIMAL and robust.dual_bound == pytest.approx(best, abs=1e-6)
    assert cls.tolerances_for(SolveOptions(robust=True)).margin(m, best) == pytest.approx(robust.margin)
    assert tight.margin == pytest.approx(cls.tolerances.margin(m, best))
    if cls.robust_tolerances is not None:
        assert robust.margin > tight.margin
    auto = get_backend("auto").solve(m, SolveOptions(robust=True))
    assert auto.margin == pytest.approx(
        backend_class(auto.solver).tolerances_for(SolveOptions(robust=True)).margin(m, best)
    )


def test_a_mixed_scale_model_is_solved_robustly(backend_name: str) -> None:
    """A model whose coefficients span more than the backend's ``robust_range`` runs under
    the robust settings whatever the options say (HiGHS: 1e7; the others never), and its
    margin follows them."""
    cls = backend_class(backend_name)
    m, best = knapsack()
    wide = Model("wide knapsack")
    x = wide.add_variables(W.size, "binary", name="x")
    wide.add_rows(x[None, :], W[None, :], upper=12.0)
    wide.add_rows(x[None, :2], np.array([[1.0, 1e-9]]), upper=2.0)  # never binding: the same optimum
    wide.set_objective(x, V, ObjSense.MAXIMIZE)
    assert m.coefficient_range() == pytest.approx(W.max() / W.min())
    assert wide.coefficient_range() == pytest.approx(W.max() / 1e-9)
    res = get_backend(backend_name).solve(wide, SolveOptions())
    assert res.status is Status.OPTIMAL and res.dual_bound == pytest.approx(best, abs=1e-6)
    robust = wide.coefficient_range() > cls.robust_range
    assert robust is (backend_name == "highs")
    assert res.margin == pytest.approx(cls.tolerances_for(SolveOptions(robust=robust)).margin(wide, res.dual_bound))


def test_auto_is_a_backend() -> None:
    auto = get_backend("auto")
    assert isinstance(auto, Backend) and isinstance(auto, AutoBackend) and auto.name == "auto"


@pytest.mark.parametrize("name", ["highs", "scip", "gurobi", "cpsat"])
def test_status_maps_are_class_data_naming_real_statuses(name: str) -> None:
    cls = backend_class(name)
    if not cls.available():
        pytest.skip(f"{name} not installed")
    assert cls.STATUS_MAP and cls.neutral_status("no such status") is Status.ERROR
    assert Status.OPTIMAL in cls.STATUS_MAP.values() and set(cls.STATUS_MAP.values()) <= SOLVER_STATUSES


def test_safe_bound_moves_the_safe_way_for_both_senses() -> None:
    from solvers.result import SolveResult

    low = SolveResult(Status.OPTIMAL, 1.0, 1.0, margin=0.25, sense=ObjSense.MINIMIZE)
    high = SolveResult(Status.OPTIMAL, 1.0, 1.0, margin=0.25, sense=ObjSense.MAXIMIZE)
    assert low.safe_bound == 0.75 and high.safe_bound == 1.25


def test_a_solve_whose_build_would_outlast_its_limit_is_not_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """No phase starts that cannot finish in its time: the build estimate (non-zeros x
    the backend's measured rate) above the limit gives a not-started time_limit result
    with no bound; 'auto' passes over such a backend to the next one and says so."""
    scip = backend_class("scip")
    if not scip.available():
        pytest.skip("pyscipopt not installed")
    m, _ = knapsack()
    monkeypatch.setattr(scip, "BUILD_SECONDS_PER_NONZERO", 1.0)  # 1 s per non-zero: far over a 2 s limit
    r = scip().solve(m, SolveOptions(time_limit=2.0))
    assert r.status is Status.TIME_LIMIT and "not started" in r.message and r.wall_time < 1.0
    assert r.dual_bound == -math.inf if m.sense is ObjSense.MINIMIZE else r.dual_bound == math.inf
    auto = AutoBackend(("scip", "highs")).solve(m, SolveOptions(time_limit=2.0))
    assert auto.solver == "highs" and "scip: building the model" in auto.message
    assert scip().solve(m, SolveOptions()).status is Status.OPTIMAL  # no limit: nothing to outlast


def test_other_threads_run_while_it_solves(backend_name: str) -> None:
    """certify anneals on a spare core while the bounds' MIPs solve (mtpp/engine/background.py):
    that needs every backend to release the interpreter lock, which SCIP's ``optimize`` did not
    (a thread ticking every millisecond beside it got 4 ticks a second)."""
    import threading
    import time

    ticks, stop = [0], threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        t0 = time.perf_counter()
        get_backend(backend_name).solve(market_split(), SolveOptions(time_limit=1.0, threads=1))
        seconds = time.perf_counter() - t0
    finally:
        stop.set()
        thread.join()
    assert seconds > 0.5  # it did solve for a while
    assert ticks[0] > 50 * seconds, (backend_name, ticks[0], seconds)
