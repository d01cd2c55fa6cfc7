"""BRKGA whose mutants follow the Topoformer priorities (:mod:`heuristics.neural.prior_mutants`)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from heuristics.neural import forward_budget
from heuristics.neural.inference import topoformer_priorities
from heuristics.neural.objectives import make_objective
from heuristics.neural.prior_mutants import CLIP, CONCENTRATION, prior_betas, topoformer_brkga
from mtpp import Problem, evaluate, partition, schedule
from mtpp.core.errors import InvalidParameterError
from mtpp.core.memory import peak_memory
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph
from tests.heuristics.neural.learned_brkga import check_learned_brkga
from tests.oracle import is_topological


def test_prior_betas_centre_each_gene_on_its_rank() -> None:
    y = np.array([0.5, -2.0, 3.0, 0.1, 0.7])
    alpha, beta = prior_betas(y, 4.0)
    np.testing.assert_allclose(alpha + beta, 4.0)
    mean = alpha / (alpha + beta)
    np.testing.assert_allclose(mean, [0.5, CLIP, 1 - CLIP, 0.25, 0.75])  # ranks 2, 0, 4, 1, 3 of 4
    assert np.argsort(mean).tolist() == np.argsort(y).tolist()  # a higher priority, a mutant drawn higher
    a1, b1 = prior_betas(np.zeros(1))
    assert a1[0] > 0 and b1[0] > 0 and a1[0] + b1[0] == pytest.approx(CONCENTRATION)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InvalidParameterError, match="concentration"):
            prior_betas(y, bad)


@pytest.mark.parametrize("objective_name", ["peak", "mtpp"])
def test_the_search_uses_the_policy_priorities_and_its_cost_is_exact(objective_name: str) -> None:
    if objective_name == "peak":
        g, objective = layered_graph(60, seed=5), make_objective("peak")
    else:
        g, objective = regal_graph(60, seed=5), make_objective("mtpp", 4)
    res = topoformer_brkga(g, objective, evaluations=300, seed=1)
    assert res.note == ""
    alpha, beta = prior_betas(topoformer_priorities(g, f"topoformer-{objective_name}"))
    assert res.alpha is not None and res.beta is not None
    np.testing.assert_array_equal(res.alpha, alpha)
    np.testing.assert_array_equal(res.beta, beta)
    check_learned_brkga(g, objective, res)
    again = topoformer_brkga(g, objective, evaluations=300, seed=1)
    assert again.cost == res.cost and np.array_equal(again.order, res.order)


def test_a_forward_pass_past_the_time_left_falls_back_to_uniform_mutants(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forward_budget, "TOPOFORMER_SECONDS_PER_PAIR", 1.0)  # 3,600 s on 60 ops
    g = layered_graph(60, seed=3)
    res = topoformer_brkga(g, make_objective("peak"), evaluations=200, seed=0, time_limit=30)
    assert res.alpha is None and "fell back to uniform mutants" in res.note
    assert is_topological(g, res.order)


def test_partition_and_schedule_run_it_by_name() -> None:
    g = regal_graph(40, seed=3)
    sol = partition(g, 4, orderer="topoformer-brkga-200", seed=1)
    assert sol.bottleneck == pytest.approx(evaluate(Problem(g, 4), sol.assignment, sol.order).bottleneck)
    assert sol.lower_bound <= sol.bottleneck * (1 + 1e-9)
    h = layered_graph(50, seed=2)
    s = schedule(h, method="topoformer-brkga", seed=1, time_limit=30)
    stage = next(st for st in s.stages if st.method == "topoformer-brkga")
    assert stage.detail.startswith("evaluations=")
    assert s.peak == pytest.approx(peak_memory(h, s.index_order))
    assert s.peak <= topoformer_brkga(h, make_objective("peak"), evaluations=5000, seed=1).cost + 1e-9
