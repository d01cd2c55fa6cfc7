"""The PyTorch importer drops runtime checks (``_assert_tensor_metadata`` and kin):
they compute nothing and produce no tensor, and each kept one would double the
ideals after the tensor it checks."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from heuristics.partition.ideals import enumerate_ideals  # noqa: E402
from mtpp.core.presets import get_device  # noqa: E402
from mtpp.io.torch_model import NO_OP_CHECKS, _base_name, _from_fx, from_torch, torch_costed_ops  # noqa: E402


class Casts(torch.nn.Module):  # type: ignore[misc,name-defined]
    """Every ``.to(dtype)`` exports as ``_assert_tensor_metadata`` + ``_to_copy``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: Any) -> Any:
        h = self.fc(x).to(torch.float64)
        return (h * 2).to(torch.float32) + x


class FxAssert(torch.nn.Module):  # type: ignore[misc,name-defined]
    def forward(self, x: Any) -> Any:
        torch._assert(x.dim() == 2, "two dimensions")
        return x * 2


def _exported_checks(module: Any, args: tuple[Any, ...]) -> list[str]:
    ep = torch.export.export(module, args, strict=False).run_decompositions()
    return [n.name for n in ep.graph.nodes if n.op == "call_function" and _base_name(n) in NO_OP_CHECKS]


@pytest.mark.parametrize("keep", [False, True])
def test_checks_are_dropped_with_their_edges(keep: bool) -> None:
    torch.manual_seed(0)
    module, x = Casts().eval(), torch.randn(4, 8)
    assert len(_exported_checks(module, (x,))) >= 2  # the tracer records them
    ops, edges = torch_costed_ops(module, (x,), keep_zero_cost_ops=keep)
    assert not any(op.op.split(".")[0] in NO_OP_CHECKS for op in ops)
    assert all(0 <= u < len(ops) and 0 <= v < len(ops) for u, v in edges)
    g = from_torch(module, (x,), keep_zero_cost_ops=keep)
    # no sink hangs off the graph: every op but the last (an output) has a consumer
    sinks = [v for v in range(g.n) if g.successors(v).size == 0]
    assert len(sinks) == 1
    if not keep:  # a chain: Input, addmm, _to_copy, mul, _to_copy, add
        assert [str(op).split(".")[0] for op in g.ops] == ["Input", "addmm", "_to_copy", "mul", "_to_copy", "add"]
        lattice = enumerate_ideals(g)
        assert lattice is not None and lattice.count == g.n + 1


def test_fx_path_drops_torch_assert() -> None:
    gm = torch.fx.symbolic_trace(FxAssert())
    assert any(n.op == "call_function" and _base_name(n) == "_assert" for n in gm.graph.nodes)
    ops, edges = _from_fx(FxAssert(), (torch.randn(2, 3),), get_device("a100"))
    assert [op.op for op in ops if op.op != "Input"] == ["mul"]
    assert edges == [(0, 1)]


def test_every_aten_check_is_listed() -> None:
    """Every ATen assertion or shape constraint that returns no tensor a real op reads."""
    aten = [n for n in dir(torch.ops.aten) if "assert" in n or "constrain" in n]
    assert aten and set(aten) <= NO_OP_CHECKS
