"""The PyTorch importer at operator granularity (``keep_zero_cost_ops=True``): views,
constants, inputs and outputs kept as zero-work ops, weights still folded."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mtpp.core.errors import InvalidParameterError, MtppError  # noqa: E402
from mtpp.core.presets import get_device  # noqa: E402
from mtpp.io.torch_model import ZERO_COST_OPS, _from_fx, from_torch, torch_costed_ops  # noqa: E402


class Tiny(torch.nn.Module):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x: Any) -> Any:
        pos = torch.arange(4).unsqueeze(0).unsqueeze(-1)  # a non-parameter constant
        h = self.fc(x.reshape(8, 8)).view(2, 4, 8)
        h = h.permute(0, 2, 1).transpose(1, 2)
        h = h * self.scale + pos
        a, b = h.split(4, dim=-1)
        return torch.relu(a), b.clone()


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    torch.manual_seed(0)
    return Tiny().eval(), torch.randn(2, 4, 8)


def _base(op: str) -> str:
    return op.split(".")[0]


def test_keeps_views_constants_inputs_and_outputs(tiny: tuple) -> None:
    module, x = tiny
    g = from_torch(module, (x,), device_spec="cpu", keep_zero_cost_ops=True)
    ops = [str(op) for op in g.ops]
    assert ops.count("Input") == 1 and ops.count("Output") == 2
    assert ops.count("view.default") == 2 and ops.count("permute.default") == 2
    assert ops.count("getitem") == 2 and "clone.default" in ops and "split_with_sizes.default" in ops
    assert "arange.start_step" in ops and ops.count("unsqueeze.default") == 2
    # the weight's transpose is folded into the matrix product that reads it
    assert "t.default" not in ops
    addmm = ops.index("addmm.default")
    assert g.size_param[addmm] == (8 * 8 + 8) * 4
    # weights and buffers are the only parameters, at their real fp32 width
    assert g.size_param.sum() == (8 * 8 + 8 + 8) * 4
    zero = (g.work == 0.0) & (g.size_param == 0.0)
    kept = {i for i, op in enumerate(ops) if _base(op) in ZERO_COST_OPS or op in ("Input", "Output")}
    kept |= {i for i, op in enumerate(ops) if _base(op) in ("arange", "unsqueeze")}
    assert set(np.flatnonzero(zero).tolist()) == kept
    # a view's output tensor is its real size: bytes of the activation at fp32
    assert g.size_out[ops.index("view.default")] == 8 * 8 * 4
    assert g.size_out[ops.index("getitem")] == 2 * 4 * 4 * 4


def test_outputs_are_sinks_and_the_graph_is_a_dag(tiny: tuple) -> None:
    module, x = tiny
    g = from_torch(module, (x,), keep_zero_cost_ops=True)
    assert len(g.topological_order) == g.n and len(set(g.ids)) == g.n
    for i, op in enumerate(g.ops):
        if op == "Output":
            assert g.succ_ptr[i + 1] == g.succ_ptr[i] and g.pred_ptr[i + 1] - g.pred_ptr[i] == 1
        if op == "Input":
            assert g.pred_ptr[i + 1] == g.pred_ptr[i]
    assert np.all(g.work >= 0) and np.all(g.size_out >= 0)


def test_same_flops_and_work_as_the_default_but_the_views(tiny: tuple) -> None:
    module, x = tiny
    default, _ = torch_costed_ops(module, (x,))
    fine, _ = torch_costed_ops(module, (x,), keep_zero_cost_ops=True)
    assert sum(op.flops for op in fine) == sum(op.flops for op in default) > 0
    g0 = from_torch(module, (x,))
    g1 = from_torch(module, (x,), keep_zero_cost_ops=True)
    w0 = dict(zip(g0.ids, g0.work.tolist(), strict=True))
    w1 = dict(zip(g1.ids, g1.work.tolist(), strict=True))
    views = {i for i, op in zip(g0.ids, g0.ops, strict=True) if _base(str(op)) in ZERO_COST_OPS or op == "Output"}
    for node, work in w0.items():
        assert w1[node] == (0.0 if node in views else work)
    assert g1.work.sum() == pytest.approx(g0.work.sum() - sum(w0[v] for v in views), rel=1e-12)
    assert g1.n > g0.n


def test_fx_path_prices_views_at_zero(tiny: tuple) -> None:
    module, x = tiny
    ops, _ = _from_fx(module, (x,), get_device("a100"), True)
    views = [op for op in ops if _base(op.op) in ZERO_COST_OPS]
    assert views and all(op.work == 0.0 for op in views)
    assert sum(op.flops for op in ops) == sum(op.flops for op in _from_fx(module, (x,), get_device("a100"))[0])


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_bad_argument_is_a_typed_error(tiny: tuple, bad: Any) -> None:
    module, x = tiny
    with pytest.raises(InvalidParameterError, match="keep_zero_cost_ops"):
        from_torch(module, (x,), keep_zero_cost_ops=bad)
    assert issubclass(InvalidParameterError, MtppError)
