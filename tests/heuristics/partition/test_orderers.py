from typing import Any

import numpy as np
import pytest

from heuristics.kahn import kahn_order
from heuristics.partition.mla import mla_fitness
from heuristics.partition.orderers import get_orderer, with_budget
from mtpp import InvalidParameterError, Problem
from tests.oracle import is_topological, random_dag

NAMES = ["kahn", "dfs", "bfs", "random", "random-50", "brkga-100", "mla-100", "mla-weighted-100"]


@pytest.mark.parametrize("name", NAMES)
def test_every_orderer_gives_a_reproducible_topological_order(name):
    rng = np.random.default_rng(20)
    problem = Problem(random_dag(rng, 25, p=0.15), 3)
    a = get_orderer(name)(problem, seed=3, time_limit=None, progress=None)
    b = get_orderer(name)(problem, seed=3, time_limit=None, progress=None)
    assert is_topological(problem.graph, a.order)
    np.testing.assert_array_equal(a.order, b.order)
    np.testing.assert_array_equal(kahn_order(problem.graph, a.priorities), a.order)


def test_search_orderers_beat_or_match_their_seeds():
    rng = np.random.default_rng(21)
    from heuristics.partition.slicegraph import slice_order

    problem = Problem(random_dag(rng, 40, p=0.1), 4)
    value = {
        n: slice_order(problem, get_orderer(n)(problem, seed=0, time_limit=None, progress=None).order).bottleneck
        for n in ["kahn", "dfs", "bfs", "brkga-400"]
    }
    assert value["brkga-400"] <= min(value["kahn"], value["dfs"], value["bfs"]) + 1e-9


def test_mla_objective_by_hand():
    from mtpp import Graph

    g = Graph.from_arrays([1] * 3, [0] * 3, [2, 3, 0], [(0, 1), (0, 2), (1, 2)])
    problem = Problem(g, 2, bandwidth=2.0)
    keys = np.array([[3.0, 2.0, 1.0]])  # order 0, 1, 2
    assert mla_fitness(problem, keys, weighted=False)[0] == 1 + 2 + 1
    assert mla_fitness(problem, keys, weighted=True)[0] == (2 * 1 + 2 * 2 + 3 * 1) / 2


def test_mla_search_reduces_its_objective():
    rng = np.random.default_rng(22)
    problem = Problem(random_dag(rng, 30, p=0.15), 3)
    found = get_orderer("mla-400")(problem, seed=0, time_limit=None, progress=None)
    random_keys = rng.random((50, 30))
    assert found.history[-1] <= mla_fitness(problem, random_keys, weighted=False).min()


@pytest.mark.parametrize("name", ["nope", "brkga-", "random-0", "brkga-x", ""])
def test_unknown_orderers(name):
    with pytest.raises(InvalidParameterError):
        get_orderer(name)


def test_random_orderer_time_limit_holds_within_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of random orders that would take 3 s to decode stops at the limit."""
    import time

    import heuristics.partition.orderers as orderers
    from mtpp import Problem
    from mtpp.generators import layered_graph

    real = orderers.sort_and_slice

    def slow(problem: Problem, keys: np.ndarray, upper_bound: float = np.inf, deadline: float = np.inf) -> Any:
        time.sleep(0.05 * len(keys))
        return real(problem, keys, upper_bound=upper_bound, deadline=deadline)

    monkeypatch.setattr(orderers, "sort_and_slice", slow)
    problem = Problem(layered_graph(30, seed=1), 3)
    t0 = time.perf_counter()
    search = orderers.get_orderer("random-1000")(problem, seed=0, time_limit=0.5, progress=None)
    assert time.perf_counter() - t0 < 0.5 + 1.0
    assert search.stopped_by_time and 1 <= search.evaluations < orderers.RANDOM_BATCH
    assert sorted(search.order.tolist()) == list(range(30))


@pytest.mark.parametrize(
    ("name", "evaluations", "scaled"),
    [
        ("brkga", 50_000, "brkga-50000"),
        ("brkga", 500, "brkga-10000"),  # never below its own budget
        ("brkga-100", 500, "brkga-500"),
        ("random", 640, "random-640"),
        ("mla-weighted-20", 30, "mla-weighted-30"),
        ("topoformer-sample", 64, "topoformer-sample-64"),
        ("kahn", 10**6, None),
        ("topoformer", 10**6, None),
    ],
)
def test_with_budget_scales_an_orderer_within_its_family(name: str, evaluations: int, scaled: str | None) -> None:
    assert with_budget(name, evaluations) == scaled
    if scaled is not None:
        get_orderer(scaled)  # a name get_orderer accepts
