"""How the command line writes: results on stdout, everything else on stderr.

* :func:`notes`: the stderr console for notes and progress, silent with ``--quiet``
  or ``--json``; :func:`progress_bar` / :func:`working`: a bar or a spinner there;
  :func:`compile_notice`: one line when numba starts compiling kernels.
* :func:`emit_json`: a result's document (:mod:`mtpp.results_schema`) to ``-o`` and, with
  ``--json``, to stdout; :func:`write_text` / :func:`writing`: an OS error while
  writing a file becomes a :class:`WriteError` naming it (exit 1, one line);
  :func:`reserved_stdout` points fd 1 at stderr while a ``--json`` command runs, so
  C-level solver output cannot corrupt the document.
* :func:`units_label` / :func:`unit`: the graph's units in titles and values.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import sys
import time
from collections.abc import Iterator

from pydantic import BaseModel
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from heuristics.brkga import Progress as ProgressCallback
from mtpp.core.graph import Graph
from mtpp.core.jit import compiling
from mtpp.core.result import Result


def notes(args: argparse.Namespace) -> Console:
    """The console for notes and progress on stderr; silent with ``--quiet`` or ``--json``."""
    quiet = getattr(args, "quiet", False) or getattr(args, "json", False)
    # soft_wrap: a line longer than the terminal (or rich's 80 columns when stderr is a
    # file or a pipe) is never broken, mid-number or elsewhere
    return Console(stderr=True, highlight=False, quiet=bool(quiet), soft_wrap=True)


def units_label(graph: Graph) -> str:
    """``" (time in us, sizes in bytes)"`` for a graph with units, else ``""``."""
    u = graph.units
    return f" (time in {u.get('time', '?')}, sizes in {u.get('size', '?')})" if u else ""


def unit(graph: Graph, kind: str) -> str:
    """``" us"`` (``kind`` ``time`` or ``size``) for a graph with units, else ``""``."""
    return f" {graph.units[kind]}" if graph.units and kind in graph.units else ""


@contextlib.contextmanager
def progress_bar(enabled: bool, label: str) -> Iterator[ProgressCallback | None]:
    if not enabled:
        yield None
        return
    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("best {task.fields[best]}"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None, best="-")

        def update(done: int, total: int, best: float) -> None:
            bar.update(task, completed=done, total=total, best=f"{best:.6g}")

        yield update


@contextlib.contextmanager
def working(console: Console, label: str) -> Iterator[None]:
    """A spinner with the elapsed time on ``console`` while long work runs (only on a
    terminal, never with ``--quiet`` / ``--json``)."""
    if console.quiet or not console.is_terminal:
        yield
        return
    with Progress(SpinnerColumn(), TextColumn(label), TimeElapsedColumn(), console=console, transient=True):
        yield


@contextlib.contextmanager
def compile_notice(console: Console) -> Iterator[None]:
    """Say once on ``console`` when numba starts compiling kernels (a first run, or a
    new numba): the cache makes every later run skip it.  A command that never leaves
    the Python path of :mod:`mtpp.core.jit` (a tiny graph) never imports numba for this.

    numba reports a compile for the ``objmode`` blocks of cached kernels on every run
    (they cannot be cached, and take milliseconds), so the notice is given only when a
    kernel this process has loaded has no usable cache entry (:func:`uncached`)."""
    said = False

    def notice() -> None:
        nonlocal said
        if not said and uncached():
            said = True
            console.print("compiling numba kernels (first run only; cached for later runs) ...")

    with compiling(notice):
        yield


def uncached() -> bool:
    """Whether a compiled kernel of this process (:data:`mtpp.core.jit.KERNELS` whose
    numba dispatcher exists) has no usable entry in numba's on-disk cache: its index
    file is missing, or was written for another source or numba version (numba's own
    check).  ``True`` when the cache cannot be inspected."""
    from mtpp.core.jit import KERNELS

    try:
        for kernel in KERNELS:
            dispatcher = kernel._dispatcher
            cache = getattr(dispatcher, "_cache", None)
            index = getattr(cache, "_cache_file", None)
            if index is not None and not index._load_index():
                return True
        return False
    except Exception:  # numba's internals moved: say it rather than stay silent
        return True


class WriteError(OSError):
    """Writing an output file failed (a full disk, a lost mount, ...): the command line
    exits 1 with one line naming the path (``filename``) and the reason (``strerror``)."""

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"


@contextlib.contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn an :class:`OSError` raised while the block writes ``path`` into a
    :class:`WriteError` that names ``path``."""
    try:
        yield
    except WriteError:
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise WriteError(exc.errno, reason, os.fspath(path)) from exc


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8); a :class:`WriteError` on failure."""
    with writing(path), open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


_IMPORTED = time.monotonic()
_clock = [_IMPORTED]  # when the running command started, on the time.monotonic() clock


def process_age() -> float:
    """Seconds since this process started (``/proc/self/stat``; else since this module
    was imported)."""
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        start = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time, ticks after boot
        with open("/proc/uptime") as fh:
            return max(0.0, float(fh.read().split()[0]) - start)
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


def start_clock(with_startup: bool) -> None:
    """Start a command's clock now; ``with_startup`` (the process runs this one
    command: ``mtpp ...`` from a shell) backdates it to the process start, so the
    interpreter start and imports count too.  A command run in-process
    (``main([...])`` from Python) counts from its call."""
    _clock[0] = time.monotonic() - (process_age() if with_startup else 0.0)


def elapsed() -> float:
    """Seconds the running command has taken (:func:`start_clock`): reading the graph
    counts toward its budget."""
    return time.monotonic() - _clock[0]


def remaining(limit: float | None, ops: int = 0) -> float | None:
    """A command's whole-call ``limit`` (``--budget``, or the ``--time-limit`` of solve,
    schedule and place) less what the process has already taken (reading the graph
    included) and what writing the result of a graph of ``ops`` ops will take
    (:data:`OUTPUT_SECONDS_PER_OP`), so the command as a user waits for it keeps the
    promise; ``None``, ``inf`` and values that are not a positive number pass unchanged
    (the API refuses the bad ones, naming them)."""
    if limit is None or not 0 < limit < float("inf"):
        return limit  # None, inf, or a bad value the API will name
    return max(MIN_LEFT, limit - elapsed() - OUTPUT_SECONDS_PER_OP * ops)


OUTPUT_SECONDS_PER_OP = 3e-6
"""What writing a result takes per op of its graph (its document with a block per op,
the tables): 2.3 s for the JSON of a solution of a million-op chain on a loaded 2-core
machine, so 3 s are kept back there and 0.3 ms at 100 ops."""


MIN_LEFT = 0.01
"""The least a call is handed: its methods then stop at their first check."""


def emit_json(document: Result | BaseModel, args: argparse.Namespace) -> bool:
    """Write a result's JSON document (:meth:`mtpp.core.result.Result.to_json`), or a
    document of :mod:`mtpp.results_schema`, to ``--output`` if given; print it and
    return True with ``--json`` (the caller then prints nothing else)."""
    text = document.to_json(indent=2) if isinstance(document, Result) else document.model_dump_json(indent=2)
    if getattr(args, "output", None):
        write_text(args.output, text + "\n")
    if args.json:
        stream = getattr(args, "result_stream", None) or sys.stdout
        stream.write(text + "\n")
        stream.flush()
    return bool(args.json)


@contextlib.contextmanager
def reserved_stdout(args: argparse.Namespace) -> Iterator[None]:
    """With ``--json``, point fd 1 at stderr while the command runs, so nothing a
    solver's C code prints can corrupt the document; ``args.result_stream`` is then
    the real stdout, which :func:`emit_json` writes the document to.  (Only when
    ``sys.stdout`` is fd 1, i.e. not under an in-process capture.)"""
    try:
        real = bool(getattr(args, "json", False)) and sys.stdout.fileno() == 1
    except (AttributeError, OSError, ValueError):
        real = False
    if not real:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with os.fdopen(os.dup(saved), "w", encoding="utf-8") as result:
            args.result_stream = result
            yield
    finally:
        sys.stdout.flush()
        with contextlib.suppress(Exception):  # C stdio buffers still hold solver output: flush it to stderr
            ctypes.CDLL(None).fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
