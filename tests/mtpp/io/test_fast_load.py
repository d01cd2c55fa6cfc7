"""The column reader of graph files (``mtpp.io.graph_file._from_columns``) builds the same
graph as the schema path on every document it takes, and leaves every unusual one to the
schema (which names the problem)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import mtpp
from mtpp.core.graph import Graph
from mtpp.core.schema import GraphDocument
from mtpp.io.graph_file import _from_columns


def document(rng: random.Random) -> dict:
    n = rng.randint(1, 12)
    ids: list[object] = rng.choice([list(range(n)), [f"op{i}" for i in rng.sample(range(100), n)]])
    nodes = []
    for node_id in ids:
        node: dict[str, object] = {"id": node_id, "work": rng.choice([rng.randint(0, 9), round(rng.uniform(0, 9), 3)])}
        for field in ("size_param", "size_out"):
            if rng.random() < 0.8:
                node[field] = rng.choice([rng.randint(0, 9), round(rng.uniform(0, 9), 3)])
        for field in ("name", "op"):
            if rng.random() < 0.3:
                node[field] = f"{field}-{node_id}"
        nodes.append(node)
    edges = [[ids[i], ids[j]] for i in range(n) for j in range(i + 1, n) if rng.random() < 0.3]
    edges += edges[: rng.randint(0, 2)]  # parallel edges are merged
    rng.shuffle(edges)
    doc: dict[str, object] = {"format": "mtpp-graph", "version": 1, "nodes": nodes, "edges": edges}
    if rng.random() < 0.5:
        doc["name"] = "g"
    if rng.random() < 0.5:
        doc["units"] = {"time": "us", "size": "bytes"}
    return doc


def same(a: Graph, b: Graph) -> None:
    assert a.ids == b.ids and a.names == b.names and a.ops == b.ops and a.name == b.name and a.units == b.units
    for field in ("work", "size_param", "size_out", "edge_src", "edge_dst", "topological_order"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field


@pytest.mark.parametrize("seed", range(200))
def test_the_column_reader_builds_the_schemas_graph(seed: int) -> None:
    doc = document(random.Random(seed))
    fast = _from_columns(doc)
    assert fast is not None
    same(fast, Graph.from_document(GraphDocument.model_validate(doc)))


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["nodes"][0].update(work="5"),  # a string, not a number
        lambda d: d["nodes"][0].update(work=True),  # a boolean
        lambda d: d["nodes"][0].update(wrok=1.0),  # a misspelt field
        lambda d: d["nodes"][0].pop("id"),
        lambda d: d["edges"].append([0, 99]),  # an unknown id
        lambda d: d["edges"].append([0]),
        lambda d: d.update(colour="red"),  # a document field the schema does not know
        lambda d: d["nodes"][0].update(name=3),
    ],
)
def test_every_unusual_document_is_left_to_the_schema(change: object, tmp_path: object) -> None:
    doc = {"format": "mtpp-graph", "version": 1, "nodes": [{"id": i, "work": 1.0} for i in range(3)], "edges": []}
    change(doc)  # type: ignore[operator]
    assert _from_columns(doc) is None
    with pytest.raises(mtpp.MtppError):
        mtpp.io.graph_file.graph_from_dict(doc)
