"""The versioned JSON file format for graphs, as pydantic models.

A document looks like::

    {"format": "mtpp-graph", "version": 1, "name": "toy",
     "nodes": [{"id": "a", "work": 1.0, "size_param": 0.0, "size_out": 4.0,
                "name": "matmul_1", "op": "MatMul"}, ...],
     "edges": [["a", "b"], ...]}

Weights default to 0; ``name``, ``op`` and ``units`` are optional.  ``units`` says
what ``work`` and the sizes are measured in, e.g. ``{"time": "us", "size": "bytes"}``
(what ``mtpp import`` writes); tables and JSON results repeat it.  The schema checks the
shape of the document; :meth:`mtpp.Graph.from_document` then checks the graph itself
(cycles, weights, unknown ids) and raises the typed errors of :mod:`mtpp.core.errors`,
and :meth:`mtpp.Graph.to_document` writes one.  ``GraphDocument.model_json_schema()``
gives the JSON Schema.
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr

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
