"""The sandbox's warm-up: a batch of tiny graphs never loads numba,
and the first task on a larger graph finds the compiled kernels loaded."""

from __future__ import annotations

from mtpp.batch.sandbox import WARM_UP_OPS, close_sandbox, run_task
from mtpp.batch.tasks import GraphSource, Settings, make_tasks
from mtpp.core.graph import Graph
from mtpp.generators import layered_graph

PROBE = "tests.mtpp.batch.probes:compiled_kernels"


def test_kernels_are_compiled_before_the_first_task_on_a_larger_graph() -> None:
    n = WARM_UP_OPS
    chain = Graph.from_arrays([1.0] * n, [1.0] * n, [1.0] * n, [(i, i + 1) for i in range(n - 1)], name="chain")
    sources = [GraphSource.from_graph(g, f"{g.name}.json") for g in (chain, layered_graph(n + 1, seed=1))]
    close_sandbox()  # a fresh sandbox for this thread
    counts = []
    try:
        for s in sources:
            task = make_tasks([s], [2], ["simple"], "auto", Settings())[0]
            counts.append(int(run_task(task.model_dump(), s.text, PROBE, hard_limit=120.0)["message"]))
    finally:
        close_sandbox()
    assert counts[0] == 0  # the warm-up on the Python path compiled nothing
    assert counts[1] > 0  # the SliceGraph kernels, compiled before this task's clock
