"""ONNX importer: an ONNX model to an :class:`mtpp.Graph` priced on a device.

``from_onnx(path_or_model, batch_size=1, device_spec="a100", fallback_cost=None)``

What becomes what:

* **Nodes** are the ONNX ops, plus one zero-work ``Input`` node per graph input that
  some op reads (its ``size_out`` is the input tensor, so feeding it to a stage is
  priced like any other tensor).  Node ids are the ONNX node names (or
  ``"{op_type}_{index}"`` when a name is empty or repeated).
* **Edges** run from the producer of a tensor to each op that consumes it.
* **Constants are not nodes.**  Initializers, and every op whose inputs are all
  constant (``Constant``, ``ConstantOfShape`` of a shape initializer, ``Unsqueeze``
  or ``Shape`` of a weight, ...), are folded; a constant tensor read by a remaining
  op adds its bytes to that op's ``size_param``.  A weight read by two ops counts
  in both (each stage that holds one of them must hold the weight).
* **Shapes** come from :func:`onnx.shape_inference.infer_shapes` after the first dim
  of every (non-initializer) graph input is set to ``batch_size``.  Shapes fixed
  inside the model (a Reshape to ``[1, -1]``) are not rewritten.
* **Costs** (units of :mod:`mtpp.core.devices`: microseconds and bytes): ``work`` is the
  device's roofline ``max(FLOPs / peak, bytes moved / memory bandwidth)`` with FLOPs
  from :mod:`mtpp.io.flops` and bytes moved = inputs + outputs + constants read;
  ``size_out`` is the output tensor's bytes, floating-point tensors at the device's
  ``bytes_per_element``.

**Ops with several outputs.**  MTPP gives each node one output tensor.  An op whose
outputs are read by at most one tensor's consumers (e.g. ``Dropout``, whose mask is
unused) is one node with that tensor as ``size_out``.  An op with ``r >= 2`` consumed
outputs ``t_1..t_r`` becomes the op node ``P`` with ``size_out(P) = sum_j |t_j|``,
plus one zero-work, zero-parameter node ``"{P}:out{j}"`` per consumed output with
``size_out = |t_j|`` and the edge ``P -> P:out{j}``; the consumers of ``t_j`` hang
off ``P:out{j}``.  Cost semantics: when every ``P:out{j}`` is in ``P``'s block (the
only placement worth choosing), each ``t_j`` is counted exactly once per block it
enters or leaves, and ``P``'s own ``size_out`` is never paid because ``P`` has no
consumer outside its block.  A partition that separates ``P:out{j}`` from ``P`` is
priced at least as high as the true cost of its ops' placement (``P`` then ships
all its outputs), and moving every ``P:out{j}`` into ``P``'s block never raises a
block's cost.  So the optimum, and every lower bound, are those of the true model;
only such a separated partition is over-priced.

**Errors.**  An op without a FLOP formula raises :class:`UnsupportedOpError`, an op
whose output (or a needed input) has no inferred shape raises
:class:`MissingShapeError`; both name the op type and node.  Pass ``fallback_cost``
(microseconds, or a callable ``(onnx.NodeProto) -> microseconds``) to give such ops
that work instead; their unknown tensor sizes are then taken as 0 bytes.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from mtpp.core.devices import DeviceSpec
from mtpp.core.errors import InvalidParameterError, MtppError
from mtpp.core.graph import Graph
from mtpp.core.presets import get_device
from mtpp.io import flops as F
from mtpp.io.costed import CostedOp, costed_graph
from mtpp.io.json_file import check_readable

FallbackCost = float | Callable[[Any], float] | None


class OnnxImportError(MtppError, ValueError):
    """The ONNX model cannot be imported."""


class UnsupportedOpError(OnnxImportError):
    """An op type has no FLOP formula; pass ``fallback_cost`` to price it anyway."""

    def __init__(self, op_type: str, node: str) -> None:
        self.op_type = op_type
        self.node = node
        super().__init__(
            f"op {op_type!r} (node {node!r}) has no FLOP formula in mtpp.io.flops; "
            "pass fallback_cost=<microseconds> to price such ops"
        )


class MissingShapeError(OnnxImportError):
    """Shape inference left a tensor an op needs without a static shape."""

    def __init__(self, op_type: str, node: str, tensor: str) -> None:
        self.op_type = op_type
        self.node = node
        self.tensor = tensor
        super().__init__(
            f"op {op_type!r} (node {node!r}): tensor {tensor!r} has no static shape after shape inference; "
            "set batch_size, or pass fallback_cost=<microseconds> to price such ops"
        )


ELEMENTWISE = frozenset(
    "Add Sub Mul Div Pow Sqrt Reciprocal Relu LeakyRelu PRelu Sigmoid Tanh Exp Log Erf Abs Neg Clip Max Min Sum "
    "Mean Where Equal Less LessOrEqual Greater GreaterOrEqual Not And Or Xor Softplus Softsign Elu Selu Celu "
    "HardSigmoid HardSwish Gelu Mish Floor Ceil Round Sign IsNaN IsInf Mod BitShift Sin Cos Tan Asin Acos Atan "
    "Sinh Cosh Asinh Acosh Atanh ThresholdedRelu Shrink CumSum Resize Upsample QuantizeLinear DequantizeLinear".split()
)
DATA_MOVEMENT = frozenset(
    "Reshape Flatten Transpose Concat Split Slice Gather GatherElements GatherND Squeeze Unsqueeze Identity Dropout "
    "Shape Size Cast CastLike Pad Expand Tile ConstantOfShape Range NonZero DepthToSpace SpaceToDepth ScatterND "
    "ScatterElements Scatter Trilu OneHot EyeLike Compress ReverseSequence SplitToSequence".split()
)
REDUCTIONS = frozenset(
    "ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp "
    "ReduceSumSquare ArgMax ArgMin TopK".split()
)
NORMS = frozenset("LayerNormalization InstanceNormalization GroupNormalization MeanVarianceNormalization".split())


def _attrs(node: Any) -> dict[str, Any]:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def op_flops(node: Any, in_shapes: list[tuple[int, ...] | None], out_shapes: list[tuple[int, ...] | None]) -> float:
    """FLOPs of one ONNX op from its input and output shapes (:mod:`mtpp.io.flops`).

    Raises :class:`UnsupportedOpError` for an op type without a formula and
    :class:`MissingShapeError` when a shape the formula needs is unknown.
    """
    op, name = node.op_type, node.name or node.op_type

    def need(shapes: list[tuple[int, ...] | None], i: int, names: Any) -> tuple[int, ...]:
        s = shapes[i] if i < len(shapes) else None
        if s is None:
            raise MissingShapeError(op, name, names[i] if i < len(names) else f"#{i}")
        return s

    def inp(i: int) -> tuple[int, ...]:
        return need(in_shapes, i, node.input)

    def out(i: int = 0) -> tuple[int, ...]:
        return need(out_shapes, i, node.output)

    if op in DATA_MOVEMENT:
        return 0.0
    if op in ELEMENTWISE:
        return F.elementwise_flops(out())
    if op == "Conv":
        return F.conv_flops(out(), inp(1))
    if op == "ConvTranspose":
        return F.conv_transpose_flops(inp(0), inp(1))
    if op == "Gemm":
        a, (m, n) = inp(0), out()
        return F.gemm_flops(m, a[0] if _attrs(node).get("transA", 0) else a[1], n)
    if op in ("MatMul", "MatMulInteger"):
        return F.matmul_flops(inp(0), inp(1))
    if op in ("MaxPool", "AveragePool", "LpPool"):
        return F.pool_flops(out(), _attrs(node)["kernel_shape"])
    if op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
        return F.global_pool_flops(inp(0))
    if op == "BatchNormalization":
        return F.batchnorm_flops(out())
    if op in NORMS:
        return F.norm_flops(inp(0))
    if op == "LRN":
        return F.lrn_flops(out(), int(_attrs(node)["size"]))
    if op in ("Softmax", "LogSoftmax", "Hardmax"):
        return F.softmax_flops(out())
    if op in REDUCTIONS:
        return F.reduce_flops(inp(0))
    raise UnsupportedOpError(op, name)


def _shape(type_proto: Any) -> tuple[int, ...] | None:
    """A static shape, or None if the type has no shape or a symbolic / unknown dim."""
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value") or d.dim_value < 0:
            return None
        dims.append(int(d.dim_value))
    return tuple(dims)


def _width(elem_type: int, spec: DeviceSpec) -> int:
    import onnx

    if elem_type == 0:
        return 0
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    if dtype.kind == "f" and spec.bytes_per_element is not None:
        return spec.bytes_per_element
    return 0 if dtype.kind in "OSU" else dtype.itemsize


def _set_batch(model: Any, batch_size: int) -> None:
    """Set the first dim of every non-initializer input; drop stale inferred shapes."""
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    for vi in graph.input:
        if vi.name in inits or not vi.type.tensor_type.HasField("shape"):
            continue
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            dims[0].Clear()
            dims[0].dim_value = batch_size
    for vi in graph.output:
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            dims[0].Clear()
    del graph.value_info[:]


def load_model(path_or_model: Any) -> Any:
    """An ``onnx.ModelProto`` from a path or a model (copied, never modified)."""
    import onnx

    if isinstance(path_or_model, (str, os.PathLike)):
        path = check_readable(path_or_model, "ONNX model")
        try:
            model = onnx.load(path)
        except Exception as exc:  # protobuf's DecodeError and onnx's own errors on garbage
            raise OnnxImportError(f"{path}: not an ONNX model ({type(exc).__name__}: {exc})") from None
        if not model.graph.node or not model.opset_import:  # protobuf reads some garbage as an empty message
            raise OnnxImportError(f"{path}: not an ONNX model (no graph nodes or no opset)")
        return model
    if isinstance(path_or_model, onnx.ModelProto):
        return copy.deepcopy(path_or_model)
    raise InvalidParameterError(f"expected a path or an onnx.ModelProto, got {type(path_or_model).__name__}")


def folded_nodes(graph: Any) -> list[bool]:
    """For each node (ONNX lists them in topological order): is it constant-only,
    i.e. are all its inputs initializers or outputs of constant-only nodes?"""
    const = {t.name for t in graph.initializer}
    folded = []
    for node in graph.node:
        is_const = all(i == "" or i in const for i in node.input)
        folded.append(is_const)
        if is_const:
            const.update(o for o in node.output if o)
    return folded


def from_onnx(
    path_or_model: Any, batch_size: int = 1, device_spec: str | DeviceSpec = "a100", fallback_cost: FallbackCost = None
) -> Graph:
    """Import an ONNX model (path or ``onnx.ModelProto``) as an :class:`mtpp.Graph`
    priced on ``device_spec`` (a preset name of :data:`mtpp.core.devices.PRESETS` or a
    :class:`~mtpp.core.devices.DeviceSpec`); see the module docstring for the model."""
    ops, edges, name = onnx_costed_ops(path_or_model, batch_size, device_spec, fallback_cost)
    return costed_graph(ops, edges, device_spec, name=name)


def onnx_costed_ops(
    path_or_model: Any, batch_size: int = 1, device_spec: str | DeviceSpec = "a100", fallback_cost: FallbackCost = None
) -> tuple[list[CostedOp], list[tuple[int, int]], str | None]:
    """The ops (with FLOPs and bytes, before pricing), the edges as index pairs and
    the model name: the steps of :func:`from_onnx` before the device's roofline."""
    import onnx

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidParameterError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    spec = get_device(device_spec)
    model = load_model(path_or_model)
    _set_batch(model, batch_size)
    try:
        model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as exc:  # onnx raises its own InferenceError / ValidationError types
        raise OnnxImportError(f"ONNX shape inference failed: {exc}") from exc
    graph = model.graph

    shapes: dict[str, tuple[int, ...] | None] = {}
    elem: dict[str, int] = {}
    for vi in [*graph.input, *graph.value_info, *graph.output]:
        shapes[vi.name] = _shape(vi.type)
        elem[vi.name] = vi.type.tensor_type.elem_type
    for t in graph.initializer:
        shapes[t.name] = tuple(int(d) for d in t.dims)
        elem[t.name] = t.data_type

    def nbytes(tensor: str) -> float | None:
        s = shapes.get(tensor)
        if s is None:
            return None
        return float(F.numel(s) * _width(elem.get(tensor, 0), spec))

    folded = folded_nodes(graph)
    const = {t.name for t in graph.initializer}
    for node, f in zip(graph.node, folded):
        if f:
            const.update(node.output)
    live = [node for node, f in zip(graph.node, folded) if not f]

    consumers: dict[str, list[int]] = {}
    for j, node in enumerate(live):
        for t in dict.fromkeys(node.input):
            if t and t not in const:
                consumers.setdefault(t, []).append(j)

    ops: list[CostedOp] = []
    edges: list[tuple[int, int]] = []
    producer: dict[str, int] = {}  # tensor -> index of the node whose size_out it is
    used_ids: set[str] = set()

    def unique(base: str) -> str:
        nid, i = base, 1
        while nid in used_ids:
            nid, i = f"{base}_{i}", i + 1
        used_ids.add(nid)
        return nid

    for vi in graph.input:
        if vi.name in const or vi.name not in consumers:
            continue
        size = nbytes(vi.name)
        if size is None:
            raise MissingShapeError("Input", vi.name, vi.name)
        producer[vi.name] = len(ops)
        ops.append(CostedOp(unique(f"input:{vi.name}"), "Input", vi.name, 0.0, 0.0, size, 0.0))

    pending: list[tuple[int, str]] = []  # (consumer node index, activation tensor)
    for j, node in enumerate(live):
        label = node.name or f"{node.op_type}_{j}"
        nid = unique(node.name or f"{node.op_type}_{j}")
        ins = [t for t in node.input if t]
        in_shapes = [shapes.get(t) for t in node.input]
        outs = [t for t in node.output if t]
        out_shapes = [shapes.get(t) for t in node.output]
        used = [t for t in outs if t in consumers]
        needed = [*dict.fromkeys(ins), *(used or outs[:1])]
        work: float | None = None
        try:
            flops = op_flops(node, in_shapes, out_shapes)
            missing = next((t for t in needed if nbytes(t) is None), None)
            if missing is not None:
                raise MissingShapeError(node.op_type, label, missing)
        except OnnxImportError:
            if fallback_cost is None:
                raise
            flops, work = 0.0, float(fallback_cost(node) if callable(fallback_cost) else fallback_cost)
            if not work >= 0:
                raise InvalidParameterError(f"fallback_cost gave {work!r} for node {label!r}; need >= 0") from None

        def b(t: str) -> float:
            return nbytes(t) or 0.0

        param = sum(b(t) for t in dict.fromkeys(ins) if t in const)
        moved = sum(b(t) for t in ins) + sum(b(t) for t in outs)
        me = len(ops)
        size_out = sum(b(t) for t in used) if used else (b(outs[0]) if outs else 0.0)
        ops.append(CostedOp(nid, node.op_type, node.name or None, flops, moved, size_out, param, work))
        if len(used) <= 1:
            for t in used:
                producer[t] = me
        else:
            for t in used:
                k = list(node.output).index(t)
                producer[t] = len(ops)
                ops.append(CostedOp(unique(f"{nid}:out{k}"), "Output", t, 0.0, 0.0, b(t), 0.0))
                edges.append((me, producer[t]))
        for t in dict.fromkeys(ins):
            if t not in const:
                pending.append((me, t))

    for me, t in pending:
        if t not in producer:
            raise OnnxImportError(f"tensor {t!r} read by node {ops[me].id!r} has no producer in the graph")
        edges.append((producer[t], me))
    return ops, edges, graph.name or None
