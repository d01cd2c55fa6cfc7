"""The result of :func:`mtpp.partition`: a re-checked partition and its bounds."""

from __future__ import annotations

import json
import math
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
        """Plain JSON-ready data (ids, costs, bounds, settings)."""
        c = self.evaluation.costs
        g = self.problem.graph
        return {
            "graph": g.name,
            "n": g.n,
            "m": g.m,
            "k": self.problem.k,
            "bandwidth": self.problem.bandwidth,
            "memory": None if math.isinf(self.problem.memory) else self.problem.memory,
            "reserve": self.problem.reserve,
            "orderer": self.orderer,
            "seed": self.seed,
            "bottleneck": self.bottleneck,
            "lower_bound": self.lower_bound,
            "lower_bound_method": "simple",
            "ratio": self.ratio,
            "evaluations": self.evaluations,
            "wall_time": self.wall_time,
            "stopped_by_time": self.stopped_by_time,
            "peak_aware": self.problem.peak_aware,
            "assignment": {str(g.ids[i]): int(b) for i, b in enumerate(self.assignment.tolist())},
            "order": [str(g.ids[i]) for i in self.order.tolist()],
            "blocks": [
                {
                    "block": b,
                    "nodes": nodes,
                    "cost": float(c.total[b]),
                    "input_io": float(c.input_io[b]),
                    "work": float(c.work[b]),
                    "overflow": float(c.overflow[b]),
                    "output_io": float(c.output_io[b]),
                }
                for b, nodes in enumerate(self.blocks)
            ],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)
