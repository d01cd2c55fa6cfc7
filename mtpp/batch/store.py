"""The results store: one SQLite row per task, committed the moment it finishes.

SQLite in WAL mode with ``synchronous=FULL``: a row is on disk once :meth:`put`
returns, so killing the batch (Ctrl-C or ``kill -9``) loses only the tasks in
flight.  Rows are keyed by the task key (:attr:`mtpp.batch.tasks.Task.key`, the
primary key), so a rerun cannot duplicate a task: it skips what is done, and a retry
of a failed task replaces its row.  Everything is plain columns and JSON text (the
task's settings, the certificate or solution); nothing is pickled.

Leases: a batch **claims** each task (a row of the ``claims`` table: task key, owner
``host:pid``, expiry time) in the same transaction that checks it is neither stored
nor claimed by a live owner, right before it dispatches the task, and drops the
claim when the result is stored.  So two batches on one store (two processes, or two
machines on a shared file system) split the work instead of computing every task
twice.  A claim is stale, and taken over, when it has expired or its owner is a
process of this host that no longer runs (a killed batch's rerun goes on at once).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from mtpp.batch.tasks import STATUSES, Task
from mtpp.core.errors import InvalidParameterError

SCHEMA_VERSION = "1"

_COLUMNS = """
    task_key       TEXT PRIMARY KEY NOT NULL,
    graph_hash     TEXT NOT NULL,
    graph          TEXT NOT NULL,
    path           TEXT,
    n              INTEGER NOT NULL,
    m              INTEGER NOT NULL,
    k              INTEGER NOT NULL,
    method         TEXT NOT NULL,
    solver         TEXT NOT NULL,
    settings       TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ({statuses})),
    method_status  TEXT,
    bound          REAL,
    ub             REAL,
    method_time    REAL,
    wall_time      REAL,
    solver_used    TEXT,
    solver_version TEXT,
    message        TEXT,
    result         TEXT,
    host           TEXT,
    started_at     TEXT,
    finished_at    TEXT,
    mtpp_version   TEXT,
    attempts       INTEGER NOT NULL DEFAULT 1
"""


@dataclass(frozen=True)
class Record:
    """One stored row.  ``bound`` is the proven lower bound of the task (for a bound
    method: the certificate's, i.e. the best of ``simple`` and the method; for
    ``slicegraph:*``: the simple bound), ``ub`` the re-checked partition value;
    ``method_time`` is the method's own time, ``wall_time`` the whole task's."""

    task_key: str
    graph_hash: str
    graph: str
    path: str | None
    n: int
    m: int
    k: int
    method: str
    solver: str
    settings: str
    status: str
    method_status: str | None
    bound: float | None
    ub: float | None
    method_time: float | None
    wall_time: float | None
    solver_used: str | None
    solver_version: str | None
    message: str | None
    result: str | None
    host: str | None
    started_at: str | None
    finished_at: str | None
    mtpp_version: str | None
    attempts: int

    @property
    def settings_dict(self) -> dict[str, Any]:
        return json.loads(self.settings)  # type: ignore[no-any-return]

    @property
    def result_dict(self) -> dict[str, Any] | None:
        """The task's result document (``mtpp-certificate`` or ``mtpp-solution``,
        :mod:`mtpp.results_schema`) as parsed JSON."""
        return None if self.result is None else json.loads(self.result)


FIELDS = tuple(f.name for f in fields(Record))


class ResultStore:
    """A results database; ``ResultStore(path)`` creates it if missing.

    Use as a context manager or call :meth:`close`.  Batches write (several may share
    one store through :meth:`claim`); readers (``mtpp table``) may open it at the same
    time.  ``read_only=True`` (``mtpp table`` and ``mtpp plot``) never writes: the file
    must exist and hold an mtpp store, and a store in a read-only directory or file
    system can still be read.  Errors are :class:`InvalidParameterError` saying what
    is wrong: read-only, cannot be opened (and why), or not an mtpp results database."""

    def __init__(self, path: str | os.PathLike[str], read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if self.path.is_dir():
            raise InvalidParameterError(f"store {self.path} is a directory; give a file such as results.db")
        if self.path.parent and not self.path.parent.exists():
            raise InvalidParameterError(f"store {self.path}: directory {self.path.parent} does not exist")
        if read_only and not self.path.is_file():
            raise InvalidParameterError(f"store {self.path}: no such file")
        # joblib may pull the next task (and so claim it) from another thread: one lock serialises writes
        self.lock = threading.RLock()
        db: sqlite3.Connection | None = None
        try:
            if read_only:
                db = self._connect_read_only()
            else:
                db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=FULL")
            self.db = db
            if read_only:
                self._check_schema()
            else:
                self._create()
        except (sqlite3.DatabaseError, InvalidParameterError) as exc:
            if db is not None:
                db.close()
            if isinstance(exc, InvalidParameterError):
                raise
            raise InvalidParameterError(store_error(self.path, exc, read_only)) from None

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that cannot write (SQLite ``mode=ro``) and leaves no file
        behind.  Without a ``-wal`` file no batch has the store open (a WAL writer
        keeps one), so the main file holds every row: it is read ``immutable``, which
        creates no ``-wal`` / ``-shm`` next to it.  With one, the reader shares it; if
        SQLite cannot (a directory this process cannot write has no ``-shm`` to share),
        the main file is read ``immutable`` too."""
        uri = self.path.resolve().as_uri()

        def connect(query: str) -> sqlite3.Connection:
            return sqlite3.connect(
                f"{uri}?{query}", uri=True, timeout=60.0, isolation_level=None, check_same_thread=False
            )

        if not Path(f"{self.path}-wal").exists():
            return connect("mode=ro&immutable=1")
        db = connect("mode=ro")
        try:
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            db.close()
            if os.access(self.path.resolve().parent, os.W_OK):
                raise
        return connect("mode=ro&immutable=1")

    def _check_schema(self) -> None:
        cols = [row[1] for row in self.db.execute("PRAGMA table_info(results)")]
        if not cols:
            raise InvalidParameterError(f"store {self.path} is not an mtpp results database (no results table)")
        if tuple(cols) != FIELDS:
            raise InvalidParameterError(f"store {self.path} has another schema (columns {cols})")

    def _create(self) -> None:
        statuses = ", ".join(f"'{s}'" for s in STATUSES)
        with self.lock, self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute(f"CREATE TABLE IF NOT EXISTS results ({_COLUMNS.format(statuses=statuses)})")
            self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT)")
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS claims (task_key TEXT PRIMARY KEY NOT NULL, "
                "owner TEXT NOT NULL, expires REAL NOT NULL)"
            )
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        self._check_schema()

    # ------------------------------------------------------------------ writing
    def put(self, task: Task, result: dict[str, Any]) -> None:
        """Insert the finished ``task`` with its ``result`` fields and commit; a row of
        the same task (a retried failure) is replaced and its ``attempts`` counted."""
        import mtpp

        row: dict[str, Any] = {f: None for f in FIELDS}
        row.update(
            task_key=task.key,
            graph_hash=task.graph_hash,
            graph=task.graph,
            path=task.path,
            n=task.n,
            m=task.m,
            k=task.k,
            method=task.method,
            solver=task.solver,
            attempts=1,
            settings=json.dumps(task.settings, sort_keys=True),
            mtpp_version=mtpp.__version__,
        )
        for f in (
            "status",
            "method_status",
            "bound",
            "ub",
            "method_time",
            "wall_time",
            "solver_used",
            "solver_version",
            "message",
            "result",
            "host",
            "started_at",
            "finished_at",
        ):
            if f in result:
                row[f] = result[f]
        if row["status"] not in STATUSES:
            raise InvalidParameterError(f"unknown status {row['status']!r}; expected one of {STATUSES}")
        names = ", ".join(FIELDS)
        marks = ", ".join("?" for _ in FIELDS)
        update = ", ".join(f"{f} = excluded.{f}" for f in FIELDS if f not in ("task_key", "attempts"))
        with self.lock, self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute(
                f"INSERT INTO results ({names}) VALUES ({marks}) ON CONFLICT (task_key) DO UPDATE SET {update}, "
                "attempts = results.attempts + 1",
                [row[f] for f in FIELDS],
            )

    # ------------------------------------------------------------------ leases
    def claim(self, key: str, done: Iterable[str], seconds: float, owner: str | None = None) -> bool:
        """Claim task ``key`` for ``owner`` (default: this process) for ``seconds``;
        False if a row with a status in ``done`` is stored or a live claim of another
        owner holds it.  One ``BEGIN IMMEDIATE`` transaction: two batches cannot both
        win one task."""
        owner = owner or this_owner()
        wanted = list(done)
        marks = ", ".join("?" for _ in wanted)
        with self.lock, self.db:
            self.db.execute("BEGIN IMMEDIATE")
            if (
                wanted
                and self.db.execute(
                    f"SELECT 1 FROM results WHERE task_key = ? AND status IN ({marks})", [key, *wanted]
                ).fetchone()
            ):
                return False
            held = self.db.execute("SELECT owner, expires FROM claims WHERE task_key = ?", (key,)).fetchone()
            if held is not None and held[0] != owner and held[1] > time.time() and owner_alive(held[0]):
                return False
            self.db.execute(
                "INSERT INTO claims VALUES (?, ?, ?) ON CONFLICT (task_key) DO UPDATE SET "
                "owner = excluded.owner, expires = excluded.expires",
                (key, owner, time.time() + seconds),
            )
        return True

    def release(self, keys: Iterable[str] | None = None, owner: str | None = None) -> None:
        """Drop ``owner``'s claims on ``keys`` (default: all of its claims)."""
        owner = owner or this_owner()
        with self.lock, self.db:
            self.db.execute("BEGIN IMMEDIATE")
            if keys is None:
                self.db.execute("DELETE FROM claims WHERE owner = ?", (owner,))
            else:
                self.db.executemany("DELETE FROM claims WHERE task_key = ? AND owner = ?", [(k, owner) for k in keys])

    # ------------------------------------------------------------------ reading
    def keys(self, statuses: Iterable[str] | None = None) -> set[str]:
        """Keys of the stored tasks (with one of ``statuses``, if given)."""
        if statuses is None:
            return {r[0] for r in self.db.execute("SELECT task_key FROM results")}
        wanted = list(statuses)
        marks = ", ".join("?" for _ in wanted)
        return {r[0] for r in self.db.execute(f"SELECT task_key FROM results WHERE status IN ({marks})", wanted)}

    def records(self) -> list[Record]:
        """Every row, in a stable order (graph, k, method, solver)."""
        cur = self.db.execute(
            f"SELECT {', '.join(FIELDS)} FROM results ORDER BY graph, graph_hash, k, method, solver, task_key"
        )
        return [Record(*row) for row in cur]

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def this_owner() -> str:
    """The owner name of this process's claims: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(owner: str) -> bool:
    """False when ``owner`` is a process of this host that no longer runs; True
    otherwise (another host's process cannot be checked: its claim expires)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def open_store(path: str | os.PathLike[str], must_exist: bool = False, read_only: bool = False) -> ResultStore:
    """Open a store; with ``must_exist``, a missing file raises :class:`InvalidParameterError`;
    ``read_only`` opens it without ever writing (see :class:`ResultStore`)."""
    if must_exist and not Path(path).is_file():
        raise InvalidParameterError(f"store {os.fspath(path)}: no such file")
    return ResultStore(path, read_only=read_only)


def store_error(path: Path, exc: sqlite3.DatabaseError, read_only: bool = False) -> str:
    """One line saying why SQLite refused the store at ``path``: read-only, cannot be
    opened (and why, where the file system says), or not an mtpp results database."""
    text = str(exc)
    low = text.lower()
    if "readonly" in low or "read-only" in low:
        return (
            f"store {path} is read-only ({text}): mtpp batch writes its results there; "
            "mtpp table and mtpp plot only read it"
        )
    if "unable to open" in low or "cannot open" in low:
        parent = path.resolve().parent
        if path.exists() and not os.access(path, os.R_OK):
            why = "permission denied"
        elif not os.access(parent, os.W_OK) and not read_only:
            why = f"its directory {parent} is not writable"
        else:
            why = text
        return f"store {path} cannot be opened: {why}"
    if "not a database" in low or "malformed" in low or "encrypted" in low:
        return f"store {path} is not an mtpp results database ({text})"
    return f"store {path}: {text}"
