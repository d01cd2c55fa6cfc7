"""Weights files of the learned orderers: the format, the shipped files, loading.

A weights file is ``torch.save`` of a plain dict (tensors, strings, numbers, lists)::

    {"format": "mtpp-weights", "version": 1, "kind": "topoformer" | "regal",
     "config": {...model config...}, "state_dict": {...}, "meta": {...training facts...}}

loaded with ``torch.load(weights_only=True)`` (no pickled code runs) onto the CPU.
Trained weights ship inside the package (``heuristics/neural/weights/*.pt``, a few
hundred kB each) and are named without the suffix: :data:`SHIPPED`.  Anything that
goes wrong (torch missing, no such file, not a weights file, wrong kind, tensors that
do not fit the model) is a :class:`mtpp.core.errors.WeightsError` or
:class:`mtpp.core.errors.MissingDependencyError` naming the file and the problem.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtpp.core.errors import InvalidParameterError, MissingDependencyError, WeightsError

FORMAT = "mtpp-weights"
VERSION = 1
WEIGHTS_DIR = Path(__file__).parent / "weights"
SHIPPED = {
    "topoformer-peak": "Topoformer trained on layered graphs for peak memory",
    "topoformer-mtpp": "Topoformer trained on REGAL-style graphs for the SliceGraph bottleneck",
    "regal-peak": "REGAL GNN trained for BRKGA on peak memory",
    "regal-mtpp": "REGAL GNN trained for BRKGA on the SliceGraph bottleneck",
}


def require_torch() -> Any:
    """The torch module, or :class:`MissingDependencyError` saying how to install it."""
    try:
        import torch
    except ImportError as exc:
        raise MissingDependencyError(
            "the learned orderers need torch: pip install 'mtpp[neural]' (torch 2.13.0 CPU is enough)"
        ) from exc
    return torch


@dataclass(frozen=True)
class LoadedWeights:
    """The parts of a weights file, and where it came from."""

    kind: str
    config: dict[str, Any]
    state_dict: dict[str, Any]
    meta: dict[str, Any]
    path: Path


def resolve(source: str | os.PathLike[str]) -> Path:
    """The file for a shipped name (see :data:`SHIPPED`) or a path."""
    text = os.fspath(source)
    if text in SHIPPED:
        path = WEIGHTS_DIR / f"{text}.pt"
        if not path.is_file():
            raise WeightsError(f"shipped weights {text!r} are missing from the installation ({path})")
        return path
    path = Path(text)
    if not path.is_file():
        raise WeightsError(f"no weights file {text!r}: give a path or one of {', '.join(SHIPPED)}")
    return path


def save_weights(
    path: str | os.PathLike[str],
    kind: str,
    config: dict[str, Any],
    state_dict: dict[str, Any],
    meta: dict[str, Any] | None = None,
) -> Path:
    """Write a weights file atomically (a temporary file renamed into place)."""
    torch = require_torch()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "kind": kind,
        "config": dict(config),
        "state_dict": {k: v.detach().cpu().clone() for k, v in state_dict.items()},
        "meta": dict(meta or {}),
    }
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    os.close(fd)
    try:
        torch.save(payload, tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a weights file is meant to be shared
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def load_weights(source: str | os.PathLike[str], kind: str) -> LoadedWeights:
    """Read and check a weights file of ``kind`` (a shipped name or a path)."""
    torch = require_torch()
    path = resolve(source)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a corrupt or foreign file
        raise WeightsError(f"{path} is not a readable weights file: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise WeightsError(f"{path} is not an mtpp weights file (no {FORMAT!r} header)")
    if payload.get("version") != VERSION:
        raise WeightsError(f"{path} has weights format version {payload.get('version')!r}; this mtpp reads {VERSION}")
    if payload.get("kind") != kind:
        raise WeightsError(f"{path} holds {payload.get('kind')!r} weights, not {kind!r}")
    for field in ("config", "state_dict", "meta"):
        if not isinstance(payload.get(field), dict):
            raise WeightsError(f"{path} has no {field} dictionary")
    return LoadedWeights(kind, payload["config"], payload["state_dict"], payload["meta"], path)


def load_state(model: Any, weights: LoadedWeights) -> None:
    """Copy the tensors into ``model``; a mismatch names the file and the tensors."""
    try:
        model.load_state_dict(weights.state_dict, strict=True)
    except RuntimeError as exc:
        raise WeightsError(f"{weights.path} does not fit the {weights.kind} model: {exc}") from exc


_MODELS: dict[tuple[str, str, int, int], tuple[Any, LoadedWeights]] = {}


def load_model(
    source: str | os.PathLike[str], kind: str, build: Callable[[LoadedWeights], Any]
) -> tuple[Any, LoadedWeights]:
    """The model of a ``kind`` weights file (a shipped name or a path) in eval mode, with
    the file's contents; cached per file and its modification time, so a file trained
    again at the same path is read again.  ``build`` makes the empty model from the
    file's config; a config it rejects (:class:`InvalidParameterError`, ``TypeError``)
    becomes a :class:`WeightsError` naming the file."""
    path = resolve(source).resolve()
    stat = path.stat()
    key = (kind, str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _MODELS:
        weights = load_weights(path, kind)
        try:
            model = build(weights)
        except (InvalidParameterError, TypeError) as exc:
            raise WeightsError(f"{path} has an unusable {kind} config: {exc}") from exc
        load_state(model, weights)
        model.eval()
        _MODELS[key] = (model, weights)
    return _MODELS[key]
