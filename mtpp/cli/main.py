"""The ``mtpp`` command line.

``mtpp solve FILE -k K``      partition a graph, print blocks, costs and bounds
``mtpp certify FILE -k K``    partition and prove lower bounds with the MIP hierarchy
``mtpp schedule FILE``        minimum-peak-memory order with a proven lower bound
``mtpp place FILE``           ops on heterogeneous devices, scheduled, with a makespan bound
``mtpp evaluate FILE PART``   re-check a partition file and print its costs
``mtpp generate KIND``        write a seeded synthetic graph (regal | regal-connected | layered)
``mtpp info FILE``            sizes and totals of a graph
``mtpp import MODEL.onnx``    an ONNX model as an mtpp graph priced on a device preset
``mtpp plan MODULE:FACTORY -k K``  pipeline stages for a PyTorch model, certified, with baselines
``mtpp batch TESTBED -k ...``  run the bound hierarchy over a testbed into a results store
``mtpp table results.db``     Table 1/2/3-style summaries of a store
``mtpp plot results.db``      running-time and LB/UB figures of a store
``mtpp train topoformer|regal`` train a learned orderer, write its weights and loss plot

Exit status: 0 on success, 2 on bad input (one line on stderr naming the problem,
paths checked before any work), 1 on an internal error (one line; ``MTPP_DEBUG=1``
shows the traceback), on an error while writing an output (one line naming the path
and the reason) and when tasks of a batch failed.  ``--quiet`` keeps stderr to
errors; ``--json`` prints one document of :mod:`mtpp.results_schema` and nothing else
on stdout.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.console import Console
from rich.table import Table

from mtpp.cli.options import device_option, showing_warnings, warn
from mtpp.cli.output import (
    WriteError,
    compile_notice,
    emit_json,
    notes,
    progress_bar,
    remaining,
    reserved_stdout,
    start_clock,
    unit,
    units_label,
    writing,
)
from mtpp.cli.paths import check_paths
from mtpp.core.errors import InputFileError, InternalError, InvalidParameterError, MtppError, UnknownNodeError
from mtpp.core.evaluate import Evaluation, evaluate
from mtpp.core.graph import Graph
from mtpp.core.problem import Problem
from mtpp.io.graph_file import load_graph
from mtpp.io.json_file import read_json

if TYPE_CHECKING:
    from mtpp.results_schema import EvaluationDocument

EXIT_INTERNAL, EXIT_USAGE = 1, 2
DEBUG_ENV = "MTPP_DEBUG"
MACHINE_DEFAULTS: dict[str, Any] = {"bandwidth": None, "memory": None, "reserve": 0.0, "peak_aware": False}
"""The machine options; ``None``: the ``--device``'s, else the graph's recorded machine's,
else ``B = 1`` and unlimited memory (:mod:`mtpp.core.machine`)."""
SOLVE_TIME_LIMIT = 10.0
"""``mtpp solve``'s default ``--time-limit`` (seconds): BRKGA's 10,000 orders take 48 s on
500 ops, and the search rarely improves after the first seconds."""


def _machine_args(p: argparse.ArgumentParser, from_file: bool = False, several_k: bool = False) -> None:
    """``-k`` (one, or with ``several_k`` several that share their bounds) and the
    machine; with ``from_file`` they default to a solution file's own."""
    dflt = dict.fromkeys(MACHINE_DEFAULTS) if from_file else MACHINE_DEFAULTS
    if several_k:
        p.add_argument(
            "-k", type=int, nargs="+", required=True, help="number(s) of pipeline stages; several k share their bounds"
        )
    else:
        p.add_argument(
            "-k",
            type=int,
            required=not from_file,
            help="number of pipeline stages (blocks)" + (" (default: the solution file's)" if from_file else ""),
        )
    p.add_argument(
        "--bandwidth",
        type=float,
        default=dflt["bandwidth"],
        help="inter-block bandwidth B (default: the device's or the graph's machine's, else 1)",
    )
    p.add_argument(
        "--memory",
        type=float,
        default=dflt["memory"],
        help="fast memory M per block (default: the device's or the graph's machine's, else unlimited)",
    )
    p.add_argument("--reserve", type=float, default=dflt["reserve"], help="activation reserve R inside M (default 0)")
    p.add_argument(
        "--peak-aware",
        action="store_true",
        default=dflt["peak_aware"],
        help="overflow (size_param + peak - M)^+ / B with each block's activation peak (Eq. 2)",
    )
    device_option(p)


def build_parser() -> argparse.ArgumentParser:
    import mtpp

    parser = argparse.ArgumentParser(prog="mtpp", description="Pipeline partitioning with certified bounds.")
    parser.add_argument("--version", action="version", version=f"mtpp {mtpp.__version__}")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="print only results and errors (no progress, no notes)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    solve = sub.add_parser("solve", help="partition a graph with SliceGraph")
    solve.add_argument("file", help="graph file (mtpp JSON or node-link JSON)")
    _machine_args(solve)
    solve.add_argument(
        "--orderer",
        default="brkga",
        help="kahn, dfs, bfs, random-T, brkga[-N], mla, mla-weighted, "
        "topoformer, topoformer-sample[-N], topoformer-beam[-N], topoformer-brkga[-N], regal-brkga[-N]",
    )
    solve.add_argument("--weights", default=None, help="weights file for a learned orderer (default: shipped)")
    solve.add_argument("--seed", type=int, default=0)
    solve.add_argument(
        "--time-limit",
        type=float,
        default=SOLVE_TIME_LIMIT,
        help=f"seconds for the whole call, the order search included (default {SOLVE_TIME_LIMIT:g})",
    )
    solve.add_argument("--json", action="store_true", help="print the solution as JSON")
    solve.add_argument("-o", "--output", help="also write the solution JSON to this file")
    solve.add_argument("--plot", metavar="FILE", help="write the stage chart (bars by cost term, LB line) here")
    solve.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar (default: when stderr is a terminal)",
    )
    solve.add_argument(
        "--presolve",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="remove ops that provably cost nothing before the search (default: on)",
    )

    cert = sub.add_parser("certify", help="partition a graph and prove lower bounds with MIPs")
    cert.add_argument("file", help="graph file")
    _machine_args(cert, several_k=True)
    cert.add_argument(
        "--bounds",
        default="all",
        help="all, or a comma list of simple,cut,crossing,clique,reach,ideal-dp,pigeonhole,bottleneck,guess,exact",
    )
    cert.add_argument("--solver", default="auto", help="auto, highs, scip, gurobi or cpsat")
    cert.add_argument("--time-limit", type=float, default=60.0, help="seconds per MIP method at most (default 60)")
    cert.add_argument(
        "--budget", type=float, default=60.0, help="seconds for the whole call, spent cheapest first (default 60)"
    )
    cert.add_argument(
        "--fill",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="spend what the bounds leave of --budget on a larger partition search where no proof closed "
        "the gap (default; --no-fill returns as soon as the bounds are done)",
    )
    cert.add_argument("--threads", type=int, default=1, help="solver threads")
    cert.add_argument("--jobs", type=int, default=1, help="parallel sub-MIPs for guess-the-bottleneck")
    cert.add_argument("--orderer", default="brkga", help="orderer for the partition (see 'solve')")
    cert.add_argument("--seed", type=int, default=0)
    cert.add_argument("--json", action="store_true", help="print the certificate as JSON")
    cert.add_argument("-o", "--output", help="also write the certificate JSON to this file")
    cert.add_argument("--plot", metavar="FILE", help="write the stage chart (bars by cost term, LB line) here")
    cert.add_argument("--export-dir", help="write every MIP of the requested methods here as MPS")
    cert.add_argument(
        "--presolve",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run every method on the graph without the ops that provably cost nothing (same optimum; default: on)",
    )

    ev = sub.add_parser("evaluate", help="check a partition and print its costs")
    ev.add_argument("file", help="graph file")
    ev.add_argument(
        "partition",
        help="JSON: a solution or certificate written with -o (priced on its own k and "
        "machine unless options say otherwise), or {node id: block}",
    )
    _machine_args(ev, from_file=True)
    ev.add_argument("--json", action="store_true")
    ev.add_argument(
        "--strict",
        action="store_true",
        help="refuse (exit 2) a solution file made for another graph; without it, a warning",
    )

    gen = sub.add_parser("generate", help="write a seeded synthetic graph")
    gen.add_argument("kind", choices=["regal", "regal-connected", "layered"])
    gen.add_argument("-n", type=int, default=None, help="number of nodes (regal: 50..200 drawn if omitted)")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("-o", "--output", help="file to write (default: stdout)")

    info = sub.add_parser("info", help="print sizes and totals of a graph")
    info.add_argument("file")

    from mtpp.cli.batch import add_commands
    from mtpp.cli.importer import add_import_command
    from mtpp.cli.plan import add_plan_command
    from mtpp.cli.scheduling import add_scheduling_commands
    from mtpp.cli.train import add_train_command

    add_scheduling_commands(sub)
    add_commands(sub)
    add_import_command(sub)
    add_plan_command(sub)
    add_train_command(sub)
    for command in sub.choices.values():  # --quiet after the command too; SUPPRESS keeps one given before it
        command.add_argument(
            "-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="print only results and errors"
        )
    return parser


def _costs_table(problem: Problem, ev: Evaluation, title: str) -> Table:
    """One row per block with its cost terms (Eq. 3); ``O(n + k)``."""
    table = Table(title=title + units_label(problem.graph))
    for col in ("block", "nodes", "input IO", "work", "overflow", "output IO", "cost"):
        table.add_column(col, justify="right")
    c = ev.costs
    counts = np.bincount(ev.assignment, minlength=problem.k).tolist()
    columns = [x.tolist() for x in (c.input_io, c.work, c.overflow, c.output_io, c.total)]
    for b in range(problem.k):
        mark = " *" if b == ev.bottleneck_block else ""
        table.add_row(f"{b}{mark}", str(counts[b]), *(f"{col[b]:.6g}" for col in columns))
    return table


def _problem(
    graph: Graph, args: argparse.Namespace, stored: dict[str, Any] | None = None, k: int | None = None
) -> Problem:
    """The problem of the command's ``-k`` (or ``k``) and machine options; an option left
    unset (``None``) takes its value from ``stored`` (a solution file), then from
    ``--device`` or the graph's recorded machine, then the default
    (:func:`mtpp.partitioner.resolve_problem`).  Sets ``args.machine_line`` (the line the
    command prints) and prints the machine warning, if any, on stderr (:func:`warn`)."""
    from mtpp.partitioner import resolve_problem

    given = {"k": args.k if k is None else k, **{f: getattr(args, f) for f in MACHINE_DEFAULTS}}
    merged = {f: v if v is not None else (stored or {}).get(f) for f, v in given.items()}
    v: dict[str, Any] = {f: x if x is not None else MACHINE_DEFAULTS.get(f) for f, x in merged.items()}
    if v["k"] is None:
        raise InvalidParameterError("give -k: the partition file does not say how many blocks it has")
    problem, choice = resolve_problem(
        graph,
        v["k"],
        v["bandwidth"],
        v["memory"],
        v["reserve"],
        v["peak_aware"],
        getattr(args, "device", None),
    )
    if choice is not None:
        args.machine_line = choice.describe()
        if choice.warning:
            warn(choice.warning)
    return problem


def cmd_solve(args: argparse.Namespace, out: Console) -> int:
    from mtpp.partitioner import partition

    problem = _problem(load_graph(args.file), args)
    err = notes(args)
    show = (sys.stderr.isatty() if args.progress is None else args.progress) and not err.quiet
    with compile_notice(err), progress_bar(show, f"{args.orderer}") as update:
        sol = partition(
            problem,
            orderer=args.orderer,
            seed=args.seed,
            time_limit=remaining(args.time_limit, problem.graph.n),
            progress=update,
            weights=args.weights,
            presolve=args.presolve,
        )
    if args.plot:
        from mtpp.pipelining.plot import plot_stages

        with writing(args.plot):
            plot_stages(sol.evaluation.costs, sol.lower_bound, args.plot, f"{args.file}, k={problem.k}")
    if emit_json(sol, args):
        return 0
    g = problem.graph
    out.print(_costs_table(problem, sol.evaluation, f"{g.name or args.file}: n={g.n}, m={g.m}, k={problem.k}"))
    us = unit(g, "time")
    out.print(f"bottleneck (upper bound)  {sol.bottleneck:.6g}{us}   (* marks the bottleneck block)")
    out.print(f"simple lower bound        {sol.lower_bound:.6g}{us}   (Lemma 3.3)")
    out.print(f"LB / UB                   {sol.ratio:.4f}")
    stopped = " (stopped by the time limit)" if sol.stopped_by_time else ""
    out.print(f"orderer {sol.orderer}, seed {sol.seed}: {sol.evaluations} orders in {sol.wall_time:.2f} s{stopped}")
    out.print(args.machine_line, markup=False)
    if sol.note:
        out.print(f"orderer note: {sol.note}")
    return 0


def cmd_certify(args: argparse.Namespace, out: Console) -> int:
    from mtpp.engine.certify import certify, export_models
    from mtpp.results_schema import certificates_document

    graph = load_graph(args.file)
    problem = _problem(graph, args, k=args.k[0])
    err = notes(args)
    if args.export_dir:
        for kk in args.k:
            with writing(args.export_dir):
                paths = export_models(_problem(graph, args, k=kk), args.bounds, args.export_dir)
            for path in paths:
                err.print(f"wrote {path}")
    with compile_notice(err):
        certs = certify(
            problem,
            k=args.k,
            bounds=args.bounds,
            solver=args.solver,
            time_limit=args.time_limit,
            budget=remaining(args.budget, graph.n * len(args.k)),  # a document per k
            threads=args.threads,
            n_jobs=args.jobs,
            orderer=args.orderer,
            seed=args.seed,
            report=None if err.quiet else err.print,
            presolve=args.presolve,
            fill_budget=args.fill,
        )
    docs = [c.document(_problem(graph, args, k=c.k)) for c in certs]
    if args.plot:
        from mtpp.pipelining.plot import plot_stages

        ev = evaluate(problem, certs[0].assignment)
        with writing(args.plot):
            plot_stages(ev.costs, certs[0].lower_bound, args.plot, f"{args.file}, k={problem.k}")
    if emit_json(docs[0] if len(docs) == 1 else certificates_document(docs), args):
        return 0
    if len(certs) > 1:
        summary = Table(title=f"bounds for {graph.name or args.file}")
        for col in ("k", "upper bound", "lower bound", "LB / UB", "lower bound by", "partition from"):
            summary.add_column(col, justify="right")
        for c in certs:
            summary.add_row(
                str(c.k),
                f"{c.upper_bound:.6g}",
                f"{c.lower_bound:.6g}",
                f"{c.ratio:.4f}",
                c.lower_bound_method,
                c.partition_source,
            )
        out.print(summary)
        out.print(f"{sum(c.optimal for c in certs)} of {len(certs)} proven optimal in {certs[-1].wall_time:.1f} s")
        out.print(args.machine_line, markup=False)
        return 0
    cert, doc = certs[0], docs[0]
    g, us = problem.graph, unit(problem.graph, "time")
    ev, _ = cert.evaluation(problem)
    out.print(_costs_table(problem, ev, f"partition of {g.name or args.file}: n={g.n}, m={g.m}, k={problem.k}"))
    table = Table(title=f"lower bounds, k={problem.k}")
    for col in ("method", "solver", "status", "lower bound", "LB / UB", "seconds"):
        table.add_column(col, justify="right")
    for r in cert.bounds:
        bound = "-" if r.bound is None else f"{r.bound:.6g}"
        ratio = "-" if r.bound is None or cert.upper_bound == 0 else f"{r.bound / cert.upper_bound:.4f}"
        table.add_row(r.method, r.solver or "-", r.status, bound, ratio, f"{r.wall_time:.2f}")
    out.print(table)
    out.print(f"upper bound  {cert.upper_bound:.6g}{us}   from {cert.partition_source} (* marks its bottleneck block)")
    out.print(f"lower bound  {cert.lower_bound:.6g}{us}   from {cert.lower_bound_method}")
    verdict = "proven optimal" if cert.optimal else f"gap {100 * (doc.gap or 0.0):.2f}%"
    out.print(f"LB / UB      {cert.ratio:.4f}   ({verdict}; {cert.wall_time:.1f} s)")
    out.print(args.machine_line, markup=False)
    for r in cert.bounds:
        if r.status == "error":
            out.print(f"note: {r.method} gave no bound: {r.message}", markup=False)
    return 0


def _read_partition(path: str) -> tuple[dict[str, Any], list[Any] | None, dict[str, Any], dict[str, Any]]:
    """The assignment ``{node id: block}`` of a partition file, its run order (node
    ids) when the file has one, the machine it was priced on (``k``,
    ``bandwidth``, ``memory``, ``reserve``, ``peak_aware``) and the graph it names
    (``graph_hash``, ``graph``, ``n``, ``m``) when it says so (solutions and
    certificates do)."""
    data = read_json(path, "partition file")
    mapping = data.get("assignment", data) if isinstance(data, dict) else None
    if not isinstance(mapping, dict):
        raise InputFileError(f"{path}: expected an object {{node id: block}} or a solution with 'assignment'")
    is_solution = "assignment" in data
    order = data.get("order") if is_solution else None
    if order is not None and not isinstance(order, list):
        raise InputFileError(f"{path}: 'order' must be a list of node ids")
    stored = {f: data.get(f) for f in ("k", *MACHINE_DEFAULTS)} if is_solution else {}
    if stored.get("memory", 0) is None:
        stored["memory"] = math.inf  # written as null: unlimited
    named = {f: data[f] for f in ("graph_hash", "graph", "n", "m") if is_solution and data.get(f) is not None}
    return mapping, order, stored, named


def _other_graph(named: dict[str, Any], graph: Graph) -> str | None:
    """How the graph a solution file names differs from ``graph`` (its fingerprint,
    :func:`mtpp.core.fingerprint.graph_hash`; files written before it: name, n, m), or
    ``None`` when it is the same graph or the file names none."""
    from mtpp.core.fingerprint import graph_hash

    if isinstance(named.get("graph_hash"), str):
        here = graph_hash(graph)
        return None if named["graph_hash"] == here else f"graph hash {named['graph_hash'][:12]}, not {here[:12]}"
    ours = {"graph": graph.name, "n": graph.n, "m": graph.m}
    diffs = [f"{f} {named[f]!r}, not {ours[f]!r}" for f in ours if f in named and named[f] != ours[f]]
    return "; ".join(diffs) or None


def _evaluation_document(problem: Problem, ev: Evaluation, order: Sequence[int] | None) -> EvaluationDocument:
    """The ``mtpp-evaluation`` document (:mod:`mtpp.results_schema`) of a re-checked
    partition (``order``: its run order as node indices; default the graph's
    topological order) with the simple bound."""
    from mtpp.bounds.simple import simple_lower_bound
    from mtpp.results_schema import EvaluationDocument, document_gap, graph_fields, partition_fields

    seq = problem.graph.topological_order if order is None else np.asarray(order, dtype=np.int64)
    lb = simple_lower_bound(problem)
    gap = document_gap(ev.upper_bound, lb)
    return EvaluationDocument(
        **graph_fields(problem.graph),
        **partition_fields(problem, ev, seq),
        upper_bound=ev.upper_bound,
        lower_bound=lb,
        lower_bound_method="simple",
        gap=gap,
        optimal=gap == 0.0,
        wall_time=0.0,
    )


def cmd_evaluate(args: argparse.Namespace, out: Console) -> int:
    graph = load_graph(args.file)
    raw, raw_order, stored, named = _read_partition(args.partition)
    other = _other_graph(named, graph)
    if other is not None:
        what = f"{args.partition} was made for another graph than {args.file} ({other})"
        if args.strict:
            raise InputFileError(f"{what}; without --strict it is priced on {args.file} anyway")
        print(f"mtpp: warning: {what}; its costs below are on {args.file}", file=sys.stderr)
    problem = _problem(graph, args, stored)
    try:  # node ids as the file's text (JSON keys)
        order = None if raw_order is None else [graph.index_of_text(str(v)) for v in raw_order]
        ev = evaluate(problem, {str(key): block for key, block in raw.items()}, order)
    except UnknownNodeError as exc:
        raise InputFileError(f"{args.partition}: node {exc.node_id!r} is not in {args.file}") from None
    if emit_json(_evaluation_document(problem, ev, order), args):
        return 0
    out.print(_costs_table(problem, ev, f"{args.partition} on {args.file}"))
    machine = f"k={problem.k}, B={problem.bandwidth:g}, M={problem.memory:g}, R={problem.reserve:g}"
    out.print(f"valid partition; bottleneck {ev.bottleneck:.6g}{unit(graph, 'time')} ({machine})")
    out.print(args.machine_line, markup=False)
    return 0


def cmd_generate(args: argparse.Namespace, out: Console) -> int:
    from mtpp.generators import layered_graph, regal_connected_graph, regal_graph

    if args.kind == "regal":
        graph = regal_graph(args.n, seed=args.seed)
    elif args.kind == "regal-connected":
        graph = regal_connected_graph(args.n, seed=args.seed)
    else:
        if args.n is None:
            raise InvalidParameterError("layered graphs need -n")
        graph = layered_graph(args.n, seed=args.seed)
    with writing(args.output or "stdout"):
        text = graph.to_json(args.output, indent=None)
    if args.output:
        notes(args).print(f"wrote {graph!r} to {args.output}", markup=False)
    else:
        sys.stdout.write(text + "\n")
    return 0


def cmd_info(args: argparse.Namespace, out: Console) -> int:
    g = load_graph(args.file)
    table = Table(title=g.name or args.file, show_header=False)
    for key, value in (
        ("nodes", g.n),
        ("edges", g.m),
        ("total work", f"{g.work.sum():.6g}"),
        ("total size_param", f"{g.size_param.sum():.6g}"),
        ("total size_out", f"{g.size_out.sum():.6g}"),
        ("max work", f"{g.work.max():.6g}"),
        ("sources", int((g.pred_ptr[1:] == g.pred_ptr[:-1]).sum())),
        ("sinks", int((g.succ_ptr[1:] == g.succ_ptr[:-1]).sum())),
        ("units", units_label(g).strip(" ()") or "not given"),
        ("machine", _machine_text(g)),
    ):
        table.add_row(key, str(value))
    out.print(table)
    return 0


def _machine_text(graph: Graph) -> str:
    """The graph's recorded machine in one line, for ``mtpp info``."""
    m = graph.machine
    if m is None:
        return "not recorded (give --device or --bandwidth to solve and certify)"
    memory = "unlimited" if m.memory is None else f"{m.memory:g}"
    return f"{m.name}: bandwidth {m.bandwidth:g}, memory {memory}"


COMMANDS = {
    "solve": cmd_solve,
    "certify": cmd_certify,
    "evaluate": cmd_evaluate,
    "generate": cmd_generate,
    "info": cmd_info,
}


def _command(name: str) -> Callable[[argparse.Namespace, Console], int]:
    if name in COMMANDS:
        return COMMANDS[name]
    from mtpp.cli.batch import COMMANDS as BATCH_COMMANDS
    from mtpp.cli.importer import COMMANDS as IMPORT_COMMANDS
    from mtpp.cli.plan import COMMANDS as PLAN_COMMANDS
    from mtpp.cli.scheduling import COMMANDS as SCHEDULING_COMMANDS
    from mtpp.cli.train import COMMANDS as TRAIN_COMMANDS

    return {**BATCH_COMMANDS, **IMPORT_COMMANDS, **PLAN_COMMANDS, **SCHEDULING_COMMANDS, **TRAIN_COMMANDS}[name]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status (see the module docstring)."""
    start_clock(with_startup=argv is None)  # from a shell: the budget counts from process start
    args = build_parser().parse_args(argv)
    out = Console(soft_wrap=True)
    try:
        check_paths(args)
        with reserved_stdout(args), showing_warnings():
            return _command(args.command)(args, out)
    except InternalError as exc:  # a bug caught at an entry point: the original is its cause
        if os.environ.get(DEBUG_ENV):
            raise
        print(f"mtpp: {exc} (run with {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
        return EXIT_INTERNAL
    except MtppError as exc:
        print(f"mtpp: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except WriteError as exc:
        print(f"mtpp: error: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    except KeyboardInterrupt:
        print("mtpp: interrupted; finished results are kept (rerun a batch to go on)", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        what = (str(exc).splitlines() or [""])[0][:300]
        print(
            f"mtpp: internal error: {type(exc).__name__}: {what} (run with {DEBUG_ENV}=1 for the traceback; "
            "please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
