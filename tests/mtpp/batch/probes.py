"""Test-only task functions for ``run_task(..., fn="tests.mtpp.batch.probes:NAME")`` that
report on the sandbox process instead of running the task."""

from __future__ import annotations

from typing import Any

from mtpp.batch.tasks import Task


def compiled_kernels(task: Task, graph_json: str) -> dict[str, Any]:
    """How many of the sandbox's kernels numba has compiled or loaded (:mod:`mtpp.core.jit`)."""
    from mtpp.core import jit

    count = sum(k._dispatcher is not None for k in jit.KERNELS)
    return {"status": "ok", "method_status": "ok", "message": str(count)}


def graph_size(task: Task, graph_json: str) -> dict[str, Any]:
    """The ops of the graph the sandbox handed over, as the task function saw it (JSON text)."""
    import json

    return {"status": "ok", "method_status": "ok", "message": str(len(json.loads(graph_json)["nodes"]))}
