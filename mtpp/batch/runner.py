"""``mtpp.batch.run``: the tasks of a testbed on joblib, one machine or a Dask cluster.

Each task runs in a **sandbox**: a plain Python process (``subprocess``, so it works
inside daemonic Dask workers too) that each joblib worker keeps for its tasks, fed
one JSON request at a time (:mod:`mtpp.batch.sandbox`, both ends).  The worker waits at
most ``time_limit + grace`` seconds (the hard wall-clock guard); past that it kills
the sandbox and the task is recorded as ``timeout``.  A sandbox that dies (a segfault
in a solver, the OOM killer, ``os._exit``) gives ``crashed`` with its exit code and
the tail of its stderr; the next task starts a fresh one.  If a joblib worker itself
dies (loky ``TerminatedWorkerError``, Dask ``KilledWorker``), the tasks it may have
been running are retried, and a task lost that way twice is recorded as
``crashed``.  In every case the batch goes on.

The parent process writes every result to the store the moment it arrives
(``return_as="generator_unordered"``), so a killed batch loses only the tasks in
flight, and a rerun skips every task already stored (``retry_failed=True`` reruns
those that ended in ``error``, ``crashed`` or ``timeout``).

Backends: ``"loky"`` (default; joblib's process pool) or ``"dask"``: joblib's Dask
backend on an existing ``distributed`` scheduler (``scheduler="tcp://host:8786"`` or a
``distributed.Client``), started by the user with ``dask scheduler`` /
``dask worker`` or any Dask deployment; mtpp runs no scheduler of its own.  The
workers need mtpp installed; graphs travel inside the tasks, so no shared file system
is needed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from mtpp.batch.sandbox import START_TIMEOUT, close_sandbox, run_task, watch_parent
from mtpp.batch.store import ResultStore
from mtpp.batch.tasks import (
    BOUND_METHODS,
    CRASHED,
    FAILED,
    OK,
    SOLVER_METHODS,
    STATUSES,
    TIME_LIMIT,
    GraphSource,
    Settings,
    Task,
    load_sources,
    make_tasks,
    parse_methods,
)
from mtpp.core.errors import InvalidParameterError
from mtpp.core.machine import MachineWarning
from mtpp.core.validation import check_bool, check_count, check_instance, check_real, check_seed, check_time_limit

BACKENDS = ("loky", "dask")
DEFAULT_GRACE = 60.0
ERRORS_KEPT = 5  # failure lines a BatchSummary keeps for the command line
_WORKER_DEATHS = ("TerminatedWorkerError", "BrokenProcessPool", "KilledWorker")
# ``python -c`` puts the current directory first on sys.path: drop it, so an ``mtpp`` folder
# there (a clone, seen from its parent directory) cannot shadow the installed package
LEASE_MARGIN = 60.0  # a claim outlives its task's hard limit (and sandbox start) by this much


# --------------------------------------------------------------------------- batch (parent side)


@dataclass
class BatchSummary:
    """What one :func:`run` did: ``counts`` of the statuses of the tasks it ran,
    ``errors`` the first lines about failed tasks, ``claimed_elsewhere`` the tasks
    left to another batch that holds their lease."""

    store: str
    tasks: int
    skipped: int
    counts: Counter[str] = field(default_factory=Counter)
    wall_time: float = 0.0
    errors: list[str] = field(default_factory=list)
    claimed_elsewhere: int = 0

    @property
    def ran(self) -> int:
        return sum(self.counts.values())

    @property
    def failed(self) -> int:
        return sum(self.counts[s] for s in FAILED)

    def __str__(self) -> str:
        parts = ", ".join(f"{self.counts[s]} {s}" for s in (OK, TIME_LIMIT, *FAILED) if self.counts[s])
        elsewhere = f", {self.claimed_elsewhere} left to another batch" if self.claimed_elsewhere else ""
        return (
            f"{self.tasks} tasks: {self.skipped} already in {self.store}, ran {self.ran}"
            + (f" ({parts})" if parts else "")
            + f"{elsewhere} in {self.wall_time:.1f} s"
        )


class _Progress:
    """A rich progress bar with counts, failures and ETA on stderr (or nothing)."""

    def __init__(self, enabled: bool, total: int, skipped: int) -> None:
        self.bar: Any = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("[bold]batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.bar.start()
        self.id = self.bar.add_task("batch", total=total, stats="")
        if skipped:
            self.bar.console.print(f"{skipped} of {total + skipped} tasks are already in the store; skipped")

    def update(self, counts: Counter[str], line: str | None = None) -> None:
        if self.bar is None:
            return
        if line:
            self.bar.console.print(line, highlight=False, markup=False)
        fails = sum(counts[s] for s in FAILED)
        stats = f"ok {counts[OK]}  time-limit {counts[TIME_LIMIT]}  failed {fails}"
        self.bar.update(self.id, completed=sum(counts.values()), stats=stats)

    def note(self, line: str) -> None:
        if self.bar is not None:
            self.bar.console.print(line, highlight=False, markup=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@contextlib.contextmanager
def _backend(backend: str, scheduler: Any) -> Iterator[None]:
    from joblib import parallel_config

    if backend == "loky":
        if scheduler is not None:
            raise InvalidParameterError("a scheduler is only used with backend 'dask'")
        with parallel_config(backend="loky", initializer=watch_parent, initargs=(os.getpid(),)):
            yield
        return

    try:
        from distributed import Client, get_client
    except ImportError:
        raise InvalidParameterError(
            "backend 'dask' needs dask.distributed: pip install 'dask[distributed]' (or '.[dask]' in a clone of mtpp)"
        ) from None
    own = False
    if scheduler is None:
        try:
            client = get_client()
        except ValueError:
            message = "backend 'dask' needs a scheduler address (--scheduler tcp://HOST:8786)"
            raise InvalidParameterError(message) from None
    elif isinstance(scheduler, str):
        try:
            client = Client(scheduler, timeout=30)
        except (OSError, TimeoutError) as exc:
            raise InvalidParameterError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None
        own = True
    else:
        client = scheduler
    try:
        with parallel_config(backend="dask", client=client):
            yield
    finally:
        if own:
            client.close()


def _check_solver(solver: str, methods: Sequence[str]) -> None:
    if any(m in SOLVER_METHODS for m in methods) and solver != "auto":
        from solvers.registry import backend_class

        backend_class(solver)


def run(
    graphs: Any,
    ks: Iterable[int],
    methods: str | Iterable[str] = "all",
    *,
    solver: str = "auto",
    time_limit: float = 60.0,
    n_jobs: int = 1,
    store: str | os.PathLike[str] | ResultStore = "results.db",
    backend: str = "loky",
    scheduler: Any = None,
    progress: bool | None = None,
    orderer: str = "brkga",
    seed: int = 0,
    threads: int = 1,
    bandwidth: float | None = None,
    memory: float | None = None,
    reserve: float = 0.0,
    device: str | None = None,
    grace: float = DEFAULT_GRACE,
    retry_failed: bool = False,
    task_fn: str | None = None,
    presolve: bool = True,
) -> BatchSummary:
    """Run every ``(graph, k, method)`` task not yet in ``store`` and record each result.

    ``graphs``: graph files, directories (their ``*.json``), globs, :class:`mtpp.Graph`
    objects, or a list of those.  ``methods``: ``"all"`` (``slicegraph:brkga`` and the
    four bounds), ``"bounds"``, ``"orderers"`` (the orderers of the paper's Table 2), or
    names (:func:`mtpp.batch.tasks.parse_methods`).  ``time_limit`` caps each task
    as a whole, from its dispatch (a bound task's partition search included); a task
    with no answer after ``time_limit + grace`` seconds is killed and recorded as
    ``timeout``.  ``orderer`` and ``seed`` make the
    partition (upper bound) of the bound tasks.  ``n_jobs`` tasks run at once (``-1``:
    one per core, or every Dask worker thread).  ``backend="dask"`` runs on the Dask
    scheduler ``scheduler`` (an address or a ``distributed.Client``; ``None``: the
    current client).  ``progress``: a progress bar on stderr (``None``: if a terminal).
    ``bandwidth`` and ``memory`` (``None``: the ``device`` preset's, else each graph's
    recorded machine's, else 1 and unlimited; :mod:`mtpp.core.machine`) and ``reserve``
    are the machine; a graph in bytes priced at ``B = 1`` gets a
    :class:`~mtpp.core.machine.MachineWarning` before any task runs.
    ``presolve`` (default on) runs every task on the graph reduced by
    :mod:`heuristics.partition.presolve` (same optimum; partitions lifted back).
    ``task_fn`` (``"module:function"``) replaces :func:`mtpp.batch.tasks.execute` inside
    the sandbox: a hook for tests and custom methods.

    Returns a :class:`BatchSummary`; the results are in the store
    (:class:`mtpp.batch.store.ResultStore`).  Ctrl-C stops the batch and keeps every
    finished task."""
    t_start = time.perf_counter()
    if backend not in BACKENDS:
        raise InvalidParameterError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
        raise InvalidParameterError(f"n_jobs must be a positive integer or -1, got {n_jobs!r}")
    grace = check_real("grace", grace, positive=False, allow_inf=False)
    time_limit = check_time_limit(time_limit)
    seed = check_seed(seed)
    threads = check_count("threads", threads)
    check_instance("solver", solver, str, "a solver name")
    check_instance("orderer", orderer, str, "an orderer name")
    bandwidth = None if bandwidth is None else check_real("bandwidth", bandwidth, positive=True, allow_inf=False)
    if device is not None:
        from mtpp.core.presets import get_device

        check_instance("device", device, str, "a device preset name")
        get_device(device)  # an unknown preset fails before any work
    memory = None if memory is None else check_real("memory", memory, positive=True, allow_inf=True)
    reserve = check_real("reserve", reserve, positive=False, allow_inf=False)
    check_bool("retry_failed", retry_failed)
    if progress is not None:
        check_bool("progress", progress)
    names = parse_methods(methods)
    _check_solver(solver, names)
    settings = Settings(
        time_limit=time_limit,
        orderer=orderer,
        seed=seed,
        threads=threads,
        bandwidth=bandwidth,
        memory=memory,
        reserve=reserve,
        presolve=presolve,
        device=device,
    )
    if any(m in BOUND_METHODS for m in names):
        from heuristics.partition.orderers import get_orderer

        get_orderer(orderer)  # the upper bound's orderer: fail before any work
    sources: list[GraphSource] = load_sources(graphs)
    tasks = make_tasks(sources, ks, names, solver, settings)
    for source in sources:  # a graph in bytes priced at B = 1: say so before an hour of tasks
        warning = settings.machine(source).warning
        if warning is not None:
            warnings.warn(warning, MachineWarning, stacklevel=2)
    graphs_by_hash = {s.graph_hash: s for s in sources}
    hard_limit = time_limit + grace

    own_store = not isinstance(store, ResultStore)
    db = ResultStore(store) if not isinstance(store, ResultStore) else store
    try:
        done_statuses = STATUSES if not retry_failed else (OK, TIME_LIMIT)
        done = db.keys(statuses=done_statuses)
        pending = {t.key: t for t in tasks if t.key not in done}
        summary = BatchSummary(store=str(db.path), tasks=len(tasks), skipped=len(tasks) - len(pending))
        bar = _Progress(sys.stderr.isatty() if progress is None else progress, len(pending), summary.skipped)
        batch = _Batch(db, pending, graphs_by_hash, summary, bar, n_jobs, task_fn, hard_limit, done_statuses)
        try:
            with _backend(backend, scheduler):
                batch.run()
        finally:
            bar.close()
            close_sandbox()
            db.release()
    finally:
        if own_store:
            db.close()
    summary.wall_time = time.perf_counter() - t_start
    return summary


class _Batch:
    """The dispatch loop of :func:`run`.

    Tasks go to joblib in one stream, each claimed in the store just before it is
    dispatched (a task stored or claimed by another batch meanwhile is left to it);
    each result is stored as it arrives and its claim dropped.  When a
    worker dies, every task dispatched but unanswered is a suspect; suspects then run
    alone, one joblib call each, so a second death is that task's own and it is
    recorded as ``crashed`` (the others are simply rerun)."""

    def __init__(
        self,
        db: ResultStore,
        pending: dict[str, Task],
        sources: dict[str, GraphSource],
        summary: BatchSummary,
        bar: _Progress,
        n_jobs: int,
        task_fn: str | None,
        hard_limit: float,
        done: Sequence[str],
    ) -> None:
        self.db, self.pending, self.sources, self.summary, self.bar = db, pending, sources, summary, bar
        self.n_jobs, self.task_fn, self.hard_limit, self.done = n_jobs, task_fn, hard_limit, done
        self.suspects: list[str] = []

    def record(self, task: Task, result: dict[str, Any]) -> None:
        self.db.put(task, result)
        self.db.release([task.key])
        self.summary.counts[result["status"]] += 1
        line = None
        if result["status"] in FAILED:
            line = f"{result['status']}: {task.label()}: {str(result.get('message', ''))[:300]}"
            if len(self.summary.errors) < ERRORS_KEPT:
                self.summary.errors.append(line)
        self.bar.update(self.summary.counts, line)

    def _stream(self, todo: list[Task], dispatched: list[str]) -> None:
        from joblib import Parallel, delayed

        def calls() -> Iterator[Any]:
            for t in todo:
                if not self.db.claim(t.key, self.done, self.hard_limit + START_TIMEOUT + LEASE_MARGIN):
                    self.pending.pop(t.key, None)  # stored meanwhile, or another batch runs it
                    self.summary.claimed_elsewhere += 1
                    continue
                dispatched.append(t.key)
                yield delayed(run_task)(
                    t.model_dump(), self.sources[t.graph_hash].payload, self.task_fn, self.hard_limit, os.getpid()
                )

        parallel = Parallel(n_jobs=self.n_jobs, return_as="generator_unordered", pre_dispatch="n_jobs", batch_size=1)
        for result in parallel(calls()):
            self.record(self.pending.pop(result.pop("task_key")), result)

    def run(self) -> None:
        while self.pending:
            if self.suspects:
                key = self.suspects.pop(0)
                if key not in self.pending:
                    continue
                try:
                    self._stream([self.pending[key]], [])
                except Exception as exc:
                    if type(exc).__name__ not in _WORKER_DEATHS:
                        raise
                    why = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
                    message = f"the worker died running this task ({why})"
                    self.record(
                        self.pending.pop(key), {"status": CRASHED, "method_status": "worker died", "message": message}
                    )
                continue
            dispatched: list[str] = []
            try:
                self._stream(list(self.pending.values()), dispatched)
            except Exception as exc:
                if type(exc).__name__ not in _WORKER_DEATHS:
                    raise
                self.suspects = [key for key in dispatched if key in self.pending]
                self.bar.note(
                    f"a worker died ({type(exc).__name__}); rerunning the {len(self.suspects)} task(s) "
                    "in flight one at a time"
                )
