"""Graph.to_dot and the stage chart (plan.plot, mtpp solve/certify --plot)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mtpp import Graph, Problem, evaluate
from mtpp.cli import main
from mtpp.core.errors import InvalidPartitionError
from mtpp.core.graph import DOT_COLORS
from mtpp.pipelining.plot import plot_stages
from tests.oracle import random_dag

PNG = b"\x89PNG\r\n\x1a\n"


def test_to_dot_colours_nodes_by_stage() -> None:
    g = Graph.from_nodes(
        [{"id": "a", "name": 'say "hi"', "work": 1}, {"id": "b", "op": "MatMul", "work": 1}, {"id": 3, "work": 1}],
        [("a", "b"), ("b", 3)],
    )
    dot = g.to_dot({"a": 0, "b": 1, 3: 1})
    assert dot.startswith('digraph "mtpp" {') and dot.rstrip().endswith("}")
    nodes = dict(re.findall(r'^  "([^"]+)" \[label=.*fillcolor="(#[0-9a-f]{6})"', dot, re.M))
    assert nodes == {"a": DOT_COLORS[0], "b": DOT_COLORS[1], "3": DOT_COLORS[1]}
    assert re.findall(r'^  "(\w+)" -> "(\w+)";$', dot, re.M) == [("a", "b"), ("b", "3")]
    assert r'label="a\nsay \"hi\""' in dot and r'label="b\nMatMul"' in dot
    assert "fillcolor" not in g.to_dot().split("\n", 2)[2]  # no assignment: plain nodes
    with pytest.raises(InvalidPartitionError, match="2 entries for 3 nodes"):
        g.to_dot([0, 1])


def test_plot_stages_writes_a_png(tmp_path) -> None:
    g = random_dag(np.random.default_rng(3), 12, p=0.3)
    problem = Problem(g, 3)
    blocks = np.empty(12, dtype=np.int64)
    blocks[g.topological_order] = np.repeat(np.arange(3), 4)  # contiguous pieces of a topological order
    ev = evaluate(problem, blocks)
    path = tmp_path / "stages.png"
    plot_stages(ev.costs, 1.0, str(path), title="t")
    assert path.read_bytes()[:8] == PNG


@pytest.mark.parametrize("command", [["solve", "--orderer", "dfs"], ["certify", "--bounds", "simple", "--budget", "3"]])
def test_cli_plot(tmp_path, command: list[str]) -> None:
    path = tmp_path / "g.json"
    random_dag(np.random.default_rng(4), 15, p=0.3).to_json(str(path))
    out = tmp_path / "chart.png"
    assert main([command[0], str(path), "-k", "3", *command[1:], "--plot", str(out), "--json"]) == 0
    assert out.read_bytes()[:8] == PNG
