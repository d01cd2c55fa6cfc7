import json
import math

import numpy as np
import pytest

import mtpp
from mtpp import Graph, InvalidParameterError, Problem, evaluate, partition
from tests.oracle import brute_force_optimum, random_dag


def test_simple_lb_le_opt_le_slicegraph_ub_on_tiny_graphs():
    rng = np.random.default_rng(30)
    gaps = 0
    for trial in range(120):
        n, k = int(rng.integers(1, 8)), int(rng.integers(1, 4))
        g = random_dag(rng, n, p=float(rng.random()), integral=bool(trial % 2))
        memory = math.inf if rng.random() < 0.6 else float(rng.integers(2, 20))
        problem = Problem(g, k, bandwidth=float(rng.choice([0.5, 1.0, 2.0])), memory=memory)
        opt, _ = brute_force_optimum(problem)
        sol = partition(problem, orderer="brkga-100", seed=trial)
        assert sol.lower_bound <= opt + 1e-9 <= sol.bottleneck + 2e-9
        assert evaluate(problem, sol.assignment).upper_bound == sol.bottleneck
        gaps += sol.bottleneck > opt + 1e-9
    # SliceGraph with BRKGA finds the optimum on almost all tiny instances (Theorem 4.3)
    assert gaps <= 12


def test_solution_contents():
    rng = np.random.default_rng(31)
    g = random_dag(rng, 30, p=0.15)
    sol = partition(g, 4, orderer="random-20", seed=1)
    assert sol.problem.k == 4 and sol.orderer == "random-20" and sol.evaluations == 20
    assert sol.ratio == pytest.approx(sol.lower_bound / sol.bottleneck)
    assert sum(len(b) for b in sol.blocks) == g.n
    assert max(sol.block_costs) == sol.bottleneck
    data = json.loads(sol.to_json())
    assert data["upper_bound"] == sol.bottleneck and len(data["assignment"]) == g.n
    assert {int(k): v for k, v in data["assignment"].items()} == dict(enumerate(sol.assignment.tolist()))
    # same seed, same answer
    assert partition(g, 4, orderer="random-20", seed=1).bottleneck == sol.bottleneck


def test_machine_parameters_reach_the_cost():
    g = Graph.from_arrays([1, 1, 1], [5, 5, 5], [1, 1, 1], [(0, 1), (1, 2)])
    unlimited = partition(g, 1, orderer="kahn")
    tight = partition(g, 1, orderer="kahn", memory=10.0, bandwidth=2.0)
    assert unlimited.bottleneck == 3
    assert tight.bottleneck == 3 + (15 - 10) / 2


def test_argument_errors():
    g = Graph.from_arrays([1], [0], [0], [])
    with pytest.raises(InvalidParameterError, match="k"):
        partition(g)
    with pytest.raises(InvalidParameterError, match="k must be >= 1"):
        partition(g, 0)
    with pytest.raises(InvalidParameterError, match="bandwidth"):
        partition(Problem(g, 2), bandwidth=3.0)
    with pytest.raises(InvalidParameterError, match="orderer"):
        partition(g, 2, orderer="magic")
    with pytest.raises(InvalidParameterError, match="time_limit"):
        partition(g, 2, time_limit=0)
    with pytest.raises(InvalidParameterError, match="Graph"):
        partition("graph.json", 2)  # type: ignore[arg-type]


def test_time_limit_returns_the_best_so_far():
    rng = np.random.default_rng(32)
    g = random_dag(rng, 150, p=0.03)
    sol = partition(g, 8, orderer="brkga-1000000", time_limit=0.3)
    assert sol.stopped_by_time and sol.evaluations < 1_000_000
    assert evaluate(sol.problem, sol.assignment).upper_bound == sol.bottleneck


def test_lazy_public_names():
    assert mtpp.partition is partition
    with pytest.raises(AttributeError):
        mtpp.does_not_exist  # noqa: B018


def test_a_graph_with_one_topological_order_is_sliced_without_a_search() -> None:
    """A chain (or any Hamiltonian path) has one order: every acyclic partition is a
    segmentation of it, so the DP on it is the optimum (brute force) and no orderer runs."""
    from mtpp.partitioner import unique_order

    rng = np.random.default_rng(17)
    for _ in range(5):
        n = 6
        edges = [(i, i + 1) for i in range(n - 1)] + [
            (i, j) for i in range(n) for j in range(i + 2, n) if rng.random() < 0.3
        ]
        g = Graph.from_arrays(rng.uniform(0, 5, n), np.zeros(n), rng.uniform(0, 5, n), edges)
        assert unique_order(g) is not None
        sol = partition(g, 3, orderer="brkga")
        assert sol.evaluations == 1 and sol.bottleneck == pytest.approx(brute_force_optimum(Problem(g, 3))[0])
    fork = Graph.from_arrays([1.0, 1.0, 1.0], [0.0] * 3, [1.0] * 3, [(0, 1), (0, 2)])
    assert unique_order(fork) is None and partition(fork, 2, orderer="brkga").evaluations > 1
