"""Units in graph files and tables; what the README promises of the Python API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mtpp
from mtpp.cli import main
from mtpp.core.devices import IMPORT_UNITS
from tests.oracle import random_dag


def test_units_round_trip_and_show_in_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = random_dag(np.random.default_rng(1), 8, p=0.4)
    with_units = mtpp.Graph.from_arrays(
        g.work, g.size_param, g.size_out, np.stack([g.edge_src, g.edge_dst], 1), units={"time": "ms", "size": "MiB"}
    )
    path = tmp_path / "g.json"
    with_units.to_json(str(path))
    assert json.loads(path.read_text())["units"] == {"time": "ms", "size": "MiB"}
    back = mtpp.load_graph(path)
    assert back.units == {"time": "ms", "size": "MiB"} and back == with_units
    assert main(["solve", str(path), "-k", "2", "--orderer", "kahn"]) == 0
    out = capsys.readouterr().out
    assert "time in ms, sizes in MiB" in out and "ms   (* marks" in out
    assert main(["schedule", str(path), "--method", "dfs"]) == 0
    assert "MiB   (dfs)" in capsys.readouterr().out
    assert main(["solve", str(path), "-k", "2", "--orderer", "kahn", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["units"] == {"time": "ms", "size": "MiB"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"units": {"time": "s"}, "nodes": [{"id": "a"}]}))
    assert main(["info", str(bad)]) == 2
    assert "units.size" in capsys.readouterr().err


def test_example_and_importers_use_the_presets_units(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert mtpp.load_example().units == IMPORT_UNITS == {"time": "us", "size": "bytes"}
    onnx = pytest.importorskip("onnx")
    model = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_squeezenet.onnx"
    if not model.is_file():
        pytest.skip("onnx's light model zoo is not installed")
    out = tmp_path / "squeezenet.json"
    assert main(["import", str(model), "-o", str(out), "--device", "h100"]) == 0
    assert mtpp.load_graph(out).units == IMPORT_UNITS
    capsys.readouterr()


def test_readme_api_promises() -> None:
    """A fresh interpreter: ``mtpp.core.devices`` after ``import mtpp``; ``peak_memory`` of
    ``Schedule.order`` (string ids)."""
    code = (
        "import mtpp; print(mtpp.get_device('h100').name); g = mtpp.load_example(); "
        "s = mtpp.schedule(g, method='dfs'); print(mtpp.peak_memory(g, s.order) == s.peak == "
        "mtpp.peak_memory(g, s.index_order))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["h100", "True"]
    g = mtpp.load_example()
    with pytest.raises(mtpp.UnknownNodeError):
        mtpp.peak_memory(g, ["no-such-op", *g.ids[1:]])
