"""Each FLOP formula of mtpp.io.flops against a count done by hand."""

from __future__ import annotations

import pytest

from mtpp.core.devices import DeviceSpec
from mtpp.core.errors import InvalidParameterError
from mtpp.core.presets import DEVICES as PRESETS
from mtpp.core.presets import get_device
from mtpp.io import flops as F


def test_conv_resnet_stem() -> None:
    # ResNet-50 stem: 3 -> 64 channels, 7x7 kernel, 224 -> 112; each output element is a
    # dot product of 3*7*7 = 147 MACs: 64*112*112*147 MACs = 118,013,952 MACs.
    assert F.conv_flops((1, 64, 112, 112), (64, 3, 7, 7)) == 2 * 118_013_952


def test_conv_grouped_and_batch() -> None:
    # depthwise 3x3 on 32 channels, 10x10 output, batch 2: 2*32*100*9 MACs
    assert F.conv_flops((2, 32, 10, 10), (32, 1, 3, 3)) == 2 * (2 * 32 * 100 * 9)


def test_conv_transpose() -> None:
    # 4 -> 2 channels, 2x2 kernel, 3x3 input: every input element (4*9) scatters into
    # 2 channels x 4 kernel taps = 8 MACs -> 288 MACs
    assert F.conv_transpose_flops((1, 4, 3, 3), (4, 2, 2, 2)) == 2 * 288


def test_gemm_and_matmul() -> None:
    assert F.gemm_flops(2, 3, 4) == 48  # 2*4 outputs, 3 MACs each
    assert F.matmul_flops((2, 3), (3, 4)) == 48
    # batch (5, 1) x (6,) broadcast -> 30 products of 2x3 @ 3x4
    assert F.matmul_flops((5, 1, 2, 3), (6, 3, 4)) == 30 * 48
    assert F.matmul_flops((3,), (3, 4)) == 2 * 3 * 4  # vector-matrix
    assert F.matmul_flops((2, 3), (3,)) == 2 * 2 * 3  # matrix-vector


def test_pooling() -> None:
    # 3x3 max pool, 64 x 56 x 56 output: 9 compares per output element
    assert F.pool_flops((1, 64, 56, 56), (3, 3)) == 64 * 56 * 56 * 9
    assert F.global_pool_flops((1, 2048, 7, 7)) == 2048 * 49


def test_normalisation() -> None:
    assert F.batchnorm_flops((1, 64, 2, 2)) == 2 * 256
    assert F.norm_flops((2, 128, 768)) == 7 * 2 * 128 * 768
    assert F.lrn_flops((1, 96, 55, 55), 5) == 96 * 55 * 55 * 8


def test_elementwise_softmax_reduce() -> None:
    assert F.elementwise_flops((4, 5)) == 20
    assert F.elementwise_flops((4, 5), 3) == 60
    assert F.softmax_flops((2, 10)) == 100
    assert F.reduce_flops((3, 7)) == 21
    assert F.numel(()) == 1


def test_attention() -> None:
    # BERT-base layer at seq 128: 12 heads of width 64; QK^T and AV are each
    # 128*128*64 MACs per head
    assert F.attention_flops(1, 12, 128, 128, 64) == 2 * 2 * 12 * 128 * 128 * 64
    assert F.attention_flops(1, 1, 2, 3, 4, 5) == 2 * 2 * 3 * (4 + 5)


def test_attention_matches_flop_counter() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)
    with FlopCounterMode(display=False) as fc:  # the math path: CPU SDPA kernels are not counted
        torch.softmax(q @ k.transpose(-1, -2) / 8**0.5, dim=-1) @ v
    assert fc.get_total_flops() == F.attention_flops(2, 3, 5, 7, 8)


def test_roofline_and_units() -> None:
    spec = DeviceSpec(name="toy", peak_flops=1e12, mem_bandwidth=1e9, link_bandwidth=2e9, memory=1e6)
    assert spec.roofline_time(2e6, 0) == pytest.approx(2.0)  # 2e6 FLOP at 1e12 FLOP/s = 2 us
    assert spec.roofline_time(0, 3e3) == pytest.approx(3.0)  # 3 kB at 1 GB/s = 3 us
    assert spec.roofline_time(2e6, 3e3) == pytest.approx(3.0)
    assert spec.bandwidth_bytes_per_us == pytest.approx(2e3)


def test_presets() -> None:
    assert set(PRESETS) >= {"a100", "h100", "tpu-v4", "cpu"}
    assert all(p.source for p in PRESETS.values())
    assert get_device("h100") is PRESETS["h100"]
    with pytest.raises(InvalidParameterError, match="unknown device"):
        get_device("abacus")
