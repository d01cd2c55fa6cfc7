"""What a learned orderer minimises: the cost of a topological order of a graph.

Two objectives, one interface (:class:`OrderObjective`):

* :class:`PeakMemory` (``"peak"``): the peak memory of the order, Topoformer Eq. (1)-(3)
  with the step memory of Eq. (15) (:func:`heuristics.peak_memory.orders.order_peak`);
* :class:`Bottleneck` (``"mtpp"``): the MTPP bottleneck of the order's optimal
  slicing into at most ``k`` blocks (SliceGraph, MTPP paper Algorithm 1), i.e. the
  cost a learned orderer hands the partitioner.

``order_costs`` scores explicit orders (rows of node indices); ``key_costs`` scores
priority vectors decoded by Kahn's algorithm (MTPP paper Algorithm 2/3), the BRKGA
decoder, with the BRKGA convention that values not below ``upper_bound`` may be
reported as ``inf``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from heuristics.partition.slicegraph import slice_order, sort_and_slice_fitness
from heuristics.peak_memory.orders import decode_peaks, order_peak
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.problem import Problem, check_k

OBJECTIVES = ("peak", "mtpp")


class OrderObjective(Protocol):
    """The cost of orders of a graph; lower is better."""

    @property
    def name(self) -> str: ...

    def order_costs(self, graph: Graph, orders: np.ndarray) -> np.ndarray: ...

    def key_costs(self, graph: Graph, keys: np.ndarray, upper_bound: float = math.inf) -> np.ndarray: ...

    def blocks(self, graph: Graph, order: np.ndarray) -> np.ndarray | None:
        """Ops whose order among themselves leaves the cost unchanged, as a label per
        op (imitation may reorder them freely); ``None``: every op is its own."""
        ...


@dataclass(frozen=True)
class PeakMemory:
    """Peak memory of an order (Topoformer Eq. 1, 15)."""

    @property
    def name(self) -> str:
        return "peak"

    def order_costs(self, graph: Graph, orders: np.ndarray) -> np.ndarray:
        return np.array([order_peak(graph, o) for o in np.atleast_2d(orders)])

    def key_costs(self, graph: Graph, keys: np.ndarray, upper_bound: float = math.inf) -> np.ndarray:
        return decode_peaks(graph, np.atleast_2d(keys), upper_bound)

    def blocks(self, graph: Graph, order: np.ndarray) -> np.ndarray | None:
        """Every step's memory depends on the order of every op: none."""
        return None


@dataclass(frozen=True)
class Bottleneck:
    """The SliceGraph bottleneck of an order for ``k`` blocks (MTPP Eq. 3, Algorithm 1),
    with inter-stage bandwidth ``bandwidth`` and fast memory ``memory``."""

    k: int
    bandwidth: float = 1.0
    memory: float = math.inf

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_k(self.k))

    @property
    def name(self) -> str:
        return "mtpp"

    @classmethod
    def of(cls, problem: Problem) -> Bottleneck:
        """The objective of an MTPP instance (its k, bandwidth and memory)."""
        if problem.reserve or problem.peak_aware:
            raise InvalidParameterError("learned orderers price blocks without a reserve or peak-aware overflow")
        return cls(problem.k, problem.bandwidth, problem.memory)

    def problem(self, graph: Graph) -> Problem:
        return Problem(graph, self.k, self.bandwidth, self.memory)

    def order_costs(self, graph: Graph, orders: np.ndarray) -> np.ndarray:
        problem = self.problem(graph)
        costs = []
        for o in np.atleast_2d(orders):
            seg = slice_order(problem, o)
            assert seg is not None  # no upper bound was given
            costs.append(seg.bottleneck)
        return np.array(costs)

    def key_costs(self, graph: Graph, keys: np.ndarray, upper_bound: float = math.inf) -> np.ndarray:
        return sort_and_slice_fitness(self.problem(graph), np.atleast_2d(keys), upper_bound)

    def blocks(self, graph: Graph, order: np.ndarray) -> np.ndarray | None:
        """The blocks of the order's optimal slicing: a block's cost depends on its set
        of ops alone (Eq. 3), so any order that keeps each block in one run, the blocks
        in the same sequence, slices to at most the same bottleneck."""
        seg = slice_order(self.problem(graph), np.asarray(order, dtype=np.int64))
        assert seg is not None  # no upper bound was given
        return seg.assignment


def make_objective(name: str, k: int | None = None) -> OrderObjective:
    """``"peak"`` or ``"mtpp"`` (which needs ``k``)."""
    if name == "peak":
        return PeakMemory()
    if name == "mtpp":
        if k is None:
            raise InvalidParameterError("the mtpp objective needs k (the number of blocks)")
        return Bottleneck(k)
    raise InvalidParameterError(f"unknown objective {name!r}; choose from {', '.join(OBJECTIVES)}")
