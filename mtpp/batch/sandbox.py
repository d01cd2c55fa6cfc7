"""The batch sandbox, both ends: the long-lived task process each batch worker keeps
(:class:`Sandbox`, :func:`run_task`, the client) and the loop that process runs
(:func:`serve`, the server).

A worker sends one JSON request per line (``{"task", "graph", "fn", "deadline", "spent"}``,
or, in place of ``"graph"``, ``"graph_hash"`` and ``"graph_bytes"``: that many bytes of
:func:`mtpp.batch.tasks.graph_payload` follow the line, none where the sandbox already
holds that graph from its previous task) on
the sandbox's stdin and reads one JSON answer per line from its original stdout, while
anything the solvers print goes to ``/dev/null``.  A request with no answer within the
hard limit kills the sandbox (``timeout``); a sandbox that dies gives ``crashed`` with
its exit code and the tail of its stderr; the next task starts a fresh one.  Each end
watches the other: a worker whose batch is gone ends itself, a sandbox whose worker is
gone (or whose task overran its deadline, or that idled too long) ends itself.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from mtpp.batch.tasks import CRASHED, ERROR, TIMEOUT, Task, canonical_json, execute, graph_of_payload, now
from mtpp.core.graph import Graph

START_TIMEOUT = 180.0  # seconds for a sandbox to import mtpp and say it is ready
IDLE_RESTART = 60.0  # a sandbox idle this long is replaced (it exits by itself after 120 s)
LOG_TAIL = 1500
SANDBOX_MAIN = "import sys; sys.path[:] = [p for p in sys.path if p]; from mtpp.batch.sandbox import serve; serve()"
PARENT_POLL = 0.5  # seconds between a worker's checks that the batch is still alive
WARM_UP_OPS = 20
"""A sandbox loads numba before its first task on a graph of more ops (:func:`_warm_up`);
tasks on smaller graphs mostly run on :mod:`mtpp.core.jit`'s Python path and need none
(a one-op or 20-op chain needs no numba at all)."""


# --------------------------------------------------------------------------- client (worker side)


class SandboxError(RuntimeError):
    """A sandbox process cannot be started: the environment is broken, not a task."""


# --------------------------------------------------------------------------- sandbox (worker side)


class Sandbox:
    """A long-lived task process owned by one worker thread."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: int | None = None  # read end of the sandbox's stderr file, which has no name
        self.buffer = b""
        self.last_used = 0.0
        self.holds: str | None = None  # hash of the graph the sandbox kept from its last task

    def _start(self) -> None:
        env = dict(os.environ)
        # the sandbox sees the modules its worker sees (a worker's sys.path may differ from the default)
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in sys.path if p and os.path.isdir(p)))
        env.setdefault("NUMBA_NUM_THREADS", "1")
        env.setdefault("OMP_NUM_THREADS", "1")
        # the file is unlinked at once: a batch killed with -9 leaves no log behind
        fd, path = tempfile.mkstemp(prefix="mtpp-batch-", suffix=".log")
        try:
            self.log = os.open(path, os.O_RDWR)
            os.close(fd)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # appends stay at the end after a truncate
        finally:
            os.unlink(path)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", SANDBOX_MAIN],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=fd,
                env=env,
            )
        finally:
            os.close(fd)
        self.buffer = b""
        self.holds = None
        line = self._read_line(time.monotonic() + START_TIMEOUT)
        if not isinstance(line, dict) or not line.get("ready"):
            tail = self._log_tail()
            self.close()
            raise SandboxError(f"the task process did not start ({line!r}); its stderr ends with:\n{tail}")
        self.last_used = time.monotonic()

    def _read_line(self, deadline: float) -> dict[str, Any] | str | None:
        """The next JSON line; ``None`` at end of file; ``"timeout"`` past ``deadline``."""
        import json

        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout"
            ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)  # type: ignore[no-any-return]

    def _log_tail(self) -> str:
        if self.log is None:
            return ""
        try:
            size = os.fstat(self.log).st_size
            return os.pread(self.log, LOG_TAIL, max(0, size - LOG_TAIL)).decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for pipe in (self.proc.stdin, self.proc.stdout):
                if pipe is not None:
                    pipe.close()
            self.proc = None
        self.holds = None
        if self.log is not None:
            with contextlib.suppress(OSError):
                os.close(self.log)
            self.log = None

    def ensure_started(self) -> None:
        stale = time.monotonic() - self.last_used > IDLE_RESTART
        if self.proc is None or self.proc.poll() is not None or stale:
            self.close()
            self._start()

    def run(
        self, request: dict[str, Any], hard_limit: float, payload: bytes | None = None, graph_hash: str | None = None
    ) -> dict[str, Any]:
        """Send one task; its answer, or a ``crashed`` / ``timeout`` record.  ``payload``
        (with its ``graph_hash``): the task's graph as :func:`mtpp.batch.tasks.graph_payload`
        in place of ``request["graph"]``; not sent again where the sandbox holds it."""
        self.ensure_started()
        assert self.proc is not None and self.proc.stdin is not None and self.log is not None
        os.ftruncate(self.log, 0)
        request = {**request, "deadline": hard_limit + 5.0}
        blob = b""
        if payload is not None:
            blob = b"" if graph_hash is not None and graph_hash == self.holds else payload
            request.update(graph_hash=graph_hash, graph_bytes=len(blob))
            self.holds = None  # until the sandbox answers: it drops what it held on a new graph
        t0 = time.monotonic()
        try:
            self.proc.stdin.write((canonical_json(request) + "\n").encode("utf-8"))
            if blob:
                self.proc.stdin.write(blob)
            self.proc.stdin.flush()
            answer = self._read_line(t0 + hard_limit)
        except (BrokenPipeError, ConnectionResetError):
            answer = None
        finally:
            self.last_used = time.monotonic()
        if isinstance(answer, dict):
            self.holds = answer.pop("holds", None)  # the graph the sandbox kept, by its own word
            return answer
        if answer == "timeout":
            self.close()
            message = f"no answer within the hard limit of {hard_limit:g} s (time limit + grace); killed"
            return {"status": TIMEOUT, "method_status": "killed", "message": message}
        code = self.proc.wait()
        how = f"exit code {code}"
        if code < 0:
            how = f"signal {signal.Signals(-code).name}" if -code in signal.valid_signals() else f"signal {-code}"
        tail = self._log_tail()
        self.close()
        message = f"the task process died ({how})" + (f"; stderr ends with: {tail}" if tail else "")
        return {"status": CRASHED, "method_status": "crashed", "message": message}


_local = threading.local()
_watched_parent: list[int] = []


def watch_parent(parent: int | None = None) -> None:
    """Start (once per process) a daemon thread that ends this worker process as soon as
    its parent (``parent``, the batch's pid; default: the parent now) is gone (``kill
    -9`` of the batch leaves loky workers behind otherwise); the worker's sandbox then
    ends by its own watchdog.  The loky initializer passes the batch's pid, so a worker
    that starts after the batch died (already reparented) ends at once."""
    if _watched_parent:
        return
    parent = os.getppid() if parent is None else parent
    _watched_parent.append(parent)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL)
        os._exit(1)

    threading.Thread(target=watch, name="mtpp-batch-parent-watchdog", daemon=True).start()


def _sandbox() -> Sandbox:
    box = getattr(_local, "sandbox", None)
    if box is None:
        box = _local.sandbox = Sandbox()
    return box


def close_sandbox() -> None:
    """Stop this thread's sandbox process, if any (the workers' ones end by themselves)."""
    box = getattr(_local, "sandbox", None)
    if box is not None:
        box.close()
        _local.sandbox = None


def run_task(
    task: dict[str, Any], graph_json: str | bytes, fn: str | None, hard_limit: float, batch_pid: int = -1
) -> dict[str, Any]:
    """What a joblib worker runs: one task in this thread's sandbox, on the graph
    ``graph_json``: its JSON text, or :func:`mtpp.batch.tasks.graph_payload` (what the
    runner sends: kept by the sandbox for the next task on the same graph).  Never raises for a
    task's own failure; returns the result fields plus ``task_key`` and ``wall_time``
    (from dispatch: the start of a sandbox started for this task included; that start
    also comes off the task's time limit, see :func:`mtpp.batch.tasks.execute`).
    In a worker process (not the batch's own, ``batch_pid``), the worker ends itself
    (and so its sandbox) within a second of its parent's death."""
    if os.getpid() != batch_pid:
        watch_parent()
    box = _sandbox()
    t0 = time.perf_counter()
    box.ensure_started()  # a sandbox started here (the first task, or after a crash) counts on this task
    spent = time.perf_counter() - t0
    request: dict[str, Any] = {"task": task, "fn": fn, "spent": spent}
    if isinstance(graph_json, bytes):
        result = box.run(request, hard_limit, graph_json, str(task["graph_hash"]))
    else:
        result = box.run({**request, "graph": graph_json}, hard_limit)
    result["wall_time"] = time.perf_counter() - t0
    result["task_key"] = Task.model_validate(task).key
    return result


# --------------------------------------------------------------------------- server (sandbox side)


def resolve(fn: str | None) -> Callable[[Task, str], dict[str, Any]]:
    """The task function named ``"module:function"`` (default: :func:`execute`)."""
    if not fn:
        return execute
    module, _, name = fn.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj  # type: ignore[no-any-return]


class _Watchdog(threading.Thread):
    """Ends this process when its parent dies (an orphan must not run on), when a task
    overruns its hard deadline, or after ``idle`` seconds without a request."""

    def __init__(self, idle: float) -> None:
        super().__init__(daemon=True)
        self.parent = os.getppid()
        self.idle = idle
        self.deadline = time.monotonic() + idle
        self.busy = False

    def arm(self, seconds: float | None) -> None:
        self.busy = seconds is not None
        self.deadline = time.monotonic() + (seconds if seconds is not None else self.idle)

    def run(self) -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != self.parent:
                os._exit(75)
            if time.monotonic() > self.deadline:
                os._exit(76 if self.busy else 0)


def _warm_up(compiled: bool) -> None:
    """Import the bound modules and run the SliceGraph kernels once, so that no task's
    run time includes it; ``compiled``: the kernels compiled by numba (loading numba),
    which :func:`serve` does before the first task on a graph of more than
    :data:`WARM_UP_OPS` ops (off that task's time limit, as the sandbox's start is)."""
    import numpy as np

    import mtpp.engine.certificate  # noqa: F401
    from mtpp.core import jit
    from mtpp.partitioner import partition

    g = Graph.from_arrays(np.ones(4), np.zeros(4), np.ones(4), np.array([[0, 1], [1, 2], [0, 3]]), name="warm-up")
    with jit.settings(threshold=0 if compiled else None):
        for orderer in ("kahn", "random-2", "brkga-4"):
            with contextlib.suppress(Exception):
                partition(g, 2, orderer=orderer)


def serve(idle: float = 120.0) -> None:
    """The sandbox loop: read ``{"task", "graph", "fn", "deadline", "spent"}`` lines (or a
    graph payload after the line: module docstring), answer each with one JSON line.
    Anything the solvers write to fd 1 goes to ``/dev/null``."""
    import faulthandler
    import signal

    faulthandler.enable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the batch's to handle; the runner ends this process
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")
    watchdog = _Watchdog(idle)
    watchdog.start()
    _warm_up(compiled=False)
    warm = False
    host = f"{socket.gethostname()}:{os.getpid()}"
    proto.write(canonical_json({"ready": True, "host": host}) + "\n")
    proto.flush()
    stdin = sys.stdin.buffer
    held: tuple[str, Graph] | None = None  # the last task's graph, kept for the next one on it
    for line in stdin:
        if not line.strip():
            continue
        received = time.perf_counter()  # from here on, everything counts on the task's limit
        request = json.loads(line)
        watchdog.arm(request.get("deadline"))
        size = int(request.get("graph_bytes", 0))
        payload = stdin.read(size) if size else b""
        if len(payload) != size:  # the worker is gone mid-request
            break
        task = Task.model_validate(request["task"])
        spent = float(request.get("spent", 0.0))  # the sandbox's start comes off the limit
        started = now()
        t0 = time.perf_counter()
        try:
            graph: str | Graph
            if "graph_hash" in request:
                if payload:
                    held = None
                    held = (str(request["graph_hash"]), graph_of_payload(payload))
                if held is None or held[0] != request["graph_hash"]:
                    raise RuntimeError(f"the task process does not hold graph {request['graph_hash']}")
                graph = held[1]
            else:
                graph = request["graph"]
            if not warm and task.n > WARM_UP_OPS:  # on the task's limit too: it runs after ``received``
                _warm_up(compiled=True)
                warm = True
            fn = request.get("fn")
            if fn:  # a replacement task function (tests): (task, graph JSON) only
                result = resolve(fn)(task, graph if isinstance(graph, str) else graph.to_json())
            else:
                result = execute(task, graph, spent=spent, received=received)
        except Exception as exc:  # a replacement task function may raise
            result = {"status": ERROR, "method_status": "error", "message": f"{type(exc).__name__}: {exc}"}
        if held is not None:
            result["holds"] = held[0]
        result.update(started_at=started, finished_at=now(), run_time=time.perf_counter() - t0, host=host)
        try:
            text = canonical_json(result)
        except ValueError as exc:  # NaN or infinity somewhere in the result
            text = canonical_json(
                {"status": ERROR, "method_status": "error", "host": host, "message": f"result is not JSON: {exc}"}
            )
        watchdog.arm(None)
        proto.write(text + "\n")
        proto.flush()
