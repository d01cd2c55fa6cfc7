"""What the two training loops share: the options, the epoch loop with its checkpoint,
history and clock, the weights and plot at the end.

A training run keeps its options (a frozen dataclass) in its checkpoint; a resumed run
must have been started with the same options, except those that only say how long,
where or on how many threads to run (:data:`FREE_OPTIONS`; ``imitation_epochs`` too: a
longer warm start resumed before its end is the run that had asked for it).  Checkpoints are written atomically
(a temporary file renamed into place) and hold only tensors, numbers, strings, lists
and dicts, so ``torch.load(weights_only=True)`` reads them.

:class:`EpochLoop` runs the epochs of either model (:mod:`heuristics.neural.training`,
:mod:`heuristics.neural.regal_training`); what differs, one epoch's training and
validation and the model's state, is passed in.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

from heuristics.neural.datasets import EpochGraphs, check_nodes
from heuristics.neural.history import plot_history
from heuristics.neural.objectives import OBJECTIVES
from heuristics.neural.proof_data import check_teacher
from heuristics.neural.weights import save_weights
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph

FREE_OPTIONS = ("epochs", "threads", "device", "jobs", "imitation_epochs")
T = TypeVar("T")
CHECKPOINT = "checkpoint.pt"
HISTORY = "history.json"
WEIGHTS = "weights.pt"
PLOT = "history.png"

EpochProgress = Callable[[int, int, dict[str, float]], None]
"""Called after each epoch with its number, the number of epochs and its history row."""


class TrainingOptions:
    """The options a training run's frozen dataclass shares (``objective``, ``nodes``,
    ``seed``, ``epochs``, ``imitation_epochs``, ``threads``, ``jobs``, the teacher's):
    their checks and their JSON-able dict."""

    objective: str
    nodes: tuple[int, int]
    seed: int
    epochs: int
    imitation_epochs: int
    threads: int
    jobs: int
    teacher: str
    teacher_data: tuple[str, ...]
    max_gap: float

    def check_common(self, counts: Sequence[str], prefix: str = "") -> None:
        """Check the shared options and that each option of ``counts`` is an integer
        >= 1 (errors name an option as ``prefix`` + its name); ``nodes`` and
        ``teacher_data`` are normalised."""
        if self.objective not in OBJECTIVES:
            raise InvalidParameterError(f"objective must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")
        object.__setattr__(self, "nodes", check_nodes(self.nodes))
        for name in counts:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InvalidParameterError(f"{prefix}{name} must be an integer >= 1, got {value!r}")
        value = self.imitation_epochs
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidParameterError(f"{prefix}imitation_epochs must be an integer >= 0, got {value!r}")
        data = check_teacher(self.teacher, self.teacher_data, self.max_gap, self.imitation_epochs)
        object.__setattr__(self, "teacher_data", data)

    def to_dict(self) -> dict[str, Any]:
        return options_to_dict(self)

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        return options_from_dict(cls, data)


def options_to_dict(options: Any) -> dict[str, Any]:
    """The dataclass ``options`` as a dict, tuples as lists (JSON and ``weights_only`` safe)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(options).items()}


def options_from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """``cls(**data)`` with lists back to tuples; unknown keys raise
    :class:`InvalidParameterError` naming them."""
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - known)
    if unknown:
        raise InvalidParameterError(f"unknown {cls.__name__} options {unknown}")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` atomically."""
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path, options: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint at ``path``, checked to come from a run with the same ``options``
    (a dict of :func:`options_to_dict`) but for :data:`FREE_OPTIONS`."""
    state = torch.load(path, map_location="cpu", weights_only=True)

    def fixed(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in FREE_OPTIONS}

    if not isinstance(state, dict) or fixed(state.get("config", {})) != fixed(options):
        raise InvalidParameterError(f"{path} was written with other training options; use another directory")
    return state


class EpochClock:
    """A training run's wall-clock cap: :meth:`room` says whether another epoch fits in
    ``time_limit`` seconds from the clock's start, predicting that it takes as long as
    the longest one so far (``None``: no cap).  A run stopped by it writes its weights
    as usual and resumes from its checkpoint."""

    def __init__(self, time_limit: float | None) -> None:
        if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
            raise InvalidParameterError(f"time_limit must be a number > 0 or None, got {time_limit!r}")
        self._lap = time.monotonic()
        self.deadline = math.inf if time_limit is None else self._lap + float(time_limit)
        self.longest = 0.0

    def room(self) -> bool:
        """Whether another epoch is predicted to end before the deadline; starts its lap."""
        self._lap = time.monotonic()
        return self._lap + self.longest <= self.deadline

    def lap(self) -> None:
        """An epoch ended: remember its length."""
        self.longest = max(self.longest, time.monotonic() - self._lap)


class EpochLoop:
    """The epochs of a training run with ``options`` (:class:`TrainingOptions`) into
    ``out_dir``: made at once, with the clock (``time_limit`` seconds from here,
    :class:`EpochClock`), torch's thread count and, when ``resume`` and a checkpoint
    is there, its ``state`` (checked against the options; ``None`` otherwise), the
    history, elapsed seconds and first epoch it had reached.  ``graphs`` draws the
    training graphs (:meth:`graphs`); ``progress`` hears of every epoch."""

    def __init__(
        self,
        options: TrainingOptions,
        out_dir: str | os.PathLike[str],
        graphs: EpochGraphs,
        resume: bool,
        progress: EpochProgress | None,
        time_limit: float | None,
    ) -> None:
        self.clock = EpochClock(time_limit)
        self.options = options
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        torch.set_num_threads(options.threads)
        self._graphs = graphs
        self.progress = progress
        ckpt = self.out / CHECKPOINT
        self.state = load_checkpoint(ckpt, options.to_dict()) if resume and ckpt.is_file() else None
        self.history: list[dict[str, float]] = [] if self.state is None else list(self.state["history"])
        self.start = 0 if self.state is None else int(self.state["epoch"])
        self.elapsed = 0.0 if self.state is None else float(self.state["elapsed"])

    def graphs(self, epoch: int, count: int) -> list[Graph]:
        """The ``count`` training graphs of ``epoch`` (``VALIDATION_EPOCH``: the
        validation set), drawn over ``options.jobs`` processes."""
        o = self.options
        return self._graphs(o.objective, o.nodes, o.seed, epoch, count, o.jobs)

    def run(
        self,
        epoch: Callable[[int, bool], dict[str, float]],
        state: Callable[[], dict[str, Any]],
        log: Callable[[dict[str, float]], None] | None = None,
    ) -> None:
        """The epochs from the first not yet run, while the clock has room for one:
        ``epoch(e, imitating)`` trains and validates epoch ``e`` (an imitation epoch
        while ``e < options.imitation_epochs``) and returns its history row but the
        epoch number and the seconds; after each, the checkpoint (the model's
        ``state()``, the history) and the history file are written, ``progress`` and
        ``log`` hear of the row."""
        for e in range(self.start, self.options.epochs):
            if not self.clock.room():
                break
            t0 = time.perf_counter()
            values = epoch(e, e < self.options.imitation_epochs)
            self.elapsed += time.perf_counter() - t0
            row = {"epoch": e + 1, **values, "seconds": self.elapsed}
            self.history.append(row)
            save_checkpoint(
                self.out / CHECKPOINT,
                {
                    "config": self.options.to_dict(),
                    **state(),
                    "history": self.history,
                    "epoch": e + 1,
                    "elapsed": self.elapsed,
                },
            )
            (self.out / HISTORY).write_text(json.dumps(self.history, indent=1))
            if self.progress is not None:
                self.progress(e + 1, self.options.epochs, row)
            if log is not None:
                log(row)
            self.clock.lap()

    def finish(
        self,
        kind: str,
        config: dict[str, Any],
        state: dict[str, Any],
        meta: dict[str, Any],
        keys: Sequence[str],
        title: str,
    ) -> Path:
        """Write the weights (:func:`heuristics.neural.weights.save_weights`) and, after
        any epoch, the plot of the history's ``keys``; the weights' path."""
        weights = save_weights(self.out / WEIGHTS, kind, config, state, meta)
        if self.history:
            plot_history(self.history, self.out / PLOT, keys, title=title)
        return weights
