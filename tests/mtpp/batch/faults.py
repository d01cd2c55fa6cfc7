"""Test-only task functions for ``run(..., task_fn="tests.mtpp.batch.faults:NAME")``.

Each misbehaves on the ``guess`` tasks only and runs the real task otherwise, so a
batch shows the failure next to normal results."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from mtpp.batch.tasks import Task, execute


def crash_on_guess(task: Task, graph_json: str) -> dict[str, Any]:
    """The task process dies at once (as a segfaulting solver would)."""
    if task.method == "guess":
        os._exit(13)
    return execute(task, graph_json)


def crash_with_message_on_guess(task: Task, graph_json: str) -> dict[str, Any]:
    """The task process says why on stderr and dies (as a failing native library would)."""
    if task.method == "guess":
        os.write(2, b"native library: out of cheese\n")
        os._exit(13)
    return execute(task, graph_json)


def raise_on_guess(task: Task, graph_json: str) -> dict[str, Any]:
    """The task function raises (outside the method's own error handling)."""
    if task.method == "guess":
        raise RuntimeError("injected failure")
    return execute(task, graph_json)


def hang_on_guess(task: Task, graph_json: str) -> dict[str, Any]:
    """The task ignores its time limit (a solver stuck in C code)."""
    if task.method == "guess":
        time.sleep(3600)
    return execute(task, graph_json)


def kill_worker_on_guess(task: Task, graph_json: str) -> dict[str, Any]:
    """The joblib worker running the task dies (killed from its sandbox)."""
    if task.method == "guess":
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)
    return execute(task, graph_json)


def faulty_guess(task: Task, graph_json: str) -> dict[str, Any]:
    """``guess`` crashes at k=2, raises at k=3 and hangs at k=4."""
    if task.method == "guess":
        if task.k == 2:
            os._exit(13)
        if task.k == 3:
            raise RuntimeError("injected failure")
        if task.k == 4:
            time.sleep(3600)
    return execute(task, graph_json)
