"""The versioned JSON file format for graphs, as pydantic models.

A document looks like::

    {"format": "mtpp-graph", "version": 1, "name": "toy",
     "nodes": [{"id": "a", "work": 1.0, "size_param": 0.0, "size_out": 4.0,
                "name": "matmul_1", "op": "MatMul"}, ...],
     "edges": [["a", "b"], ...]}

Weights default to 0; ``name``, ``op`` and ``units`` are optional.  ``units`` says
what ``work`` and the sizes are measured in, e.g. ``{"time": "us", "size": "bytes"}``
(what ``mtpp import`` writes); tables and JSON results repeat it.  The schema checks the
shape of the document; :class:`mtpp.Graph` then checks the graph itself (cycles,
weights, unknown ids) and raises the typed errors of :mod:`mtpp.core.errors`.
``GraphDocument.model_json_schema()`` gives the JSON Schema.
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr

from mtpp.core.graph import Graph, Node

FORMAT: Literal["mtpp-graph"] = "mtpp-graph"
VERSION: Literal[1] = 1

JsonNodeId = Union[StrictStr, StrictInt]
JsonWeight = Union[StrictInt, StrictFloat]
"""A JSON number: ``"5"`` and ``true`` are rejected, not coerced."""


class NodeRecord(BaseModel):
    """One node of a graph document."""

    model_config = ConfigDict(extra="forbid")

    id: JsonNodeId
    work: JsonWeight = 0.0
    size_param: JsonWeight = 0.0
    size_out: JsonWeight = 0.0
    name: str | None = None
    op: str | None = None


class Units(BaseModel):
    """The units of a graph's weights: ``time`` for ``work``, ``size`` for ``size_param``
    and ``size_out`` (free text such as ``us`` and ``bytes``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    time: str
    size: str


class GraphDocument(BaseModel):
    """A whole graph file, version 1."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["mtpp-graph"] = FORMAT
    version: Literal[1] = VERSION
    name: str | None = None
    units: Units | None = None
    nodes: list[NodeRecord]
    edges: list[tuple[JsonNodeId, JsonNodeId]] = []

    def to_graph(self) -> Graph:
        """Validate the graph itself and build it."""
        units = None if self.units is None else self.units.model_dump()
        return Graph.from_nodes(
            (Node(**rec.model_dump()) for rec in self.nodes), self.edges, name=self.name, units=units
        )


def graph_to_model(graph: Graph) -> GraphDocument:
    """The document that :meth:`GraphDocument.to_graph` turns back into ``graph``."""
    return GraphDocument(
        name=graph.name,
        units=None if graph.units is None else Units(**graph.units),
        nodes=[NodeRecord(**vars(node)) for node in graph.nodes()],
        edges=[(u, v) for u, v in graph.edges()],
    )
