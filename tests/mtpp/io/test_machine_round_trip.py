"""From a model to a certificate through the plain calls: a graph from ``from_torch``
records the machine it was priced on, and ``certify(G, k)`` with no machine given is the
priced result (``get_device(...).problem(G, k)``), never the 1-byte-per-microsecond trap."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

import mtpp
from mtpp.core.machine import MachineWarning
from mtpp.core.presets import get_device

torch = pytest.importorskip("torch")
nn = torch.nn


class Residual(nn.Module):
    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, x: Any) -> Any:
        return x + self.body(x)


class Concat(nn.Module):  # DenseNet / Inception: branches joined on channels
    def __init__(self, *branches: nn.Module) -> None:
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x: Any) -> Any:
        return torch.cat([b(x) for b in self.branches], dim=1)


class Attention(nn.Module):
    def __init__(self, d: int, heads: int = 2) -> None:
        super().__init__()
        self.qkv, self.out, self.heads = nn.Linear(d, 3 * d), nn.Linear(d, d), heads

    def forward(self, x: Any) -> Any:
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        w = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        return self.out((w @ v).transpose(1, 2).reshape(b, t, d))


class GatedMlp(nn.Module):  # Llama's SwiGLU
    def __init__(self, d: int) -> None:
        super().__init__()
        self.gate, self.up, self.down = nn.Linear(d, 2 * d), nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x: Any) -> Any:
        return self.down(nn.functional.silu(self.gate(x)) * self.up(x))


def block(d: int, mlp: nn.Module) -> nn.Module:
    return nn.Sequential(
        Residual(nn.Sequential(nn.LayerNorm(d), Attention(d))), Residual(nn.Sequential(nn.LayerNorm(d), mlp))
    )


def conv(cin: int, cout: int, groups: int = 1) -> nn.Module:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, groups=groups), nn.BatchNorm2d(cout), nn.ReLU())


D, IMG = 32, (1, 8, 16, 16)
ARCHITECTURES: dict[str, Callable[[], tuple[nn.Module, tuple[int, ...]]]] = {
    "mlp": lambda: (nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.ReLU()) for _ in range(6)]), (4, 64)),
    "cnn": lambda: (nn.Sequential(conv(8, 16), conv(16, 16), nn.MaxPool2d(2), conv(16, 32), nn.Flatten()), IMG),
    "resnet": lambda: (nn.Sequential(*[Residual(nn.Sequential(conv(8, 8), conv(8, 8))) for _ in range(3)]), IMG),
    "densenet": lambda: (nn.Sequential(Concat(nn.Identity(), conv(8, 8)), Concat(nn.Identity(), conv(16, 8))), IMG),
    "inception": lambda: (Concat(conv(8, 4), nn.Sequential(conv(8, 4), conv(4, 4)), nn.MaxPool2d(3, 1, 1)), IMG),
    "mobilenet": lambda: (nn.Sequential(conv(8, 8, groups=8), conv(8, 16), conv(16, 16, groups=16), conv(16, 16)), IMG),
    "convnext": lambda: (
        nn.Sequential(*[Residual(nn.Sequential(nn.Conv2d(8, 8, 7, padding=3, groups=8), nn.GELU())) for _ in range(3)]),
        IMG,
    ),
    "transformer": lambda: (
        nn.Sequential(
            *[block(D, nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))) for _ in range(2)]
        ),
        (2, 8, D),
    ),
    "llama": lambda: (nn.Sequential(*[block(D, GatedMlp(D)) for _ in range(2)]), (2, 8, D)),
    "torch_encoder": lambda: (
        nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 2, 64, batch_first=True), 2, enable_nested_tensor=False),
        (2, 8, D),
    ),
    "tanh_mlp": lambda: (
        nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4)),
        (8, 16),
    ),
    "vit": lambda: (
        nn.Sequential(
            nn.Conv2d(8, D, 4, stride=4),
            nn.Flatten(2),
            Transpose(),
            *[block(D, nn.Sequential(nn.Linear(D, D), nn.GELU())) for _ in range(2)],
        ),
        IMG,
    ),
}


class Transpose(nn.Module):
    def forward(self, x: Any) -> Any:
        return x.transpose(1, 2)


@pytest.mark.parametrize("granularity", ["layer", "op"])
@pytest.mark.parametrize("name", list(ARCHITECTURES))
def test_certify_on_an_imported_graph_is_the_priced_result(name: str, granularity: str) -> None:
    torch.manual_seed(0)
    model, shape = ARCHITECTURES[name]()
    graph = mtpp.from_torch(model.eval(), (torch.randn(*shape),), "a100", keep_zero_cost_ops=granularity == "op")
    spec = get_device("a100")
    assert graph.machine == spec.machine() and graph.units == {"time": "us", "size": "bytes"}
    ks = [2, 4]
    with warnings.catch_warnings():
        warnings.simplefilter("error", MachineWarning)
        plain = mtpp.certify(graph, k=ks, time_limit=20)
    for k, cert in zip(ks, plain):
        priced = mtpp.certify(spec.problem(graph, k, limit_memory=True), time_limit=20)
        assert cert.machine == "a100" and cert.bandwidth == priced.bandwidth == spec.bandwidth_bytes_per_us
        assert cert.upper_bound == priced.upper_bound
        assert cert.optimal == priced.optimal
        if cert.optimal:
            assert cert.lower_bound == pytest.approx(priced.lower_bound, rel=1e-9)
