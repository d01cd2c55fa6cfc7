"""What every BRKGA with learned mutants must give (the REGAL GNN's and the Topoformer
prior's): a topological order whose cost the independent evaluators confirm, never
worse than the kahn / dfs / bfs orders it is seeded with."""

from __future__ import annotations

import pytest

from heuristics.neural.objectives import Bottleneck, OrderObjective
from heuristics.neural.regal import RegalResult
from heuristics.partition.slicegraph import slice_order
from heuristics.traversal import classic_priorities
from mtpp import Graph, Problem, evaluate
from mtpp.core.memory import peak_memory
from tests.oracle import is_topological


def check_learned_brkga(graph: Graph, objective: OrderObjective, res: RegalResult) -> None:
    assert is_topological(graph, res.order) and res.evaluations > 0
    if isinstance(objective, Bottleneck):
        problem = Problem(graph, objective.k)
        seg = slice_order(problem, res.order)
        assert seg is not None
        truth = evaluate(problem, seg.assignment, res.order).bottleneck
    else:
        truth = peak_memory(graph, res.order)
    assert res.cost == pytest.approx(truth, rel=1e-9)
    assert res.cost <= objective.key_costs(graph, classic_priorities(graph)).min() + 1e-9
