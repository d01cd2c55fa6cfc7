"""What the benchmarks share: the paths, the commit a run reports, the graphs several
scripts read, timing and table printing.

Every benchmark runs from the repository root as a module, which is the one way they
import the project::

    python -m benchmarks.slicegraph_speed

The package imports this module before a script's own imports (``benchmarks/__init__.py``);
in an interpreter started as ``python -m benchmarks.NAME`` (not in a test that imports a
script's module) it also sets up:

* ``NUMBA_NUM_THREADS`` and ``HF_HUB_OFFLINE`` default to ``1`` (no kernel of mtpp is
  parallel, so the first changes no figure; the second keeps the transformers models,
  built from their configs, off the network);
* with ``PYTHONPATH`` set, the library (``mtpp``, ``heuristics``, ``formulations``,
  ``solvers``) comes from there and the script from here: the *before* of a before /
  after comparison on one machine
  (``PYTHONPATH=/path/to/old/checkout python -m benchmarks.wide_bounds``).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mtpp import Graph

ROOT = Path(__file__).resolve().parents[1]
"""The repository root (the benchmarks' working directory)."""
OPS_GRAPHS = ROOT / "benchmarks" / "graphs" / "ops"
"""Operator-level graphs (BERT, GPT-2, ResNet-50 with their zero-cost ops), rebuilt by
``python -m benchmarks.build_op_graphs``."""
SHARED_GRAPHS = ROOT.parent / "shared" / "graphs" / "layered"
"""The shared Moccasin layered graphs beside the repository (where they are absent, the
scripts leave them out)."""
ONNX_MODELS = [
    "bvlc_alexnet",
    "zfnet512",
    "vgg19",
    "squeezenet",
    "inception_v1",
    "resnet50",
    "shufflenet",
    "inception_v2",
    "densenet121",
]
"""The ONNX model-zoo architectures shipped with ``onnx`` (``backend/test/data/light``)."""


def _run_as_benchmark() -> bool:
    """Whether this interpreter was started as ``python -m benchmarks.NAME`` (not a test
    that imports a benchmark's module)."""
    argv = getattr(sys, "orig_argv", [])
    return any(a == "-m" and b.startswith("benchmarks.") for a, b in itertools.pairwise(argv))


def _setup() -> None:
    """The environment and the library's path of a benchmark's interpreter (module
    docstring).  ``python -m`` puts the working directory (this checkout) first on
    ``sys.path``, ahead of ``PYTHONPATH``: with ``PYTHONPATH`` set it moves to the end,
    so that the library there wins (the ``benchmarks`` package is already loaded from
    here); only before the library is imported."""
    if not _run_as_benchmark():
        return
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if os.environ.get("PYTHONPATH") and "mtpp" not in sys.modules:
        here = [p for p in sys.path if Path(p or ".").resolve() == ROOT]
        sys.path[:] = [p for p in sys.path if p not in here] + here


_setup()


def git_commit() -> str:
    """The short hash of the checked-out commit, ``+dirty`` when tracked files differ
    from it (``?`` outside a git checkout)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "?"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """The least wall time of ``repeat`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``(seconds, result)`` of one call of ``fn``."""
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def print_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> None:
    """``rows`` under ``header``, each column as wide as its widest cell and two spaces
    apart; ``align`` has one ``<`` (left) or ``>`` (right) per column (default: the
    first column left, the others right)."""
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    align = align or "<" + ">" * (len(header) - 1)
    for row in cells:
        print("  ".join(c.ljust(w) if a == "<" else c.rjust(w) for c, w, a in zip(row, widths, align)).rstrip())


def zoo_path(name: str) -> Path:
    """The ONNX file of the model-zoo architecture ``name`` (:data:`ONNX_MODELS`)."""
    import onnx

    return Path(str(onnx.__file__)).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


def zoo_graph(name: str, device_spec: Any = "a100") -> Graph:
    """The model-zoo architecture ``name`` through :func:`mtpp.io.onnx_model.from_onnx`,
    priced on ``device_spec``."""
    from mtpp.io.onnx_model import from_onnx

    return from_onnx(zoo_path(name), device_spec=device_spec)


def bert_graph(seq: int = 128, device_spec: Any = "a100") -> tuple[Graph, float]:
    """BERT-base (``transformers``, random weights from seed 0, token ids of batch 1 and
    length ``seq``) through :func:`mtpp.io.torch_model.from_torch`, priced on
    ``device_spec``, and the seconds its import took."""
    import torch
    import transformers

    from mtpp.io.torch_model import from_torch

    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig()).eval()
    ids = torch.randint(0, 1000, (1, seq))
    t = time.perf_counter()
    g = from_torch(model, (ids,), device_spec=device_spec, name="bert-base")
    return g, time.perf_counter() - t


def shared_graphs(pattern: str = "*.json") -> list[tuple[Path, Graph]]:
    """The shared layered graphs whose file names match ``pattern``, sorted by name
    (none where :data:`SHARED_GRAPHS` is absent)."""
    from mtpp import load_graph

    return [(path, load_graph(path)) for path in sorted(SHARED_GRAPHS.glob(pattern))]
