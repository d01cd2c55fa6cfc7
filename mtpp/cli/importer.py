"""The ``mtpp import`` command: an ONNX model to an mtpp graph file.

``mtpp import MODEL.onnx -o graph.json [--batch N] [--device PRESET] [--fallback-cost US]``

The graph's ``work`` is in microseconds and its sizes in bytes (:mod:`mtpp.core.devices`),
and it records the device as its machine (``B`` in bytes/us, ``M`` in bytes), which
``mtpp solve`` and ``mtpp certify`` then use unless told otherwise.

:func:`add_import_command` adds the subcommand to the ``mtpp`` parser's subparsers;
:func:`cmd_import` is its handler ``(args, console) -> exit status``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console

from mtpp.cli.output import writing


def add_import_command(sub: Any) -> argparse.ArgumentParser:
    """Add ``import`` to ``sub`` (from ``add_subparsers``) and return its parser."""
    from mtpp.core.presets import DEVICES as PRESETS

    p = sub.add_parser("import", help="import an ONNX model as an mtpp graph (work in us, sizes in bytes)")
    p.add_argument("model", metavar="MODEL.onnx", help="ONNX model file")
    p.add_argument("-o", "--output", help="graph JSON to write (default: stdout)")
    p.add_argument("--batch", type=int, default=1, help="batch size set on the model's inputs (default 1)")
    p.add_argument("--device", default="a100", choices=sorted(PRESETS), help="device preset (default a100)")
    p.add_argument(
        "--fallback-cost",
        type=float,
        default=None,
        help="work in microseconds for ops without a FLOP formula or a static shape (default: such ops are an error)",
    )
    return p


def cmd_import(args: argparse.Namespace, out: Console) -> int:
    """Import ``args.model``, write the graph JSON, print its size and the device's
    ``B`` and ``M`` in the graph's units."""
    from mtpp.core.presets import get_device
    from mtpp.io.onnx_model import from_onnx

    spec = get_device(args.device)
    graph = from_onnx(args.model, batch_size=args.batch, device_spec=spec, fallback_cost=args.fallback_cost)
    with writing(args.output or "<stdout>"):
        text = graph.to_json(args.output, indent=None)
    if not args.output:
        sys.stdout.write(text + "\n")
        return 0
    if getattr(args, "quiet", False):  # handlers may be called with a bare namespace
        return 0
    out.print(
        f"wrote {graph!r} to {args.output}: work {graph.work.sum():.6g} us, "
        f"params {graph.size_param.sum():.6g} bytes ({spec.name}, batch {args.batch})"
    )
    out.print(
        f"solve with: mtpp solve {args.output} -k K   (priced on the machine it records: {spec.name}, "
        f"bandwidth {spec.bandwidth_bytes_per_us:g} bytes/us, memory {spec.memory:g} bytes)"
    )
    return 0


COMMANDS = {"import": cmd_import}
