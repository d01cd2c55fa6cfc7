"""mtpp: partition ML computation graphs into pipeline stages, with a certified
lower bound on the best possible bottleneck.

Core objects: :class:`Graph`, :class:`Problem`; the evaluator :func:`evaluate`; the
partitioner :func:`partition`; readers :func:`load_graph`.
"""

from mtpp.bounds.simple import simple_lower_bound
from mtpp.core.errors import (
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
from mtpp.core.evaluate import Evaluation, evaluate
from mtpp.core.graph import Graph, Node, NodeId
from mtpp.core.problem import Problem
from mtpp.io.graph_file import load_graph

__version__ = "0.1.0"

# The API modules compose heuristics/ (and later formulations/ and solvers/), which
# import mtpp's core modules: load them on first use so either side can be
# imported first without a cycle.
_LAZY = {
    "partition": "mtpp.partitioner",
    "Solution": "mtpp.solution",
    "certify": "mtpp.engine.certify",
    "schedule": "mtpp.scheduling",
    "Schedule": "mtpp.scheduling",
    "peak_memory": "mtpp.core.memory",
    "from_onnx": "mtpp.io.onnx_model",
    "from_torch": "mtpp.io.torch_model",
    "plan_pipeline": "mtpp.pipelining",
    "PipelinePlan": "mtpp.pipelining",
    "DeviceSpec": "mtpp.core.devices",
    "get_device": "mtpp.core.presets",
    "get_devices": "mtpp.core.presets",
    "place": "mtpp.placement.api",
    "Placement": "mtpp.placement.api",
    "Certificate": "mtpp.engine.certificate",
    "regal_graph": "mtpp.generators",
    "layered_graph": "mtpp.generators",
    "load_example": "mtpp.examples",
    "Result": "mtpp.core.result",
    "ResultStatus": "mtpp.core.result",
    "Step": "mtpp.core.result",
}


# modules reachable as attributes after ``import mtpp`` (``mtpp.devices.get_device("a100")``)
_SUBMODULES = {
    "batch": "mtpp.batch",
    "bounds": "mtpp.bounds",
    "core": "mtpp.core",
    "devices": "mtpp.core.presets",
    "examples": "mtpp.examples",
    "generators": "mtpp.generators",
    "io": "mtpp.io",
    "memory": "mtpp.core.memory",
    "placement": "mtpp.placement",
    "results_schema": "mtpp.results_schema",
    "schema": "mtpp.core.schema",
}


def __getattr__(name: str) -> object:
    if name in _LAZY or name in _SUBMODULES:
        import importlib

        if name in _SUBMODULES:
            return importlib.import_module(_SUBMODULES[name])
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
    "get_device",
    "get_devices",
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
