"""mtpp: partition ML computation graphs into pipeline stages, with a certified
lower bound on the best possible bottleneck.

Core objects: :class:`Graph`, :class:`Problem`; the evaluator :func:`evaluate`; the
partitioner :func:`partition`; readers :func:`load_graph`.
"""

from mtpp.bounds import simple_lower_bound
from mtpp.errors import (
    CycleError,
    DuplicateNodeError,
    EmptyGraphError,
    GraphError,
    GraphFormatError,
    InvalidNodeIdError,
    InvalidParameterError,
    InvalidPartitionError,
    InvalidWeightError,
    MtppError,
    QuotientCycleError,
    SelfLoopError,
    UnknownNodeError,
)
from mtpp.evaluate import Evaluation, evaluate
from mtpp.graph import Graph, Node, NodeId
from mtpp.io import load_graph
from mtpp.problem import Problem

__version__ = "0.1.0"

__all__ = [
    "CycleError",
    "DuplicateNodeError",
    "EmptyGraphError",
    "Evaluation",
    "Graph",
    "GraphError",
    "GraphFormatError",
    "InvalidNodeIdError",
    "InvalidParameterError",
    "InvalidPartitionError",
    "InvalidWeightError",
    "MtppError",
    "Node",
    "NodeId",
    "Problem",
    "QuotientCycleError",
    "SelfLoopError",
    "UnknownNodeError",
    "__version__",
    "evaluate",
    "load_graph",
    "simple_lower_bound",
]
