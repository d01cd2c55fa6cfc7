"""The versioned JSON file format for graphs, as pydantic models.

A document looks like::

    {"format": "mtpp-graph", "version": 1, "name": "toy",
     "nodes": [{"id": "a", "work": 1.0, "size_param": 0.0, "size_out": 4.0,
                "name": "matmul_1", "op": "MatMul"}, ...],
     "edges": [["a", "b"], ...]}

``work`` is required on every node (an op without a run time is a mistake, not a
zero: a misspelt key is refused, never read as 0); ``size_param`` and ``size_out``
default to 0 (an op without weights; a tensor nobody reads), and ``name``, ``op`` and
``units`` are optional.  ``units`` says what ``work`` and the sizes are measured in,
e.g. ``{"time": "us", "size": "bytes"}`` (what ``mtpp import`` writes); tables and JSON
results repeat it.

**Version 2** adds the optional ``machine`` field (:class:`Machine`): the device the
graph was priced on, with the bandwidth and memory that ``partition``, ``certify`` and
the command line use unless told otherwise, e.g.
``"machine": {"name": "a100", "bandwidth": 300000.0, "memory": 8e10, "units": {"time":
"us", "size": "bytes"}}``.  A graph without a machine is written as version 1, as
before, so its text and fingerprint do not change; version 1 files load as they did
(a ``machine`` in a version 1 document is refused: it needs version 2).  The schema checks the
shape of the document; :meth:`mtpp.Graph.from_document` then checks the graph itself
(cycles, weights, unknown ids) and raises the typed errors of :mod:`mtpp.core.errors`,
and :meth:`mtpp.Graph.to_document` writes one.  ``GraphDocument.model_json_schema()``
gives the JSON Schema.
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, model_validator

FORMAT: Literal["mtpp-graph"] = "mtpp-graph"
VERSION: Literal[1] = 1
"""The version of a graph document without a machine (what every graph without one writes)."""
MACHINE_VERSION: Literal[2] = 2
"""The version that added the optional ``machine`` field."""

JsonNodeId = Union[StrictStr, StrictInt]
JsonWeight = Union[StrictInt, StrictFloat]
"""A JSON number: ``"5"`` and ``true`` are rejected, not coerced."""


class NodeRecord(BaseModel):
    """One node of a graph document."""

    model_config = ConfigDict(extra="forbid")

    id: JsonNodeId
    work: JsonWeight
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


class Machine(BaseModel):
    """The machine a graph was priced on (:attr:`mtpp.Graph.machine`): the device's
    ``name`` (a preset of :mod:`mtpp.core.presets`, or a spec's own name), the
    inter-stage ``bandwidth`` B in the graph's size units per time unit (bytes per
    microsecond for imported graphs), the fast ``memory`` M per stage in size units
    (``None``: unlimited) and the ``units`` those figures are in, which must be the
    graph's own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    bandwidth: float = Field(gt=0, allow_inf_nan=False)
    memory: float | None = Field(default=None, gt=0)
    units: Units


class GraphDocument(BaseModel):
    """A whole graph file: version 1, or version 2 with a ``machine``."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["mtpp-graph"] = FORMAT
    version: Literal[1, 2] = VERSION
    name: str | None = None
    units: Units | None = None
    machine: Machine | None = None
    nodes: list[NodeRecord]
    edges: list[tuple[JsonNodeId, JsonNodeId]] = []

    @model_validator(mode="after")
    def _versioned(self) -> GraphDocument:
        if self.machine is not None and self.version < MACHINE_VERSION:
            raise ValueError(f"'machine' needs version {MACHINE_VERSION} of the graph format, not {self.version}")
        return self
