"""Tasks: content hashes, keys that ignore what cannot change a result, method names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mtpp.batch.tasks import GraphSource, Settings, discover_graphs, graph_hash, load_sources, make_tasks, parse_methods
from mtpp.core.errors import GraphFormatError, InvalidParameterError
from mtpp.generators import layered_graph, regal_graph
from mtpp.io.graph_file import load_graph
from tests.mtpp.batch.conftest import ROOT


def test_graph_hash_is_the_content_whatever_the_file(tmp_path: Path) -> None:
    g = regal_graph(12, seed=5)
    g.to_json(str(tmp_path / "a.json"))
    g.to_json(str(tmp_path / "b.json"), indent=2)
    assert graph_hash(load_graph(tmp_path / "a.json")) == graph_hash(load_graph(tmp_path / "b.json")) == graph_hash(g)
    assert graph_hash(regal_graph(12, seed=6)) != graph_hash(g)
    # the same in a fresh interpreter (no per-process hash seeds)
    code = (
        "from mtpp.generators import regal_graph; from mtpp.batch.tasks import graph_hash; "
        "print(graph_hash(regal_graph(12, seed=5)))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == graph_hash(g)
    # identical graphs in two files are one source
    assert len(load_sources(tmp_path)) == 1


def test_task_keys() -> None:
    src = GraphSource.from_graph(regal_graph(10, seed=1), "x.json")
    moved = GraphSource.from_graph(regal_graph(10, seed=1), "elsewhere/y.json")
    methods = ["simple", "bottleneck", "slicegraph:random-10"]
    a = make_tasks([src], [2], methods, "highs", Settings(time_limit=10))
    b = make_tasks([moved], [2], methods, "highs", Settings(time_limit=10))
    c = make_tasks([src], [2], methods, "scip", Settings(time_limit=20))
    d = make_tasks([src], [2], methods, "scip", Settings(time_limit=10))
    assert [t.key for t in a] == [t.key for t in b]  # the path is not part of the key
    assert a[0].key == d[0].key != c[0].key  # simple ignores the solver; the time limit caps its partition search
    assert a[1].key != c[1].key and a[2].key != c[2].key
    assert a[0].solver == a[2].solver == "-" and a[1].solver == "highs"
    assert len({t.key for t in make_tasks([src], [2, 4], methods, "highs", Settings())}) == 6


def test_parse_methods() -> None:
    assert parse_methods("all") == (
        "slicegraph:brkga",
        "simple",
        "cut",
        "crossing",
        "clique",
        "reach",
        "ideal-dp",
        "pigeonhole",
        "bottleneck",
        "guess",
        "exact",
    )
    assert parse_methods(["simple,exact", "simple"]) == ("simple", "exact")
    assert parse_methods("orderers")[0] == "slicegraph:mla"
    with pytest.raises(InvalidParameterError, match="unknown method 'exakt'"):
        parse_methods("exakt")
    with pytest.raises(InvalidParameterError, match="slicegraph:brkga-x"):
        parse_methods("slicegraph:brkga-x")


def test_discover_graphs(tmp_path: Path) -> None:
    layered_graph(10, seed=0).to_json(str(tmp_path / "b.json"))
    regal_graph(10, seed=0).to_json(str(tmp_path / "a.json"))
    assert [p.name for p in discover_graphs(tmp_path)] == ["a.json", "b.json"]
    assert [p.name for p in discover_graphs(str(tmp_path / "b*.json"))] == ["b.json"]
    with pytest.raises(GraphFormatError, match="no such file"):
        discover_graphs(tmp_path / "nothing*.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(GraphFormatError, match=r"no \*\.json"):
        discover_graphs(tmp_path / "empty")


def test_presolve_off_is_its_own_task_and_on_keeps_the_old_keys() -> None:
    from mtpp.batch.tasks import Settings

    for method in ("simple", "bottleneck", "slicegraph:kahn"):
        on, off = Settings().for_method(method), Settings(presolve=False).for_method(method)
        assert "presolve" not in on and off == {**on, "presolve": False}
