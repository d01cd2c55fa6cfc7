"""The ``mtpp plan`` command: pipeline stages for a PyTorch model, with a certificate.

``mtpp plan MODULE:FACTORY -k K [--input-shape 1,3,224,224 ...] [--time-limit 10]``
``mtpp plan path/to/script.py:factory -k K``

``FACTORY`` (a function or class, called without arguments) returns the model, or
``(model, example_args)``; ``--input-shape`` (once per positional input) gives
``torch.randn`` inputs of those shapes instead.  The command traces the model
(:func:`mtpp.plan_pipeline`), prints the stages of the optimal split-point plan, its
certificate (lower bound over every acyclic partition, LB / plan, proven or not) and
the DeepSpeed and torchgpipe rules' plans side by side (:mod:`mtpp.pipelining.baselines`),
all priced on ``--device`` at ``--granularity``.  ``--time-limit`` caps the whole command.
torch is an optional dependency: without it the command says so (exit 2).

:func:`add_plan_command` adds the subcommand; :data:`COMMANDS` maps it to its handler.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mtpp.cli.output import elapsed, emit_json, notes, remaining
from mtpp.core.errors import InputFileError, InvalidParameterError, MissingDependencyError

PLAN_TIME_LIMIT = 30.0
"""``mtpp plan``'s default ``--time-limit``: importing torch and a first ``torch.export``
take seconds before the certificate starts (``plan_pipeline``'s default is 10 s)."""
BASELINES = ("deepspeed-uniform", "deepspeed-parameters", "torchgpipe-time")
QUICK_SECONDS = 0.1
"""The rules' plans are priced on a certificate of the simple bound only; their LB / UB
uses the plan's certificate."""


class StageDocument(BaseModel):
    index: int
    first_op: int
    last_op: int
    modules: list[str]
    input_io: float
    work: float
    overflow: float
    output_io: float
    cost: float
    param_bytes: float


class RuleDocument(BaseModel):
    rule: str
    stages: int
    bottleneck: float
    ratio: float


class PlanDocument(BaseModel):
    """What ``mtpp plan --json`` prints (times in microseconds, sizes in bytes)."""

    kind: str = "mtpp-pipeline-plan"
    model: str
    k: int
    device: str
    granularity: int | None
    mode: str
    n: int
    m: int
    split_spec: dict[str, str]
    stages: list[StageDocument]
    bottleneck: float
    lower_bound: float
    lower_bound_method: str
    ratio: float
    proven: bool
    unrestricted_upper_bound: float
    restriction: float
    baselines: list[RuleDocument]
    notes: list[str]
    wall_time: float


def add_plan_command(sub: Any) -> argparse.ArgumentParser:
    """Add ``plan`` to ``sub`` (from ``add_subparsers``) and return its parser."""
    from mtpp.core.presets import DEVICES

    p = sub.add_parser(
        "plan",
        help="pipeline stages for a PyTorch model (split points, certificate, DeepSpeed / torchgpipe baselines)",
    )
    p.add_argument(
        "model",
        metavar="MODULE:FACTORY",
        help="a factory returning the model or (model, example_args): package.module:name or path/to/script.py:name",
    )
    p.add_argument("-k", type=int, required=True, help="number of pipeline stages (at most)")
    p.add_argument(
        "--input-shape",
        action="append",
        metavar="D1,D2,...",
        help="shape of a torch.randn example input, once per positional input (default: the factory's args)",
    )
    p.add_argument("--device", choices=sorted(DEVICES), default="a100", help="device preset (default a100)")
    p.add_argument(
        "--granularity", type=int, default=None, help="cut only at module calls of depth <= this (default: any)"
    )
    p.add_argument("--mode", choices=("inference", "training"), default="inference")
    p.add_argument("--cost", choices=("roofline", "measured"), default="roofline")
    p.add_argument(
        "--time-limit",
        type=float,
        default=PLAN_TIME_LIMIT,
        help=f"seconds for the whole command, start-up and tracing included (default {PLAN_TIME_LIMIT:g})",
    )
    p.add_argument("--no-baselines", action="store_true", help="skip the DeepSpeed / torchgpipe rules")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("-o", "--output", help="also write the plan JSON to this file")
    return p


def load_factory(spec: str) -> Any:
    """The object ``spec`` names: ``package.module:name`` (importable from the current
    directory too) or ``path/to/file.py:name``."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise InvalidParameterError(f"name the factory as MODULE:FACTORY or path/to/script.py:FACTORY, got {spec!r}")
    if target.endswith(".py") or os.sep in target:
        if not os.path.isfile(target):
            raise InputFileError(f"{target}: no such script")
        module_name = f"_mtpp_plan_{os.path.splitext(os.path.basename(target))[0]}"
        loader = importlib.util.spec_from_file_location(module_name, target)
        if loader is None or loader.loader is None:
            raise InputFileError(f"{target}: cannot be loaded as a Python script")
        module = importlib.util.module_from_spec(loader)
        sys.modules[module_name] = module
        try:
            loader.loader.exec_module(module)
        except Exception as exc:
            raise InputFileError(f"{target}: running it raised {type(exc).__name__}: {exc}") from exc
    else:
        if os.getcwd() not in sys.path and "" not in sys.path:  # as python -m does: modules here import
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise InputFileError(f"cannot import {target!r}: {exc}") from exc
    if not hasattr(module, name):
        raise InvalidParameterError(f"{target} has no attribute {name!r}")
    return getattr(module, name)


def _shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(d) for d in text.split(","))
    except ValueError:
        shape = ()
    if not shape or any(d < 1 for d in shape):
        raise InvalidParameterError(f"--input-shape must be positive integers such as 1,3,224,224, got {text!r}")
    return shape


def model_and_args(args: argparse.Namespace, torch: Any) -> tuple[Any, tuple[Any, ...]]:
    """Call the factory; the example inputs from it or from ``--input-shape``."""
    factory = load_factory(args.model)
    if not callable(factory):
        raise InvalidParameterError(f"{args.model} is not callable")
    shapes = [_shape(s) for s in args.input_shape or []]
    try:
        made = factory()
    except Exception as exc:
        raise InvalidParameterError(f"{args.model}() raised {type(exc).__name__}: {exc}") from exc
    model, example = (made[0], made[1]) if isinstance(made, tuple) and len(made) == 2 else (made, None)
    if not isinstance(model, torch.nn.Module):
        raise InvalidParameterError(
            f"{args.model}() must return an nn.Module or (module, example_args), got {type(made).__name__}"
        )
    if shapes:
        example = tuple(torch.randn(*s) for s in shapes)
    if example is None:
        raise InvalidParameterError(f"{args.model}() returned no example inputs: give --input-shape")
    return model.eval(), (example,) if isinstance(example, torch.Tensor) else tuple(example)


def cmd_plan(args: argparse.Namespace, out: Console) -> int:
    try:
        import torch
    except ImportError:
        raise MissingDependencyError(
            "mtpp plan needs torch: pip install torch (or '.[dev]' / '.[torch]' in a clone of mtpp)"
        ) from None
    from mtpp.pipelining import plan_stages, trace_model
    from mtpp.pipelining.plan import time_notes

    if args.k < 1:
        raise InvalidParameterError(f"-k must be a positive integer, got {args.k}")
    if not args.time_limit > 0:
        raise InvalidParameterError(f"--time-limit must be a number of seconds > 0, got {args.time_limit}")
    err = notes(args)
    model, example = model_and_args(args, torch)
    err.print(f"tracing {type(model).__name__} on {args.device} ...")
    traced = trace_model(model, example, cost=args.cost, device_spec=args.device, mode=args.mode)
    traced_at = elapsed()
    others: list[Any] = []  # the rules first, on a quick certificate: the plan's certify gets what they leave
    if not args.no_baselines:
        for rule in BASELINES:
            quick = others[0].unrestricted if others else None
            others.append(
                plan_stages(
                    traced,
                    args.k,
                    rule=rule,
                    granularity=args.granularity,
                    bounds="simple",
                    time_limit=QUICK_SECONDS,
                    certificate=quick,
                )
            )
    budget = remaining(args.time_limit) or args.time_limit
    plan = plan_stages(traced, args.k, granularity=args.granularity, time_limit=budget)
    lb = plan.lower_bound  # holds for every partition, so for the rules' plans too
    baselines = [
        RuleDocument(
            rule=o.rule,
            stages=len(o.stages),
            bottleneck=o.bottleneck,
            ratio=1.0 if o.bottleneck == 0 else lb / o.bottleneck,
        )
        for o in others
    ]
    doc = _document(args, plan, baselines, elapsed())
    doc.notes += time_notes(args.time_limit, traced_at, doc.wall_time, plan.unrestricted)
    if emit_json(doc, args):
        return 0
    out.print(
        Text(f"{doc.model}: {len(plan.stages)} of k={args.k} stages on {args.device} (time in us; * the bottleneck)")
    )
    for line in plan.stage_table():
        out.print(line, markup=False, highlight=False)
    spec = ", ".join(f"{m}: {p}" for m, p in doc.split_spec.items())
    out.print(f"split_spec   {spec or '{} (one stage)'}", markup=False)
    verdict = "proven optimal" if doc.proven else f"gap {100 * (1 - doc.ratio):.2f}%"
    out.print(f"upper bound  {doc.bottleneck:.6g} us   the plan's bottleneck (* marks it)")
    out.print(f"lower bound  {doc.lower_bound:.6g} us   from {doc.lower_bound_method}, over every acyclic partition")
    out.print(f"LB / UB      {doc.ratio:.4f}   ({verdict})")
    out.print(
        f"best unrestricted partition {doc.unrestricted_upper_bound:.6g} us (plan / it {doc.restriction:.4f})",
        markup=False,
    )
    if baselines:
        rules = Table(title=f"the same model, k={args.k}, by rule")
        for col in ("rule", "stages", "bottleneck", "LB / UB", "vs mtpp"):
            rules.add_column(col, justify="left" if col == "rule" else "right")
        for row in [
            RuleDocument(rule="mtpp", stages=len(plan.stages), bottleneck=doc.bottleneck, ratio=doc.ratio),
            *baselines,
        ]:
            versus = row.bottleneck / doc.bottleneck if doc.bottleneck else 1.0
            rules.add_row(row.rule, str(row.stages), f"{row.bottleneck:.6g}", f"{row.ratio:.4f}", f"{versus:.3f}x")
        out.print(rules)
    for note in doc.notes:
        out.print(f"note: {note}", markup=False)
    return 0


def _document(args: argparse.Namespace, plan: Any, baselines: list[RuleDocument], wall: float) -> PlanDocument:
    starts, parts = plan.units.starts, plan.parts
    return PlanDocument(
        model=args.model,
        k=args.k,
        device=args.device,
        granularity=args.granularity,
        mode=args.mode,
        n=plan.graph.n,
        m=plan.graph.m,
        split_spec={name: point.name for name, point in plan.split_spec.items()},
        stages=[
            StageDocument(
                index=st.index,
                first_op=starts[parts[st.index]],
                last_op=starts[parts[st.index + 1]] - 1,
                modules=list(st.modules),
                input_io=st.input_io,
                work=st.work,
                overflow=st.overflow,
                output_io=st.output_io,
                cost=st.cost,
                param_bytes=st.param_bytes,
            )
            for st in plan.stages
        ],
        bottleneck=plan.bottleneck,
        lower_bound=plan.lower_bound,
        lower_bound_method=plan.certificate.lower_bound_method,
        ratio=plan.ratio,
        proven=plan.proven,
        unrestricted_upper_bound=plan.unrestricted.upper_bound,
        restriction=plan.restriction,
        baselines=baselines,
        notes=list(plan.notes),
        wall_time=wall,
    )


COMMANDS = {"plan": cmd_plan}
