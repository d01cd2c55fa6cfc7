"""The result of :func:`mtpp.partition`: a re-checked partition and its bounds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtpp.core.evaluate import Evaluation
from mtpp.core.graph import NodeId
from mtpp.core.problem import Problem
from mtpp.core.records import closes
from mtpp.core.result import Result, ResultStatus, Step
from mtpp.results_schema import SolutionDocument, document_gap, graph_fields, partition_fields


@dataclass(frozen=True)
class Solution(Result):
    """A partition (upper bound) with the simple lower bound (Lemma 3.3): a
    :class:`mtpp.core.result.Result`.

    ``assignment[i]`` is the block of node index ``i``; ``blocks`` lists node ids per
    block in pipeline order; ``order`` is the run order as node ids
    (``index_order``: as node indices).  ``upper_bound`` (alias ``bottleneck``) and
    the per-block costs come from :func:`mtpp.evaluate`, never from the search
    itself.  ``ratio = lower_bound / upper_bound`` is the proven quality: the
    optimum lies in ``[lower_bound, upper_bound]``; ``gap`` is ``1 - ratio``.
    ``note``: why a learned orderer fell back to its classical counterpart
    (``"fell back to ...: <reason>"``; ``""`` when it did not).
    """

    problem: Problem
    evaluation: Evaluation
    lower_bound: float
    orderer: str
    seed: int
    index_order: np.ndarray
    evaluations: int
    wall_time: float
    stopped_by_time: bool = False
    note: str = ""

    @property
    def assignment(self) -> np.ndarray:
        return self.evaluation.assignment

    @property
    def upper_bound(self) -> float:
        """The bottleneck of the partition, re-checked by :func:`mtpp.evaluate` and rounded
        up by its rounding error (:attr:`mtpp.Evaluation.upper_bound`)."""
        return self.evaluation.upper_bound

    @property
    def bottleneck(self) -> float:
        """Alias of :attr:`upper_bound` (the MTPP paper's name)."""
        return self.evaluation.upper_bound

    @property
    def block_costs(self) -> np.ndarray:
        return self.evaluation.block_costs

    @property
    def order(self) -> tuple[NodeId, ...]:
        """The run order as node ids."""
        ids = self.problem.graph.ids
        return tuple(ids[v] for v in self.index_order.tolist())

    @property
    def ratio(self) -> float:
        """``lower_bound / bottleneck`` (1.0 when both are 0)."""
        if self.bottleneck == 0:
            return 1.0
        return self.lower_bound / self.bottleneck

    @property
    def optimal(self) -> bool:
        """The simple bound proves the partition optimal (to the tolerance of
        :func:`mtpp.core.records.closes`, the evaluator's rounding allowed for)."""
        return closes(self.lower_bound, self.upper_bound)

    @property
    def status(self) -> ResultStatus:
        if self.optimal:
            return ResultStatus.OPTIMAL
        return ResultStatus.TIME_LIMIT if self.stopped_by_time else ResultStatus.FEASIBLE

    @property
    def steps(self) -> tuple[Step, ...]:
        """The orderer's search (the upper bound) and the simple bound."""
        search = ResultStatus.TIME_LIMIT if self.stopped_by_time else ResultStatus.FEASIBLE
        detail = f"{self.evaluations} orders" + (f"; {self.note}" if self.note else "")
        return (
            Step(self.orderer, search, self.upper_bound, None, self.wall_time, detail),
            Step("simple", ResultStatus.OPTIMAL, None, self.lower_bound, 0.0, "Lemma 3.3"),
        )

    @property
    def blocks(self) -> list[list[NodeId]]:
        ids = self.problem.graph.ids
        members: list[list[NodeId]] = [[] for _ in range(self.problem.k)]
        for v in self.index_order.tolist():
            members[int(self.assignment[v])].append(ids[v])
        return members

    def _document(self) -> SolutionDocument:
        """The ``mtpp-solution`` document (:mod:`mtpp.results_schema`); ``O(n + k)``."""
        gap = document_gap(self.bottleneck, self.lower_bound)
        return SolutionDocument(
            **graph_fields(self.problem.graph),
            **partition_fields(self.problem, self.evaluation, self.index_order),
            upper_bound=self.bottleneck,
            lower_bound=self.lower_bound,
            lower_bound_method="simple",
            gap=gap,
            optimal=gap == 0.0,
            wall_time=self.wall_time,
            orderer=self.orderer,
            seed=self.seed,
            evaluations=self.evaluations,
            stopped_by_time=self.stopped_by_time,
            note=self.note,
        )
