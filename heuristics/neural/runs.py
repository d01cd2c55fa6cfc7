"""What the two training loops share: options as JSON-able dicts, the checkpoint file, the clock.

A training run keeps its options (a frozen dataclass) in its checkpoint; a resumed run
must have been started with the same options, except those that only say how long,
where or on how many threads to run (:data:`FREE_OPTIONS`; ``imitation_epochs`` too: a
longer warm start resumed before its end is the run that had asked for it).  Checkpoints are written atomically
(a temporary file renamed into place) and hold only tensors, numbers, strings, lists
and dicts, so ``torch.load(weights_only=True)`` reads them.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from pathlib import Path
from typing import Any, TypeVar

import torch

from mtpp.core.errors import InvalidParameterError

FREE_OPTIONS = ("epochs", "threads", "device", "jobs", "imitation_epochs")
T = TypeVar("T")


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
