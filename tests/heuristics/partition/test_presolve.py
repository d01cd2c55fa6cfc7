"""Presolve (heuristics/partition/presolve.py) against the exact oracle: OPT before == OPT after,
and every partition of the reduced graph lifts to one of the original with the same
cost, on tiny random graphs built to hold zero-cost leaves and chains (finite memory
with a reserve, B != 1, parameters on the leaves, peak-aware costs)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from heuristics.partition.presolve import RULES, presolve
from mtpp import Graph, Problem, evaluate
from mtpp.core.errors import InvalidParameterError
from tests.oracle import exact_optimum
from tests.soundness.instances import check_presolve, make_case, make_instance


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
            {"id": "c0", "work": 0, "size_out": 5},
            {"id": "c1", "work": 0, "size_out": 7},
            {"id": "x", "work": 3, "size_out": 2},
            {"id": "s0", "work": 0},
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


@pytest.mark.parametrize("rule", [*RULES, "all"])
def test_each_rule_alone_keeps_the_optimum_on_its_patterns(rule: str) -> None:
    """Fresh instances of the soundness fuzz's ``views`` and ``zero`` families (every
    rule's pattern on both sides of its size test; weight scales 1e-3 .. 1e12, B != 1,
    finite memory with reserve): the rule alone keeps OPT exactly and lifts exactly."""
    rng = random.Random()
    rules = RULES if rule == "all" else (rule,)
    applied = 0
    for i in range(150):
        case = make_case(make_instance(rng, ("views", "zero")[i % 2]))
        applied += presolve(case.problem, rules).reduced
        assert check_presolve(case) == []
    assert applied >= 30  # the families do hold the rule's pattern


def _ops(*edges: tuple[str, str], **nodes: tuple[float, float, float]) -> Graph:
    return Graph.from_nodes(
        [{"id": v, "work": w, "size_param": p, "size_out": o} for v, (w, p, o) in nodes.items()], list(edges)
    )


def test_a_view_joins_its_consumer_only_when_its_tensor_is_no_smaller_than_its_input() -> None:
    for view_size, contracted in ((8.0, True), (4.0, True), (3.0, False)):
        g = _ops(("a", "s"), ("s", "b"), ("a", "c"), a=(1, 0, 4), s=(0, 0, view_size), b=(2, 0, 1), c=(3, 0, 1))
        pre = presolve(Problem(g, 2), ["zero-cost source"])
        assert pre.reduced is contracted
        if contracted:
            assert g.ids[pre.anchor[g.index("s")]] == "b"
            reduced = pre.problem.graph
            edges = {(int(pre.kept[u]), int(pre.kept[v])) for u, v in zip(reduced.edge_src, reduced.edge_dst)}
            assert (g.index("a"), g.index("b")) in edges


def test_a_view_that_is_its_producers_only_consumer_joins_it_when_no_larger() -> None:
    for view_size, contracted in ((2.0, True), (4.0, True), (5.0, False)):
        g = _ops(("a", "s"), ("s", "b"), ("s", "c"), a=(1, 0, 4), s=(0, 0, view_size), b=(2, 0, 1), c=(3, 0, 1))
        pre = presolve(Problem(g, 2), ["zero-cost chain"])
        assert pre.reduced is contracted
        if contracted:  # the merged op sends the view's tensor to b and c
            a = int(np.flatnonzero(pre.kept == g.index("a"))[0])
            assert pre.problem.graph.size_out[a] == view_size
            assert sorted(g.ids[pre.kept[c]] for c in pre.problem.graph.successors(a)) == ["b", "c"]


def test_an_empty_tensor_op_joins_an_op_that_covers_its_neighbours() -> None:
    # s reads p and sends nothing to q: x reads p and sends to q, so s joins x; t also reads r: it stays
    g = _ops(
        ("p", "x"),
        ("x", "q"),
        ("p", "s"),
        ("s", "q"),
        ("r", "t"),
        ("p", "t"),
        ("t", "q"),
        p=(1, 0, 2),
        x=(1, 0, 2),
        q=(1, 0, 1),
        r=(1, 0, 3),
        s=(0, 0, 0),
        t=(0, 0, 0),
    )
    pre = presolve(Problem(g, 3), ["dominated zero-cost op"])
    assert g.ids[pre.anchor[g.index("s")]] == "x"
    assert g.ids[pre.anchor[g.index("t")]] == "t"
    assert exact_optimum(pre.problem) == exact_optimum(Problem(g, 3))


def test_lift_order_expands_groups_whose_members_ran_on_both_sides() -> None:
    # s joins u backward (u's only consumer, no larger), then the merged zero-cost u joins v forward:
    # s must still run after u and before v
    g = _ops(("u", "s"), ("s", "v"), ("v", "w"), u=(0, 0, 5), s=(0, 0, 5), v=(1, 0, 5), w=(1, 0, 0))
    pre = presolve(Problem(g, 2))
    order = pre.lift_order(pre.problem.graph.topological_order)
    assert [g.ids[i] for i in order] == ["u", "s", "v", "w"]
    assert evaluate(Problem(g, 2), pre.lift(np.zeros(pre.problem.graph.n, dtype=np.int64)), order).bottleneck == 2.0


def test_parameters_of_removed_ops_never_overflow_the_reduced_graph_by_rounding() -> None:
    # no block can overflow: the reduced problem drops the memory rather than sum the parameters
    g = _ops(("a", "s"), ("s", "b"), a=(1, 0.1, 1), s=(0, 0.2, 1), b=(1, 0.3, 1))
    problem = Problem(g, 1, memory=0.7)
    pre = presolve(problem)
    assert pre.reduced and math.isinf(pre.problem.memory)
    assert exact_optimum(pre.problem) == exact_optimum(problem)
    assert not presolve(Problem(g, 1, memory=0.5)).reduced  # s's 0.2 may overflow now


def test_unknown_rule_is_a_typed_error() -> None:
    with pytest.raises(InvalidParameterError, match="unknown presolve rule"):
        presolve(Problem(_ops(a=(1, 0, 1)), 1), ["twins"])
