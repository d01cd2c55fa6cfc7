"""One table of bad arguments for every public function and command.

Each row calls a public entry point with one bad argument and expects a subclass of
:class:`mtpp.MtppError` whose message names the argument; the command-line rows expect
exit status 2 and a one-line message naming it, with no traceback.  The checks live
in :mod:`mtpp.core.validation`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import mtpp
from mtpp.batch.runner import run as batch_run
from mtpp.bounds.simple import simple_lower_bound
from mtpp.cli import main
from mtpp.core.errors import GraphError, GraphFormatError, InvalidParameterError
from mtpp.core.evaluate import evaluate
from mtpp.core.problem import Problem
from mtpp.engine.certify import certify
from mtpp.generators import layered_graph
from mtpp.io.graph_file import graph_from_dict, load_graph
from mtpp.partitioner import partition
from mtpp.placement.api import place
from mtpp.scheduling import schedule

G = mtpp.Graph.from_arrays([1, 2, 3, 1], [0, 1, 0, 0], [1, 1, 2, 1], [(0, 1), (1, 2), (0, 3)])
P = Problem(G, 2)
DEVICES = "cpu-igpu-dgpu"

Call = Callable[[Path], object]

# (public callable, the call with one bad argument, expected error type, substring naming the argument)
BAD_CALLS: list[tuple[str, Call, type[mtpp.MtppError], str]] = [
    ("partition k=0", lambda t: partition(G, 0), InvalidParameterError, "k must be"),
    ("partition k=True", lambda t: partition(G, True), InvalidParameterError, "k must be"),
    ("partition k=2.0", lambda t: partition(G, 2.0), InvalidParameterError, "k must be"),  # type: ignore[arg-type]
    ("partition seed=-1", lambda t: partition(G, 2, seed=-1), InvalidParameterError, "seed"),
    ("partition time_limit=True", lambda t: partition(G, 2, time_limit=True), InvalidParameterError, "time_limit"),
    ("partition time_limit=0", lambda t: partition(G, 2, time_limit=0), InvalidParameterError, "time_limit"),
    ("partition orderer=123", lambda t: partition(G, 2, orderer=123), InvalidParameterError, "orderer"),  # type: ignore[arg-type]
    ("partition orderer unknown", lambda t: partition(G, 2, orderer="nope"), InvalidParameterError, "orderer"),
    ("partition presolve='yes'", lambda t: partition(G, 2, presolve="yes"), InvalidParameterError, "presolve"),  # type: ignore[arg-type]
    ("partition graph=None", lambda t: partition(None, 2), InvalidParameterError, "graph_or_problem"),  # type: ignore[arg-type]
    ("partition bandwidth=0", lambda t: partition(G, 2, bandwidth=0), InvalidParameterError, "bandwidth"),
    ("partition Problem and k", lambda t: partition(P, 3), InvalidParameterError, "k"),
    ("certify threads=0", lambda t: certify(G, 2, threads=0), InvalidParameterError, "threads"),
    ("certify n_jobs=0", lambda t: certify(G, 2, n_jobs=0), InvalidParameterError, "n_jobs"),
    ("certify max_ideals=-1", lambda t: certify(G, 2, max_ideals=-1), InvalidParameterError, "max_ideals"),
    ("certify seed=-1", lambda t: certify(G, 2, seed=-1), InvalidParameterError, "seed"),
    ("certify time_limit=0", lambda t: certify(G, 2, time_limit=0), InvalidParameterError, "time_limit"),
    ("certify budget=True", lambda t: certify(G, 2, budget=True), InvalidParameterError, "budget"),
    ("certify k=[]", lambda t: certify(G, []), InvalidParameterError, "k must"),
    ("certify k=[2, 0]", lambda t: certify(G, [2, 0]), InvalidParameterError, "k must be"),
    ("certify orderer=123", lambda t: certify(G, 2, orderer=123), InvalidParameterError, "orderer"),  # type: ignore[arg-type]
    ("certify solver=5", lambda t: certify(G, 2, solver=5), InvalidParameterError, "solver"),  # type: ignore[arg-type]
    ("certify bounds unknown", lambda t: certify(G, 2, bounds="nope"), InvalidParameterError, "bound method"),
    ("certify graph=None", lambda t: certify(None, 2), InvalidParameterError, "graph_or_problem"),  # type: ignore[call-overload]
    ("schedule seed=-1", lambda t: schedule(G, seed=-1), InvalidParameterError, "seed"),
    ("schedule time_limit=True", lambda t: schedule(G, time_limit=True), InvalidParameterError, "time_limit"),
    ("schedule threads=0", lambda t: schedule(G, threads=0), InvalidParameterError, "threads"),
    ("schedule beam_width=0", lambda t: schedule(G, beam_width=0), InvalidParameterError, "beam_width"),
    ("schedule method=123", lambda t: schedule(G, method=123), InvalidParameterError, "method"),  # type: ignore[arg-type]
    ("schedule objective", lambda t: schedule(G, objective="speed"), InvalidParameterError, "objective"),
    ("schedule graph=None", lambda t: schedule(None), InvalidParameterError, "graph"),  # type: ignore[arg-type]
    ("place seed=-1", lambda t: place(G, DEVICES, seed=-1), InvalidParameterError, "seed"),
    ("place time_limit=True", lambda t: place(G, DEVICES, time_limit=True), InvalidParameterError, "time_limit"),
    ("place threads=0", lambda t: place(G, DEVICES, threads=0), InvalidParameterError, "threads"),
    ("place method=123", lambda t: place(G, DEVICES, method=123), InvalidParameterError, "method"),  # type: ignore[arg-type]
    ("place objective", lambda t: place(G, DEVICES, objective="speed"), InvalidParameterError, "objective"),
    ("place coarse_target=0", lambda t: place(G, DEVICES, coarse_target=0), InvalidParameterError, "coarse_target"),
    ("place graph=None", lambda t: place(None, DEVICES), InvalidParameterError, "graph"),  # type: ignore[arg-type]
    ("evaluate a Graph", lambda t: evaluate(G, [0, 0, 1, 1]), InvalidParameterError, "problem"),  # type: ignore[arg-type]
    ("simple_lower_bound(None)", lambda t: simple_lower_bound(None), InvalidParameterError, "problem"),  # type: ignore[arg-type]
    ("Problem k=0", lambda t: Problem(G, 0), InvalidParameterError, "k must be"),
    ("Problem k='2'", lambda t: Problem(G, "2"), InvalidParameterError, "k must be"),  # type: ignore[arg-type]
    ("Problem graph=None", lambda t: Problem(None, 2), InvalidParameterError, "graph"),  # type: ignore[arg-type]
    ("Problem bandwidth=0", lambda t: Problem(G, 2, bandwidth=0), InvalidParameterError, "bandwidth"),
    ("Problem memory=nan", lambda t: Problem(G, 2, memory=math.nan), InvalidParameterError, "memory"),
    ("Problem reserve=-1", lambda t: Problem(G, 2, reserve=-1), InvalidParameterError, "reserve"),
    ("Problem peak_aware=1", lambda t: Problem(G, 2, peak_aware=1), InvalidParameterError, "peak_aware"),  # type: ignore[arg-type]
    ("from_nodes(None, [])", lambda t: mtpp.Graph.from_nodes(None, []), InvalidParameterError, "nodes"),  # type: ignore[arg-type]
    ("from_nodes edges=None", lambda t: mtpp.Graph.from_nodes([{"id": 1}], None), InvalidParameterError, "edges"),  # type: ignore[arg-type]
    ("from_arrays edge 1.5", lambda t: mtpp.Graph.from_arrays([1, 1], [0, 0], [1, 1], [[0.0, 1.5]]), GraphError, "1.5"),
    ("from_arrays work=None", lambda t: mtpp.Graph.from_arrays(None, [0], [0], []), InvalidParameterError, "work"),  # type: ignore[arg-type]
    ("from_arrays edges=None", lambda t: mtpp.Graph.from_arrays([1], [0], [0], None), InvalidParameterError, "edges"),  # type: ignore[arg-type]
    ("from_networkx(None)", lambda t: mtpp.Graph.from_networkx(None), InvalidParameterError, "networkx"),  # type: ignore[arg-type]
    ("from_networkx undirected", lambda t: mtpp.Graph.from_networkx(nx.Graph([(1, 2)])), GraphError, "undirected"),
    (
        "node-link directed: false",
        lambda t: graph_from_dict(
            {"directed": False, "nodes": [{"id": 0, "duration": 1, "param_cost": 0, "out_cost": 1}], "links": []}
        ),
        GraphFormatError,
        "directed",
    ),
    ("load_graph(123)", lambda t: load_graph(123), GraphFormatError, "path"),  # type: ignore[arg-type]
    ("layered_graph n=10^9", lambda t: layered_graph(10**9), InvalidParameterError, "n must be <= 10,000,000"),
    ("batch run seed=-1", lambda t: batch_run(G, [2], seed=-1, store=t / "r.db"), InvalidParameterError, "seed"),
    ("batch run threads=0", lambda t: batch_run(G, [2], threads=0, store=t / "r.db"), InvalidParameterError, "threads"),
    (
        "batch run time_limit=0",
        lambda t: batch_run(G, [2], time_limit=0, store=t / "r.db"),
        InvalidParameterError,
        "time_limit",
    ),
    ("batch run n_jobs=0", lambda t: batch_run(G, [2], n_jobs=0, store=t / "r.db"), InvalidParameterError, "n_jobs"),
    ("batch run k=0", lambda t: batch_run(G, [0], store=t / "r.db"), InvalidParameterError, "k must be"),
    ("batch run grace=True", lambda t: batch_run(G, [2], grace=True, store=t / "r.db"), InvalidParameterError, "grace"),
]


@pytest.mark.parametrize(("name", "call", "error", "names"), BAD_CALLS, ids=[row[0] for row in BAD_CALLS])
def test_bad_argument_raises_a_typed_error_naming_it(
    name: str, call: Call, error: type[mtpp.MtppError], names: str, tmp_path: Path
) -> None:
    with pytest.raises(mtpp.MtppError) as info:
        call(tmp_path)
    assert isinstance(info.value, error), f"{name}: {type(info.value).__name__}: {info.value}"
    assert names in str(info.value), f"{name}: {info.value}"
    assert not (tmp_path / "r.db").exists()  # batch checks come before the store is opened


# (command line, substring naming the argument); argparse's own errors (a word where a
# number goes) also exit 2 and name the flag
BAD_COMMANDS: list[tuple[list[str], str]] = [
    (["solve", "{g}", "-k", "0"], "k must be"),
    (["solve", "{g}", "-k", "2", "--seed", "-1"], "seed"),
    (["solve", "{g}", "-k", "2", "--time-limit", "nan"], "time_limit"),
    (["solve", "{g}", "-k", "2", "--orderer", "nope"], "orderer"),
    (["solve", "{g}", "-k", "2", "--bandwidth", "0"], "bandwidth"),
    (["solve", "{g}", "-k", "x"], "-k"),
    (["certify", "{g}", "-k", "2", "--threads", "0"], "threads"),
    (["certify", "{g}", "-k", "2", "--jobs", "0"], "n_jobs"),
    (["certify", "{g}", "-k", "2", "--seed", "-1"], "seed"),
    (["certify", "{g}", "-k", "2", "--budget", "0"], "budget"),
    (["schedule", "{g}", "--seed", "-1"], "seed"),
    (["schedule", "{g}", "--threads", "0"], "threads"),
    (["schedule", "{g}", "--time-limit", "0"], "time_limit"),
    (["place", "{g}", "--seed", "-1"], "seed"),
    (["place", "{g}", "--method", "nope"], "method"),
    (["evaluate", "{g}", "{part}", "-k", "0"], "k must be"),
    (["generate", "layered", "-n", "1000000000"], "n must be <= 10,000,000"),
    (["generate", "layered", "-n", "2"], "n must be >= 3"),
]


@pytest.mark.parametrize(("argv", "names"), BAD_COMMANDS, ids=[" ".join(a[:1] + a[2:]) for a, _ in BAD_COMMANDS])
def test_bad_command_line_exits_2_naming_the_argument(
    argv: list[str], names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g = tmp_path / "g.json"
    G.to_json(str(g))
    part = tmp_path / "part.json"
    part.write_text(json.dumps({str(i): 0 for i in G.ids}))
    args = [a.format(g=g, part=part) for a in argv]
    try:
        code = main(args)
    except SystemExit as exc:  # argparse rejects a malformed number itself
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert names in err
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("mtpp")]) == 1


# ---------------------------------------------------------------- what is accepted


def test_k_above_n_is_the_problem_k_equals_n() -> None:
    huge = Problem(G, 10**9)
    assert huge.k == G.n and huge.requested_k == 10**9
    assert huge == Problem(G, G.n)
    sol = partition(G, 10**9, orderer="kahn")
    same = partition(G, G.n, orderer="kahn")
    assert sol.problem.k == G.n and sol.bottleneck == same.bottleneck
    assert simple_lower_bound(huge) == simple_lower_bound(Problem(G, G.n))
    # an assignment numbered up to the k asked for is the same partition, renumbered
    ev = evaluate(Problem(G, 100), [0, 40, 99, 7])
    assert ev.assignment.tolist() == [0, 2, 3, 1]
    assert ev.bottleneck == evaluate(Problem(G, 4), [0, 2, 3, 1]).bottleneck
    with pytest.raises(mtpp.core.errors.InvalidPartitionError, match=r"blocks are 0\.\.99"):
        evaluate(Problem(G, 100), [0, 100, 1, 1])


def test_certify_clamps_k_and_merges_the_ks_above_n() -> None:
    cert = certify(G, 10**9, bounds="simple,cut", orderer="kahn")
    assert cert.k == G.n and cert.upper_bound == partition(G, G.n, orderer="kahn").bottleneck
    certs = certify(G, [1, 10, 10**9], bounds="simple,cut", orderer="kahn")
    assert [c.k for c in certs] == [1, G.n]
    huge = Problem(G, 10**9)
    assert certify(huge, 10**9, bounds="simple", orderer="kahn").k == G.n  # the same k as the Problem's


def test_node_link_with_edges_key_as_networkx_36_writes_it(tmp_path: Path) -> None:
    g = nx.DiGraph()
    g.add_node("a", work=1.0, size_param=0.0, size_out=2.0)
    g.add_node("b", work=3.0, size_param=1.0, size_out=1.0)
    g.add_edge("a", "b")
    doc = nx.node_link_data(g, edges="edges")
    assert "edges" in doc and "links" not in doc
    path = tmp_path / "nl.json"
    path.write_text(json.dumps(doc))
    loaded = load_graph(path)
    assert loaded.edges() == [("a", "b")] and loaded.work.tolist() == [1.0, 3.0]
    assert mtpp.Graph.from_networkx(g) == loaded


def test_integral_float_edge_ids_are_indices() -> None:
    g = mtpp.Graph.from_arrays([1, 1, 1], [0, 0, 0], [1, 1, 1], np.array([[0.0, 1.0], [1.0, 2.0]]))
    assert g.edges() == [(0, 1), (1, 2)]


@pytest.mark.parametrize("value", [np.int64(2), 2])
def test_numpy_integers_are_integers(value: object) -> None:
    assert Problem(G, value).k == 2  # type: ignore[arg-type]
    assert schedule(G, method="dfs", seed=np.int64(1)).index_order is not None  # type: ignore[arg-type]
