"""Graphs that know their machine (mtpp.core.machine) and inputs that are never silently zero."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import mtpp
from mtpp.cli.main import main
from mtpp.core.device_sets import DeviceModelError, DeviceSet
from mtpp.core.errors import GraphFormatError, InvalidParameterError
from mtpp.core.graph import MissingWeightError
from mtpp.core.machine import MachineWarning, UnitsMismatchError
from mtpp.core.presets import get_device
from mtpp.core.schema import Machine, Units
from mtpp.io.graph_file import graph_from_dict

US_BYTES = {"time": "us", "size": "bytes"}


def priced_chain(machine: Machine | None, n: int = 8) -> mtpp.Graph:
    """A chain whose tensors are large against its work: at B = 1 one block is optimal,
    on a real link it is not."""
    rng = np.random.default_rng(3)
    return mtpp.Graph.from_arrays(
        rng.uniform(50, 100, n).tolist(),
        rng.uniform(1e6, 1e7, n).tolist(),
        rng.uniform(1e5, 1e6, n).tolist(),
        [(i, i + 1) for i in range(n - 1)],
        name="chain",
        units=US_BYTES,
        machine=machine,
    )


A100 = get_device("a100").machine()


def test_a_graph_keeps_its_machine_through_its_file(tmp_path: Path) -> None:
    g = priced_chain(A100)
    path = tmp_path / "g.json"
    g.to_json(str(path))
    doc = json.loads(path.read_text())
    assert doc["version"] == 2 and doc["machine"]["name"] == "a100"
    back = mtpp.load_graph(path)
    assert back == g and back.machine == A100
    plain = priced_chain(None)
    assert json.loads(plain.to_json())["version"] == 1 and "machine" not in json.loads(plain.to_json())


def test_a_machine_in_a_version_1_document_is_refused() -> None:
    doc = json.loads(priced_chain(A100).to_json())
    doc["version"] = 1
    with pytest.raises(GraphFormatError, match="version 2"):
        graph_from_dict(doc)


def test_certify_without_a_machine_given_uses_the_graphs() -> None:
    g = priced_chain(A100)
    spec = get_device("a100")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MachineWarning)
        plain = mtpp.certify(g, k=3, time_limit=20)
    priced = mtpp.certify(spec.problem(g, 3, limit_memory=True), time_limit=20)
    assert plain.machine == "a100" and plain.bandwidth == spec.bandwidth_bytes_per_us and plain.memory == spec.memory
    assert plain.optimal and priced.optimal
    assert plain.upper_bound == priced.upper_bound and plain.lower_bound == priced.lower_bound
    assert any("machine: a100" in note for note in plain.notes)
    at_one = mtpp.certify(g, k=3, bandwidth=1.0, memory=math.inf, time_limit=20)  # figures given win
    assert at_one.bandwidth == 1.0 and at_one.machine is None and at_one.upper_bound != plain.upper_bound


def test_partition_and_device_override() -> None:
    g = priced_chain(A100)
    sol = mtpp.partition(g, 3, orderer="kahn")
    assert sol.problem.machine == A100 and sol.problem.bandwidth == A100.bandwidth
    h100 = mtpp.partition(g, 3, orderer="kahn", device="h100")
    assert h100.problem.machine is not None and h100.problem.machine.name == "h100"
    assert h100.problem.bandwidth == get_device("h100").bandwidth_bytes_per_us


def test_a_graph_in_bytes_at_bandwidth_1_is_warned_about_once_and_silenced_by_a_given_bandwidth() -> None:
    g = priced_chain(None)
    with pytest.warns(MachineWarning, match="bandwidth 1") as record:
        mtpp.partition(g, 2, orderer="kahn")
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", MachineWarning)
        mtpp.partition(g, 2, orderer="kahn", bandwidth=1.0)
        mtpp.partition(g, 2, orderer="kahn", device="a100")
        unitless = mtpp.Graph.from_arrays([1.0, 2.0], [0.0, 0.0], [1.0, 1.0], [(0, 1)])
        mtpp.partition(unitless, 2, orderer="kahn")  # no units: B = 1 may well be meant
    with pytest.warns(MachineWarning):
        cert = mtpp.certify(g, k=2, time_limit=10)
    assert any("bandwidth 1" in note for note in cert.notes)


def test_a_machine_in_other_units_is_refused() -> None:
    seconds = Machine(name="slow", bandwidth=2.0, memory=None, units=Units(time="s", size="GB"))
    with pytest.raises(UnitsMismatchError, match="slow"):
        priced_chain(seconds)
    with pytest.raises(UnitsMismatchError):
        mtpp.partition(priced_chain(None), 2, device=seconds)
    bare = mtpp.Graph.from_arrays([1.0, 2.0], [0.0, 0.0], [1.0, 1.0], [(0, 1)], machine=seconds)
    assert bare.units == {"time": "s", "size": "GB"}  # a machine's figures are in its units


def test_from_networkx_takes_attribute_names_and_never_reads_a_missing_weight_as_zero() -> None:
    g = nx.DiGraph()
    g.add_node("a", duration=3.0, out_cost=2.0, param_cost=1.0)
    g.add_node("b", duration=4.0, out_cost=1.0, param_cost=0.0)
    g.add_edge("a", "b")
    with pytest.raises(MissingWeightError, match=r"node 'a' has no 'work' \(it has duration, out_cost, param_cost\)"):
        mtpp.Graph.from_networkx(g)
    graph = mtpp.Graph.from_networkx(g, work="duration", size_out="out_cost", size_param="param_cost")
    assert graph.work.tolist() == [3.0, 4.0] and graph.size_out.tolist() == [2.0, 1.0]
    assert graph.size_param.tolist() == [1.0, 0.0]
    no_params = mtpp.Graph.from_networkx(g, work="duration", size_out="out_cost", size_param=None)
    assert no_params.size_param.tolist() == [0.0, 0.0]
    with pytest.raises(MissingWeightError, match="size_param=None"):
        mtpp.Graph.from_networkx(g, work="duration", size_out="out_cost", size_param="parms")
    with pytest.raises(InvalidParameterError, match="work"):
        mtpp.Graph.from_networkx(g, work=3)  # type: ignore[arg-type]


def test_a_node_without_work_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(MissingWeightError, match="node 'x'"):
        mtpp.Graph.from_nodes([{"id": "x", "wrok": 1.0}], [])
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"nodes": [{"id": "a", "work": 1}, {"id": "b", "size_out": 2}], "edges": [["a", "b"]]}))
    with pytest.raises(GraphFormatError, match=r"nodes\.1\.work"):
        mtpp.load_graph(path)


def test_an_unknown_key_in_a_device_set_is_refused() -> None:
    with pytest.raises(DeviceModelError, match="sped"):
        DeviceSet(devices=({"name": "gpu", "sped": 2.0},), bandwidth=((1.0,),))


def test_an_empty_method_list_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="no method"):
        mtpp.certify(priced_chain(A100), k=2, bounds=[])


def test_the_command_line_uses_the_recorded_machine_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "g.json"
    priced_chain(A100).to_json(str(path))
    assert main(["solve", str(path), "-k", "3", "--orderer", "kahn"]) == 0
    out = capsys.readouterr()
    assert "machine: a100 (recorded in the graph)" in out.out and "warning" not in out.err
    assert main(["solve", str(path), "-k", "3", "--orderer", "kahn", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["machine"] == "a100" and doc["bandwidth"] == A100.bandwidth
    bare = tmp_path / "bare.json"
    priced_chain(None).to_json(str(bare))
    assert main(["solve", str(bare), "-k", "3", "--orderer", "kahn", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["bandwidth"] == 1.0
    assert out.err.count("mtpp: warning:") == 1 and "bandwidth 1" in out.err
    assert main(["solve", str(bare), "-k", "3", "--orderer", "kahn", "--device", "h100"]) == 0
    assert "machine: h100 (asked for)" in capsys.readouterr().out


def test_solve_has_a_default_time_limit() -> None:
    from mtpp.cli.main import SOLVE_TIME_LIMIT, build_parser

    args = build_parser().parse_args(["solve", "g.json", "-k", "2"])
    assert args.time_limit == SOLVE_TIME_LIMIT and 0 < SOLVE_TIME_LIMIT < math.inf


def test_notes_never_break_a_line_mid_number() -> None:
    import argparse
    import io

    from mtpp.cli.output import notes

    console = notes(argparse.Namespace(quiet=False, json=False))
    console.file = io.StringIO()  # not a terminal: rich would fold at 80 columns
    line = "bound " + " ".join(f"{1234567.891 * i:.6f}" for i in range(1, 20))
    console.print(line)
    assert console.file.getvalue() == line + "\n"
