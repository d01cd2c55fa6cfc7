"""Batch edges: a failed task fails the command and says why; an ``mtpp`` folder in the
current directory does not shadow the package in the workers; two batches on one
store split the work (leases); a killed batch leaves no worker behind."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mtpp.batch import ResultStore, run
from mtpp.batch.store import owner_alive, this_owner
from mtpp.batch.tasks import Settings, load_sources, make_tasks
from mtpp.cli import main
from mtpp.generators import regal_graph
from tests.mtpp.batch.conftest import ROOT

GRAPH = regal_graph(10, seed=1)
MTPP = str(Path(sys.executable).with_name("mtpp"))  # the console script, as a user runs it


def test_failed_tasks_exit_1_and_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import mtpp.batch.runner as runner

    GRAPH.to_json(str(tmp_path / "g.json"))
    store = str(tmp_path / "r.db")
    monkeypatch.setattr(runner, "run", functools.partial(runner.run, task_fn="tests.mtpp.batch.faults:crash_on_guess"))
    argv = [
        "batch",
        str(tmp_path / "g.json"),
        "-k",
        "2",
        "--methods",
        "simple",
        "guess",
        "--store",
        store,
        "--jobs",
        "1",
        "--orderer",
        "kahn",
        "--solver",
        "highs",
        "--no-progress",
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "crashed: " in err and "k=2 guess" in err and "exit code 13" in err and "1 task(s) failed" in err
    assert main(["table", store]) == 0
    out = capsys.readouterr().out
    assert "Failed tasks (1" in out and "exit code 13" in out


def test_batch_from_a_directory_holding_an_mtpp_folder(tmp_path: Path) -> None:
    """The parent directory of a clone: ``mtpp/`` there is a namespace package that used to
    shadow the installed one in the task processes ("no attribute '__version__'")."""
    if not Path(MTPP).is_file():
        pytest.skip("no mtpp console script next to this Python")
    (tmp_path / "mtpp").mkdir()
    (tmp_path / "mtpp" / "README.md").write_text("a clone")
    GRAPH.to_json(str(tmp_path / "g.json"))
    res = subprocess.run(
        [
            MTPP,
            "batch",
            "g.json",
            "-k",
            "2",
            "--methods",
            "simple",
            "slicegraph:kahn",
            "--store",
            "r.db",
            "--jobs",
            "1",
            "--no-progress",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    with ResultStore(tmp_path / "r.db") as store:
        records = store.records()
    assert [r.status for r in records] == ["ok", "ok"] and all(r.mtpp_version for r in records)


def test_a_live_claim_of_another_batch_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    settings = Settings(time_limit=5.0, orderer="kahn")
    tasks = make_tasks(load_sources(GRAPH), [2, 3], ["simple", "slicegraph:kahn"], "-", settings)
    other = f"{socket.gethostname()}:{os.getppid()}"  # a live process of this host, not us
    assert owner_alive(other) and other != this_owner()
    with ResultStore(path) as store:
        assert store.claim(tasks[0].key, ["ok"], 600.0, owner=other)
        assert not store.claim(tasks[0].key, ["ok"], 600.0)  # held
        assert store.claim(tasks[1].key, ["ok"], -1.0, owner=other)  # already expired
    summary = run(
        GRAPH, [2, 3], ["simple", "slicegraph:kahn"], time_limit=5.0, orderer="kahn", store=path, progress=False
    )
    assert summary.claimed_elsewhere == 1 and summary.ran == len(tasks) - 1
    with ResultStore(path) as store:
        assert tasks[0].key not in store.keys() and len(store) == len(tasks) - 1
        dead = f"{socket.gethostname()}:{2**22 + 12345}"  # no such pid: a killed batch's claim is stale
        assert not owner_alive(dead)
        store.release(owner=other)
        assert store.claim(tasks[0].key, ["ok"], 600.0, owner=dead)
        assert store.claim(tasks[0].key, ["ok"], 600.0)  # taken over
        assert not store.claim(tasks[1].key, ["ok"], 600.0)  # stored already


def test_two_batches_on_one_store_split_the_work(tmp_path: Path) -> None:
    for i, seed in enumerate((1, 2, 3)):
        regal_graph(12, seed=seed).to_json(str(tmp_path / f"g{i}.json"))
    cmd = [
        sys.executable,
        "-m",
        "mtpp",
        "batch",
        str(tmp_path),
        "-k",
        "2",
        "3",
        "4",
        "--methods",
        "simple",
        "slicegraph:random-50",
        "--store",
        str(tmp_path / "r.db"),
        "--jobs",
        "1",
        "--orderer",
        "kahn",
        "--no-progress",
    ]
    procs = [
        subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    ran = [int(e.split(", ran ")[1].split()[0]) for e in errs]
    with ResultStore(tmp_path / "r.db") as store:
        records = store.records()
    assert len(records) == 18 and all(r.attempts == 1 for r in records)
    assert sum(ran) == 18, errs  # every task computed exactly once


def children(pid: int) -> set[int]:
    """Every descendant of ``pid`` (from /proc)."""
    parent_of = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/stat") as fh:
                parent_of[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {c for c, p in parent_of.items() if p in frontier} - found
        found |= frontier
    return found


def count(pids: set[int], needle: bytes) -> int:
    """How many of ``pids`` have ``needle`` in their command line."""
    found = 0
    for pid in pids:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as fh:
            found += needle in fh.read()
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("moment", [b"LokyProcess", b"serve()"])
def test_killed_batch_leaves_no_workers(tmp_path: Path, moment: bytes) -> None:
    """kill -9 of the batch as soon as its workers exist (before any task), or once both
    run a task in their sandboxes: every process it started ends within seconds."""
    for i, seed in enumerate((1, 2)):
        regal_graph(60, seed=seed).to_json(str(tmp_path / f"g{i}.json"))
    cmd = [
        sys.executable,
        "-m",
        "mtpp",
        "batch",
        str(tmp_path),
        "-k",
        "2",
        "4",
        "8",
        "--methods",
        "slicegraph:random-100000",
        "--time-limit",
        "60",
        "--store",
        str(tmp_path / "r.db"),
        "--jobs",
        "2",
        "--no-progress",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while count(children(proc.pid), moment) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, "the batch did not start its workers"
            time.sleep(0.05)
        left = children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 15
        while any(alive(p) for p in left) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in left if alive(p)], "workers of the killed batch still run"
    finally:
        for p in children(proc.pid) | (left if "left" in locals() else set()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
