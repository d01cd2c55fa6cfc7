"""Order objectives: the costs are the evaluators' costs."""

from __future__ import annotations

import numpy as np
import pytest

from heuristics.kahn import kahn_order
from heuristics.neural.objectives import Bottleneck, PeakMemory, make_objective
from heuristics.partition.slicegraph import slice_order
from mtpp import Problem, evaluate
from mtpp.core.errors import InvalidParameterError
from mtpp.core.memory import peak_memory
from mtpp.generators.regal import regal_graph


@pytest.mark.parametrize("seed", range(4))
def test_costs_are_the_independent_evaluators(seed: int) -> None:
    g = regal_graph(60, seed=seed)
    keys = np.random.default_rng(seed).random((5, g.n))
    orders = np.array([kahn_order(g, k) for k in keys])
    peak = PeakMemory()
    np.testing.assert_allclose(peak.order_costs(g, orders), [peak_memory(g, o) for o in orders])
    np.testing.assert_allclose(peak.key_costs(g, keys), peak.order_costs(g, orders))
    neck = Bottleneck(4)
    costs = neck.order_costs(g, orders)
    for o, c in zip(orders, costs):
        seg = slice_order(Problem(g, 4), o)
        assert seg is not None
        assert evaluate(Problem(g, 4), seg.assignment, o).bottleneck == pytest.approx(c)
    np.testing.assert_allclose(neck.key_costs(g, keys), costs)


def test_make_objective_and_problem_checks() -> None:
    assert make_objective("peak").name == "peak"
    assert make_objective("mtpp", 3) == Bottleneck(3)
    with pytest.raises(InvalidParameterError, match="needs k"):
        make_objective("mtpp")
    with pytest.raises(InvalidParameterError, match="unknown objective"):
        make_objective("latency")
    with pytest.raises(InvalidParameterError, match="k must be"):
        Bottleneck(0)
    g = regal_graph(20, seed=1)
    assert Bottleneck.of(Problem(g, 5, bandwidth=2.0)) == Bottleneck(5, 2.0)
    with pytest.raises(InvalidParameterError, match="reserve"):
        Bottleneck.of(Problem(g, 5, memory=100.0, reserve=10.0))
