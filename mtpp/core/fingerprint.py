"""A graph's fingerprint: the sha256 of its canonical binary form.

The same graph gives the same fingerprint whatever file or process it came from: a
batch keys its tasks on it (:mod:`mtpp.batch.tasks`), every result document stores
it as ``graph_hash`` (:mod:`mtpp.results_schema`), and ``mtpp evaluate`` compares it
with the graph a solution file is priced on.

The canonical form is what :meth:`Graph.__eq__ <mtpp.Graph.__eq__>` compares plus the
labels a file keeps, each part prefixed with its length: a JSON header (name, units,
machine, ``n``, ``m``), the ids as JSON, the three weight columns as little-endian
float64, the ``name`` and ``op`` labels as JSON and the edges as little-endian int64
index pairs (sorted by the graph).  It hashes a million-op graph in a fraction of a
second, where serialising its JSON document takes seconds.
"""

from __future__ import annotations

import hashlib
import threading

import numpy as np
import pydantic_core

from mtpp.core.graph import WEIGHT_FIELDS, Graph

FINGERPRINT_VERSION = 2
"""Bumped whenever the canonical form changes (version 1 hashed the graph's JSON text)."""

_last: tuple[Graph, str] | None = None  # the last graph hashed: the documents of one result share it
_lock = threading.Lock()


def sha256(text: str) -> str:
    """The hex sha256 of ``text`` in UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical_parts(graph: Graph) -> list[bytes]:
    header = {
        "format": "mtpp-graph-fingerprint",
        "version": FINGERPRINT_VERSION,
        "name": graph.name,
        "units": graph.units,
        "machine": None if graph.machine is None else graph.machine.model_dump(),
        "n": graph.n,
        "m": graph.m,
    }
    ids = [int(i) if isinstance(i, np.integer) else i for i in graph.ids]
    weights = [(getattr(graph, field) + 0.0).astype("<f8").tobytes() for field in WEIGHT_FIELDS]  # -0.0 is 0.0
    return [
        pydantic_core.to_json(header),
        pydantic_core.to_json(ids),
        *weights,
        pydantic_core.to_json(list(graph.names)),
        pydantic_core.to_json(list(graph.ops)),
        graph.edge_src.astype("<i8").tobytes(),
        graph.edge_dst.astype("<i8").tobytes(),
    ]


def graph_hash(graph: Graph) -> str:
    """sha256 of the canonical binary form of ``graph`` (module docstring); ``O(n + m)``,
    remembered for the last graph (graphs are immutable)."""
    global _last
    with _lock:
        last = _last
    if last is not None and last[0] is graph:
        return last[1]
    digest = hashlib.sha256()
    for part in _canonical_parts(graph):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    text = digest.hexdigest()
    with _lock:
        _last = (graph, text)
    return text
