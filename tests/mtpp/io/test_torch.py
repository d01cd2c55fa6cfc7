"""The PyTorch importer: FLOP totals against FlopCounterMode, and BERT from its config."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from mtpp.core.presets import get_device  # noqa: E402
from mtpp.io.torch_model import _from_fx, from_torch, torch_costed_ops  # noqa: E402


class SmallCNN(torch.nn.Module):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2)
        self.fc = torch.nn.Linear(16 * 7 * 7, 10)

    def forward(self, x: Any) -> Any:
        x = torch.relu(self.bn(self.c1(x)))
        x = torch.relu(self.c2(x))
        return self.fc(x.flatten(1))


@pytest.fixture(scope="module")
def cnn() -> tuple[Any, Any]:
    torch.manual_seed(0)
    return SmallCNN().eval(), torch.randn(2, 3, 16, 16)


def test_cnn_flops_match_flop_counter(cnn: tuple) -> None:
    module, x = cnn
    with FlopCounterMode(display=False) as fc:
        module(x)
    ops, _ = torch_costed_ops(module, (x,))
    assert sum(op.flops for op in ops) == fc.get_total_flops()
    # by hand: conv1 2*2*8*16*16*27, conv2 2*2*16*7*7*72, fc 2*2*784*10
    assert fc.get_total_flops() == 2 * 2 * 8 * 256 * 27 + 2 * 2 * 16 * 49 * 72 + 2 * 2 * 784 * 10


def test_cnn_graph(cnn: tuple) -> None:
    module, x = cnn
    g = from_torch(module, x, device_spec="cpu")  # fp32: parameters at 4 bytes
    params = sum(p.numel() for p in module.parameters()) * 4
    buffers = sum(b.numel() * 4 for n, b in module.named_buffers() if "running" in n)
    assert g.size_param.sum() == params + buffers
    assert g.ops[0] == "Input" and g.size_out[0] == x.numel() * 4
    assert len(g.topological_order) == g.n
    assert np.all(g.work >= 0)


def test_names_and_scopes(cnn: tuple) -> None:
    module, x = cnn
    ops, _ = torch_costed_ops(module, (x,))
    by_path = {op.name for op in ops if op.flops > 0}
    assert by_path == {"c1", "c2", "fc"}
    assert all(op.scope == (op.name,) for op in ops[1:] if op.name) and ops[0].scope == () and ops[0].name == "x"
    fx_ops, _ = _from_fx(module, (x,), get_device("a100"))
    assert [op.name for op in fx_ops if op.flops > 0] == ["c1", "c2", "fc"]


def test_fx_fallback_flops(cnn: tuple) -> None:
    module, x = cnn
    with FlopCounterMode(display=False) as fc:
        module(x)
    ops, edges = _from_fx(module, (x,), get_device("a100"))
    assert sum(op.flops for op in ops) == fc.get_total_flops()
    assert len(edges) == len(ops) - 1  # a chain


def test_bert_imports() -> None:
    transformers = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(num_hidden_layers=2)).eval()
    ids = torch.randint(0, 1000, (1, 32))
    g = from_torch(model, (ids,), device_spec="a100")
    assert g.n > 100 and len(g.topological_order) == g.n
    assert "bmm.default" in g.ops and "addmm.default" in g.ops
    # fp32 parameters at their real 4 bytes (activations at the preset's bf16);
    # constant-only lookups (position embeddings of fixed ids) are folded to their
    # results, so the total lies a little below 4 bytes per parameter
    n_params = sum(p.numel() for p in model.parameters())
    assert 0.95 * 4 * n_params <= g.size_param.sum() <= 4 * n_params
    # a device spec that deploys parameters at bf16 overrides the dtype
    bf16 = get_device("a100").model_copy(update={"param_bytes_per_element": 2})
    assert from_torch(model, (ids,), device_spec=bf16).size_param.sum() == g.size_param.sum() / 2
    # nodes carry the module path they run in
    assert "encoder.layer.1.attention.self.query" in g.names
    ops, _ = torch_costed_ops(model, (ids,))
    # 2 layers at seq 32, hidden 768, FFN 3072: 4 projections 4*32*768*768 MACs,
    # FFN 2*32*768*3072, attention 2*32*32*768 -> per layer in FLOPs:
    per_layer = 2 * (4 * 32 * 768 * 768 + 2 * 32 * 768 * 3072 + 2 * 32 * 32 * 768)
    pooler = 2 * 768 * 768
    assert sum(op.flops for op in ops) == 2 * per_layer + pooler


def test_bert_base_from_its_config_imports() -> None:
    """BERT-base itself (BertConfig() defaults: 12 layers, hidden 768), random weights, offline."""
    transformers = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig()).eval()
    ids = torch.randint(0, 1000, (1, 32))
    ops, _ = torch_costed_ops(model, (ids,))
    per_layer = 2 * (4 * 32 * 768 * 768 + 2 * 32 * 768 * 3072 + 2 * 32 * 32 * 768)
    assert sum(op.flops for op in ops) == 12 * per_layer + 2 * 768 * 768
    g = from_torch(model, (ids,), device_spec="a100")
    assert len(g.topological_order) == g.n and g.n > 500


def test_bytes_moved_count_parameters_once_and_lookups_by_row() -> None:
    model = torch.nn.Sequential(torch.nn.Embedding(1000, 64), torch.nn.Linear(64, 32))
    ids = torch.randint(0, 1000, (2, 5))
    ops = {op.op: op for op in torch_costed_ops(model, (ids,), device_spec="cpu")[0]}
    lookup, linear = ops["embedding.default"], ops["addmm.default"]
    assert lookup.size_param == 1000 * 64 * 4  # the whole table is the stage's memory
    assert lookup.bytes_moved == ids.numel() * 8 + 2 * 10 * 64 * 4  # ids, the 10 rows read, the output
    assert linear.bytes_moved == 10 * 64 * 4 + 10 * 32 * 4 + (64 * 32 + 32) * 4  # input, output, weights once
