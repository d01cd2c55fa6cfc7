"""Tiny inputs are instant (issue 24, item 3).  Run by hand:
``python benchmarks/tiny_inputs.py [--repeat R]``.

Graphs: one op, and a chain of 20 ops (:meth:`mtpp.Graph.from_arrays`, unit weights).
Calls, each with its defaults: ``mtpp.partition`` (k = 4), ``mtpp.certify`` (k = 4,
every bound), ``mtpp.schedule``, ``mtpp.place`` (``cpu-igpu-dgpu``), one batch task
per method of ``--methods quick`` plus ``cut`` (:func:`mtpp.batch.tasks.execute`, in
this process, no sandbox), and the command line in this process (``mtpp solve``,
``certify``, ``schedule``, ``place``, ``evaluate``, ``--json -o FILE``).

Each call runs once to warm up (numba compiles or loads its cache, solvers load),
then ``--repeat`` more times; the table shows the best of those, in milliseconds,
and whether the result is proven optimal.  Goal: every entry in milliseconds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mtpp  # noqa: E402
from benchmarks.real_models import git_commit  # noqa: E402


def graphs() -> dict[str, mtpp.Graph]:
    one = mtpp.Graph.from_arrays([1.0], [1.0], [1.0], [], name="one-op")
    n = 20
    chain = mtpp.Graph.from_arrays([1.0] * n, [1.0] * n, [1.0] * n, [(i, i + 1) for i in range(n - 1)], name="chain-20")
    return {"1 op": one, "chain 20": chain}


def calls(graph: mtpp.Graph, workdir: str) -> dict[str, Callable[[], Any]]:
    from mtpp.batch.tasks import GraphSource, Settings, execute, make_tasks
    from mtpp.cli.main import main

    path = os.path.join(workdir, f"{graph.name}.json")
    graph.to_json(path)
    src = GraphSource.from_graph(graph, path)
    tasks = {
        t.method: t
        for t in make_tasks([src], [4], ["slicegraph:brkga", "simple", "cut", "bottleneck"], "auto", Settings())
    }

    def cli(*argv: str, write: bool = True) -> Callable[[], Any]:
        target = ["-o", os.path.join(workdir, f"{graph.name}.{argv[0]}.json")] if write else []

        def run() -> Any:
            with contextlib.redirect_stdout(io.StringIO()) as text:
                rc = main([*argv, "--json", *target])
            assert rc == 0, (argv, rc)
            return json.loads(text.getvalue())

        return run

    def task(method: str) -> Callable[[], Any]:
        def run() -> Any:
            res = execute(tasks[method], src.text)
            assert res["status"] in ("ok", "time_limit"), res
            return res

        return run

    return {
        "partition k=4": lambda: mtpp.partition(graph, k=4),
        "certify k=4": lambda: mtpp.certify(graph, k=4),
        "schedule": lambda: mtpp.schedule(graph),
        "place": lambda: mtpp.place(graph, "cpu-igpu-dgpu"),
        **{f"batch task {m}": task(m) for m in tasks},
        "cli solve": cli("solve", path, "-k", "4"),
        "cli certify": cli("certify", path, "-k", "4"),
        "cli schedule": cli("schedule", path),
        "cli place": cli("place", path),
        "cli evaluate": cli("evaluate", path, os.path.join(workdir, f"{graph.name}.solve.json"), write=False),
    }


def optimal(result: Any) -> str:
    if isinstance(result, dict):  # a batch row or a JSON document
        doc = json.loads(result["result"]) if "result" in result else result
        value = doc.get("optimal")
    else:
        value = getattr(result, "optimal", None)
    return "-" if value is None else "yes" if value else "no"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed calls after the warm-up (best is shown)")
    args = ap.parse_args()
    print(f"tiny inputs at commit {git_commit()}; {os.cpu_count()} cores; mtpp {mtpp.__version__}")
    print("milliseconds, best of the timed calls after one warm-up call in this process")
    gs = graphs()
    with tempfile.TemporaryDirectory() as workdir:
        table = {name: calls(g, workdir) for name, g in gs.items()}
        rows = list(next(iter(table.values())))
        print(f"{'call':24}" + "".join(f"{name:>12} {'opt':>4}" for name in gs))
        for row in rows:
            line = f"{row:24}"
            for name in gs:
                fn = table[name][row]
                result = fn()  # warm-up
                best = float("inf")
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    result = fn()
                    best = min(best, time.perf_counter() - t0)
                line += f"{1000 * best:12.1f} {optimal(result):>4}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
