import math

import numpy as np
import pytest

from mtpp import Graph, InvalidParameterError, InvalidPartitionError, Problem, QuotientCycleError, evaluate
from mtpp.core.errors import UnknownNodeError
from tests.oracle import naive_block_cost, quotient_is_acyclic, random_dag


def test_figure2_tensor_counted_once():
    # u feeds v and w in one other block: one tensor, counted once (Fig. 2 left)
    g = Graph.from_arrays([1, 1, 1], [0, 0, 0], [5, 0, 0], [(0, 1), (0, 2)], ids=["u", "v", "w"])
    ev = evaluate(Problem(g, 2), {"u": 0, "v": 1, "w": 1})
    np.testing.assert_allclose(ev.costs.output_io, [5, 0])
    np.testing.assert_allclose(ev.costs.input_io, [0, 5])
    np.testing.assert_allclose(ev.block_costs, [6, 7])
    assert ev.bottleneck == 7 and ev.bottleneck_block == 1


def test_bandwidth_and_overflow():
    g = Graph.from_arrays([1, 1], [6, 2], [4, 0], [(0, 1)])
    ev = evaluate(Problem(g, 2, bandwidth=2.0, memory=5.0, reserve=1.0), [0, 1])
    # budget 4: block 0 overflows by 2 -> 1 time unit at B = 2; IO 4 / 2 = 2
    np.testing.assert_allclose(ev.costs.overflow, [1, 0])
    np.testing.assert_allclose(ev.block_costs, [1 + 1 + 2, 2 + 1])


def clamped(expected: list[float], a: np.ndarray, n: int) -> list[float]:
    """The block costs at k = n of a partition into k > n blocks (Problem clamps k to n):
    where a block is n or more, the non-empty blocks are renumbered in order."""
    if len(expected) <= n:
        return expected
    if a.max() >= n:
        expected = [expected[b] for b in sorted(set(a.tolist()))]
    return (expected + [0.0] * n)[:n]


def test_matches_naive_cost_on_random_partitions():
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(300):
        n, k = int(rng.integers(1, 9)), int(rng.integers(1, 5))
        g = random_dag(rng, n, p=float(rng.random()), integral=False)
        memory = math.inf if rng.random() < 0.5 else float(rng.random() * 20)
        problem = Problem(g, k, bandwidth=float(rng.choice([0.5, 1, 3])), memory=memory)
        a = rng.integers(0, k, n)
        if not quotient_is_acyclic(g, a.tolist(), k):
            with pytest.raises(QuotientCycleError):
                evaluate(problem, a)
            continue
        ev = evaluate(problem, a)
        expected = [naive_block_cost(problem, set(np.flatnonzero(a == b).tolist())) for b in range(k)]
        if k > n and a.max() >= n:  # k is clamped to n: the non-empty blocks are renumbered in order
            assert problem.k == n
            np.testing.assert_array_equal(ev.assignment, np.unique(a, return_inverse=True)[1])
        np.testing.assert_allclose(ev.block_costs, clamped(expected, a, n), rtol=1e-12, atol=1e-12)
        checked += 1
    assert checked > 100


def test_quotient_cycle_is_reported_with_witnesses():
    g = Graph.from_arrays([1] * 3, [0] * 3, [1] * 3, [(0, 1), (1, 2)], ids=["x", "y", "z"])
    with pytest.raises(QuotientCycleError) as info:
        evaluate(Problem(g, 2), [0, 1, 0])
    err = info.value
    assert sorted(err.cycle) == [0, 1]
    assert set(err.witnesses) == {("x", "y"), ("y", "z")}
    assert "block 0 -> block 1" in str(err) or "block 1 -> block 0" in str(err)


def test_bad_assignments():
    g = Graph.from_arrays([1] * 3, [0] * 3, [1] * 3, [(0, 1)], ids=["x", "y", "z"])
    p = Problem(g, 2)
    with pytest.raises(InvalidPartitionError, match="'z'"):
        evaluate(p, {"x": 0, "y": 1})
    with pytest.raises(InvalidPartitionError, match=r"blocks are 0\.\.1"):
        evaluate(p, [0, 2, 1])
    with pytest.raises(InvalidPartitionError, match="shape"):
        evaluate(p, [0, 1])
    with pytest.raises(InvalidPartitionError, match="integer"):
        evaluate(p, [0, 0.5, 1])
    with pytest.raises(UnknownNodeError, match="'w'"):
        evaluate(p, {"x": 0, "y": 1, "z": 1, "w": 0})


def test_ids_given_as_their_text():
    """A certificate's assignment keys are the ids' text (JSON): integer ids given so are
    found, a text that reads no id is an unknown node, and an id given twice is refused."""
    g = Graph.from_arrays([1, 2, 3], [0] * 3, [5, 5, 5], [(0, 1), (1, 2)], ids=[10, 20, 30])
    p = Problem(g, 2)
    by_id = evaluate(p, {10: 0, 20: 0, 30: 1})
    by_text = evaluate(p, {"10": 0, "20": 0, "30": 1})
    assert by_text.assignment.tolist() == by_id.assignment.tolist() == [0, 0, 1]
    assert by_text.bottleneck == by_id.bottleneck == 8.0  # {10, 20}: work 3 and tensor 20 out
    with pytest.raises(UnknownNodeError, match="'40'"):
        evaluate(p, {"10": 0, "20": 0, "30": 1, "40": 1})
    with pytest.raises(InvalidPartitionError, match="given twice"):
        evaluate(p, {10: 0, "10": 1, 20: 1, 30: 1})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"k": 0},
        {"k": -3},
        {"k": 2.5},
        {"k": True},
        {"k": 2, "bandwidth": 0},
        {"k": 2, "bandwidth": math.nan},
        {"k": 2, "bandwidth": math.inf},
        {"k": 2, "memory": -1},
        {"k": 2, "memory": math.nan},
        {"k": 2, "reserve": -1},
        {"k": 2, "memory": 5, "reserve": 6},
    ],
)
def test_bad_problem_parameters(kwargs):
    g = Graph.from_arrays([1], [0], [0], [])
    with pytest.raises(InvalidParameterError) as info:
        Problem(g, **kwargs)
    assert any(name in str(info.value) for name in kwargs)


def test_peak_aware_costs_follow_the_run_order():
    rng = np.random.default_rng(8)
    for _ in range(100):
        n, k = int(rng.integers(1, 8)), int(rng.integers(1, 4))
        g = random_dag(rng, n, p=float(rng.random()))
        problem = Problem(g, k, memory=float(rng.integers(1, 25)), peak_aware=True)
        a = rng.integers(0, k, n)
        if not quotient_is_acyclic(g, a.tolist(), k):
            continue
        from heuristics.kahn import kahn_order

        order = kahn_order(g, rng.random(n))
        ev = evaluate(problem, a, order)
        expected = [naive_block_cost(problem, set(np.flatnonzero(a == b).tolist()), order) for b in range(k)]
        expected = clamped(expected, a, n)
        np.testing.assert_allclose(ev.block_costs, expected, atol=1e-9)
        default = evaluate(problem, a)  # the graph's own topological order
        expected = [naive_block_cost(problem, set(np.flatnonzero(a == b).tolist())) for b in range(k)]
        np.testing.assert_allclose(default.block_costs, clamped(expected, a, n), atol=1e-9)


def test_peak_aware_parameters_and_bad_orders():
    g = Graph.from_arrays([1] * 3, [0] * 3, [1] * 3, [(0, 1), (1, 2)], ids=["x", "y", "z"])
    with pytest.raises(InvalidParameterError, match="reserve"):
        Problem(g, 2, memory=10, reserve=1, peak_aware=True)
    p = Problem(g, 2, memory=10, peak_aware=True)
    with pytest.raises(InvalidParameterError, match="not topological"):
        evaluate(p, [0, 0, 1], [2, 1, 0])
    with pytest.raises(InvalidParameterError, match="entries"):
        evaluate(p, [0, 0, 1], [0, 1])
