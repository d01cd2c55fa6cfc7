"""The ``mtpp train`` command: train a learned orderer on fresh generated graphs.

``mtpp train topoformer --objective peak|mtpp [-k K] --out DIR [--epochs E] ...``
``mtpp train regal --objective peak|mtpp [-k K] --out DIR [--evaluations N] ...``
``mtpp train data --objective peak|mtpp --out DATA [--teacher-count N --teacher-nodes LO HI
--teacher-family layered|regal|models --teacher-ks K ... --jobs J]``

``--teacher exact`` imitates proven optima: for peak memory the orders the best-first
search proves minimum-peak (``mtpp.schedule(method="search")``), for the bottleneck
the partitions ``mtpp.certify`` proves at each ``--teacher-ks`` (default ``-k``),
written as orders of contiguous blocks.  Each ``--teacher-data`` directory (default
``DIR/teacher-data``) is built first, or resumed, as a versioned data set of
``--teacher-count`` generated graphs with their labels (:mod:`mtpp.teacher_data`),
over ``--jobs`` processes.

Writes ``DIR/checkpoint.pt`` and ``DIR/history.json`` after every epoch (an
interrupted run resumes from them when started again with the same options), and
``DIR/weights.pt`` plus the loss plot ``DIR/history.png`` at the end.  Use the
weights with ``mtpp solve --orderer topoformer --weights DIR/weights.pt`` (or
``regal-brkga``) and ``mtpp schedule --method topoformer --weights ...``.
Needs the ``mtpp[neural]`` extra (torch).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from mtpp.cli.output import writing


def add_train_command(sub: Any) -> argparse.ArgumentParser:
    """Add ``train`` to ``sub`` (from ``add_subparsers``) and return its parser."""
    p = sub.add_parser("train", help="train a learned orderer (Topoformer or REGAL) on generated graphs")
    p.add_argument(
        "model", choices=["topoformer", "regal", "data"], help="what to train; data: only build a teacher data set"
    )
    p.add_argument(
        "--objective",
        choices=["peak", "mtpp"],
        default="peak",
        help="peak memory (layered graphs) or the SliceGraph bottleneck (REGAL-style graphs)",
    )
    p.add_argument("-k", type=int, default=8, help="blocks for the mtpp objective (default 8)")
    p.add_argument(
        "--out", required=True, help="directory for checkpoint, history, weights and plot (data: the data set)"
    )
    p.add_argument("--epochs", type=int, default=None, help="epochs (default: the model's)")
    p.add_argument("--graphs-per-epoch", type=int, default=None, help="fresh graphs per epoch")
    p.add_argument("--nodes", type=int, nargs=2, metavar=("LO", "HI"), default=None, help="training graph sizes")
    p.add_argument("--validation", type=int, default=None, help="validation graphs")
    p.add_argument("--lr", type=float, default=None, help="Adam learning rate (topoformer: of the imitation epochs)")
    p.add_argument("--reinforce-lr", type=float, default=None, help="topoformer: learning rate of the REINFORCE epochs")
    p.add_argument("--evaluations", type=int, default=None, help="regal: BRKGA evaluations per run")
    p.add_argument("--dim", type=int, default=None, help="topoformer: embedding size")
    p.add_argument("--layers", type=int, default=None, help="topoformer: attention layers")
    p.add_argument("--dropout", type=float, default=None, help="topoformer: dropout while training (default 0)")
    p.add_argument(
        "--init", default=None, metavar="WEIGHTS", help="topoformer: start from these weights (same model shape)"
    )
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
    p.add_argument(
        "--teacher",
        choices=["approx", "exact"],
        default=None,
        help="imitate the approximate teacher (default) or a data set of proven optima (--teacher-data)",
    )
    p.add_argument(
        "--teacher-data",
        action="append",
        default=None,
        metavar="DATA",
        help="exact teacher: a data set directory, built or resumed first (repeatable; default OUT/teacher-data)",
    )
    p.add_argument("--teacher-count", type=int, default=1024, help="graphs in a new teacher data set (default 1024)")
    p.add_argument(
        "--teacher-nodes",
        type=int,
        nargs=2,
        metavar=("LO", "HI"),
        default=(100, 250),
        help="ops per graph of a new teacher data set (default 100 250)",
    )
    p.add_argument(
        "--teacher-family",
        choices=["layered", "regal", "models"],
        default=None,
        help="graphs of a new teacher data set: layered, regal or models (PyTorch transformers and residual "
        "CNNs of random shape; default: layered for peak, regal for mtpp)",
    )
    p.add_argument(
        "--teacher-ks",
        type=int,
        nargs="+",
        metavar="K",
        default=None,
        help="mtpp: the numbers of blocks a new teacher data set labels (default: -k)",
    )
    p.add_argument(
        "--teacher-time-limit",
        type=float,
        default=10.0,
        help="seconds of the exact teacher per graph: the search (peak), certify's budget for all ks (mtpp); "
        "default 10",
    )
    p.add_argument(
        "--max-gap", type=float, default=None, help="exact teacher: imitate orders within this gap of the bound (0)"
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="processes building and encoding teacher data, drawing each epoch's graphs and (regal) running "
        "its BRKGA searches (default 1)",
    )
    p.add_argument("--batch", type=int, default=None, help="graphs per optimiser step")
    p.add_argument(
        "--samples",
        type=int,
        default=None,
        help="regal: actions per graph in REINFORCE, each baselined by the others' mean reward (default 1)",
    )
    p.add_argument("--device", default=None, help="topoformer: torch device, e.g. cuda (default cpu)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--no-resume", action="store_true", help="start afresh even if DIR has a checkpoint")
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds of training: no epoch starts that would end later (the data sets are built first); "
        "the weights are written as usual and the run resumes from its checkpoint",
    )
    return p


def _options(args: argparse.Namespace, names: dict[str, str]) -> dict[str, Any]:
    """The command-line options that were given, under the config's field names."""
    out: dict[str, Any] = {"objective": args.objective, "k": args.k, "seed": args.seed}
    for arg, field in names.items():
        value = getattr(args, arg)
        if value is not None:
            out[field] = tuple(value) if isinstance(value, list) else value
    return out


def _teacher_data(args: argparse.Namespace, err: Console) -> tuple[str, ...]:
    """Build or resume each exact-teacher data set; their directories."""
    from heuristics.neural.proof_data import MANIFEST, DataSpec, read_spec
    from mtpp.teacher_data import build_teacher_data

    dirs = args.teacher_data or [str(Path(args.out) / "teacher-data")]
    for d in dirs:
        if (Path(d) / MANIFEST).is_file():
            spec = read_spec(d)
        else:
            mtpp_data = args.objective == "mtpp"
            spec = DataSpec(
                objective=args.objective,
                family=args.teacher_family or ("regal" if mtpp_data else "layered"),
                ks=tuple(args.teacher_ks or ([args.k] if mtpp_data else [])),
                count=args.teacher_count,
                nodes=tuple(args.teacher_nodes),
                seed=args.seed,
                time_limit=args.teacher_time_limit,
            )

        def shown(done: int, total: int, d: str = d) -> None:
            err.print(f"teacher data {d}: {done}/{total} shards", highlight=False)

        with writing(d):
            build_teacher_data(d, spec, jobs=args.jobs, progress=shown)
    return tuple(dirs)


def _exact_data(args: argparse.Namespace) -> dict[str, Any]:
    """``teacher_data`` for the config: the data sets, built first, when the teacher is exact."""
    if args.teacher != "exact":
        return {}
    return {"teacher_data": _teacher_data(args, Console(stderr=True, quiet=bool(getattr(args, "quiet", False))))}


def cmd_train(args: argparse.Namespace, out: Console) -> int:
    """Train, with a progress bar; print where the weights and the plot went."""
    from heuristics.neural.weights import require_torch

    if args.model == "data":  # a teacher data set alone: no torch needed
        err = Console(stderr=True, quiet=bool(getattr(args, "quiet", False)))
        args.teacher_data = [args.out]
        (root,) = _teacher_data(args, err)
        out.print(f"teacher data set: {root}")
        return 0
    require_torch()
    from mtpp.generators.training import epoch_graphs

    if args.model == "regal" and args.device is not None:
        from mtpp.core.errors import InvalidParameterError

        raise InvalidParameterError("--device is an option of 'mtpp train topoformer'")
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
                "dropout": "dropout",
                "init": "init",
                "imitation_epochs": "imitation_epochs",
                "teacher_effort": "teacher_effort",
                "reinforce_lr": "reinforce_lr",
                "teacher": "teacher",
                "max_gap": "max_gap",
                "batch": "batch",
                "device": "device",
                "jobs": "jobs",
            },
        )
        config: Any = TrainConfig(**opts, **_exact_data(args), threads=args.threads)
    else:
        from heuristics.neural.regal_training import RegalTrainConfig, train_regal

        opts = _options(
            args,
            {
                **common,
                "evaluations": "evaluations",
                "imitation_epochs": "imitation_epochs",
                "teacher_effort": "teacher_effort",
                "teacher": "teacher",
                "max_gap": "max_gap",
                "batch": "batch",
                "jobs": "jobs",
                "samples": "samples",
            },
        )
        config = RegalTrainConfig(**opts, **_exact_data(args))
    err = Console(stderr=True, quiet=bool(getattr(args, "quiet", False)))
    with Progress(*columns, console=err, transient=False, disable=err.quiet) as bar:
        # the total is known up front (not "0/?"); a resumed run jumps to its epoch at the first update
        task = bar.add_task(f"{args.model} / {args.objective}", total=config.epochs, info="first epoch ...")

        def progress(epoch: int, epochs: int, row: dict[str, float]) -> None:
            shown = ", ".join(f"{k}={v:.4g}" for k, v in row.items() if k not in ("epoch", "seconds"))
            bar.update(task, completed=epoch, total=epochs, info=shown)

        with writing(args.out):  # checkpoints, weights and the loss plot go there as training runs
            if args.model == "topoformer":
                result = train(config, args.out, epoch_graphs, not args.no_resume, progress, time_limit=args.time_limit)
                weights, history = result.weights, result.history
            else:
                res = train_regal(
                    config, args.out, epoch_graphs, not args.no_resume, progress, time_limit=args.time_limit
                )
                weights, history = res.weights, res.history
    last = history[-1] if history else {}
    out.print(f"trained {len(history)} epochs; weights: {weights}")
    out.print("last epoch: " + ", ".join(f"{k}={v:.4g}" for k, v in last.items()))
    return 0


COMMANDS = {"train": cmd_train}
