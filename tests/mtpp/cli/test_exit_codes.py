"""Exit status, one-line errors, path checks before any work, --version / --quiet."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mtpp
from mtpp.cli import main
from tests.oracle import random_dag

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def graph_file(tmp_path: Path) -> str:
    path = tmp_path / "g.json"
    random_dag(np.random.default_rng(7), 12, p=0.3).to_json(str(path))
    return str(path)


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any solve, certify, schedule or place that starts is an internal error (exit 1)."""

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started before the paths were checked")

    import importlib

    for module in ("mtpp.partitioner", "mtpp.engine.certificate", "mtpp.scheduling", "mtpp.placement.api"):
        importlib.import_module(module)  # imported first: a module loaded under the patch would keep `forbidden`
    for target in (
        "mtpp.partitioner.partition",
        "mtpp.engine.certify.certify",
        "mtpp.scheduling.schedule",
        "mtpp.placement.api.place",
        "mtpp.engine.certify.export_models",
    ):
        monkeypatch.setattr(target, forbidden)


def one_error_line(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("mtpp: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


def test_path_errors_exit_2_before_any_work(
    tmp_path: Path, graph_file: str, no_work: None, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope.json")
    binary = tmp_path / "bin.json"
    binary.write_bytes(bytes(range(256)) * 4)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    cases = [
        (["solve", missing, "-k", "2"], ["nope.json", "no such file"]),
        (["solve", str(tmp_path), "-k", "2"], ["is a directory"]),
        (["solve", str(binary), "-k", "2"], ["bin.json", "binary"]),
        (["solve", str(deep), "-k", "2"], ["deep.json", "nested too deeply"]),
        (["solve", graph_file, "-k", "2", "-o", str(tmp_path / "no" / "s.json")], ["does not exist"]),
        (["solve", graph_file, "-k", "2", "-o", str(tmp_path)], ["is a directory"]),
        (["certify", graph_file, "-k", "2", "--export-dir", str(a_file)], ["file.txt", "is a file"]),
        (["schedule", graph_file, "-o", str(tmp_path / "no" / "s.json")], ["does not exist"]),
        (["place", graph_file, "--devices", str(binary)], ["binary"]),
        (["place", graph_file, "--devices", str(tmp_path / "none.json")], ["no such file"]),
        (["evaluate", graph_file, str(binary), "-k", "2"], ["bin.json", "binary"]),
        (["evaluate", graph_file, str(deep), "-k", "2"], ["nested too deeply"]),
        (["import", str(binary), "-o", str(tmp_path / "no" / "g.json")], ["does not exist"]),
        (["plot", missing, "--out", str(a_file)], ["is a file"]),
        (["table", missing], ["no such file"]),
    ]
    for argv, needles in cases:
        assert main(argv) == 2, argv
        one_error_line(capsys, *needles)


def test_bad_device_set_json_is_one_line(tmp_path: Path, graph_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "devices.json"
    bad.write_text(json.dumps({"name": "x", "devices": [{"name": "gpu"}]}))
    assert main(["place", graph_file, "--devices", str(bad)]) == 2
    one_error_line(capsys, "devices.json", "not a device set")
    bad.write_text("{not json")
    assert main(["place", graph_file, "--devices", str(bad)]) == 2
    one_error_line(capsys, "not valid JSON")


def test_garbage_and_renamed_json_onnx_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnx")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(np.random.default_rng(0).bytes(4096))
    renamed = tmp_path / "model.onnx"
    renamed.write_text(json.dumps({"format": "mtpp-graph", "nodes": [{"id": "a"}]}))
    for path in (garbage, renamed):
        assert main(["import", str(path), "-o", str(tmp_path / "g.json")]) == 2
        one_error_line(capsys, path.name, "not an ONNX model")
    assert not (tmp_path / "g.json").exists()


def test_block_minus_one_is_out_of_range(tmp_path: Path, graph_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    g = mtpp.load_graph(graph_file)
    part = tmp_path / "part.json"
    part.write_text(json.dumps({str(v): (-1 if i == 3 else 0) for i, v in enumerate(g.ids)}))
    assert main(["evaluate", graph_file, str(part), "-k", "2"]) == 2
    one_error_line(capsys, "block -1", "blocks are 0..1")


def test_internal_error_is_one_line_and_exit_1(
    graph_file: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: object, out: object) -> int:
        raise ZeroDivisionError("a bug")

    main_module = importlib.import_module("mtpp.cli.main")  # the package's ``main`` attribute is the function
    monkeypatch.setitem(main_module.COMMANDS, "info", broken)
    monkeypatch.delenv("MTPP_DEBUG", raising=False)
    assert main(["info", graph_file]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "internal error: ZeroDivisionError: a bug" in err and "MTPP_DEBUG=1" in err
    monkeypatch.setenv("MTPP_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["info", graph_file])


def test_a_bug_inside_an_entry_point_exits_1(
    graph_file: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug deep in ``solve`` reaches the CLI as :class:`mtpp.core.errors.InternalError` (an
    ``MtppError`` from the entry point) and is still an internal error, not a usage error."""
    import mtpp.partitioner as partitioner

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("deep bug")

    monkeypatch.setattr(partitioner, "slice_order", broken)
    monkeypatch.delenv("MTPP_DEBUG", raising=False)
    assert main(["solve", graph_file, "-k", "2", "--orderer", "kahn"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "internal error in mtpp.partition: ZeroDivisionError: deep bug" in err


def run_cli(*argv: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MTPP_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "mtpp", *argv], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )


def test_version_and_quiet_in_a_real_process(graph_file: str) -> None:
    res = run_cli("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"mtpp {mtpp.__version__}"
    res = run_cli(
        "--quiet",
        "certify",
        graph_file,
        "-k",
        "3",
        "--bounds",
        "simple,bottleneck",
        "--solver",
        "highs",
        "--orderer",
        "kahn",
        "--time-limit",
        "20",
    )
    assert res.returncode == 0 and res.stderr == "" and "LB / UB" in res.stdout
    res = run_cli("solve", graph_file, "-k", "2", "--orderer", "kahn", "-q")
    assert res.returncode == 0 and res.stderr == ""
    res = run_cli("solve", graph_file + ".missing", "-k", "2")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_only_real_paths_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``train regal``: 'regal' is a model kind, not a file; its ``--out`` is a directory."""
    from mtpp.cli.main import build_parser
    from mtpp.cli.paths import check_paths

    check_paths(build_parser().parse_args(["train", "regal", "--out", str(tmp_path / "new")]))
    (tmp_path / "f").write_text("x")
    assert main(["train", "regal", "--out", str(tmp_path / "f")]) == 2
    one_error_line(capsys, "is a file")


def test_compiling_numba_kernels_is_said_once_and_not_when_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from numba import njit
    from rich.console import Console

    from mtpp.cli import output
    from mtpp.cli.output import compile_notice

    monkeypatch.setattr(output, "uncached", lambda: True)  # as on a first run: some kernel has no cache entry

    def fresh_kernels() -> tuple:
        return njit(lambda x: x + 1), njit(lambda x: x * 2)  # not cached: each call site compiles

    for quiet, expected in ((False, 1), (True, 0)):
        buf = io.StringIO()
        with compile_notice(Console(file=buf, quiet=quiet)):
            a, b = fresh_kernels()
            assert a(1) == 2 and b(2.0) == 4.0 and a(1.5) == 2.5
        assert buf.getvalue().count("compiling numba kernels") == expected
    buf = io.StringIO()
    with compile_notice(Console(file=buf)):
        assert a(3) == 4  # compiled already: nothing to say
    assert buf.getvalue() == ""


def test_a_kernel_compiled_once_is_found_in_the_cache_so_repeat_runs_stay_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mtpp.cli.output import uncached
    from mtpp.core import jit
    from mtpp.core.graph import kahn_stack

    ptr, idx = np.array([0, 1, 1], dtype=np.int64), np.array([1], dtype=np.int64)
    order, count = kahn_stack.dispatcher(ptr, idx, np.array([0, 1], dtype=np.int64))
    assert count == 2 and order.tolist() == [0, 1]
    assert kahn_stack._dispatcher._cache._cache_file._load_index()  # numba wrote (or found) its entry
    monkeypatch.setattr(jit, "KERNELS", [kahn_stack])  # other kernels of this worker may be compiling elsewhere
    assert not uncached()
