"""The batch command line: table and plot on a store, one-line errors, handlers raising mtpp errors."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest
from rich.console import Console

from benchmarks.testbed import generate, verify
from mtpp.cli import main
from mtpp.cli.batch import COMMANDS
from mtpp.core.errors import GraphFormatError, InvalidParameterError


def test_table_and_plot(reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", str(reference)]) == 0
    out = capsys.readouterr().out
    assert "### LB / best UB" in out and "| simple " in out and "random-20" in out and "instances" in out
    assert main(["table", str(reference), "--format", "latex", "-o", str(tmp_path / "t.tex")]) == 0
    assert r"\toprule" in (tmp_path / "t.tex").read_text()
    assert main(["plot", str(reference), "--out", str(tmp_path / "p"), "--format", "png"]) == 0
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["lb_ub.png", "runtime.png"]


def test_errors_are_one_line_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", str(tmp_path / "none.db")]) == 2
    assert main(["batch", str(tmp_path / "none"), "-k", "2", "--store", str(tmp_path / "r.db")]) == 2
    assert main(["batch", str(tmp_path), "-k", "2", "--scheduler", "tcp://x:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("mtpp: error: ") for line in err)


def test_handlers_raise_mtpp_errors(tmp_path: Path) -> None:
    console = Console(file=io.StringIO())
    with pytest.raises(InvalidParameterError, match="no such file"):
        COMMANDS["table"](argparse.Namespace(store=str(tmp_path / "x.db"), format="markdown", output=None), console)
    ns = argparse.Namespace(
        graphs=[str(tmp_path / "nothing")],
        k=[2],
        methods=["all"],
        solver="auto",
        time_limit=1.0,
        jobs=1,
        store=str(tmp_path / "r.db"),
        backend="loky",
        scheduler=None,
        progress=False,
        orderer="brkga",
        seed=0,
        threads=1,
        bandwidth=1.0,
        memory=None,
        reserve=0.0,
        device=None,
        grace=1.0,
        retry_failed=False,
        presolve=True,
    )
    with pytest.raises(GraphFormatError):
        COMMANDS["batch"](ns, console)


def test_testbed_regenerates_identically(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", "smoke")
    b = generate(tmp_path / "b", "smoke")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert verify(tmp_path / "a") == []
    a[0].write_text(a[1].read_text())
    assert verify(tmp_path / "a") == [f"graphs/{a[0].name}: the file differs from the manifest"]
