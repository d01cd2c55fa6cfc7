"""Model-size estimates bound the built models from above (and not by much), and a
model over the memory limit is refused before it is built, leaving the other bounds."""

from __future__ import annotations

import numpy as np
import pytest

import mtpp
from formulations.bounds import build_models, solve_bound
from formulations.size import ModelTooLargeError, estimate_model_size
from mtpp.core.memory_cap import LIMIT_ENV
from tests.formulations.conftest import random_problem
from tests.oracle import random_dag


@pytest.mark.parametrize("seed", range(12))
def test_estimate_bounds_the_built_model(seed: int) -> None:
    base = random_problem(seed, max_n=14, max_k=5)
    for problem in (
        base,
        mtpp.Problem(base.graph, base.k + 3, bandwidth=base.bandwidth, memory=base.memory, reserve=base.reserve),
    ):
        for method in ("exact", "bottleneck", "guess"):
            models = build_models(problem, method)
            est = estimate_model_size(problem, method)
            for _, model in models:  # each guess sub-MIP is one copy
                nnz = model.matrix().nnz
                # the overflow variables and rows (kk of each) exist only where a block can overflow
                assert model.num_vars <= est.variables <= 1.1 * model.num_vars + est.blocks + 2
                assert model.num_rows <= est.rows <= 1.1 * model.num_rows + est.blocks + 3
                assert nnz <= est.nonzeros <= 1.6 * nnz + 8 * problem.graph.n + 16


def test_too_large_a_model_is_refused_and_the_other_bounds_stand(monkeypatch: pytest.MonkeyPatch) -> None:
    g = random_dag(np.random.default_rng(5), 12, p=0.4)
    problem = mtpp.Problem(g, 3)
    monkeypatch.setenv(LIMIT_ENV, "1e-6")  # 1 kB
    with pytest.raises(ModelTooLargeError, match="non-zeros"):
        solve_bound(problem, "exact", solver="highs")
    cert = mtpp.certify(problem, bounds="simple,exact", solver="highs", orderer="kahn", time_limit=10)
    rec = cert.bound("exact")
    assert rec is not None and rec.bound is None and "ModelTooLargeError" in rec.message
    assert cert.lower_bound == pytest.approx(mtpp.simple_lower_bound(problem))
    assert cert.lower_bound <= cert.upper_bound
