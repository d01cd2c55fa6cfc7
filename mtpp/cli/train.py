"""The ``mtpp train`` command: train a learned orderer on fresh generated graphs.

``mtpp train topoformer --objective peak|mtpp [-k K] --out DIR [--epochs E] ...``
``mtpp train regal --objective peak|mtpp [-k K] --out DIR [--evaluations N] ...``

Writes ``DIR/checkpoint.pt`` and ``DIR/history.json`` after every epoch (an
interrupted run resumes from them when started again with the same options), and
``DIR/weights.pt`` plus the loss plot ``DIR/history.png`` at the end.  Use the
weights with ``mtpp solve --orderer topoformer --weights DIR/weights.pt`` (or
``regal-brkga``) and ``mtpp schedule --method topoformer --weights ...``.
Needs the ``mtpp[neural]`` extra (torch).
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from mtpp.cli.output import writing


def add_train_command(sub: Any) -> argparse.ArgumentParser:
    """Add ``train`` to ``sub`` (from ``add_subparsers``) and return its parser."""
    p = sub.add_parser("train", help="train a learned orderer (Topoformer or REGAL) on generated graphs")
    p.add_argument("model", choices=["topoformer", "regal"])
    p.add_argument(
        "--objective",
        choices=["peak", "mtpp"],
        default="peak",
        help="peak memory (layered graphs) or the SliceGraph bottleneck (REGAL-style graphs)",
    )
    p.add_argument("-k", type=int, default=8, help="blocks for the mtpp objective (default 8)")
    p.add_argument("--out", required=True, help="directory for checkpoint, history, weights and plot")
    p.add_argument("--epochs", type=int, default=None, help="epochs (default: the model's)")
    p.add_argument("--graphs-per-epoch", type=int, default=None, help="fresh graphs per epoch")
    p.add_argument("--nodes", type=int, nargs=2, metavar=("LO", "HI"), default=None, help="training graph sizes")
    p.add_argument("--validation", type=int, default=None, help="validation graphs")
    p.add_argument("--lr", type=float, default=None, help="Adam learning rate (topoformer: of the imitation epochs)")
    p.add_argument("--reinforce-lr", type=float, default=None, help="topoformer: learning rate of the REINFORCE epochs")
    p.add_argument("--evaluations", type=int, default=None, help="regal: BRKGA evaluations per run")
    p.add_argument("--dim", type=int, default=None, help="topoformer: embedding size")
    p.add_argument("--layers", type=int, default=None, help="topoformer: attention layers")
    p.add_argument(
        "--imitation-epochs",
        type=int,
        default=None,
        help="first epochs imitate a teacher's orders (approximate DP / BRKGA)",
    )
    p.add_argument(
        "--teacher-effort",
        type=int,
        default=None,
        help="teacher's DP states per level (peak) or BRKGA evaluations (mtpp)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--no-resume", action="store_true", help="start afresh even if DIR has a checkpoint")
    return p


def _options(args: argparse.Namespace, names: dict[str, str]) -> dict[str, Any]:
    """The command-line options that were given, under the config's field names."""
    out: dict[str, Any] = {"objective": args.objective, "k": args.k, "seed": args.seed}
    for arg, field in names.items():
        value = getattr(args, arg)
        if value is not None:
            out[field] = tuple(value) if isinstance(value, list) else value
    return out


def cmd_train(args: argparse.Namespace, out: Console) -> int:
    """Train, with a progress bar; print where the weights and the plot went."""
    from heuristics.neural.weights import require_torch

    require_torch()
    common = {
        "epochs": "epochs",
        "graphs_per_epoch": "graphs_per_epoch",
        "nodes": "nodes",
        "validation": "validation",
        "lr": "lr",
    }
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeRemainingColumn(),
    )
    if args.model == "topoformer":
        from heuristics.neural.training import TrainConfig, train

        opts = _options(
            args,
            {
                **common,
                "dim": "dim",
                "layers": "layers",
                "imitation_epochs": "imitation_epochs",
                "teacher_effort": "teacher_effort",
                "reinforce_lr": "reinforce_lr",
            },
        )
        config: Any = TrainConfig(**opts, threads=args.threads)
    else:
        from heuristics.neural.regal_training import RegalTrainConfig, train_regal

        opts = _options(
            args,
            {
                **common,
                "evaluations": "evaluations",
                "imitation_epochs": "imitation_epochs",
                "teacher_effort": "teacher_effort",
            },
        )
        config = RegalTrainConfig(**opts)
    err = Console(stderr=True, quiet=bool(getattr(args, "quiet", False)))
    with Progress(*columns, console=err, transient=False, disable=err.quiet) as bar:
        # the total is known up front (not "0/?"); a resumed run jumps to its epoch at the first update
        task = bar.add_task(f"{args.model} / {args.objective}", total=config.epochs, info="first epoch ...")

        def progress(epoch: int, epochs: int, row: dict[str, float]) -> None:
            shown = ", ".join(f"{k}={v:.4g}" for k, v in row.items() if k not in ("epoch", "seconds"))
            bar.update(task, completed=epoch, total=epochs, info=shown)

        with writing(args.out):  # checkpoints, weights and the loss plot go there as training runs
            if args.model == "topoformer":
                result = train(config, args.out, not args.no_resume, progress)
                weights, history = result.weights, result.history
            else:
                res = train_regal(config, args.out, not args.no_resume, progress)
                weights, history = res.weights, res.history
    last = history[-1] if history else {}
    out.print(f"trained {len(history)} epochs; weights: {weights}")
    out.print("last epoch: " + ", ".join(f"{k}={v:.4g}" for k, v in last.items()))
    return 0


COMMANDS = {"train": cmd_train}
