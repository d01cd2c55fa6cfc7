import math

import numpy as np
import pytest

from heuristics.kahn import kahn_order
from heuristics.partition.segments import segment_cost_table
from heuristics.partition.slicegraph import slice_order, sort_and_slice_fitness
from mtpp import Problem, evaluate
from tests.oracle import brute_force_segmentation, naive_block_cost, random_dag


def random_problem(rng, n_max=7, k_max=3):
    n, k = int(rng.integers(1, n_max + 1)), int(rng.integers(1, k_max + 1))
    g = random_dag(rng, n, p=float(rng.random()), integral=bool(rng.integers(2)))
    memory = math.inf if rng.random() < 0.5 else float(rng.integers(1, 20))
    reserve = 0.0 if math.isinf(memory) else float(rng.integers(0, int(memory) + 1))
    return Problem(g, k, bandwidth=float(rng.choice([0.5, 1.0, 2.0])), memory=memory, reserve=reserve)


def test_segment_costs_equal_naive_cost_of_every_segment():
    rng = np.random.default_rng(10)
    for _ in range(150):
        problem = random_problem(rng, n_max=9)
        order = kahn_order(problem.graph, rng.random(problem.graph.n))
        table = segment_cost_table(problem, order)
        n = problem.graph.n
        for l in range(n):
            for r in range(l, n):
                expected = naive_block_cost(problem, set(order[l : r + 1].tolist()))
                assert table[l, r] == pytest.approx(expected, abs=1e-9)
            assert np.all(np.isinf(table[l, :l]))


def test_dp_equals_brute_force_segmentation():
    rng = np.random.default_rng(11)
    for _ in range(200):
        problem = random_problem(rng)
        order = kahn_order(problem.graph, rng.random(problem.graph.n))
        seg = slice_order(problem, order)
        truth = brute_force_segmentation(problem, order.tolist())
        assert seg.bottleneck == pytest.approx(truth, abs=1e-9)
        # the returned partition is what the DP says it is, and is contiguous in the order
        assert evaluate(problem, seg.assignment).bottleneck == pytest.approx(truth, abs=1e-9)
        blocks = seg.assignment[order]
        assert np.all(np.diff(blocks) >= 0) and blocks.max() < problem.k
        assert len(seg.starts) == blocks.max() + 1


def test_upper_bound_prunes_without_changing_the_answer():
    rng = np.random.default_rng(12)
    for _ in range(100):
        problem = random_problem(rng, n_max=12, k_max=5)
        order = kahn_order(problem.graph, rng.random(problem.graph.n))
        exact = slice_order(problem, order).bottleneck
        above = slice_order(problem, order, upper_bound=exact * 1.5 + 1)
        assert above is not None and above.bottleneck == pytest.approx(exact)
        assert slice_order(problem, order, upper_bound=exact - 1e-6) is None


def test_batch_decoder_matches_single_slices():
    rng = np.random.default_rng(13)
    problem = Problem(random_dag(rng, 40, p=0.1), 5)
    keys = rng.random((20, 40))
    fit = sort_and_slice_fitness(problem, keys)
    for row, value in zip(keys, fit):
        assert value == pytest.approx(slice_order(problem, kahn_order(problem.graph, row)).bottleneck)
    cap = float(np.median(fit))
    capped = sort_and_slice_fitness(problem, keys, upper_bound=cap)
    np.testing.assert_array_equal(capped, np.where(fit < cap, fit, np.inf))


def test_k_larger_than_n_and_single_node():
    rng = np.random.default_rng(14)
    problem = Problem(random_dag(rng, 3, p=1.0), 8)
    seg = slice_order(problem, kahn_order(problem.graph))
    assert seg.assignment.max() <= 2
    single = Problem(random_dag(rng, 1), 3)
    assert slice_order(single, np.array([0])).bottleneck == pytest.approx(single.graph.work[0])


def test_huge_k_costs_no_memory():
    rng = np.random.default_rng(15)
    problem = Problem(random_dag(rng, 30, p=0.2), 10**9)
    seg = slice_order(problem, kahn_order(problem.graph))
    # one node per block is a feasible split of any order when k >= n
    assert seg.bottleneck <= max(naive_block_cost(problem, {v}) for v in range(30)) + 1e-9
    assert np.isfinite(sort_and_slice_fitness(problem, rng.random((2, 30)))).all()


def peak_problem(rng, n_max=7, k_max=3):
    n, k = int(rng.integers(1, n_max + 1)), int(rng.integers(1, k_max + 1))
    g = random_dag(rng, n, p=float(rng.random()), integral=bool(rng.integers(2)))
    return Problem(
        g, k, bandwidth=float(rng.choice([0.5, 1.0, 2.0])), memory=float(rng.integers(1, 30)), peak_aware=True
    )


def test_peak_aware_dp_equals_brute_force_segmentation():
    rng = np.random.default_rng(16)
    for _ in range(150):
        problem = peak_problem(rng)
        order = kahn_order(problem.graph, rng.random(problem.graph.n))
        seg = slice_order(problem, order)
        truth = brute_force_segmentation(problem, order.tolist())
        assert seg.bottleneck == pytest.approx(truth, abs=1e-9)
        assert evaluate(problem, seg.assignment, order).bottleneck == pytest.approx(truth, abs=1e-9)
        table = segment_cost_table(problem, order)
        n = problem.graph.n
        for l in range(n):
            for r in range(l, n):
                block = set(order[l : r + 1].tolist())
                assert table[l, r] == pytest.approx(naive_block_cost(problem, block, order), abs=1e-9)


def test_peak_aware_batch_decoder_and_pruning():
    rng = np.random.default_rng(17)
    g = random_dag(rng, 40, p=0.1)
    problem = Problem(g, 5, memory=float(np.median(g.size_out) * 3), peak_aware=True)
    keys = rng.random((10, 40))
    fit = sort_and_slice_fitness(problem, keys)
    for row, value in zip(keys, fit):
        exact = slice_order(problem, kahn_order(g, row)).bottleneck
        assert value == pytest.approx(exact)
        assert slice_order(problem, kahn_order(g, row), upper_bound=exact - 1e-6) is None
    # peak only adds cost: never below the reserve-free costs
    plain = Problem(g, 5, memory=problem.memory)
    assert np.all(fit >= sort_and_slice_fitness(plain, keys) - 1e-9)
