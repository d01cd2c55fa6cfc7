"""Example graphs bundled with mtpp, in mtpp's JSON format (:mod:`mtpp.core.schema`).

``transformer_block``
    Two BERT-large-style transformer encoder blocks with their embeddings and a small
    classifier head: 35 ops (embedding gathers, layernorms, Q/K/V projections,
    attention scores, softmax, attention-weighted values, output projection, residual
    adds, MLP up / GELU / down), batch 8, sequence 512, ``d_model`` 1024, 16 heads, fp16.
    Units (the file's ``units`` field): ``work`` in microseconds (A100-class estimates:
    matmuls from their FLOPs, element-wise ops from their memory traffic), ``size_param``
    and ``size_out`` in bytes, as ``mtpp import`` writes and the device presets expect.
    The file records the H100 preset as its machine (link 450,000 bytes per microsecond,
    80 GB), which ``certify`` and ``partition`` use unless given another; every
    bottleneck is in microseconds.
"""

from __future__ import annotations

from pathlib import Path

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.io.graph_file import load_graph

_HERE = Path(__file__).resolve().parent


def available_examples() -> list[str]:
    """Names accepted by :func:`load_example`, sorted."""
    return sorted(p.stem for p in _HERE.glob("*.json"))


def example_path(name: str = "transformer_block") -> Path:
    """Path of the bundled example ``name``; :class:`InvalidParameterError` listing the
    available names if there is none."""
    names = available_examples()
    if not isinstance(name, str) or name not in names:
        raise InvalidParameterError(f"unknown example {name!r}; available examples: {', '.join(names)}")
    return _HERE / f"{name}.json"


def load_example(name: str = "transformer_block") -> Graph:
    """The bundled example graph ``name`` (see the module docstring for each one's units)."""
    return load_graph(example_path(name))


__all__ = ["available_examples", "example_path", "load_example"]
