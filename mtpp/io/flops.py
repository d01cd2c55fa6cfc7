"""FLOP counts of the ops of ML computation graphs, from tensor shapes alone.

Conventions (the ones :class:`torch.utils.flop_counter.FlopCounterMode` uses, so the
ONNX and PyTorch importers agree):

* a multiply-accumulate is **2 FLOPs**;
* bias additions of Conv, ConvTranspose and Gemm are not counted (they are
  memory-bound and FlopCounterMode ignores them too);
* an elementwise op costs ``flops_per_element`` FLOPs per *output* element (1 for
  arithmetic and activations; a transcendental such as ``exp`` counts as one);
* data movement ops (Reshape, Transpose, Concat, Gather, ...) cost 0 FLOPs: the
  roofline of :mod:`mtpp.core.devices` still charges them for the bytes they move.

Shapes are tuples of ints, batch first, channels second for images (NCHW); every
function returns a float.  Each formula is checked by a hand-computed example in
``tests/mtpp/io/test_flops.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Shape = Sequence[int]

#: FLOPs per element of LayerNorm / InstanceNorm / GroupNorm: mean (1 add), centre
#: (1 sub), square (1 mul), variance (1 add), normalise (1 mul by the reciprocal
#: standard deviation), affine scale (1 mul) and shift (1 add).
NORM_FLOPS_PER_ELEMENT = 7
#: FLOPs per element of inference BatchNorm: the statistics are constants, so it is
#: one multiply and one add (``x * a + b`` with folded ``a``, ``b``).
BATCHNORM_FLOPS_PER_ELEMENT = 2
#: FLOPs per element of softmax: max (1 compare), subtract (1), exp (1), sum (1),
#: divide (1).
SOFTMAX_FLOPS_PER_ELEMENT = 5


def numel(shape: Shape) -> int:
    """Number of elements of a tensor of ``shape`` (1 for a scalar)."""
    return math.prod(int(d) for d in shape)


def conv_flops(out_shape: Shape, weight_shape: Shape) -> float:
    """Conv (any spatial rank, any ``groups``): ``2 * N * C_out * prod(out_spatial) *
    (C_in / groups) * prod(kernel)``.

    ``out_shape`` is ``(N, C_out, *out_spatial)`` and ``weight_shape`` is
    ``(C_out, C_in / groups, *kernel)`` (ONNX and PyTorch layout), so this is
    ``2 * N * prod(out_spatial) * prod(weight_shape)``: every output element is a dot
    product of length ``(C_in / groups) * prod(kernel)``.
    """
    return 2.0 * out_shape[0] * numel(out_shape[2:]) * numel(weight_shape)


def conv_transpose_flops(in_shape: Shape, weight_shape: Shape) -> float:
    """ConvTranspose: every *input* element is scattered through the kernel to
    ``C_out / groups`` channels: ``2 * N * prod(in_spatial) * prod(weight_shape)``
    with ``in_shape = (N, C_in, *in_spatial)`` and ``weight_shape = (C_in,
    C_out / groups, *kernel)``."""
    return 2.0 * in_shape[0] * numel(in_shape[2:]) * numel(weight_shape)


def gemm_flops(m: int, k: int, n: int) -> float:
    """Matrix product of an ``m x k`` and a ``k x n`` matrix: ``2 m k n``."""
    return 2.0 * m * k * n


def matmul_flops(a_shape: Shape, b_shape: Shape) -> float:
    """numpy-style MatMul with batch broadcasting: ``2 * prod(batch) * M * K * N``.

    A 1-D ``a`` is a row vector (``M = 1``) and a 1-D ``b`` a column vector
    (``N = 1``); the batch dims of both are broadcast.
    """
    a = [1, *a_shape] if len(a_shape) == 1 else list(a_shape)
    b = [*b_shape, 1] if len(b_shape) == 1 else list(b_shape)
    m, k, n = a[-2], a[-1], b[-1]
    batch_a, batch_b = a[:-2], b[:-2]
    width = max(len(batch_a), len(batch_b))
    batch_a = [1] * (width - len(batch_a)) + batch_a
    batch_b = [1] * (width - len(batch_b)) + batch_b
    batch = math.prod(max(x, y) for x, y in zip(batch_a, batch_b))
    return gemm_flops(m, k, n) * batch


def pool_flops(out_shape: Shape, kernel: Shape) -> float:
    """Max or average pooling: one compare/add per window element per output element,
    ``prod(out_shape) * prod(kernel)`` (the average's final divide is not counted)."""
    return float(numel(out_shape) * numel(kernel))


def global_pool_flops(in_shape: Shape) -> float:
    """Global max / average pooling: one op per input element, ``prod(in_shape)``."""
    return float(numel(in_shape))


def batchnorm_flops(shape: Shape) -> float:
    """Inference BatchNorm: ``BATCHNORM_FLOPS_PER_ELEMENT * prod(shape)``."""
    return float(BATCHNORM_FLOPS_PER_ELEMENT * numel(shape))


def norm_flops(shape: Shape) -> float:
    """LayerNorm, InstanceNorm, GroupNorm (statistics computed from the input):
    ``NORM_FLOPS_PER_ELEMENT * prod(shape)``."""
    return float(NORM_FLOPS_PER_ELEMENT * numel(shape))


def lrn_flops(shape: Shape, size: int) -> float:
    """Local response normalisation over ``size`` channels: per element a window sum
    of squares (``size`` adds, the square shared), then scale, power and divide
    (3): ``prod(shape) * (size + 3)``."""
    return float(numel(shape) * (size + 3))


def elementwise_flops(out_shape: Shape, flops_per_element: float = 1.0) -> float:
    """Elementwise ops (Add, Mul, Relu, Sigmoid, Gelu, ...): ``flops_per_element``
    per output element; broadcasting inputs costs nothing extra."""
    return float(flops_per_element * numel(out_shape))


def softmax_flops(shape: Shape) -> float:
    """Softmax / LogSoftmax: ``SOFTMAX_FLOPS_PER_ELEMENT * prod(shape)``."""
    return float(SOFTMAX_FLOPS_PER_ELEMENT * numel(shape))


def reduce_flops(in_shape: Shape) -> float:
    """Reductions (sum, mean, max, min, prod): one op per input element,
    ``prod(in_shape)``."""
    return float(numel(in_shape))


def attention_flops(batch: int, heads: int, len_q: int, len_k: int, d_qk: int, d_v: int | None = None) -> float:
    """Scaled dot-product attention's two matrix products, ``Q K^T`` and
    ``softmax(.) V``: ``2 b h L_q L_k d_qk + 2 b h L_q L_k d_v``.

    This is what FlopCounterMode counts for ``scaled_dot_product_attention``; add
    :func:`softmax_flops` of the ``(b, h, L_q, L_k)`` scores for the softmax.
    """
    dv = d_qk if d_v is None else d_v
    return 2.0 * batch * heads * len_q * len_k * (d_qk + dv)
