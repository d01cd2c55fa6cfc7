"""The scheduling commands: ``mtpp schedule`` (a minimum-peak-memory order with a proven
bound) and ``mtpp place`` (ops on heterogeneous devices, scheduled, with a bound).
:func:`add_scheduling_commands` adds their parsers; :data:`COMMANDS` maps their names
to handlers ``(args, console) -> exit status``."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from mtpp.cli.output import compile_notice, emit_json, notes, remaining, unit, units_label, working
from mtpp.core.errors import InputFileError
from mtpp.io.graph_file import load_graph
from mtpp.io.json_file import read_json


def add_scheduling_commands(sub: Any) -> None:
    """The ``schedule`` and ``place`` parsers."""
    sch = sub.add_parser("schedule", help="minimum-peak-memory order of a graph, with a proven lower bound")
    sch.add_argument("file", help="graph file")
    sch.add_argument(
        "--method",
        default="auto",
        help="auto, search, exact-dp, cpsat, beam, greedy, brkga, dfs, bfs, "
        "random, learned-rule, learned-rule-sample, topoformer, topoformer-sample, topoformer-beam, regal-brkga, "
        "topoformer-brkga",
    )
    sch.add_argument(
        "--weights", default=None, help="weights file for a learned method or --incumbent (default: shipped)"
    )
    sch.add_argument(
        "--incumbent",
        default=None,
        help="a learned method (learned-rule, topoformer, ...) whose order seeds auto / search / exact-dp / cpsat",
    )
    sch.add_argument("--time-limit", type=float, default=60.0, help="seconds for the searching methods (default 60)")
    sch.add_argument("--beam-width", type=int, default=None, help="states kept per level by 'beam' (default 1000)")
    sch.add_argument("--threads", type=int, default=1, help="CP-SAT workers (default 1)")
    sch.add_argument("--seed", type=int, default=0)
    sch.add_argument("--json", action="store_true", help="print the schedule as JSON")
    sch.add_argument("-o", "--output", help="also write the schedule JSON to this file")

    pl = sub.add_parser("place", help="place ops on heterogeneous devices and schedule them, with a lower bound")
    pl.add_argument("file", help="graph file")
    pl.add_argument(
        "--devices",
        default="cpu-igpu-dgpu",
        help="preset (cpu-igpu-dgpu, two-devices; they expect work in microseconds and sizes in bytes, "
        "as 'mtpp import' writes) or a JSON DeviceSet file",
    )
    pl.add_argument("--method", default="auto", help="auto, single, heft, brkga or cpsat")
    pl.add_argument("--objective", default="runtime", help="runtime or peak_memory")
    pl.add_argument("--time-limit", type=float, default=10.0, help="seconds for the searching methods (default 10)")
    pl.add_argument("--seed", type=int, default=0)
    pl.add_argument("--threads", type=int, default=1, help="CP-SAT workers (default 1)")
    pl.add_argument("--json", action="store_true", help="print the placement as JSON")
    pl.add_argument("-o", "--output", help="also write the placement JSON to this file")


def cmd_schedule(args: argparse.Namespace, out: Console) -> int:
    from mtpp.scheduling import schedule

    graph = load_graph(args.file)
    err = notes(args)
    label = f"schedule {graph.n} ops ({args.method}, time limit {args.time_limit:g} s)"
    with compile_notice(err), working(err, label):
        sched = schedule(
            graph,
            method=args.method,
            time_limit=remaining(args.time_limit, graph.n),
            seed=args.seed,
            beam_width=args.beam_width,
            threads=args.threads,
            weights=args.weights,
            incumbent=args.incumbent,
        )
    if emit_json(sched, args):
        return 0
    table = Table(title=f"peak memory of {graph.name or args.file}: n={graph.n}, m={graph.m}{units_label(graph)}")
    for col in ("stage", "peak", "lower bound", "status", "seconds"):
        table.add_column(col, justify="right")
    for st in sched.stages:
        peak = "-" if math.isinf(st.peak) else f"{st.peak:.6g}"
        table.add_row(st.method, peak, f"{st.lower_bound:.6g}", st.status, f"{st.wall_time:.2f}")
    out.print(table)
    for st in sched.stages:
        if st.status == "error":  # a failed stage: its reason, one line each
            out.print(f"{st.method} failed: {st.detail}")
    size = unit(graph, "size")
    out.print(f"best peak    {sched.peak:.6g}{size}   ({sched.method})")
    out.print(f"lower bound  {sched.lower_bound:.6g}{size}   ({sched.bound_method})")
    out.print(f"gap          {100 * sched.gap:.2f}%   ({sched.status}; {sched.wall_time:.1f} s)")
    return 0


def cmd_place(args: argparse.Namespace, out: Console) -> int:
    from mtpp.core.presets import get_devices
    from mtpp.placement.api import place

    graph = load_graph(args.file)
    devices = get_devices(_device_set(args.devices))  # an unknown preset fails here, before any work
    err = notes(args)
    label = f"place {graph.n} ops on {devices.name} ({args.method}, time limit {args.time_limit:g} s)"
    with compile_notice(err), working(err, label):
        p = place(
            graph,
            devices,
            objective=args.objective,
            method=args.method,
            time_limit=remaining(args.time_limit, graph.n),
            seed=args.seed,
            threads=args.threads,
        )
    if emit_json(p, args):
        return 0
    table = Table(title=f"placement of {graph.name or args.file} on {', '.join(p.devices)}{units_label(graph)}")
    table.add_column("candidate")
    table.add_column(args.objective, justify="right")
    for name, value in p.candidates.items():
        table.add_row(name, f"{value:.6g}")
    out.print(table)
    counts = {d: p.device.count(i) for i, d in enumerate(p.devices)}
    out.print(f"best ({p.method})   {p.upper_bound:.6g}   ops per device {counts}")
    out.print(f"memory feasible {p.memory_feasible}")
    gap = "proven optimal" if p.optimal else f"gap {100 * p.gap:.2f}%"
    out.print(f"lower bound   {p.lower_bound:.6g}   ({gap})")
    return 0


def _device_set(spec: str) -> Any:
    """A preset name as is, or the :class:`DeviceSet` of a JSON file (``*.json`` or
    any existing file)."""
    from pydantic import ValidationError

    from mtpp.core.device_sets import DeviceSet

    if not (spec.endswith(".json") or os.path.exists(spec)):
        return spec
    data = read_json(spec, "device-set JSON file")
    try:
        return DeviceSet.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise InputFileError(
            f"{spec}: not a device set ({where}: {first['msg']}; {exc.error_count()} error(s))"
        ) from None


COMMANDS: dict[str, Callable[[argparse.Namespace, Console], int]] = {"schedule": cmd_schedule, "place": cmd_place}
