import json
import math

import networkx as nx
import numpy as np
import pytest

from mtpp import (
    CycleError,
    DuplicateNodeError,
    EmptyGraphError,
    Graph,
    GraphFormatError,
    InvalidNodeIdError,
    InvalidWeightError,
    Node,
    SelfLoopError,
    UnknownNodeError,
    load_graph,
)
from mtpp.core.schema import GraphDocument


def diamond() -> Graph:
    nodes = [Node("a", 1, 0, 4), Node("b", 2, 1, 3, name="mm", op="MatMul"), Node("c", 3, 0, 2), Node("d", 4, 0, 1)]
    return Graph.from_nodes(nodes, [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")], name="diamond")


def test_csr_and_indices():
    g = diamond()
    assert (g.n, g.m) == (4, 4)
    assert g.index("c") == 2
    assert sorted(g.successors(0).tolist()) == [1, 2]
    assert sorted(g.predecessors(3).tolist()) == [1, 2]
    pos = {v: i for i, v in enumerate(g.topological_order.tolist())}
    assert all(pos[u] < pos[v] for u, v in zip(g.edge_src.tolist(), g.edge_dst.tolist()))
    with pytest.raises(ValueError):
        g.work[0] = 5.0  # arrays are read-only


def test_parallel_edges_are_merged():
    g = Graph.from_arrays([1, 1], [0, 0], [1, 1], [(0, 1), (0, 1), (0, 1)])
    assert g.m == 1


@pytest.mark.parametrize(
    ("edges", "cycle_nodes"),
    [([(0, 1), (1, 2), (2, 0)], {0, 1, 2}), ([(0, 1), (1, 2), (2, 3), (3, 1), (3, 4)], {1, 2, 3})],
)
def test_cycle_is_named(edges, cycle_nodes):
    n = 5
    with pytest.raises(CycleError) as info:
        Graph.from_arrays([1] * n, [0] * n, [1] * n, edges)
    cycle = info.value.cycle
    assert set(cycle) == cycle_nodes
    # consecutive entries are real edges, closing back to the start
    es = set(edges)
    assert all((cycle[i], cycle[(i + 1) % len(cycle)]) in es for i in range(len(cycle)))
    assert "cycle" in str(info.value)


@pytest.mark.parametrize("field", ["work", "size_param", "size_out"])
@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf, -math.inf])
def test_bad_weights(field, value):
    weights = {"work": [1.0, 1.0], "size_param": [0.0, 0.0], "size_out": [1.0, 1.0]}
    weights[field][1] = value
    with pytest.raises(InvalidWeightError) as info:
        Graph.from_arrays(weights["work"], weights["size_param"], weights["size_out"], [(0, 1)], ids=["x", "y"])
    assert info.value.node_id == "y" and info.value.field == field
    assert "'y'" in str(info.value) and field in str(info.value)


def test_other_bad_inputs():
    with pytest.raises(EmptyGraphError):
        Graph.from_arrays([], [], [], [])
    with pytest.raises(DuplicateNodeError, match="'a'"):
        Graph.from_nodes([Node("a"), Node("a")], [])
    with pytest.raises(SelfLoopError, match="'a'"):
        Graph.from_nodes([Node("a"), Node("b")], [("a", "a")])
    with pytest.raises(UnknownNodeError, match="'zz'"):
        Graph.from_nodes([Node("a"), Node("b")], [("a", "zz")])
    with pytest.raises(UnknownNodeError):
        Graph.from_arrays([1, 1], [0, 0], [0, 0], [(0, 2)])
    with pytest.raises(InvalidNodeIdError):
        Graph.from_nodes([Node(1.5)], [])  # type: ignore[arg-type]
    with pytest.raises(UnknownNodeError):
        diamond().index("nope")


def test_json_round_trip(tmp_path):
    g = diamond()
    path = tmp_path / "g.json"
    g.to_json(str(path), indent=2)
    back = load_graph(path)
    assert back == g
    assert back.names[1] == "mm" and back.ops[1] == "MatMul" and back.name == "diamond"
    doc = json.loads(path.read_text())
    assert doc["format"] == "mtpp-graph" and doc["version"] == 1
    assert "properties" in GraphDocument.model_json_schema()
    assert Graph.from_document(g.to_document()) == g and g.to_document().units is None


def test_integer_ids_round_trip(tmp_path):
    g = Graph.from_arrays([1, 2, 3], [0, 0, 0], [1, 1, 1], [(0, 1), (1, 2)])
    g.to_json(str(tmp_path / "g.json"))
    assert load_graph(tmp_path / "g.json").ids == (0, 1, 2)


def test_networkx_round_trip():
    g = diamond()
    nxg = g.to_networkx()
    assert isinstance(nxg, nx.DiGraph) and nxg.nodes["b"]["op"] == "MatMul"
    assert Graph.from_networkx(nxg) == g


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "top level"),
        ('{"format": "other", "nodes": []}', "unknown format"),
        ('{"nodes": [{"id": "a", "work": "heavy"}]}', "nodes.0.work"),
        ('{"nodes": [{"id": "a", "colour": 1}]}', "colour"),
        ('{"version": 7, "nodes": [{"id": "a"}]}', "version"),
        ('{"nodes": [{"id": "a"}], "edges": [["a"]]}', "edges"),
    ],
)
def test_malformed_files(tmp_path, text, needle):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(GraphFormatError) as info:
        load_graph(path)
    assert needle in str(info.value) and "bad.json" in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(GraphFormatError, match="no such file"):
        load_graph(tmp_path / "absent.json")


def test_graph_errors_inside_valid_files(tmp_path):
    path = tmp_path / "g.json"
    path.write_text('{"nodes": [{"id": "a", "work": -2}], "edges": []}')
    with pytest.raises(InvalidWeightError):
        load_graph(path)
    path.write_text('{"nodes": [{"id": "a", "work": 1}, {"id": "b", "work": 1}], "edges": [["a", "b"], ["b", "a"]]}')
    with pytest.raises(CycleError):
        load_graph(path)


def test_node_link_format(tmp_path):
    data = {
        "directed": True,
        "graph": {"name": "nl"},
        "nodes": [
            {"name": 0, "out_cost": 5, "param_cost": 1, "duration": 2},
            {"name": 1, "out_cost": 3, "param_cost": 0, "duration": 7},
        ],
        "links": [{"0": 0, "1": 1}],
    }
    path = tmp_path / "nl.json"
    path.write_text(json.dumps(data))
    g = load_graph(path)
    assert g.name == "nl" and g.m == 1
    np.testing.assert_array_equal(g.work, [2, 7])
    np.testing.assert_array_equal(g.size_out, [5, 3])
    np.testing.assert_array_equal(g.size_param, [1, 0])


def test_to_json_is_the_documents_own_serialisation_on_varied_graphs() -> None:
    """The fast writer gives the text of ``to_document().model_dump_json(exclude_none=True)``
    byte for byte (fingerprints and files unchanged): ids of both kinds, subnormal, huge
    and integral weights, labels with quotes and non-ASCII, with and without units, name
    and machine, compact and indented."""
    from mtpp.core.presets import get_device

    rng = np.random.default_rng(11)
    for t in range(60):
        n = int(rng.integers(1, 20))
        ids = [f"v{i}" if t % 3 else i for i in range(n)]
        w = rng.choice([0.0, 1.0, 5e-324, 1e200, 0.1, 1e16, 123456789.125, 2.0**53 + 1], size=(3, n))
        w = np.where(rng.random((3, n)) < 0.5, rng.random((3, n)) * 10.0 ** rng.integers(-20, 20, (3, n)), w)
        edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.2]
        names = [None if rng.random() < 0.5 else f'n"\u00e9{i}\n' for i in range(n)]
        ops = [None if rng.random() < 0.5 else "MatMul" for _ in range(n)]
        machine = get_device("a100").machine() if t % 4 == 0 else None
        units = {"time": "us", "size": "bytes"} if t % 2 == 0 or machine else None
        name = None if t % 5 == 0 else "g\u00e9"
        g = Graph(ids, *w, [e[0] for e in edges], [e[1] for e in edges], names, ops, name, units, machine)
        for indent in (None, 2):
            assert g.to_json(indent=indent) == g.to_document().model_dump_json(indent=indent, exclude_none=True)
