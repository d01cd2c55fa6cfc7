"""Tiny inputs are instant (issue 24, item 3).  Run by hand:
``python -m benchmarks.tiny_inputs [--repeat R]``, or from a shell:
``python -m benchmarks.tiny_inputs --shell [--repeat R] [--against REV]``.

Graphs: one op, and a chain of 20 ops (:meth:`mtpp.Graph.from_arrays`, unit weights).
Calls, each with its defaults: ``mtpp.partition`` (k = 4), ``mtpp.certify`` (k = 4,
every bound), ``mtpp.schedule``, ``mtpp.place`` (``cpu-igpu-dgpu``), one batch task
per method of ``--methods quick`` plus ``cut`` (:func:`mtpp.batch.tasks.execute`, in
this process, no sandbox), and the command line in this process (``mtpp solve``,
``certify``, ``schedule``, ``place``, ``evaluate``, ``--json -o FILE``).

Each call runs once to warm up (numba compiles or loads its cache, solvers load),
then ``--repeat`` more times; the table shows the best of those, in milliseconds,
and whether the result is proven optimal.  Goal: every entry in milliseconds.

``--shell`` runs each command as a person would, in a new interpreter
(``python -m mtpp ...``): ``info``, ``generate``, ``solve -k 2``, ``certify -k 2``,
``schedule``, ``place``, ``evaluate`` (the solve's output), ``batch -k 2`` (a new
store each run) and ``table`` (the warm-up batch's store), after two floors: an empty
interpreter and ``import mtpp.cli.main``.  Each runs once to warm up (numba's cache),
then ``--repeat`` times; the table shows the median wall time in seconds.  With
``--against REV`` the same commands also run in a git worktree of revision REV
(its numba cache is built by its warm-up runs, which can take minutes) and the table
adds REV's medians and the ratio old / new.

``--kernels`` supports :data:`mtpp.core.jit.DEFAULT_THRESHOLD`: it runs ``partition``,
``certify``, ``schedule`` and ``place`` on chains and layered graphs of 1-40 ops once
with every kernel call in Python and once compiled (warm), and prints, by the size
of a call's largest array argument, the Python and compiled milliseconds per call
(median, and the slowest call's kernel); then the seconds a new interpreter takes to
import numba and load the cached kernels of one ``partition`` call, which the Python
path saves.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mtpp
from benchmarks._common import ROOT, git_commit


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


def shell_commands(graph: mtpp.Graph, path: str, workdir: str) -> dict[str, Callable[[int], list[str]]]:
    """The command lines of ``--shell`` for the graph file ``path``, each a function of
    the run's number (``batch`` writes a new store each run; run 0, the warm-up, writes
    the solution and the store that ``evaluate`` and ``table`` read)."""
    stem = os.path.join(workdir, graph.name)
    return {
        "python -c pass": lambda i: ["-c", "pass"],
        "import mtpp.cli.main": lambda i: ["-c", "import mtpp.cli.main"],
        "info": lambda i: ["-m", "mtpp", "info", path],
        "generate -n 20": lambda i: ["-m", "mtpp", "generate", "layered", "-n", "20", "-o", f"{stem}.gen.json"],
        "solve -k 2": lambda i: ["-m", "mtpp", "solve", path, "-k", "2", "-o", f"{stem}.sol.json"],
        "certify -k 2": lambda i: ["-m", "mtpp", "certify", path, "-k", "2"],
        "schedule": lambda i: ["-m", "mtpp", "schedule", path],
        "place": lambda i: ["-m", "mtpp", "place", path],
        "evaluate": lambda i: ["-m", "mtpp", "evaluate", path, f"{stem}.sol.json"],
        "batch -k 2": lambda i: ["-m", "mtpp", "batch", path, "-k", "2", "--store", f"{stem}.{i}.db"],
        "table": lambda i: ["-m", "mtpp", "table", f"{stem}.0.db"],
    }


def shell_times(root: Path, workdir: str, repeat: int) -> dict[tuple[str, str], float]:
    """Median wall seconds of each ``--shell`` command on each graph, run with the code
    of ``root`` (the current directory comes first on ``python -m``'s path)."""
    times = {}
    for name, graph in graphs().items():
        path = os.path.join(workdir, f"{graph.name}.json")
        graph.to_json(path)
        for row, argv in shell_commands(graph, path, workdir).items():
            walls = []
            for i in range(1 + repeat):
                t0 = time.perf_counter()
                done = subprocess.run([sys.executable, *argv(i)], cwd=root, capture_output=True, text=True)
                walls.append(time.perf_counter() - t0)
                if done.returncode != 0:
                    raise RuntimeError(f"{row} on {name} at {root}: exit {done.returncode}\n{done.stderr}")
            times[row, name] = statistics.median(walls[1:])
    return times


def shell_main(repeat: int, against: str | None) -> None:
    """``--shell``: print the table of :func:`shell_times`, here and at ``against``."""
    print(f"tiny inputs from a shell at commit {git_commit()}; {os.cpu_count()} cores; mtpp {mtpp.__version__}")
    print(f"seconds, median of {repeat} runs after one warm-up run, each in a new interpreter", flush=True)
    names = list(graphs())
    old: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for sub in ("new", "old"):
            os.mkdir(os.path.join(workdir, sub))
        new = shell_times(ROOT, os.path.join(workdir, "new"), repeat)
        if against:
            tree = os.path.join(workdir, "tree")
            git = ["git", "worktree"]
            subprocess.run([*git, "add", "--detach", tree, against], cwd=ROOT, check=True, capture_output=True)
            try:
                old = shell_times(Path(tree), os.path.join(workdir, "old"), repeat)
            finally:
                subprocess.run([*git, "remove", "--force", tree], cwd=ROOT, check=True)
    head = "".join(f"{name:>10}" + (f"{against[:9]:>10} {'ratio':>6}" if against else "") for name in names)
    print(f"{'command':22}{head}")
    for row in dict.fromkeys(r for r, _ in new):
        line = f"{row:22}"
        for name in names:
            line += f"{new[row, name]:10.2f}"
            if against:
                line += f"{old[row, name]:10.2f} {old[row, name] / new[row, name]:6.1f}"
        print(line)


SIZE_BUCKETS = (16, 64, 256, 1024, 4096, 10**9)


def kernel_calls(compiled: bool) -> list[tuple[str, int, float]]:
    """``(kernel, largest array argument, seconds)`` of every outermost kernel call of
    the ``--kernels`` workload, all compiled (each call run once before, untimed) or all
    in Python."""
    from mtpp.core import jit
    from mtpp.generators import layered_graph

    found: list[tuple[str, int, float]] = []
    timing = [False]
    call = jit.Kernel.__call__

    def timed(self: jit.Kernel, *args: Any, **kwargs: Any) -> Any:
        if jit._local.depth or not timing[0]:  # inside a Python-path kernel: part of its caller's time
            return call(self, *args, **kwargs)
        size = max((a.size for a in (*args, *kwargs.values()) if hasattr(a, "size")), default=0)
        t0 = time.perf_counter()
        result = call(self, *args, **kwargs)
        found.append((self.__name__, int(size), time.perf_counter() - t0))
        return result

    gs = [graphs()["1 op"], graphs()["chain 20"], *(layered_graph(n, seed=1) for n in (10, 20, 40))]
    work = [
        lambda g: mtpp.partition(g, k=4, orderer="brkga-200"),
        lambda g: mtpp.certify(g, k=4, bounds="simple,cut,ideal-dp"),
        lambda g: mtpp.schedule(g, method="exact-dp", time_limit=None),
        lambda g: mtpp.place(g, "cpu-igpu-dgpu", method="brkga", time_limit=0.5),
    ]
    jit.Kernel.__call__ = timed  # type: ignore[method-assign]
    try:
        with jit.settings(threshold=0 if compiled else 10**9, budget=math.inf):
            for g in gs:
                for fn in work:
                    if compiled:
                        fn(g)
                    timing[0] = True
                    fn(g)
                    timing[0] = False
    finally:
        jit.Kernel.__call__ = call  # type: ignore[method-assign]
    return found


def numba_load_seconds() -> float:
    """Seconds a new interpreter spends importing numba and loading the cached kernels
    of a ``partition`` call on a 20-op chain, beyond the same call in Python (median of 3)."""
    code = (
        "import sys, time; import mtpp; from mtpp.core import jit\n"
        "g = mtpp.Graph.from_arrays([1.0] * 20, [1.0] * 20, [1.0] * 20, [(i, i + 1) for i in range(19)])\n"
        "t0 = time.perf_counter()\n"
        "with jit.settings(threshold=int(sys.argv[1])): mtpp.partition(g, k=4)\n"
        "print(time.perf_counter() - t0)\n"
    )
    took = {}
    for threshold in (0, 10**9):
        runs = [subprocess.run([sys.executable, "-c", code, str(threshold)], capture_output=True, text=True, cwd=ROOT)]
        runs += [subprocess.run(r.args, capture_output=True, text=True, cwd=ROOT) for r in runs * 3]
        took[threshold] = statistics.median(float(r.stdout) for r in runs[1:])
    return took[0] - took[10**9]


def kernels_main() -> None:
    """``--kernels``: Python and compiled time per kernel call by the size of its arrays."""
    print(f"kernel calls by largest array at commit {git_commit()}; {os.cpu_count()} cores; mtpp {mtpp.__version__}")
    rows = {path: kernel_calls(compiled=path == "compiled") for path in ("python", "compiled")}
    head = f"{'largest array':>14} {'calls':>6} {'python ms':>10} {'max':>8} {'slowest python call':>22}"
    print(f"{head} {'compiled ms':>12}")
    low = -1
    for high in SIZE_BUCKETS:
        got = {p: [(t, k) for k, size, t in r if low < size <= high] for p, r in rows.items()}
        if got["python"]:
            worst_t, worst_k = max(got["python"])
            py = statistics.median(t for t, _ in got["python"])
            comp = statistics.median(t for t, _ in got["compiled"]) if got["compiled"] else math.nan
            label = f"{max(low + 1, 0)}-{high}" if high < 10**9 else f"> {low}"
            print(
                f"{label:>14} {len(got['python']):6d} {1000 * py:10.3f} {1000 * worst_t:8.1f} {worst_k:>22}"
                f" {1000 * comp:12.4f}"
            )
        low = high
    print(f"numba import and cached kernels of one partition call in a new interpreter: {numba_load_seconds():.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed calls after the warm-up (best is shown)")
    ap.add_argument("--shell", action="store_true", help="each command in a new interpreter (median is shown)")
    ap.add_argument("--against", metavar="REV", help="with --shell: also time the commands at git revision REV")
    ap.add_argument("--kernels", action="store_true", help="Python and compiled time per kernel call, by size")
    args = ap.parse_args()
    if args.kernels:
        kernels_main()
        return
    if args.shell:
        shell_main(args.repeat, args.against)
        return
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
