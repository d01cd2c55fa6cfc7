"""The Python API raises only :class:`mtpp.MtppError` subclasses for bad input, each
naming the problem (never a TypeError, ValueError, pydantic or protobuf error from
deep inside)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import mtpp
from mtpp.core.errors import GraphError, GraphFormatError, InvalidParameterError, InvalidWeightError

G = mtpp.Graph.from_arrays([1, 2, 3], [0, 0, 0], [1, 1, 1], [(0, 1), (1, 2)])
P = mtpp.Problem(G, 2)


def _file(tmp: Path, name: str, content: str | bytes) -> Path:
    path = tmp / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


BAD: dict[str, tuple[type[mtpp.MtppError], str, Callable[[Path], object]]] = {
    "node record with an unknown field": (
        GraphError,
        "foo",
        lambda t: mtpp.Graph.from_nodes([{"id": 1, "foo": 2}], []),
    ),
    "node record that is not a mapping": (GraphError, "node 0", lambda t: mtpp.Graph.from_nodes([5], [])),
    "edge that is not a pair": (GraphError, "pair", lambda t: mtpp.Graph.from_nodes([{"id": 1, "work": 1}], [(1,)])),
    "edges of three ends": (GraphError, "pairs", lambda t: mtpp.Graph.from_arrays([1, 2], [0, 0], [0, 0], [(0, 1, 2)])),
    "edges that are not indices": (
        GraphError,
        "pairs",
        lambda t: mtpp.Graph.from_arrays([1, 2], [0, 0], [0, 0], [("a", "b")]),
    ),
    "a weight given as a string": (InvalidWeightError, "'5'", lambda t: mtpp.Graph.from_arrays(["5"], [0], [0], [])),
    "a weight given as a boolean": (InvalidWeightError, "True", lambda t: mtpp.Graph.from_arrays([True], [0], [0], [])),
    "weights of the wrong length": (GraphError, "2 nodes", lambda t: mtpp.Graph.from_arrays([1, 2], [0], [0], [])),
    "a JSON weight as a string": (
        GraphFormatError,
        "work",
        lambda t: mtpp.load_graph(_file(t, "g.json", json.dumps({"nodes": [{"id": "a", "work": "5"}], "edges": []}))),
    ),
    "a JSON weight as a boolean": (
        GraphFormatError,
        "work",
        lambda t: mtpp.load_graph(_file(t, "g.json", json.dumps({"nodes": [{"id": "a", "work": True}], "edges": []}))),
    ),
    "node-link JSON without weights": (
        GraphFormatError,
        "duration",
        lambda t: mtpp.load_graph(_file(t, "g.json", json.dumps({"nodes": [{"id": "a"}], "links": []}))),
    ),
    "a path that is not a path": (GraphFormatError, "None", lambda t: mtpp.load_graph(None)),
    "a garbage ONNX file": (
        mtpp.MtppError,
        "not an ONNX model",
        lambda t: mtpp.from_onnx(_file(t, "m.onnx", b"\x00garbage\xff" * 10)),
    ),
    "a JSON file renamed .onnx": (
        mtpp.MtppError,
        "not an ONNX model",
        lambda t: mtpp.from_onnx(_file(t, "m.onnx", '{"a": 1}')),
    ),
    "a seed that is not an integer": (
        InvalidParameterError,
        "seed",
        lambda t: mtpp.partition(P, orderer="kahn", seed="x"),
    ),
    "a time limit that is a string": (InvalidParameterError, "time_limit", lambda t: mtpp.certify(P, time_limit="5")),
    "bounds that are not names": (InvalidParameterError, "bounds", lambda t: mtpp.certify(P, bounds=5)),
    "k given as a string": (InvalidParameterError, "k", lambda t: mtpp.partition(G, k="2")),
    "an unknown solver": (mtpp.MtppError, "cplex", lambda t: mtpp.certify(P, solver="cplex")),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_input_raises_a_typed_error_naming_it(case: str, tmp_path: Path) -> None:
    error, fragment, call = BAD[case]
    if "ONNX" in case:
        pytest.importorskip("onnx")
    with pytest.raises(error) as info:
        call(tmp_path)
    assert isinstance(info.value, mtpp.MtppError)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda: mtpp.schedule(G, "peak_memory"), "too many positional arguments"),
        (lambda: mtpp.certify(G, 2, bogus=1), "unexpected keyword argument 'bogus'"),
        (lambda: mtpp.partition(G, 2, "kahn"), "too many positional arguments"),
        (lambda: mtpp.place(G, "two-devices", "runtime"), "too many positional arguments"),
    ],
)
def test_a_call_that_does_not_fit_the_signature_is_a_parameter_error(call: Callable[[], object], what: str) -> None:
    """Keyword-only arguments given by position, or an unknown keyword: an
    InvalidParameterError naming the call, not a TypeError or an internal error."""
    with pytest.raises(InvalidParameterError, match=what):
        call()
