"""Presolve (heuristics/partition/presolve.py) against the exact oracle: OPT before == OPT after,
and every partition of the reduced graph lifts to one of the original with the same
cost, on tiny random graphs built to hold zero-cost leaves and chains (finite memory
with a reserve, B != 1, parameters on the leaves, peak-aware costs)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from heuristics.partition.presolve import presolve
from mtpp import Graph, Problem, evaluate
from tests.oracle import exact_optimum


def leafy_problem(rng: random.Random) -> Problem:
    """A random DAG on a few costed ops, with zero-cost sources, sinks and chains hung off it."""
    core = rng.randint(1, 5)
    edges = [(i, j) for i in range(core) for j in range(i + 1, core) if rng.random() < 0.5]
    work = [round(rng.uniform(0, 10), 2) for _ in range(core)]
    param = [round(rng.uniform(0, 10), 2) * (rng.random() < 0.6) for _ in range(core)]
    out = [round(rng.uniform(0, 10), 2) for _ in range(core)]
    for _ in range(rng.randint(1, 6)):
        v = len(work)
        anchor = rng.randrange(v)
        kind = rng.choice(["source", "sink", "chain"])
        work.append(0.0)
        param.append(0.0 if rng.random() < 0.8 else round(rng.uniform(0, 3), 2))
        out.append(round(rng.uniform(0, 20), 2) * (rng.random() < 0.8))
        if kind == "source":
            edges.append((v, anchor))
        elif kind == "sink":
            edges.append((anchor, v))
        else:  # a zero-cost source feeding the new op, which feeds the anchor: a chain of two
            edges.append((v, anchor))
            work.append(0.0)
            param.append(0.0)
            out.append(round(rng.uniform(0, 5), 2))
            edges.append((v + 1, v))
    n = len(work)
    perm = list(range(n))
    rng.shuffle(perm)
    graph = Graph.from_arrays(  # node i of the graph is op perm.index(i): leaves are not in index order
        [work[perm.index(i)] for i in range(n)],
        [param[perm.index(i)] for i in range(n)],
        [out[perm.index(i)] for i in range(n)],
        [(perm[u], perm[v]) for u, v in edges],
    )
    k = rng.randint(1, 4)
    bandwidth = rng.choice([0.5, 1.0, 3.0])
    if rng.random() < 0.4:
        memory = max(1.0, sum(param) * rng.choice([0.3, 0.6, 1.2]))
        return Problem(graph, k, bandwidth=bandwidth, memory=memory, reserve=memory * rng.choice([0.0, 0.25]))
    return Problem(graph, k, bandwidth=bandwidth)


def segment_partitions(problem: Problem, rng: random.Random, count: int) -> list[np.ndarray]:
    """Random valid partitions: contiguous segments of random topological orders."""
    g, k = problem.graph, problem.k
    found = []
    for _ in range(count):
        keys = [rng.random() for _ in range(g.n)]
        indeg = np.diff(g.pred_ptr).tolist()
        ready = [v for v in range(g.n) if indeg[v] == 0]
        order = []
        while ready:
            v = min(ready, key=lambda x: keys[x])
            ready.remove(v)
            order.append(v)
            for w in g.successors(v).tolist():
                indeg[w] -= 1
                if indeg[w] == 0:
                    ready.append(w)
        cuts = sorted(rng.randint(0, g.n) for _ in range(k - 1))
        a = np.zeros(g.n, dtype=np.int64)
        for pos, v in enumerate(order):
            a[v] = sum(pos >= c for c in cuts)
        found.append(a)
    return found


@pytest.mark.parametrize("seed", range(6))
def test_optimum_is_kept_and_partitions_lift_exactly(seed: int) -> None:
    rng = random.Random(1000 + seed)
    reduced_some = 0
    for _ in range(40):
        problem = leafy_problem(rng)
        pre = presolve(problem)
        reduced_some += pre.reduced
        assert exact_optimum(pre.problem) == exact_optimum(problem)
        for a in segment_partitions(pre.problem, rng, 5):
            before = evaluate(pre.problem, a).bottleneck
            lifted = evaluate(problem, pre.lift(a))  # raises if the lift is not a valid partition
            assert lifted.bottleneck == before
    assert reduced_some >= 20  # the generator does exercise the rule


def test_chains_of_zero_cost_sources_and_sinks_collapse_onto_their_anchor() -> None:
    # c0 -> c1 -> x -> s0 -> ... : only x costs anything
    g = Graph.from_nodes(
        [
            {"id": "c0", "size_out": 5},
            {"id": "c1", "size_out": 7},
            {"id": "x", "work": 3, "size_out": 2},
            {"id": "s0"},
            {"id": "y", "work": 1},
        ],
        [("c0", "c1"), ("c1", "x"), ("x", "s0"), ("x", "y")],
    )
    pre = presolve(Problem(g, 2))
    assert list(pre.problem.graph.ids) == ["x", "y"]
    assert [g.ids[i] for i in pre.anchor] == ["x", "x", "x", "x", "y"]
    order = pre.lift_order(pre.problem.graph.topological_order)
    assert [g.ids[i] for i in order] == ["c0", "c1", "x", "s0", "y"]


def test_parameters_on_a_leaf_keep_it_when_memory_can_overflow() -> None:
    g = Graph.from_arrays([0.0, 4.0], [6.0, 1.0], [1.0, 0.0], [(0, 1)])
    assert presolve(Problem(g, 2, memory=5.0)).problem.graph.n == 2  # the leaf's 6 can overflow a block
    assert presolve(Problem(g, 2, memory=7.0)).problem.graph.n == 1  # 7 >= 6 + 1: no block overflows
    assert presolve(Problem(g, 2)).problem.graph.n == 1


def test_peak_aware_with_finite_memory_is_left_alone() -> None:
    g = Graph.from_arrays([0.0, 4.0], [0.0, 1.0], [3.0, 0.0], [(0, 1)])
    assert not presolve(Problem(g, 2, memory=5.0, peak_aware=True)).reduced
    pre = presolve(Problem(g, 2, peak_aware=True))  # unlimited memory: no overflow, the peak never counts
    assert pre.reduced
    plain = presolve(Problem(g, 2))
    assert exact_optimum(Problem(g, 2)) == exact_optimum(plain.problem)
    assert math.isclose(evaluate(pre.problem, [0]).bottleneck, evaluate(plain.problem, [0]).bottleneck)
