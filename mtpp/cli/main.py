"""The ``mtpp`` command line.

``mtpp solve FILE -k K``      partition a graph, print blocks, costs and bounds
``mtpp certify FILE -k K``    partition and prove lower bounds with the MIP hierarchy
``mtpp schedule FILE``        minimum-peak-memory order with a proven lower bound
``mtpp place FILE``           ops on heterogeneous devices, scheduled, with a makespan bound
``mtpp evaluate FILE PART``   re-check a partition file and print its costs
``mtpp generate KIND``        write a seeded synthetic graph (regal | layered)
``mtpp info FILE``            sizes and totals of a graph
``mtpp import MODEL.onnx``    an ONNX model as an mtpp graph priced on a device preset
``mtpp batch TESTBED -k ...``  run the bound hierarchy over a testbed into a results store
``mtpp table results.db``     Table 1/2/3-style summaries of a store
``mtpp plot results.db``      running-time and LB/UB figures of a store
``mtpp train topoformer|regal`` train a learned orderer, write its weights and loss plot

Errors on bad input print one line naming the problem and exit with status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from collections.abc import Callable, Iterator, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from heuristics.brkga import Progress as ProgressCallback
from mtpp.errors import GraphFormatError, InvalidParameterError, MtppError
from mtpp.evaluate import Evaluation, evaluate
from mtpp.graph import Graph
from mtpp.io.graph_file import load_graph
from mtpp.problem import Problem

EXIT_USAGE = 2


def _machine_args(p: argparse.ArgumentParser, several_k: bool = False) -> None:
    if several_k:
        p.add_argument("-k", type=int, nargs="+", required=True,
                       help="number(s) of pipeline stages; several k share their bounds")  # fmt: skip
    else:
        p.add_argument("-k", type=int, required=True, help="number of pipeline stages (blocks)")
    p.add_argument("--bandwidth", type=float, default=1.0, help="inter-block bandwidth B (default 1)")
    p.add_argument("--memory", type=float, default=math.inf, help="fast memory M per block (default unlimited)")
    p.add_argument("--reserve", type=float, default=0.0, help="activation reserve R inside M (default 0)")
    p.add_argument("--peak-aware", action="store_true",
                   help="overflow (size_param + peak - M)^+ / B with each block's activation peak (Eq. 2)")  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mtpp", description="Pipeline partitioning with certified bounds.")
    sub = parser.add_subparsers(dest="command", required=True)

    solve = sub.add_parser("solve", help="partition a graph with SliceGraph")
    solve.add_argument("file", help="graph file (mtpp JSON or node-link JSON)")
    _machine_args(solve)
    solve.add_argument("--orderer", default="brkga", help="kahn, dfs, bfs, random-T, brkga[-N], mla, mla-weighted, "
                       "topoformer, topoformer-sample[-N], topoformer-beam[-N], regal-brkga[-N]")  # fmt: skip
    solve.add_argument("--weights", default=None, help="weights file for a learned orderer (default: shipped)")
    solve.add_argument("--seed", type=int, default=0)
    solve.add_argument("--time-limit", type=float, default=None, help="seconds for the order search")
    solve.add_argument("--json", action="store_true", help="print the solution as JSON")
    solve.add_argument("-o", "--output", help="also write the solution JSON to this file")
    solve.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="show a progress bar (default: when stderr is a terminal)")  # fmt: skip

    cert = sub.add_parser("certify", help="partition a graph and prove lower bounds with MIPs")
    cert.add_argument("file", help="graph file")
    _machine_args(cert, several_k=True)
    cert.add_argument("--bounds", default="all",
                      help="all, or a comma list of simple,cut,ideal-dp,bottleneck,guess,exact")  # fmt: skip
    cert.add_argument("--solver", default="auto", help="auto, highs, scip, gurobi or cpsat")
    cert.add_argument("--time-limit", type=float, default=60.0, help="seconds per MIP method at most (default 60)")
    cert.add_argument("--budget", type=float, default=60.0,
                      help="seconds for the whole call, spent cheapest first (default 60)")  # fmt: skip
    cert.add_argument("--threads", type=int, default=1, help="solver threads")
    cert.add_argument("--jobs", type=int, default=1, help="parallel sub-MIPs for guess-the-bottleneck")
    cert.add_argument("--orderer", default="brkga", help="orderer for the partition (see 'solve')")
    cert.add_argument("--seed", type=int, default=0)
    cert.add_argument("--json", action="store_true", help="print the certificate as JSON")
    cert.add_argument("-o", "--output", help="also write the certificate JSON to this file")
    cert.add_argument("--export-dir", help="write every MIP of the requested methods here as MPS")

    sch = sub.add_parser("schedule", help="minimum-peak-memory order of a graph, with a proven lower bound")
    sch.add_argument("file", help="graph file")
    sch.add_argument("--method", default="auto", help="auto, exact-dp, cpsat, beam, greedy, brkga, dfs, bfs, random, "
                     "topoformer, topoformer-sample, topoformer-beam, regal-brkga")  # fmt: skip
    sch.add_argument("--weights", default=None, help="weights file for a learned method (default: shipped)")
    sch.add_argument("--time-limit", type=float, default=60.0, help="seconds for the searching methods (default 60)")
    sch.add_argument("--beam-width", type=int, default=None, help="states kept per level by 'beam' (default 1000)")
    sch.add_argument("--threads", type=int, default=None, help="CP-SAT workers (default: CPU count, at most 8)")
    sch.add_argument("--seed", type=int, default=0)
    sch.add_argument("--json", action="store_true", help="print the schedule as JSON")
    sch.add_argument("-o", "--output", help="also write the schedule JSON to this file")

    pl = sub.add_parser("place", help="place ops on heterogeneous devices and schedule them, with a lower bound")
    pl.add_argument("file", help="graph file")
    pl.add_argument("--devices", default="cpu-igpu-dgpu",
                    help="preset (cpu-igpu-dgpu, two-devices; they expect work in microseconds and sizes in bytes, "
                    "as 'mtpp import' writes) or a JSON DeviceSet file")  # fmt: skip
    pl.add_argument("--method", default="auto", help="auto, single, heft, brkga or cpsat")
    pl.add_argument("--objective", default="runtime", help="runtime or peak_memory")
    pl.add_argument("--time-limit", type=float, default=10.0, help="seconds for the searching methods (default 10)")
    pl.add_argument("--seed", type=int, default=0)
    pl.add_argument("--json", action="store_true", help="print the placement as JSON")
    pl.add_argument("-o", "--output", help="also write the placement JSON to this file")

    ev = sub.add_parser("evaluate", help="check a partition and print its costs")
    ev.add_argument("file", help="graph file")
    ev.add_argument("partition", help="JSON: a solution written by 'mtpp solve -o', or {node id: block}")
    _machine_args(ev)
    ev.add_argument("--json", action="store_true")

    gen = sub.add_parser("generate", help="write a seeded synthetic graph")
    gen.add_argument("kind", choices=["regal", "layered"])
    gen.add_argument("-n", type=int, default=None, help="number of nodes (regal: 50..200 drawn if omitted)")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("-o", "--output", help="file to write (default: stdout)")

    info = sub.add_parser("info", help="print sizes and totals of a graph")
    info.add_argument("file")

    from mtpp.cli.batch import add_commands
    from mtpp.cli.importer import add_import_command
    from mtpp.cli.train import add_train_command

    add_commands(sub)
    add_import_command(sub)
    add_train_command(sub)
    return parser


@contextlib.contextmanager
def _progress_bar(enabled: bool, label: str) -> Iterator[ProgressCallback | None]:
    if not enabled:
        yield None
        return
    with Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn("best {task.fields[best]}"),
        TimeRemainingColumn(), console=Console(stderr=True), transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task(label, total=None, best="-")

        def update(done: int, total: int, best: float) -> None:
            bar.update(task, completed=done, total=total, best=f"{best:.6g}")

        yield update


def _costs_table(problem: Problem, ev: Evaluation, title: str, members: list[int] | None = None) -> Table:
    table = Table(title=title)
    for col in ("block", "nodes", "input IO", "work", "overflow", "output IO", "cost"):
        table.add_column(col, justify="right")
    c = ev.costs
    counts = members or [int((ev.assignment == b).sum()) for b in range(problem.k)]
    for b in range(problem.k):
        mark = " *" if b == ev.bottleneck_block else ""
        table.add_row(
            f"{b}{mark}", str(counts[b]),
            *(f"{x:.6g}" for x in (c.input_io[b], c.work[b], c.overflow[b], c.output_io[b], c.total[b])),
        )  # fmt: skip
    return table


def _emit_json(text: str, args: argparse.Namespace, out: Console) -> bool:
    """Write the result JSON to ``--output`` if given; print it and return True with
    ``--json`` (the caller then prints nothing else)."""
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    if args.json:
        out.print_json(text)
    return bool(args.json)


def _problem(graph: Graph, args: argparse.Namespace, k: int | None = None) -> Problem:
    return Problem(graph, args.k if k is None else k, bandwidth=args.bandwidth, memory=args.memory,
                   reserve=args.reserve, peak_aware=args.peak_aware)  # fmt: skip


def cmd_solve(args: argparse.Namespace, out: Console) -> int:
    from mtpp.partitioner import partition

    problem = _problem(load_graph(args.file), args)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    with _progress_bar(show, f"{args.orderer}") as update:
        sol = partition(problem, orderer=args.orderer, seed=args.seed, time_limit=args.time_limit, progress=update,
                        weights=args.weights)  # fmt: skip
    text = sol.to_json()
    if _emit_json(text, args, out):
        return 0
    g = problem.graph
    out.print(_costs_table(problem, sol.evaluation, f"{g.name or args.file}: n={g.n}, m={g.m}, k={problem.k}"))
    out.print(f"bottleneck (upper bound)  {sol.bottleneck:.6g}   (* marks the bottleneck block)")
    out.print(f"simple lower bound        {sol.lower_bound:.6g}   (Lemma 3.3)")
    out.print(f"LB / UB                   {sol.ratio:.4f}")
    stopped = " (stopped by the time limit)" if sol.stopped_by_time else ""
    out.print(f"orderer {sol.orderer}, seed {sol.seed}: {sol.evaluations} orders in {sol.wall_time:.2f} s{stopped}")
    return 0


def cmd_certify(args: argparse.Namespace, out: Console) -> int:
    from mtpp.certificate import certify, export_models

    graph = load_graph(args.file)
    problem = _problem(graph, args, args.k[0])
    err = Console(stderr=True, highlight=False)
    if args.export_dir:
        for kk in args.k:
            for path in export_models(_problem(graph, args, kk), args.bounds, args.export_dir):
                err.print(f"wrote {path}")
    certs = certify(
        problem, k=args.k, bounds=args.bounds, solver=args.solver, time_limit=args.time_limit, budget=args.budget,
        threads=args.threads, n_jobs=args.jobs, orderer=args.orderer, seed=args.seed,
        report=None if args.json else err.print,
    )  # fmt: skip
    text = certs[0].model_dump_json(indent=2) if len(certs) == 1 else json.dumps(
        [c.model_dump(mode="json") for c in certs], indent=2)  # fmt: skip
    if _emit_json(text, args, out):
        return 0
    if len(certs) > 1:
        summary = Table(title=f"bounds for {graph.name or args.file}")
        for col in ("k", "upper bound", "lower bound", "LB / UB", "lower bound by", "partition from"):
            summary.add_column(col, justify="right")
        for c in certs:
            summary.add_row(str(c.k), f"{c.upper_bound:.6g}", f"{c.lower_bound:.6g}", f"{c.ratio:.4f}",
                            c.lower_bound_method, c.partition_source)  # fmt: skip
        out.print(summary)
        out.print(f"{sum(c.optimal for c in certs)} of {len(certs)} proven optimal in {certs[-1].wall_time:.1f} s")
        return 0
    cert = certs[0]
    table = Table(title=f"bounds for {graph.name or args.file}, k={cert.k}")
    for col in ("method", "solver", "status", "lower bound", "LB / UB", "seconds"):
        table.add_column(col, justify="right")
    for r in cert.bounds:
        bound = "-" if r.bound is None else f"{r.bound:.6g}"
        ratio = "-" if r.bound is None or cert.upper_bound == 0 else f"{r.bound / cert.upper_bound:.4f}"
        table.add_row(r.method, r.solver or "-", r.status, bound, ratio, f"{r.wall_time:.2f}")
    out.print(table)
    out.print(f"upper bound  {cert.upper_bound:.6g}   from {cert.partition_source}")
    out.print(f"lower bound  {cert.lower_bound:.6g}   from {cert.lower_bound_method}")
    verdict = "proven optimal" if cert.optimal else f"gap {cert.gap_percent:.2f}%"
    out.print(f"LB / UB      {cert.ratio:.4f}   ({verdict}; {cert.wall_time:.1f} s)")
    return 0


def cmd_schedule(args: argparse.Namespace, out: Console) -> int:
    from mtpp.scheduling import schedule

    graph = load_graph(args.file)
    sched = schedule(graph, method=args.method, time_limit=args.time_limit, seed=args.seed,
                     beam_width=args.beam_width, threads=args.threads, weights=args.weights)  # fmt: skip
    text = sched.to_json(indent=2)
    if _emit_json(text, args, out):
        return 0
    table = Table(title=f"peak memory of {graph.name or args.file}: n={graph.n}, m={graph.m}")
    for col in ("stage", "peak", "lower bound", "status", "seconds"):
        table.add_column(col, justify="right")
    for st in sched.stages:
        peak = "-" if math.isinf(st.peak) else f"{st.peak:.6g}"
        table.add_row(st.method, peak, f"{st.lower_bound:.6g}", st.status, f"{st.wall_time:.2f}")
    out.print(table)
    out.print(f"best peak    {sched.peak:.6g}   ({sched.method})")
    out.print(f"lower bound  {sched.lower_bound:.6g}   ({sched.bound_method})")
    out.print(f"gap          {100 * sched.gap:.2f}%   ({sched.status}; {sched.wall_time:.1f} s)")
    return 0


def cmd_place(args: argparse.Namespace, out: Console) -> int:
    from mtpp.placement.api import place
    from mtpp.placement.devices import DeviceSet

    graph = load_graph(args.file)
    devices: str | DeviceSet = args.devices
    if args.devices.endswith(".json"):
        try:
            with open(args.devices, encoding="utf-8") as fh:
                devices = DeviceSet.model_validate_json(fh.read())
        except OSError as exc:
            raise GraphFormatError(f"{args.devices}: cannot read the device file ({exc})") from None
    p = place(graph, devices, objective=args.objective, method=args.method, time_limit=args.time_limit,
              seed=args.seed)  # fmt: skip
    if _emit_json(p.model_dump_json(indent=2), args, out):
        return 0
    table = Table(title=f"placement of {graph.name or args.file} on {', '.join(p.devices)}")
    table.add_column("candidate")
    table.add_column(args.objective, justify="right")
    for name, value in p.candidates.items():
        table.add_row(name, f"{value:.6g}")
    out.print(table)
    counts = {d: p.device.count(i) for i, d in enumerate(p.devices)}
    out.print(f"best ({p.method})   {p.objective_value:.6g}   ops per device {counts}")
    out.print(f"memory feasible {p.memory_feasible}")
    if p.lower_bound is not None:
        gap = "proven optimal" if p.proven_optimal else f"gap {100 * (p.gap or 0.0):.2f}%"
        out.print(f"lower bound   {p.lower_bound:.6g}   ({gap})")
    return 0


def _read_partition(path: str) -> tuple[dict, list | None]:
    """The assignment ``{node id: block}`` of a partition file, and its run order (node
    ids) when the file has one (solutions and certificates do)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise GraphFormatError(f"{path}: cannot read partition ({exc})") from None
    mapping = data.get("assignment", data) if isinstance(data, dict) else None
    if not isinstance(mapping, dict):
        raise GraphFormatError(f"{path}: expected an object {{node id: block}} or a solution with 'assignment'")
    order = data.get("order") if "assignment" in data else None
    if order is not None and not isinstance(order, list):
        raise GraphFormatError(f"{path}: 'order' must be a list of node ids")
    return mapping, order


def cmd_evaluate(args: argparse.Namespace, out: Console) -> int:
    graph = load_graph(args.file)
    problem = _problem(graph, args)
    raw, raw_order = _read_partition(args.partition)
    by_str = {str(i): i for i in graph.ids}
    unknown = [key for key in [*raw, *(raw_order or [])] if str(key) not in by_str]
    if unknown:
        raise GraphFormatError(f"{args.partition}: node {unknown[0]!r} is not in {args.file}")
    assignment = {by_str[str(key)]: block for key, block in raw.items()}
    order = None if raw_order is None else [graph.index(by_str[str(v)]) for v in raw_order]
    ev = evaluate(problem, assignment, order)
    if args.json:
        c = ev.costs
        out.print_json(json.dumps({"bottleneck": ev.bottleneck, "block_costs": c.total.tolist(),
                                   "input_io": c.input_io.tolist(), "work": c.work.tolist(),
                                   "overflow": c.overflow.tolist(), "output_io": c.output_io.tolist()}))  # fmt: skip
        return 0
    out.print(_costs_table(problem, ev, f"{args.partition} on {args.file}"))
    out.print(f"valid partition; bottleneck {ev.bottleneck:.6g}")
    return 0


def cmd_generate(args: argparse.Namespace, out: Console) -> int:
    from mtpp.generators import layered_graph, regal_graph

    if args.kind == "regal":
        graph = regal_graph(args.n, seed=args.seed)
    else:
        if args.n is None:
            raise InvalidParameterError("layered graphs need -n")
        graph = layered_graph(args.n, seed=args.seed)
    text = graph.to_json(args.output, indent=None)
    if args.output:
        out.print(f"wrote {graph!r} to {args.output}")
    else:
        sys.stdout.write(text + "\n")
    return 0


def cmd_info(args: argparse.Namespace, out: Console) -> int:
    g = load_graph(args.file)
    table = Table(title=g.name or args.file, show_header=False)
    for key, value in (
        ("nodes", g.n), ("edges", g.m),
        ("total work", f"{g.work.sum():.6g}"), ("total size_param", f"{g.size_param.sum():.6g}"),
        ("total size_out", f"{g.size_out.sum():.6g}"), ("max work", f"{g.work.max():.6g}"),
        ("sources", int((g.pred_ptr[1:] == g.pred_ptr[:-1]).sum())),
        ("sinks", int((g.succ_ptr[1:] == g.succ_ptr[:-1]).sum())),
    ):  # fmt: skip
        table.add_row(key, str(value))
    out.print(table)
    return 0


COMMANDS = {
    "solve": cmd_solve,
    "certify": cmd_certify,
    "schedule": cmd_schedule,
    "place": cmd_place,
    "evaluate": cmd_evaluate,
    "generate": cmd_generate,
    "info": cmd_info,
}


def _command(name: str) -> Callable[[argparse.Namespace, Console], int]:
    if name in COMMANDS:
        return COMMANDS[name]
    from mtpp.cli.batch import COMMANDS as BATCH_COMMANDS
    from mtpp.cli.importer import COMMANDS as IMPORT_COMMANDS
    from mtpp.cli.train import COMMANDS as TRAIN_COMMANDS

    return {**BATCH_COMMANDS, **IMPORT_COMMANDS, **TRAIN_COMMANDS}[name]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Console(soft_wrap=True)
    try:
        return _command(args.command)(args, out)
    except MtppError as exc:
        print(f"mtpp: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("mtpp: interrupted; finished results are kept (rerun a batch to go on)", file=sys.stderr)
        return 130

