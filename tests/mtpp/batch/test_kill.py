"""kill -9 of a real ``mtpp batch`` mid-run, then the same command again."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.mtpp.batch.conftest import CLI_OPTIONS, KS, METHODS, N_GRAPHS, ROOT, same_results, stored


def count_rows(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=5)) as db:
            return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:  # the batch has not created the table yet
        return 0


def test_sigkill_then_rerun_completes_without_duplicates(testbed: Path, reference: Path, tmp_path: Path) -> None:
    store = tmp_path / "results.db"
    cmd = [
        sys.executable,
        "-m",
        "mtpp.cli",
        "batch",
        str(testbed),
        "-k",
        *map(str, KS),
        "--methods",
        *METHODS,
        "--jobs",
        "2",
        "--store",
        str(store),
        "--no-progress",
        *CLI_OPTIONS,
    ]
    total = N_GRAPHS * len(KS) * len(METHODS)
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while count_rows(store) < 2:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the batch stored nothing in 90 s"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        at_kill = count_rows(store)
        assert 2 <= at_kill < total, f"killed too late: {at_kill} of {total} tasks were done"

        again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert again.returncode == 0, again.stderr
        assert f"{at_kill} already in" in again.stderr  # the rerun skipped what was stored
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything left of the killed batch

    with sqlite3.connect(store) as db:
        n, distinct = db.execute("SELECT COUNT(*), COUNT(DISTINCT task_key) FROM results").fetchone()
        assert db.execute("SELECT MAX(attempts) FROM results").fetchone()[0] == 1
    assert n == distinct == total
    assert same_results(stored(store), stored(reference))
