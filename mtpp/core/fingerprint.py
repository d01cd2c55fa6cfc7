"""A graph's fingerprint: the sha256 of its canonical JSON (:meth:`Graph.to_json`).

The same graph gives the same fingerprint whatever file or process it came from: a
batch keys its tasks on it (:mod:`mtpp.batch.tasks`), every result document stores
it as ``graph_hash`` (:mod:`mtpp.results_schema`), and ``mtpp evaluate`` compares it
with the graph a solution file is priced on.
"""

from __future__ import annotations

import hashlib
import threading

from mtpp.core.graph import Graph

_last: tuple[Graph, str] | None = None  # the last graph hashed (to_json costs ~25 us per op)
_lock = threading.Lock()


def sha256(text: str) -> str:
    """The hex sha256 of ``text`` in UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def graph_hash(graph: Graph) -> str:
    """sha256 of the canonical JSON of ``graph``; ``O(n + m)``, remembered for the
    last graph (graphs are immutable), so the documents of one result share it."""
    global _last
    with _lock:
        last = _last
    if last is not None and last[0] is graph:
        return last[1]
    digest = sha256(graph.to_json())
    with _lock:
        _last = (graph, digest)
    return digest
