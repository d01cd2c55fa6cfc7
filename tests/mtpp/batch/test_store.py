"""The results store: WAL mode, one row per task key, JSON only, reopen and reread."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mtpp.batch.store import ResultStore, open_store
from mtpp.batch.tasks import GraphSource, Settings, make_tasks
from mtpp.core.errors import InvalidParameterError
from mtpp.generators import regal_graph


def tasks():
    src = GraphSource.from_graph(regal_graph(10, seed=1), "g.json")
    return make_tasks([src], [2, 4], ["simple", "bottleneck"], "highs", Settings(time_limit=10))


def result(bound: float, status: str = "ok") -> dict:
    return {
        "status": status,
        "method_status": "optimal",
        "bound": bound,
        "ub": 2.0 * bound,
        "method_time": 0.5,
        "wall_time": 0.6,
        "solver_used": "highs",
        "solver_version": "1.12.0",
        "message": "",
        "result": json.dumps({"lower_bound": bound}),
        "host": "h:1",
        "started_at": "t0",
        "finished_at": "t1",
    }


def test_one_row_per_task_committed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    ts = tasks()
    with ResultStore(path) as store:
        store.put(ts[0], result(1.0, "error"))
        # another connection sees the row at once: it is committed
        with sqlite3.connect(path) as other:
            assert other.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1
            assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        store.put(ts[0], result(1.5))  # a retry replaces the row
        store.put(ts[1], result(3.0))
        assert len(store) == 2
        assert store.keys() == {ts[0].key, ts[1].key}
        assert store.keys(statuses=["error"]) == set()
    with open_store(path, must_exist=True) as store:
        records = {r.task_key: r for r in store.records()}
    r0 = records[ts[0].key]
    assert (r0.status, r0.bound, r0.ub, r0.attempts) == ("ok", 1.5, 3.0, 2)
    assert r0.result_dict == {"lower_bound": 1.5} and r0.settings_dict == ts[0].settings
    assert (r0.graph, r0.path, r0.n, r0.k, r0.method, r0.solver) == (ts[0].graph, "g.json", 10, 2, "simple", "-")


def test_no_pickle_only_plain_columns(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    with ResultStore(path) as store:
        for t in tasks():
            store.put(t, result(1.0))
    with sqlite3.connect(path) as db:
        for row in db.execute("SELECT * FROM results"):
            assert all(v is None or isinstance(v, (str, int, float)) for v in row)
        with pytest.raises(sqlite3.IntegrityError):  # the key is unique at the database level
            db.execute("INSERT INTO results SELECT * FROM results")


def test_bad_stores_raise(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="no such file"):
        open_store(tmp_path / "missing.db", must_exist=True)
    with pytest.raises(InvalidParameterError, match="directory"):
        ResultStore(tmp_path)
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all " * 100)
    with pytest.raises(InvalidParameterError, match="not an mtpp results database"):
        ResultStore(junk)
    with ResultStore(tmp_path / "r.db") as store, pytest.raises(InvalidParameterError, match="unknown status"):
        store.put(tasks()[0], result(1.0, "fine"))
