"""The batch runner: crashes, errors and time-outs are recorded and the batch goes on;
reruns skip what is stored; the Dask backend stores what loky stores."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from mtpp.batch import ResultStore, run
from mtpp.core.errors import GraphFormatError, InvalidParameterError
from mtpp.generators import regal_graph
from tests.mtpp.batch.conftest import KS, METHODS, OPTIONS, same_results, stored

GRAPH = regal_graph(10, seed=1)


def statuses(path: Path) -> dict[tuple[int, str], tuple[str, str]]:
    with ResultStore(path) as store:
        return {(r.k, r.method): (r.status, r.message or "") for r in store.records()}


def test_failures_are_recorded_and_the_batch_goes_on(tmp_path: Path) -> None:
    # guess at k=2 kills its task process, at k=3 raises, at k=4 hangs past the hard limit
    path = tmp_path / "r.db"
    summary = run(
        GRAPH,
        [2, 3, 4],
        ["simple", "guess"],
        solver="highs",
        time_limit=1.0,
        grace=1.0,
        store=path,
        orderer="kahn",
        progress=False,
        task_fn="tests.mtpp.batch.faults:faulty_guess",
    )
    assert summary.counts == {"ok": 3, "crashed": 1, "error": 1, "timeout": 1}
    got = statuses(path)
    assert all(got[(k, "simple")][0] == "ok" for k in (2, 3, 4))
    assert got[(2, "guess")][0] == "crashed" and "exit code 13" in got[(2, "guess")][1]
    assert got[(3, "guess")] == ("error", "RuntimeError: injected failure")
    assert got[(4, "guess")][0] == "timeout" and "hard limit of 2 s" in got[(4, "guess")][1]

    # a rerun skips every stored task, failed or not
    again = run(
        GRAPH,
        [2, 3, 4],
        ["simple", "guess"],
        solver="highs",
        time_limit=1.0,
        grace=1.0,
        store=path,
        orderer="kahn",
        progress=False,
    )
    assert again.ran == 0 and again.skipped == 6
    # --retry-failed reruns the failures in place: still one row per task
    retry = run(
        GRAPH,
        [2, 3, 4],
        ["simple", "guess"],
        solver="highs",
        time_limit=1.0,
        grace=5.0,
        store=path,
        orderer="kahn",
        progress=False,
        retry_failed=True,
    )
    assert retry.ran == 3 and retry.skipped == 3
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT method, status, attempts FROM results").fetchall()
    assert len(rows) == 6
    assert sorted(a for m, _, a in rows if m == "guess") == [2, 2, 2]
    assert all(s in ("ok", "time_limit") for _, s, _ in rows)


def test_a_dead_worker_is_recorded_and_the_batch_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    hook = "tests.mtpp.batch.faults:kill_worker_on_guess"
    summary = run(
        GRAPH,
        [2],
        ["simple", "guess", "slicegraph:kahn"],
        solver="highs",
        time_limit=5.0,
        store=path,
        n_jobs=2,
        orderer="kahn",
        progress=False,
        task_fn=hook,
    )
    assert summary.counts == {"ok": 2, "crashed": 1}
    got = statuses(path)
    assert got[(2, "simple")][0] == got[(2, "slicegraph:kahn")][0] == "ok"
    assert got[(2, "guess")][0] == "crashed" and "TerminatedWorkerError" in got[(2, "guess")][1]


def test_dask_backend_stores_the_same_rows_as_loky(testbed: Path, reference: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    path = tmp_path / "dask.db"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        summary = run(
            testbed,
            KS,
            METHODS,
            n_jobs=2,
            store=path,
            backend="dask",
            scheduler=cluster.scheduler_address,
            progress=False,
            **OPTIONS,
        )
    assert summary.counts["ok"] == summary.tasks
    assert same_results(stored(path), stored(reference))


def test_bad_input_raises_mtpp_errors(tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    with pytest.raises(GraphFormatError, match="no such file"):
        run(tmp_path / "missing", [2], "simple", store=store)
    with pytest.raises(InvalidParameterError, match="unknown method 'bogus'"):
        run(GRAPH, [2], ["simple", "bogus"], store=store)
    with pytest.raises(InvalidParameterError, match="unknown orderer"):
        run(GRAPH, [2], "slicegraph:nope", store=store)
    with pytest.raises(InvalidParameterError, match="k must be"):
        run(GRAPH, [0], "simple", store=store)
    with pytest.raises(InvalidParameterError, match="unknown backend"):
        run(GRAPH, [2], "simple", store=store, backend="ray")
    with pytest.raises(InvalidParameterError, match="scheduler"):
        run(GRAPH, [2], "simple", store=store, scheduler="tcp://localhost:1")
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        run(GRAPH, [2], "simple", store=store, n_jobs=0)


def test_a_crash_reports_its_stderr_and_the_log_has_no_name(tmp_path: Path) -> None:
    """The sandbox's stderr goes to an unlinked file: a crash still reports its tail, and
    a batch killed with -9 cannot leave logs behind in the temporary directory."""
    from mtpp.batch.sandbox import Sandbox

    box = Sandbox()
    try:
        box.ensure_started()
        assert box.log is not None and os.fstat(box.log).st_nlink == 0
    finally:
        box.close()
    path = tmp_path / "r.db"
    run(
        GRAPH,
        [2],
        ["simple", "guess"],
        solver="highs",
        time_limit=1.0,
        store=path,
        orderer="kahn",
        progress=False,
        task_fn="tests.mtpp.batch.faults:crash_with_message_on_guess",
    )
    status, message = statuses(path)[(2, "guess")]
    assert status == "crashed" and "exit code 13" in message and "out of cheese" in message
