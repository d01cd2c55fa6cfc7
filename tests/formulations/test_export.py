"""The named models of :func:`build_models`, written as MPS and solved elsewhere."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from formulations.bounds import build_models, solve_bound
from formulations.scaling import model_scale
from mtpp.core.problem import Problem
from solvers.mps import write_mps
from solvers.registry import backend_class, get_backend
from tests.formulations.conftest import close, optimum, random_problem
from tests.oracle import random_dag

SEEDS = (0, 3, 4, 7, 9)  # integral and real weights, bandwidth 1 and 2, finite memory (overflow) at 0, 3, 9


@pytest.mark.parametrize("seed", SEEDS)
def test_exact_mip_as_mps_has_the_same_optimum_in_highs_and_scip(seed: int, tmp_path: Path) -> None:
    import highspy

    p = random_problem(seed)
    [(name, model)] = build_models(p, "exact")
    assert name == "exact"
    direct = get_backend("highs").solve(model)
    assert direct.proven_optimal and close(direct.objective, optimum(seed)[0])
    path = write_mps(model, tmp_path / f"{name}.mps")

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    assert (h.getNumCol(), h.getNumRow()) == (model.num_vars, model.num_rows)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert close(h.getInfo().objective_function_value, direct.objective, rel=1e-7)

    if backend_class("scip").available():
        import pyscipopt

        s = pyscipopt.Model()
        s.hideOutput()
        s.readProblem(str(path))
        s.optimize()
        assert s.getStatus() == "optimal"
        assert close(s.getObjVal(), direct.objective, rel=1e-7)


def test_build_models_names_and_matches_solve_bound() -> None:
    p = Problem(random_dag(np.random.default_rng(4), 7, 0.4), 4)
    guess = build_models(p, "guess")
    assert [n for n, _ in guess] == ["guess_j01", "guess_j02", "guess_j03", "guess_j04"]
    res = solve_bound(p, "guess")
    s = model_scale(p)  # solve_bound solves the same models on the instance scaled by s
    for (_, m), part in zip(guess, res.parts):
        assert close(get_backend("highs").solve(m).dual_bound, s * part.dual_bound)
    [(name, m)] = build_models(p, "bottleneck")
    assert name == "bottleneck"
    assert close(get_backend("highs").solve(m).dual_bound, s * solve_bound(p, "bottleneck").parts[0].dual_bound)
    opt = solve_bound(p, "exact").bound
    [(_, fixed)] = build_models(p, "exact", upper_bound=opt)
    [(_, plain)] = build_models(p, "exact")
    assert (
        fixed.num_vars == plain.num_vars
        and fixed.upper.sum() + fixed.lower.sum() != plain.upper.sum() + plain.lower.sum()
    )  # some y fixed by the upper bound; the bottleneck itself is never capped at it
    many = Problem(random_dag(np.random.default_rng(1), 120, 0.02), 100)
    assert build_models(many, "guess")[0][0] == "guess_j001"
