"""The result of :func:`mtpp.partition`: a re-checked partition and its bounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mtpp.evaluate import Evaluation
from mtpp.graph import NodeId
from mtpp.problem import Problem


@dataclass(frozen=True)
class Solution:
    """A partition (upper bound) with the simple lower bound (Lemma 3.3).

    ``assignment[i]`` is the block of node index ``i``; ``blocks`` lists node ids per
    block in pipeline order.  ``bottleneck`` and the per-block costs come from
    :func:`mtpp.evaluate`, never from the search itself.  ``ratio = lower_bound /
    bottleneck`` is the proven quality: the optimum lies in ``[lower_bound,
    bottleneck]``.
    """

    problem: Problem
    evaluation: Evaluation
    lower_bound: float
    orderer: str
    seed: int
    order: np.ndarray
    evaluations: int
    wall_time: float
    stopped_by_time: bool = False

    @property
    def assignment(self) -> np.ndarray:
        return self.evaluation.assignment

    @property
    def bottleneck(self) -> float:
        return self.evaluation.bottleneck

    @property
    def block_costs(self) -> np.ndarray:
        return self.evaluation.block_costs

    @property
    def ratio(self) -> float:
        """``lower_bound / bottleneck`` (1.0 when both are 0)."""
        if self.bottleneck == 0:
            return 1.0
        return self.lower_bound / self.bottleneck

    @property
    def blocks(self) -> list[list[NodeId]]:
        ids = self.problem.graph.ids
        members: list[list[NodeId]] = [[] for _ in range(self.problem.k)]
        for v in self.order.tolist():
            members[int(self.assignment[v])].append(ids[v])
        return members

    def to_dict(self) -> dict[str, Any]:
        """The ``mtpp-solution`` JSON document (:mod:`mtpp.results_schema`) as plain
        data; ``O(n + k)``."""
        from mtpp.results_schema import solution_document

        return solution_document(self).model_dump(mode="json")

    def to_json(self, indent: int | None = 2) -> str:
        from mtpp.results_schema import solution_document

        return solution_document(self).model_dump_json(indent=indent)
