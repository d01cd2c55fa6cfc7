"""Messages: batch errors name the file; a read-only or unopenable
store says so; ``table`` never writes; output paths are checked before any work; an
unknown plot format is exit 2; an OS error on writing is one line, exit 1, naming the
path; ``evaluate`` warns (``--strict``: refuses) when a solution names another graph."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import mtpp
from mtpp.batch.store import ResultStore
from mtpp.cli import main
from mtpp.core.fingerprint import graph_hash
from tests.mtpp.batch.test_store import result, tasks
from tests.mtpp.cli.test_exit_codes import no_work, one_error_line  # noqa: F401  (no_work is a fixture)

ROOT = Path(__file__).resolve().parents[3]
CYCLE = {"format": "mtpp-graph", "version": 1, "nodes": [{"id": "a", "work": 1}, {"id": "b", "work": 1}]}


def chain_file(path: Path, n: int = 4, name: str | None = None) -> str:
    g = mtpp.Graph.from_arrays([1.0] * n, [0.0] * n, [1.0] * n, [(i, i + 1) for i in range(n - 1)], name=name)
    g.to_json(str(path))
    return str(path)


@pytest.fixture
def graph_file(tmp_path: Path) -> str:
    return chain_file(tmp_path / "g.json")


def test_batch_error_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    testbed = tmp_path / "bed"
    testbed.mkdir()
    chain_file(testbed / "a_ok.json")
    (testbed / "b_cycle.json").write_text(json.dumps({**CYCLE, "edges": [["a", "b"], ["b", "a"]]}))
    assert main(["batch", str(testbed), "-k", "2", "--store", str(tmp_path / "r.db")]) == 2
    one_error_line(capsys, "CycleError", "b_cycle.json", "cycle")


def test_batch_error_keeps_the_error_type(tmp_path: Path) -> None:
    from mtpp.batch.tasks import load_sources
    from mtpp.core.errors import CycleError

    path = tmp_path / "cyc.json"
    path.write_text(json.dumps({**CYCLE, "edges": [["a", "b"], ["b", "a"]]}))
    with pytest.raises(CycleError, match=r"cyc\.json: the graph has a cycle") as info:
        load_sources(path)
    assert set(info.value.cycle) == {"a", "b"}


def test_table_never_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert main(["table", str(empty)]) == 2
    one_error_line(capsys, "empty.db", "not an mtpp results database")
    assert empty.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


def test_table_on_a_store_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.db"
    with ResultStore(path) as store:
        store.put(tasks()[0], result(1.0))
    before = path.read_bytes()
    assert main(["table", str(path)]) == 0
    assert "simple" in capsys.readouterr().out
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db"]  # no -wal / -shm left behind


def test_read_only_store_sees_a_running_batch(tmp_path: Path) -> None:
    from mtpp.batch.store import open_store

    path = tmp_path / "r.db"
    ts = tasks()
    with ResultStore(path) as writer:
        writer.put(ts[0], result(1.0))
        with open_store(path, must_exist=True, read_only=True) as reader:
            assert [r.task_key for r in reader.records()] == [ts[0].key]
        writer.put(ts[1], result(2.0))  # the writer goes on while a reader had it open
        with open_store(path, must_exist=True, read_only=True) as reader:
            assert len(reader.records()) == 2
    with open_store(path, must_exist=True, read_only=True) as reader:
        assert len(reader.records()) == 2


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory any user can read (pytest's tmp_path is private to its owner)."""
    d = Path(tempfile.mkdtemp(prefix="mtpp-messages-"))
    d.chmod(0o755)
    yield d
    for p in (d, *d.rglob("*")):
        p.chmod(0o755 if p.is_dir() else 0o644)
    shutil.rmtree(d)


def run_unprivileged(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code`` as a user file permissions apply to: this one, or
    ``nobody`` when the tests run as root (who may write anywhere)."""
    prefix: list[str] = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot drop the right to write")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        cache = cwd / "numba-cache"
        cache.mkdir(mode=0o777)
        cache.chmod(0o777)
        env["NUMBA_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [*prefix, sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_read_only_store_says_so(shared_dir: Path) -> None:
    ro = shared_dir / "ro"
    ro.mkdir()
    with ResultStore(ro / "r.db") as store:
        store.put(tasks()[0], result(1.0))
    assert not (ro / "r.db-wal").exists() and not (ro / "r.db-shm").exists()
    (ro / "r.db").chmod(0o444)
    ro.chmod(0o555)
    code = (
        "import sys\n"
        "from mtpp.cli import main\n"
        "from mtpp.batch.store import ResultStore\n"
        "from mtpp.core.errors import InvalidParameterError\n"
        "rc = main(['table', 'ro/r.db'])\n"
        "print('table rc', rc)\n"
        "try:\n"
        "    ResultStore('ro/r.db')\n"
        "except InvalidParameterError as exc:\n"
        "    print('store:', exc)\n"
    )
    proc = run_unprivileged(code, shared_dir)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "table rc 0" in proc.stdout, (proc.stdout, proc.stderr)
    assert "simple" in proc.stdout  # the table was read
    assert "store: store ro/r.db is read-only" in proc.stdout, proc.stdout
    assert "not an mtpp results database" not in proc.stdout + proc.stderr
    assert sorted(p.name for p in ro.iterdir()) == ["r.db"]


def test_store_errors_say_what_is_wrong(tmp_path: Path) -> None:
    from mtpp.batch.store import store_error

    path = tmp_path / "r.db"
    ro = store_error(path, sqlite3.OperationalError("attempt to write a readonly database"))
    assert "read-only" in ro and str(path) in ro
    assert "cannot be opened" in store_error(path, sqlite3.OperationalError("unable to open database file"))
    assert "not an mtpp results database" in store_error(path, sqlite3.DatabaseError("file is not a database"))


@pytest.mark.usefixtures("no_work")
def test_plot_path_checked_before_any_work(tmp_path: Path, graph_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "no" / "chart.png")
    for command in (["solve", graph_file, "-k", "2"], ["certify", graph_file, "-k", "2"]):
        assert main([*command, "--plot", missing]) == 2
        one_error_line(capsys, missing, "does not exist")
        assert main([*command, "--plot", str(tmp_path / "x.xyz")]) == 2
        one_error_line(capsys, "x.xyz", "unknown plot format", ".png")
        assert main([*command, "--plot", str(tmp_path)]) == 2
        one_error_line(capsys, "is a directory")


def test_unknown_plot_format_in_the_api(tmp_path: Path) -> None:
    from mtpp.core.errors import InvalidParameterError
    from mtpp.pipelining.plot import plot_stages

    sol = mtpp.partition(mtpp.Graph.from_arrays([1.0, 2.0], [0.0, 0.0], [1.0, 1.0], [(0, 1)]), k=2, orderer="kahn")
    with pytest.raises(InvalidParameterError, match="unknown plot format"):
        plot_stages(sol.evaluation.costs, sol.lower_bound, str(tmp_path / "x.xyz"))
    assert not (tmp_path / "x.xyz").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "command",
    [
        ["solve", "{g}", "-k", "2", "--orderer", "kahn", "-o", "/dev/full", "-q"],
        ["certify", "{g}", "-k", "2", "--bounds", "simple", "--budget", "3", "-o", "/dev/full", "-q"],
        ["schedule", "{g}", "--method", "dfs", "-o", "/dev/full", "-q"],
        ["place", "{g}", "--method", "single", "-o", "/dev/full", "-q"],
        ["generate", "layered", "-n", "10", "-o", "/dev/full", "-q"],
    ],
)
def test_os_error_on_writing_is_one_line_exit_1(
    command: list[str], graph_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([c.format(g=graph_file) for c in command]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "internal error" not in err, err
    assert err == "mtpp: error: cannot write /dev/full: No space left on device", err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_table_output_os_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.db"
    with ResultStore(path) as store:
        store.put(tasks()[0], result(1.0))
    assert main(["table", str(path), "-o", "/dev/full"]) == 1
    assert capsys.readouterr().err.strip() == "mtpp: error: cannot write /dev/full: No space left on device"


def test_every_document_has_the_graph_fingerprint(graph_file: str) -> None:
    g = mtpp.load_graph(graph_file)
    h = graph_hash(g)
    from mtpp.batch.tasks import graph_hash as batch_graph_hash

    assert batch_graph_hash is graph_hash  # one definition, re-exported
    docs = [
        mtpp.partition(g, k=2, orderer="kahn").to_dict(),
        mtpp.certify(g, k=2, bounds="simple").to_dict(),
        mtpp.schedule(g, method="dfs").to_dict(),
        mtpp.place(g, "cpu-igpu-dgpu", method="single").to_dict(),
    ]
    assert [d["graph_hash"] for d in docs] == [h] * 4


def test_evaluate_warns_on_another_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = chain_file(tmp_path / "mine.json", name="mine")
    other = chain_file(tmp_path / "other.json", name="other")  # same ids, another graph
    sol = str(tmp_path / "sol.json")
    assert main(["solve", mine, "-k", "2", "--orderer", "kahn", "-o", sol, "-q"]) == 0
    capsys.readouterr()
    assert main(["evaluate", mine, sol]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["evaluate", other, sol]) == 0
    out, err = capsys.readouterr()
    assert "valid partition" in out
    assert "mtpp: warning: " in err and "sol.json was made for another graph than" in err and "other.json" in err
    assert main(["evaluate", other, sol, "--strict"]) == 2
    one_error_line(capsys, "sol.json", "another graph", "other.json")
    assert main(["evaluate", mine, sol, "--strict"]) == 0


def test_evaluate_checks_old_files_by_name_and_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = chain_file(tmp_path / "mine.json", n=4)
    bigger = chain_file(tmp_path / "bigger.json", n=5)
    sol = tmp_path / "sol.json"
    assert main(["solve", mine, "-k", "2", "--orderer", "kahn", "-o", str(sol), "-q"]) == 0
    doc = json.loads(sol.read_text())
    del doc["graph_hash"]  # a file written before the fingerprint
    sol.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["evaluate", mine, str(sol)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["evaluate", bigger, str(sol), "--strict"]) == 2
    one_error_line(capsys, "another graph", "n 4, not 5")
