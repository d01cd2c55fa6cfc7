import json
import subprocess
import sys

import numpy as np
import pytest

from mtpp import Graph
from mtpp.cli import main
from tests.oracle import random_dag


def write_graph(tmp_path, g: Graph):
    path = tmp_path / "g.json"
    g.to_json(str(path))
    return str(path)


def test_solve_prints_table_and_bounds(tmp_path, capsys):
    path = write_graph(tmp_path, random_dag(np.random.default_rng(40), 20, p=0.2))
    assert main(["solve", path, "-k", "3", "--orderer", "random-10"]) == 0
    out = capsys.readouterr().out
    assert "bottleneck (upper bound)" in out and "simple lower bound" in out and "LB / UB" in out


def test_solve_json_then_evaluate(tmp_path, capsys):
    path = write_graph(tmp_path, random_dag(np.random.default_rng(41), 15, p=0.3))
    sol_path = tmp_path / "sol.json"
    assert main(["solve", path, "-k", "3", "--orderer", "dfs", "--json", "-o", str(sol_path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads(sol_path.read_text())
    assert printed["upper_bound"] == saved["upper_bound"]
    assert main(["evaluate", path, str(sol_path), "-k", "3", "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["upper_bound"] == saved["upper_bound"]


def test_errors_are_one_line_with_exit_2(tmp_path, capsys):
    bad = tmp_path / "cyc.json"
    bad.write_text('{"nodes": [{"id": "a", "work": 1}, {"id": "b", "work": 1}], "edges": [["a", "b"], ["b", "a"]]}')
    assert main(["solve", str(bad), "-k", "2"]) == 2
    err = capsys.readouterr().err
    assert "CycleError" in err and "'a'" in err and "Traceback" not in err
    good = write_graph(tmp_path, random_dag(np.random.default_rng(42), 5, p=0.5))
    assert main(["solve", good, "-k", "0"]) == 2
    assert "k must be >= 1" in capsys.readouterr().err
    part = tmp_path / "part.json"
    part.write_text('{"0": 0, "1": 1}')
    assert main(["evaluate", good, str(part), "-k", "2"]) == 2
    assert "no block" in capsys.readouterr().err
    part.write_text('{"0": 0, "1": 0, "2": 1, "3": 1, "4": 1, "9": 0}')
    assert main(["evaluate", good, str(part), "-k", "2"]) == 2
    err = capsys.readouterr().err
    assert "node '9' is not in" in err and "Traceback" not in err
    part.write_text('{"assignment": {"0": 0, "1": 0, "2": 0, "3": 0, "4": 0}, "order": [0, 1, 2, 3, 7]}')
    assert main(["evaluate", good, str(part), "-k", "2"]) == 2
    assert "node '7' is not in" in capsys.readouterr().err


def test_info(tmp_path, capsys):
    path = write_graph(tmp_path, random_dag(np.random.default_rng(43), 12, p=0.3))
    assert main(["info", path]) == 0
    assert "nodes" in capsys.readouterr().out


def test_console_script_entry_point(tmp_path):
    path = write_graph(tmp_path, random_dag(np.random.default_rng(44), 8, p=0.3))
    res = subprocess.run(
        [sys.executable, "-m", "mtpp.cli", "solve", path, "-k", "2", "--orderer", "kahn"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "bottleneck" in res.stdout


def test_certify_json_and_output(tmp_path, capsys):
    path = write_graph(tmp_path, random_dag(np.random.default_rng(45), 10, p=0.3))
    out = tmp_path / "cert.json"
    assert (
        main(
            [
                "certify",
                path,
                "-k",
                "3",
                "--solver",
                "highs",
                "--time-limit",
                "10",
                "--orderer",
                "kahn",
                "--json",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    assert printed["lower_bound"] <= printed["upper_bound"]
    assert printed["bounds"][0]["method"] == "simple"


def test_certify_table_and_bad_solver(tmp_path, capsys):
    path = write_graph(tmp_path, random_dag(np.random.default_rng(46), 8, p=0.3))
    assert (
        main(["certify", path, "-k", "2", "--solver", "highs", "--bounds", "simple,bottleneck", "--orderer", "kahn"])
        == 0
    )
    assert "LB / UB" in capsys.readouterr().out
    assert main(["certify", path, "-k", "2", "--solver", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err


def test_generate_is_seeded(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["generate", "layered", "-n", "60", "--seed", "4", "-o", str(a)]) == 0
    assert main(["generate", "layered", "-n", "60", "--seed", "4", "-o", str(b)]) == 0
    assert a.read_text() == b.read_text()
    assert main(["generate", "regal", "--seed", "2"]) == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert 50 <= len(doc["nodes"]) <= 200
    assert main(["generate", "layered"]) == 2


def test_certify_export_dir_models_resolve_to_the_optimum(tmp_path, capsys):
    import highspy

    path = write_graph(tmp_path, random_dag(np.random.default_rng(47), 7, p=0.4))
    out = tmp_path / "models"
    assert main(["certify", path, "-k", "3", "--solver", "highs", "--export-dir", str(out), "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    names = sorted(p.name for p in out.iterdir())
    assert names == ["bottleneck.mps", "exact.mps", "guess_j01.mps", "guess_j02.mps", "guess_j03.mps"]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(out / "exact.mps"))
    h.run()
    assert cert["optimal"]
    assert h.getInfo().objective_function_value == pytest.approx(cert["upper_bound"], rel=1e-6)


def test_schedule_command(tmp_path, capsys):
    import mtpp
    from mtpp.core.memory import peak_memory

    g = random_dag(np.random.default_rng(48), 9, p=0.4)
    path = write_graph(tmp_path, g)
    assert main(["schedule", path, "--method", "exact-dp", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    order = [g.index(v) for v in doc["order"]]
    assert doc["upper_bound"] == pytest.approx(peak_memory(g, order))
    assert doc["lower_bound"] <= doc["upper_bound"]
    assert main(["schedule", path, "--method", "teleport"]) == 2
    assert callable(mtpp.schedule)


def test_peak_aware_solve_then_evaluate_uses_the_saved_order(tmp_path, capsys):
    g = random_dag(np.random.default_rng(49), 14, p=0.3)
    path = write_graph(tmp_path, g)
    sol = tmp_path / "sol.json"
    memory = str(float(g.size_out.sum()) / 4)
    assert (
        main(
            [
                "solve",
                path,
                "-k",
                "3",
                "--orderer",
                "random-20",
                "--memory",
                memory,
                "--peak-aware",
                "--json",
                "-o",
                str(sol),
            ]
        )
        == 0
    )
    solved = json.loads(capsys.readouterr().out)
    assert main(["evaluate", path, str(sol), "-k", "3", "--memory", memory, "--peak-aware", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["upper_bound"] == pytest.approx(solved["upper_bound"])
    assert main(["solve", path, "-k", "3", "--memory", memory, "--reserve", "1", "--peak-aware"]) == 2
    assert "reserve" in capsys.readouterr().err


def test_import_onnx_then_solve(tmp_path, capsys):
    from pathlib import Path

    onnx = pytest.importorskip("onnx")
    model = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_squeezenet.onnx"
    if not model.is_file():
        pytest.skip("onnx's light model zoo is not installed")
    out = tmp_path / "squeezenet.json"
    assert main(["import", str(model), "-o", str(out), "--batch", "2", "--device", "a100"]) == 0
    assert "solve with" in capsys.readouterr().out
    assert main(["solve", str(out), "-k", "4", "--orderer", "dfs"]) == 0
    assert "bottleneck (upper bound)" in capsys.readouterr().out


def test_place_command(tmp_path, capsys):
    path = write_graph(tmp_path, random_dag(np.random.default_rng(60), 6, p=0.4))
    assert main(["place", path, "--devices", "two-devices", "--method", "heft", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["method"] == "heft" and len(doc["assignment"]) == 6
    assert doc["lower_bound"] is None or doc["lower_bound"] <= doc["makespan"] + 1e-9
    assert main(["place", path, "--devices", "no-such-preset"]) == 2
