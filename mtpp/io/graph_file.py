"""Reading graph files: the mtpp JSON format and networkx node-link JSON.

:func:`load_graph` accepts

* mtpp's own format (:mod:`mtpp.core.schema`, ``"format": "mtpp-graph"``), and
* networkx node-link JSON as written by the Moccasin / Topoformer layered-graph
  data sets, where each node has ``out_cost``, ``param_cost`` and ``duration``
  (mapped to ``size_out``, ``size_param`` and ``work``) and each link names its
  ends as ``source``/``target`` or ``"0"``/``"1"``; the links may be under
  ``"links"`` or, as networkx 3.6 writes them, ``"edges"``.  A graph marked
  ``"directed": false`` is refused: mtpp needs to know which op produces a tensor.

Anything else raises :class:`mtpp.core.errors.GraphFormatError` naming the file and
the problem; a malformed graph inside a well-formed file raises the graph's own
typed error (cycle, weight, unknown node...).
"""

from __future__ import annotations

import json
import operator
import os
from typing import Any

import numpy as np
from pydantic import ValidationError

from mtpp.core.errors import GraphFormatError
from mtpp.core.graph import Graph, Node
from mtpp.core.schema import FORMAT, GraphDocument, NodeRecord
from mtpp.io.json_file import read_json

# mtpp weight -> its name in node-link files of the layered-graph data sets
NODE_LINK_WEIGHTS = {"work": "duration", "size_param": "param_cost", "size_out": "out_cost"}


def load_graph(path: str | os.PathLike[str]) -> Graph:
    """Read a graph file (mtpp JSON or node-link JSON) and validate it."""
    if not isinstance(path, (str, os.PathLike)):
        raise GraphFormatError(f"expected a path to a graph file, got {path!r}")
    path = os.fspath(path)
    data = read_json(path, "graph file", GraphFormatError)
    return graph_from_dict(data, source=path)


def graph_from_dict(data: Any, source: str = "<document>") -> Graph:
    """Build a graph from a parsed JSON document in either supported format."""
    if not isinstance(data, dict):
        raise GraphFormatError(f"{source}: the top level must be a JSON object")
    if "format" not in data and ("links" in data or ("edges" in data and ("directed" in data or "multigraph" in data))):
        return _from_node_link(data, source)
    if data.get("format") not in (None, FORMAT):
        raise GraphFormatError(f"{source}: unknown format {data.get('format')!r}; expected {FORMAT!r}")
    fast = _from_columns(data)
    if fast is not None:
        return fast
    try:
        doc = GraphDocument.model_validate(data)
    except ValidationError as exc:
        raise GraphFormatError(f"{source}: {_summarise(exc)}") from None
    return Graph.from_document(doc)


NODE_FIELDS = frozenset(NodeRecord.model_fields)
_WEIGHT_TYPES = frozenset((int, float))
_LABEL_TYPES = frozenset((str, type(None)))


def _from_columns(data: dict[str, Any]) -> Graph | None:
    """The graph of a well-formed mtpp document read column by column, with no object per
    node (a million-op file in seconds, where the schema's per-node records take half a
    minute); ``None`` where anything is unusual (a field the schema does not know, a
    weight that is not a JSON number, an unknown id...): the schema path then reads it
    and names the problem.  The document's other fields are checked by the schema itself,
    on the document without its nodes and edges."""
    nodes, edges = data.get("nodes"), data.get("edges", [])
    if not isinstance(nodes, list) or not nodes or not isinstance(edges, list):
        return None
    if set(map(type, nodes)) != {dict}:
        return None
    fields = set().union(*nodes)
    if not fields <= NODE_FIELDS or "id" not in fields:
        return None
    every = sum(map(len, nodes)) == len(nodes) * len(fields)  # every node has every field present
    if "work" not in fields or not (every or all("work" in node for node in nodes)):
        return None  # work is required: the schema path names the node without it

    def column(field: str, default: Any) -> list[Any]:
        if field not in fields:
            return [default] * len(nodes)
        if every:
            return list(map(operator.itemgetter(field), nodes))
        return [node.get(field, default) for node in nodes]

    if edges and (set(map(type, edges)) != {list} or set(map(len, edges)) != {2}):
        return None
    try:
        meta = GraphDocument.model_validate({**data, "nodes": [], "edges": []})
    except ValidationError:
        return None
    ids = column("id", None)
    if not set(map(type, ids)) <= {int, str}:
        return None
    columns = {field: column(field, 0.0) for field in ("work", "size_param", "size_out")}
    labels = {field: column(field, None) for field in ("name", "op")}
    if any(not set(map(type, col)) <= _WEIGHT_TYPES for col in columns.values()):
        return None
    if any(not set(map(type, col)) <= _LABEL_TYPES for col in labels.values()):
        return None
    index = dict(zip(ids, range(len(ids))))
    try:
        src = np.fromiter((index[u] for u, _ in edges), dtype=np.int64, count=len(edges))
        dst = np.fromiter((index[v] for _, v in edges), dtype=np.int64, count=len(edges))
    except (KeyError, TypeError):  # an unknown id, or an unhashable one
        return None
    units = None if meta.units is None else meta.units.model_dump()
    work, size_param, size_out = columns["work"], columns["size_param"], columns["size_out"]
    return Graph(
        ids, work, size_param, size_out, src, dst, labels["name"], labels["op"], meta.name, units, meta.machine
    )


def _summarise(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "document"
        parts.append(f"{where}: {err['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _from_node_link(data: dict[str, Any], source: str) -> Graph:
    if data.get("directed", True) is not True:
        raise GraphFormatError(
            f"{source}: the node-link graph is undirected (directed: {json.dumps(data.get('directed'))}); "
            "mtpp needs a directed graph whose links go from producer to consumer"
        )
    key = "links" if "links" in data else "edges"  # networkx 3.6 writes "edges"
    nodes_raw = data.get("nodes")
    links = data.get(key)
    if not isinstance(nodes_raw, list) or not isinstance(links, list):
        raise GraphFormatError(f"{source}: node-link JSON needs 'nodes' and '{key}' lists")
    nodes = []
    for pos, rec in enumerate(nodes_raw):
        if not isinstance(rec, dict):
            raise GraphFormatError(f"{source}: nodes[{pos}] is not an object")
        node_id: Any = rec.get("id", rec.get("name", pos))
        missing = [alias for key, alias in NODE_LINK_WEIGHTS.items() if alias not in rec and key not in rec]
        if missing:
            raise GraphFormatError(
                f"{source}: nodes[{pos}] (id {node_id!r}) has no {' / '.join(missing)}: node-link files need "
                f"{', '.join(NODE_LINK_WEIGHTS.values())} (or work, size_param, size_out) on every node"
            )
        weight: dict[str, Any] = {key: rec.get(alias, rec.get(key)) for key, alias in NODE_LINK_WEIGHTS.items()}
        bad = [k for k, v in weight.items() if isinstance(v, bool) or not isinstance(v, (int, float))]
        if bad:
            raise GraphFormatError(
                f"{source}: nodes[{pos}] (id {node_id!r}) has a non-numeric {bad[0]}: {weight[bad[0]]!r}"
            )
        try:
            nodes.append(
                Node(
                    id=node_id,
                    work=float(weight["work"]),
                    size_param=float(weight["size_param"]),
                    size_out=float(weight["size_out"]),
                    name=str(rec["name"]) if "name" in rec else None,
                    op=rec.get("op"),
                )
            )
        except (TypeError, ValueError) as exc:
            raise GraphFormatError(f"{source}: nodes[{pos}] has a non-numeric weight ({exc})") from None
    edges = []
    for pos, link in enumerate(links):
        if not isinstance(link, dict):
            raise GraphFormatError(f"{source}: {key}[{pos}] is not an object")
        for a, b in (("source", "target"), ("0", "1")):
            if a in link and b in link:
                edges.append((link[a], link[b]))
                break
        else:
            raise GraphFormatError(f"{source}: {key}[{pos}] has no source/target")
    name = data.get("graph", {}).get("name") if isinstance(data.get("graph"), dict) else None
    return Graph.from_nodes(nodes, edges, name=name)
