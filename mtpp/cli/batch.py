"""The batch commands of the ``mtpp`` command line.

``mtpp batch TESTBED -k 2 4 8 --methods all --jobs N --store results.db``
    run every (graph, k, method) task not yet in the store (:func:`mtpp.batch.run`);
    ``--backend dask --scheduler tcp://HOST:8786`` runs them on a Dask cluster.
``mtpp table results.db [--format markdown|csv|latex]``
    the paper's Tables 1-3 and the counts of instances and time-outs.
``mtpp plot results.db --out DIR``
    running times against graph size (Figures 4-5) and LB / UB by k, PNG and SVG.

:func:`add_commands` adds them to the ``mtpp`` parser's subcommands and
:data:`COMMANDS` maps their names to handlers ``(args, console) -> exit status``
(:mod:`mtpp.cli` dispatches to them).  Bad input raises :mod:`mtpp.core.errors` types.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from rich.console import Console

from mtpp.cli.options import device_option
from mtpp.cli.output import write_text, writing
from mtpp.core.errors import InvalidParameterError

# first-run defaults: a few minutes on a laptop, not all methods x 60 s one at a time
DEFAULT_JOBS = max(1, (os.cpu_count() or 2) // 2)
DEFAULT_TIME_LIMIT = 10.0
EXIT_FAILED_TASKS = 1


def add_commands(sub: Any) -> None:
    """Add ``batch``, ``table`` and ``plot`` to ``sub`` (from ``add_subparsers``)."""
    from mtpp.batch.report import FORMATS
    from mtpp.batch.runner import BACKENDS, DEFAULT_GRACE

    about = (
        "Run every (graph, k, method) task that is not yet in the store. Killing the batch loses only the "
        "tasks in flight; rerun the same command to finish."
    )
    b = sub.add_parser("batch", help="run the bound hierarchy over a testbed into a results store", description=about)
    b.add_argument("graphs", nargs="+", metavar="TESTBED", help="directory of *.json graphs, glob, or graph files")
    b.add_argument("-k", type=int, nargs="+", required=True, help="numbers of pipeline stages, e.g. -k 2 4 8 16")
    b.add_argument(
        "--methods",
        nargs="+",
        default=["quick"],
        help="quick (default: slicegraph:brkga, simple, bottleneck), all (slicegraph:brkga + the 4 "
        "bounds), bounds, orderers (Table 2), or names: simple, bottleneck, guess, exact, "
        "slicegraph:ORDERER",
    )
    b.add_argument(
        "--jobs",
        type=int,
        default=DEFAULT_JOBS,
        help=f"tasks run at once (default {DEFAULT_JOBS}: half the cores; -1: all cores / Dask worker threads)",
    )
    b.add_argument("--store", default="results.db", help="SQLite results file (default results.db)")
    b.add_argument("--solver", default="auto", help="auto, highs, scip, gurobi or cpsat")
    b.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        help=f"seconds per task, its partition search included (default {DEFAULT_TIME_LIMIT:g}; the paper: 60)",
    )
    b.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE,
        help=f"a task is killed after time limit + grace seconds ({DEFAULT_GRACE:g})",
    )
    b.add_argument("--orderer", default="brkga", help="orderer of the partition (upper bound) of the bound tasks")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--threads", type=int, default=1, help="solver threads per task")
    b.add_argument(
        "--bandwidth",
        type=float,
        default=None,
        help="inter-block bandwidth B (default: the device's or each graph's machine's, else 1)",
    )
    b.add_argument(
        "--memory",
        type=float,
        default=None,
        help="fast memory M per block (default: the device's or each graph's machine's, else unlimited)",
    )
    b.add_argument("--reserve", type=float, default=0.0, help="activation reserve R inside M (default 0)")
    device_option(b)
    b.add_argument("--backend", choices=BACKENDS, default="loky", help="loky (this machine) or dask (a cluster)")
    b.add_argument("--scheduler", help="Dask scheduler address for --backend dask, e.g. tcp://HOST:8786")
    b.add_argument(
        "--presolve",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="remove ops that provably cost nothing before each task (default: on)",
    )
    b.add_argument("--retry-failed", action="store_true", help="rerun stored tasks that ended error/crashed/timeout")
    b.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )

    t = sub.add_parser("table", help="print the bound tables of a results store")
    t.add_argument("store", help="results file written by 'mtpp batch'")
    t.add_argument("--format", choices=FORMATS, default="markdown")
    t.add_argument("-o", "--output", help="also write the tables to this file")

    p = sub.add_parser("plot", help="plot running times and LB / UB from a results store")
    p.add_argument("store", help="results file written by 'mtpp batch'")
    p.add_argument("--out", required=True, help="directory for runtime.{png,svg} and lb_ub.{png,svg}")
    p.add_argument("--format", nargs="+", choices=("png", "svg"), default=["png", "svg"], dest="formats")


def _records(path: str) -> list[Any]:
    from mtpp.batch.store import open_store

    with open_store(path, must_exist=True, read_only=True) as store:
        return store.records()


def cmd_batch(args: argparse.Namespace, out: Console) -> int:
    from mtpp.batch.report import bound_table, render
    from mtpp.batch.runner import run

    if args.scheduler and args.backend != "dask":
        raise InvalidParameterError("--scheduler needs --backend dask")
    summary = run(
        args.graphs,
        args.k,
        args.methods,
        solver=args.solver,
        time_limit=args.time_limit,
        n_jobs=args.jobs,
        store=args.store,
        backend=args.backend,
        scheduler=args.scheduler,
        progress=False if getattr(args, "quiet", False) else args.progress,
        orderer=args.orderer,
        seed=args.seed,
        threads=args.threads,
        bandwidth=args.bandwidth,
        memory=args.memory,
        reserve=args.reserve,
        device=args.device,
        grace=args.grace,
        retry_failed=args.retry_failed,
        presolve=args.presolve,
    )
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if not getattr(args, "quiet", False):
        err.print(str(summary), markup=False)
    table = bound_table(_records(args.store))
    if table.rows:
        out.print(render([table], "markdown"), markup=False, highlight=False, emoji=False)
    if summary.failed:
        for line in summary.errors:
            err.print(line, markup=False)
        err.print(
            f"{summary.failed} task(s) failed; see 'mtpp table {args.store}', or rerun with --retry-failed",
            markup=False,
        )
        return EXIT_FAILED_TASKS
    return 0


def cmd_table(args: argparse.Namespace, out: Console) -> int:
    from mtpp.batch.report import render, tables

    records = _records(args.store)
    if not records:
        raise InvalidParameterError(f"store {args.store} has no results yet")
    text = render(tables(records), args.format)
    if args.output:
        write_text(args.output, text)
    out.print(text, markup=False, highlight=False, emoji=False, end="")
    return 0


def cmd_plot(args: argparse.Namespace, out: Console) -> int:
    from mtpp.batch.plots import plot

    records = _records(args.store)
    with writing(args.out):
        paths = plot(records, args.out, args.formats)
    for path in paths:
        out.print(f"wrote {path}", markup=False, highlight=False)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, Console], int]] = {
    "batch": cmd_batch,
    "table": cmd_table,
    "plot": cmd_plot,
}
