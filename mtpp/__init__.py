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
from mtpp.io.graph_file import load_graph
from mtpp.problem import Problem

__version__ = "0.1.0"

# The API modules compose heuristics/ (and later formulations/ and solvers/), which
# import mtpp's core modules: load them on first use so either side can be
# imported first without a cycle.
_LAZY = {
    "partition": "mtpp.partitioner",
    "Solution": "mtpp.solution",
    "certify": "mtpp.certificate",
    "schedule": "mtpp.scheduling",
    "Schedule": "mtpp.scheduling",
    "peak_memory": "mtpp.memory",
    "from_onnx": "mtpp.io.onnx_model",
    "from_torch": "mtpp.io.torch_model",
    "plan_pipeline": "mtpp.pipelining",
    "PipelinePlan": "mtpp.pipelining",
    "DeviceSpec": "mtpp.devices",
    "place": "mtpp.placement.api",
    "Placement": "mtpp.placement.api",
    "Certificate": "mtpp.certificate",
    "regal_graph": "mtpp.generators",
    "layered_graph": "mtpp.generators",
    "load_example": "mtpp.examples",
    "Result": "mtpp.result",
    "ResultStatus": "mtpp.result",
    "Step": "mtpp.result",
}


# submodules reachable as attributes after ``import mtpp`` (``mtpp.devices.get_device``)
_SUBMODULES = ("batch", "devices", "examples", "generators", "io", "memory", "placement", "results_schema", "schema")


def __getattr__(name: str) -> object:
    if name in _LAZY or name in _SUBMODULES:
        import importlib

        if name in _SUBMODULES:
            return importlib.import_module(f"mtpp.{name}")
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mtpp' has no attribute {name!r}")


__all__ = [
    "Certificate",
    "CycleError",
    "DeviceSpec",
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
    "PipelinePlan",
    "Placement",
    "Problem",
    "QuotientCycleError",
    "Result",
    "ResultStatus",
    "SelfLoopError",
    "Solution",
    "Step",
    "UnknownNodeError",
    "__version__",
    "certify",
    "evaluate",
    "from_onnx",
    "from_torch",
    "layered_graph",
    "load_example",
    "load_graph",
    "partition",
    "peak_memory",
    "place",
    "plan_pipeline",
    "regal_graph",
    "schedule",
    "simple_lower_bound",
]
