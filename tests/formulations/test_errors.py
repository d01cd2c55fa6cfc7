"""Typed errors out of :func:`solve_bound`: formulation and solver failures."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import formulations.bounds as fb
from formulations.bounds import solve_bound
from formulations.errors import FormulationError, InfeasibleFormulationError
from mtpp.bounds.simple import simple_lower_bound
from mtpp.core.errors import MtppError
from mtpp.core.problem import Problem
from solvers.errors import SolverLicenseError, SolverNotInstalledError, UnknownSolverError
from solvers.model import Model
from solvers.registry import backend_class
from solvers.result import SolveResult, Status
from tests.formulations.conftest import random_problem
from tests.oracle import random_dag


class InfeasibleBackend:
    """Claims every model is infeasible (a broken formulation or solver)."""

    name = "broken"
    integral_data = False

    def solve(self, model: Model, options: object = None) -> SolveResult:
        return SolveResult(Status.INFEASIBLE, None, math.inf, solver=self.name, message="no point")


@pytest.mark.parametrize("method", ["exact", "bottleneck", "guess"])
def test_infeasible_mip_is_a_solver_failure_not_a_bound(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fb, "get_backend", lambda name: InfeasibleBackend())
    p = random_problem(2)
    with pytest.raises(InfeasibleFormulationError, match=f"'{method}(_j1)?' MIP") as info:
        solve_bound(p, method)
    assert isinstance(info.value, FormulationError) and isinstance(info.value, MtppError)
    assert info.value.method.startswith(method) and info.value.solver == "broken"
    again = pickle.loads(pickle.dumps(info.value))  # survives a joblib worker
    assert type(again) is InfeasibleFormulationError and str(again) == str(info.value)
    with pytest.raises(InfeasibleFormulationError):  # the model keeps the partition of value UB: still a failure
        solve_bound(p, method, upper_bound=5.0)


@pytest.mark.parametrize("method", ["exact", "guess"])
def test_unknown_and_missing_solvers(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    p = random_problem(1)
    with pytest.raises(UnknownSolverError, match="unknown solver 'cplex'"):
        solve_bound(p, method, solver="cplex")

    def missing(_cls: type) -> None:
        raise ImportError("No module named 'highspy'")

    monkeypatch.setattr(backend_class("highs"), "_import", classmethod(missing))
    with pytest.raises(SolverNotInstalledError, match="highspy") as info:
        solve_bound(p, method, solver="highs")
    assert info.value.solver == "highs" and info.value.package == "highspy"


def test_solver_errors_pickle() -> None:
    for err in (
        UnknownSolverError("cplex", ("highs", "scip")),
        SolverNotInstalledError("highs", "highspy", "no module"),
        SolverLicenseError("gurobi", "too large"),
    ):
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is type(err) and str(again) == str(err) and vars(again) == vars(err)


def test_gurobi_size_limit_raises_and_auto_falls_back() -> None:
    gurobi = backend_class("gurobi")
    if not gurobi.available():
        pytest.skip("gurobipy not installed")
    if not gurobi().size_limited():
        pytest.skip("full Gurobi licence")
    p = Problem(random_dag(np.random.default_rng(0), 240, 0.02), 9)  # 2160 y variables
    with pytest.raises(SolverLicenseError, match="size-limited"):
        solve_bound(p, "exact", solver="gurobi")
    res = solve_bound(p, "exact", solver="auto", time_limit=0.3)
    assert res.solver != "gurobi"
    assert res.bound >= simple_lower_bound(p) - 1e-9
