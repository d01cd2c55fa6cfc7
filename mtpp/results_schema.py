"""One JSON vocabulary for every result: solutions, certificates, schedules, placements.

``mtpp solve / certify / schedule / place --json`` (and ``-o``) print these documents,
and :meth:`mtpp.Solution.to_dict` returns one.  Every document carries

* ``format`` (``mtpp-solution``, ``mtpp-certificate``, ``mtpp-schedule``,
  ``mtpp-placement``), ``version`` (of that format, now 1) and ``mtpp_version``;
* ``graph``, ``n``, ``m``, the graph's ``units`` (``null`` when the file has none) and
  ``graph_hash``, its fingerprint (:func:`mtpp.core.fingerprint.graph_hash`: the sha256 of
  its canonical binary form; ``mtpp evaluate`` warns when a file names another graph;
  ``null`` in documents written before it existed);
* ``objective`` (``bottleneck``, ``peak_memory``, ``runtime``), ``upper_bound`` (the
  value of the returned partition / order / placement, re-checked by the
  independent evaluator), ``lower_bound`` (proven; ``null`` when none was computed),
  ``lower_bound_method``, ``gap = (upper_bound - lower_bound) / upper_bound`` as a
  **fraction** (0 when the upper bound is 0; ``null`` without a lower bound),
  ``optimal`` and ``wall_time`` (seconds);
* for partitions (solve, certify): the machine (``k``, ``bandwidth``, ``memory``
  (``null`` = unlimited), ``reserve``, ``peak_aware``, and ``machine``: the name of the
  device whose bandwidth or memory these are, the graph's recorded machine or one asked
  for, ``null`` when they were given by hand or are the defaults), ``assignment`` ``{node id:
  block}``, ``order`` and ``blocks``: per block its nodes in run order and the cost
  terms of Eq. (3) (``input_io``, ``work``, ``overflow``, ``output_io``, ``cost``);
  ``mtpp evaluate`` reads such a file back with its machine.

Several ks (``mtpp certify -k 2 4 8 --json``) give one ``mtpp-certificates`` document
whose ``certificates`` list holds one ``mtpp-certificate`` per k.  Every result object
(:mod:`mtpp.core.result`) returns its document from ``to_json()`` / ``to_dict()``, and batch
stores it.

Infinite values are written as ``null``, so the output is strict JSON.  The models
below are the schema: ``SolutionDocument.model_json_schema()`` and so on.  This module
holds the document types and the fields every document shares (:func:`graph_fields`,
:func:`partition_fields`); each result builds its own document
(:meth:`mtpp.core.result.Result.to_json`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr

from mtpp.core.fingerprint import graph_hash
from mtpp.core.graph import Graph
from mtpp.core.records import PresolveRecord
from mtpp.core.schema import Units

if TYPE_CHECKING:
    from mtpp.core.evaluate import Evaluation
    from mtpp.core.problem import Problem

VERSION: Literal[1] = 1
NodeIdJson = Union[StrictStr, StrictInt]


def finite(x: float | None) -> float | None:
    """``x`` as a float, or ``None`` when it is ``None``, infinite or NaN."""
    return None if x is None or not math.isfinite(x) else float(x)


def document_gap(upper: float, lower: float | None) -> float | None:
    """A document's ``gap``: ``(upper - lower) / upper`` (0 when ``upper`` is 0, never
    negative; ``None`` without a lower bound or with an infinite upper bound)."""
    if lower is None or not math.isfinite(upper):
        return None
    return 0.0 if upper <= 0 else max(0.0, (upper - lower) / upper)


class _Document(BaseModel):
    """The fields every result document has."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = VERSION
    mtpp_version: str
    graph: str | None
    n: int
    m: int
    units: Units | None = None
    graph_hash: str | None = None
    objective: str
    upper_bound: float | None
    lower_bound: float | None
    lower_bound_method: str | None
    gap: float | None
    optimal: bool
    wall_time: float


class BlockRecord(BaseModel):
    """One pipeline stage: its nodes in run order and its cost terms (Eq. 3)."""

    model_config = ConfigDict(extra="forbid")

    block: int
    nodes: list[NodeIdJson]
    input_io: float
    work: float
    overflow: float
    output_io: float
    cost: float


class _PartitionDocument(_Document):
    """A partition into ``k`` blocks with the machine it was priced on."""

    objective: Literal["bottleneck"] = "bottleneck"
    k: int
    bandwidth: float
    memory: float | None
    reserve: float
    peak_aware: bool
    machine: str | None = None
    bottleneck_block: int
    assignment: dict[str, int]
    order: list[NodeIdJson]
    blocks: list[BlockRecord]


class SolutionDocument(_PartitionDocument):
    """``mtpp solve``: a SliceGraph partition and the simple lower bound (Lemma 3.3)."""

    format: Literal["mtpp-solution"] = "mtpp-solution"
    orderer: str
    seed: int
    evaluations: int
    stopped_by_time: bool
    note: str = ""


class EvaluationDocument(_PartitionDocument):
    """``mtpp evaluate --json``: a given partition re-checked, with the simple bound."""

    format: Literal["mtpp-evaluation"] = "mtpp-evaluation"


class BoundDocument(BaseModel):
    """One lower-bound method of a certificate and how it ended."""

    model_config = ConfigDict(extra="forbid")

    method: str
    bound: float | None
    status: str
    proven_optimal: bool
    solver: str | None
    solver_version: str | None
    wall_time: float
    message: str


class CertificateDocument(_PartitionDocument):
    """``mtpp certify``: a partition and the lower bounds proven for it."""

    format: Literal["mtpp-certificate"] = "mtpp-certificate"
    partition_source: str
    bounds: list[BoundDocument]
    notes: list[str]
    presolve: PresolveRecord | None = None


class StageDocument(BaseModel):
    """One method run by ``mtpp schedule``."""

    model_config = ConfigDict(extra="forbid")

    method: str
    peak: float | None
    lower_bound: float
    status: str
    wall_time: float
    detail: str


class ScheduleDocument(_Document):
    """``mtpp schedule``: a topological order, its peak memory and a proven bound."""

    format: Literal["mtpp-schedule"] = "mtpp-schedule"
    objective: Literal["peak_memory"] = "peak_memory"
    method: str
    status: str
    order: list[NodeIdJson]
    stages: list[StageDocument]


class PlacementDocument(_Document):
    """``mtpp place``: ops on devices, simulated, with a proven bound."""

    format: Literal["mtpp-placement"] = "mtpp-placement"
    method: str
    devices: list[str]
    assignment: dict[str, str]
    order: list[NodeIdJson]
    start: list[float]
    end: list[float]
    makespan: float
    peak_memory: dict[str, float]
    memory_feasible: bool
    candidates: dict[str, float | None]
    cpsat_status: str | None


class CertificatesDocument(BaseModel):
    """``mtpp certify -k K1 K2 ...``: one certificate document per k, in increasing k."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["mtpp-certificates"] = "mtpp-certificates"
    version: Literal[1] = VERSION
    mtpp_version: str
    certificates: list[CertificateDocument]


def certificates_document(docs: list[CertificateDocument]) -> CertificatesDocument:
    """The document of several certificates (one per k)."""
    import mtpp

    return CertificatesDocument(mtpp_version=mtpp.__version__, certificates=docs)


DOCUMENTS: dict[str, type[_Document]] = {
    "mtpp-solution": SolutionDocument,
    "mtpp-evaluation": EvaluationDocument,
    "mtpp-certificate": CertificateDocument,
    "mtpp-schedule": ScheduleDocument,
    "mtpp-placement": PlacementDocument,
}


def graph_fields(graph: Graph) -> dict[str, Any]:
    """The fields of every document that name the graph and the mtpp that wrote it."""
    import mtpp

    return {
        "mtpp_version": mtpp.__version__,
        "graph": graph.name,
        "n": graph.n,
        "m": graph.m,
        "units": graph.units,
        "graph_hash": graph_hash(graph),
    }


def partition_fields(problem: Problem, ev: Evaluation, order: np.ndarray) -> dict[str, Any]:
    """Machine, assignment, order and blocks of a checked partition; ``O(n + k)``."""
    g, k = problem.graph, problem.k
    c = ev.costs
    total = c.total
    ids = g.ids
    members: list[list[NodeIdJson]] = [[] for _ in range(k)]
    for v in order.tolist():
        members[int(ev.assignment[v])].append(ids[v])
    terms = zip(c.input_io.tolist(), c.work.tolist(), c.overflow.tolist(), c.output_io.tolist(), total.tolist())
    names = ("input_io", "work", "overflow", "output_io", "cost")
    # plain dicts: pydantic validates the whole list in one call (a model per block costs 10x more)
    blocks = [{"block": b, "nodes": members[b], **dict(zip(names, t))} for b, t in enumerate(terms)]
    return {
        "k": k,
        "bandwidth": problem.bandwidth,
        "memory": finite(problem.memory),
        "reserve": problem.reserve,
        "peak_aware": problem.peak_aware,
        "machine": None if problem.machine is None else problem.machine.name,
        "bottleneck_block": ev.bottleneck_block,
        "assignment": {str(ids[i]): b for i, b in enumerate(ev.assignment.tolist())},
        "order": [ids[v] for v in order.tolist()],
        "blocks": blocks,
    }
