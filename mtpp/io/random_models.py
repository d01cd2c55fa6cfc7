"""Real-model-like graphs for training data: small PyTorch models of random
shape, imported by :func:`mtpp.io.torch_model.from_torch`.

The layered and REGAL-style generators draw graphs edge by edge; a real model's graph
is made of repeated blocks whose ops branch and join in fixed patterns (attention's
query / key / value, residual adds, normalisations), priced by FLOPs and bytes on a
device.  :func:`random_model_graph` draws one architecture, its widths and its number
of blocks from a numpy ``Generator``, builds it (weights from a torch generator seeded
from the same draw) and imports it, at the coarse granularity or, for half of the
graphs, at operator granularity (``keep_zero_cost_ops``: every view and constant its
own zero-work op, as a profiler records it):

* ``"transformer"``: ``nn.TransformerEncoder`` of post- or pre-norm layers, model
  width 32-128, 2-8 heads, feed-forward 2-4 times wider, a sequence of 8-64 tokens;
* ``"resnet"``: a stem convolution, then residual basic blocks (two 3x3 convolutions
  with batch norm, a 1x1 projection where the width changes), 8-64 channels on a
  16x16 or 32x32 image.

The number of blocks is chosen so that the graph has about ``target`` ops: one
block's ops are counted on a one-block model of the same widths, and the full model
gets ``round(target / ops per block)`` of them (at least one), so the count lands within
one block of the target.  Needs the ``mtpp[torch]`` extra.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mtpp.core.graph import Graph
from mtpp.io.torch_model import _torch, from_torch

KINDS = ("transformer", "resnet")


def _transformer(torch: Any, rng: np.random.Generator) -> tuple[Any, Any]:
    heads = int(rng.choice([2, 4, 8]))
    width = heads * int(rng.integers(32 // heads, 128 // heads + 1))  # 32-128, divisible by the heads
    ffn = width * int(rng.integers(2, 5))
    pre_norm = bool(rng.random() < 0.5)
    tokens = int(rng.integers(8, 65))

    def build(blocks: int) -> Any:
        layer = torch.nn.TransformerEncoderLayer(width, heads, ffn, dropout=0.0, batch_first=True, norm_first=pre_norm)
        return torch.nn.TransformerEncoder(layer, num_layers=blocks, enable_nested_tensor=False)

    return build, torch.randn(1, tokens, width)


def _resnet(torch: Any, rng: np.random.Generator) -> tuple[Any, Any]:
    nn = torch.nn
    channels = [int(c) for c in rng.choice([8, 16, 32, 64], size=2)]
    side = int(rng.choice([16, 32]))

    class Block(nn.Module):  # type: ignore[name-defined]  # torch is imported lazily
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU(),
                nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                nn.BatchNorm2d(cout),
            )
            self.skip = nn.Identity() if cin == cout else nn.Conv2d(cin, cout, 1, bias=False)

        def forward(self, x: Any) -> Any:
            return torch.relu(self.body(x) + self.skip(x))

    def build(blocks: int) -> Any:
        widths = [channels[0]] + [channels[min(1, 2 * b // max(1, blocks))] for b in range(blocks)]
        stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, padding=1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        return nn.Sequential(stem, *(Block(widths[b], widths[b + 1]) for b in range(blocks)))

    return build, torch.randn(1, 3, side, side)


def random_model_graph(target: int, rng: np.random.Generator, device_spec: str = "a100") -> Graph:
    """A model of a random kind of :data:`KINDS` with about ``target`` ops (module
    docstring), drawn from ``rng``."""
    torch = _torch()
    kind = str(rng.choice(KINDS))
    fine = bool(rng.random() < 0.5)
    torch.manual_seed(int(rng.integers(0, 2**31 - 1)))
    build, example = (_transformer if kind == "transformer" else _resnet)(torch, rng)
    # not under no_grad: there eval-mode encoder layers take torch's fused fast path, one op each
    one = from_torch(build(1).eval(), (example,), device_spec, keep_zero_cost_ops=fine)
    two = from_torch(build(2).eval(), (example,), device_spec, keep_zero_cost_ops=fine)
    per_block = max(1, two.n - one.n)
    blocks = max(1, round((target - (one.n - per_block)) / per_block))
    name = f"{kind}-{blocks}{'-ops' if fine else ''}"
    return from_torch(build(blocks).eval(), (example,), device_spec, name=name, keep_zero_cost_ops=fine)
