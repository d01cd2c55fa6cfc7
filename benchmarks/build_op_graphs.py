"""Operator-level graphs shaped like profiled ones (issue 21, item 5), rebuilt by hand:
``python -m benchmarks.build_op_graphs [--out DIR] [--seq 128] [--models bert-3 ...]``.

Profiled operator graphs are 40-70% zero-cost ops (views, constants, reads of inputs,
dangling outputs).  :func:`mtpp.from_torch` with ``keep_zero_cost_ops=True`` keeps
exactly those as their own zero-work ops (weights stay folded on the ops that read
them), so these graphs have that shape:

* ``bert-3``, ``bert-6``, ``bert-12``: ``transformers.BertModel`` from a ``BertConfig``
  with 3, 6 and 12 layers (otherwise BERT-base: hidden 768, FFN 3072, 12 heads);
* ``gpt2-6``, ``gpt2-12``: ``transformers.GPT2Model`` from a ``GPT2Config`` with 6 and
  12 layers (otherwise GPT-2 small), ``use_cache=False``;
* ``resnet50``: ResNet-50 (bottleneck blocks 3-4-6-3, torchvision's layout, written
  here in plain torch: torchvision is not a dependency), batch 1 at 224 x 224, eval.

Random weights (seed 0), built offline from the configs (``HF_HUB_OFFLINE=1``), token
ids of batch 1 and length ``--seq``; priced on the ``a100`` preset (microseconds,
bytes).  Written with :meth:`mtpp.Graph.to_json` (compact) as ``DIR/<name>.json``; the
script prints per graph its ops, edges and share of zero-cost ops (work 0 and no
parameters).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from benchmarks._common import OPS_GRAPHS, git_commit
from mtpp import Graph

OUT = OPS_GRAPHS
MODELS = ("bert-3", "bert-6", "bert-12", "gpt2-6", "gpt2-12", "resnet50")


def resnet50() -> Any:
    """ResNet-50 (He et al. 2016, torchvision's v1.5 layout: stride on the 3x3 conv)."""
    import torch
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = 4 * width
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x: Any) -> Any:
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            identity = x if self.downsample is None else self.downsample(x)
            return self.relu(out + identity)

    class ResNet50(nn.Module):
        def __init__(self, classes: int = 1000) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            layers: list[nn.Module] = []
            cin = 64
            for i, (width, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
                stage = []
                for b in range(blocks):
                    stage.append(Bottleneck(cin, width, 2 if b == 0 and i > 0 else 1))
                    cin = 4 * width
                layers.append(nn.Sequential(*stage))
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(2048, classes)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet50().eval()


def build(name: str, seq: int) -> Graph:
    """The operator-level graph ``name`` (one of :data:`MODELS`)."""
    import torch

    from mtpp.io.torch_model import from_torch

    torch.manual_seed(0)
    family, _, layers = name.partition("-")
    if family == "resnet50":
        return from_torch(resnet50(), (torch.randn(1, 3, 224, 224),), "a100", name=name, keep_zero_cost_ops=True)
    import transformers

    ids = torch.randint(0, 1000, (1, seq))
    if family == "bert":
        model = transformers.BertModel(transformers.BertConfig(num_hidden_layers=int(layers)))
    elif family == "gpt2":
        model = transformers.GPT2Model(transformers.GPT2Config(n_layer=int(layers), use_cache=False))
    else:
        raise SystemExit(f"unknown model {name!r}; choose from {', '.join(MODELS)}")
    return from_torch(model.eval(), (ids,), "a100", name=name, keep_zero_cost_ops=True)


def zero_cost_share(g: Graph) -> float:
    """The fraction of ops with work 0 and no parameters."""
    return float(((g.work == 0.0) & (g.size_param == 0.0)).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"directory for the JSON files (default {OUT})")
    parser.add_argument("--seq", type=int, default=128, help="sequence length of BERT and GPT-2 (default 128)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS, help="graphs to build")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"operator graphs at commit {git_commit()}; device a100; seq {args.seq}; into {args.out}")
    print(f"{'graph':<10}{'ops':>6}{'edges':>7}{'zero-cost':>11}{'work us':>10}{'params MB':>11}{'KB':>7}{'s':>6}")
    for name in args.models:
        t0 = time.perf_counter()
        g = build(name, args.seq)
        path = args.out / f"{name}.json"
        g.to_json(str(path))
        print(
            f"{name:<10}{g.n:>6}{g.m:>7}{100 * zero_cost_share(g):>10.1f}%{g.work.sum():>10.1f}"
            f"{g.size_param.sum() / 1e6:>11.1f}{path.stat().st_size / 1024:>7.0f}{time.perf_counter() - t0:>6.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
