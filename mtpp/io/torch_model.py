"""PyTorch importer: an ``nn.Module`` to an :class:`mtpp.Graph` priced on a device.

``from_torch(module, example_inputs, device_spec="a100")`` needs torch (the ``torch`` extra:
``pip install '.[torch]'`` in a clone of mtpp).  The graph records ``device_spec`` as its
machine (:attr:`mtpp.Graph.machine`), so ``certify(graph, k)`` prices cuts on its link.

The module is traced with ``torch.export.export(strict=False)`` and lowered to core
ATen ops (``run_decompositions``); where export fails, ``torch.fx.symbolic_trace``
is used and the traced module is run once on the example inputs.

* **Nodes** are the traced ops (``call_function`` nodes; ``call_module`` /
  ``call_method`` too on the fx path), plus one zero-work ``Input`` node per user
  input tensor.  Ids are the fx node names.
* **Parameters, buffers and lifted constants are not nodes**: their bytes are the
  ``size_param`` of every op that reads them.  Ops whose tensor inputs are all such
  constants (``t(weight)`` from the linear decomposition, ``arange`` of position
  ids) are folded the same way, as in :mod:`mtpp.io.onnx_model`.
* **Several outputs**: an op returning a tuple is read through ``getitem`` nodes;
  each used ``getitem`` stays as a zero-work node whose ``size_out`` is its tensor,
  and the op's own ``size_out`` is the sum of its used outputs: the model
  :mod:`mtpp.io.onnx_model` documents for ops with several outputs.
* **Costs** (microseconds, bytes; :mod:`mtpp.core.devices`): FLOPs per node from
  :data:`torch.utils.flop_counter.flop_registry` on the traced shapes (export path)
  or :class:`~torch.utils.flop_counter.FlopCounterMode` around each node (fx path),
  so the totals equal FlopCounterMode's on the whole model: matrix products and
  convolutions at 2 FLOPs per MAC, elementwise ops 0 FLOPs (their roofline time
  comes from the bytes they move).  Tensor sizes come from ``node.meta["val"]``;
  floating-point activations at the device's ``bytes_per_element``, parameters at
  their real dtype unless the device sets ``param_bytes_per_element``.  Bytes moved
  (the roofline's memory term) are the activations read and written plus the
  parameters read: all of them, except for lookups (:data:`GATHER_OPS`), which read
  only the rows they return.
* **Checks are not ops**: runtime assertions and shape constraints the tracer
  records (:data:`NO_OP_CHECKS`: ``_assert_tensor_metadata`` on every dtype
  conversion, ``_assert_async``, ``_assert_scalar``, ``sym_constrain_range``, their
  ``_functional_*`` forms that thread a dependency token, ``torch._assert`` on the fx
  path) are dropped, with every edge to and from them, and so are the ops that only
  feed them a value that is no tensor (``x.dim() == 2``): they compute nothing, move
  no tensor data (they read metadata) and return ``None`` or a token only other checks
  read, so an executed stage never runs them for a result.  Kept, each would be a
  sink hanging off the tensor it checks, doubling the ideals after its producer
  (:mod:`heuristics.partition.ideals`): 38,068 ideals instead of 9,304 for one
  Llama layer.
* **Names**: a node's ``name`` is the qualified name of the innermost module whose
  call the op runs in (``nn_module_stack`` on the export path, the called submodule
  on the fx path; ``None`` at the top level); ``op`` is the ATen op.  The whole
  stack of module calls is :attr:`mtpp.io.costed.CostedOp.scope`
  (:mod:`mtpp.pipelining` cuts there).

**Operator granularity** (``keep_zero_cost_ops=True``): the graph a profiler
records, where most ops cost nothing.  On the ``torch.export`` path:

* every view-like op of an activation (:data:`ZERO_COST_OPS`: view, reshape,
  expand, permute, transpose, t, unsqueeze, squeeze, slice, select, clone, detach,
  alias, ...) and every ``getitem`` is its own op with ``work`` 0 (no FLOPs, no
  bytes moved, so no roofline time: a view copies nothing, and ``clone`` is the
  eval-mode dropout or contiguity copy a fused kernel absorbs) and ``size_out`` its
  real output tensor;
* every non-parameter constant is its own op with ``work`` 0 and no parameters:
  lifted tensor constants, ops with no tensor input (``arange``, ``full``,
  ``scalar_tensor``, ...) and ops computed from constants only (shape arithmetic,
  masks of fixed positions; one that also reads a weight is a real op);
* every user input tensor is an ``Input`` op and every model output tensor an
  ``Output`` op (one per output position, consuming its producer), both zero-work;
* parameters and buffers stay folded: their bytes are the ``size_param`` of the op
  that reads them, as are ops computed from parameters and buffers only (``t(weight)``,
  a slice of a position-id buffer): weights are never zero-cost.

Every other op is priced as in the default mode, so the FLOPs total is the default
mode's, and the work total is the default's less the roofline time it gives the
view-like ops (plus that of any op reading both a constant and a weight, which the
default mode folds).  On the fx fallback the same op names (``call_method`` views) are
zero-work; there is no constant folding to undo there.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from mtpp.core.devices import DeviceSpec
from mtpp.core.errors import InvalidParameterError, MtppError
from mtpp.core.graph import Graph
from mtpp.core.presets import get_device
from mtpp.io.costed import CostedOp, costed_graph

#: Ops that read only the parameter rows they output (their roofline bytes count
#: those rows, while ``size_param`` still holds the whole table).
GATHER_OPS = frozenset({"embedding.default"})

#: Ops kept at zero work by ``keep_zero_cost_ops=True``: views and copies that move
#: no data in a profiled run (matched on the op name without its overload, so
#: ``view.default``, ``slice.Tensor`` and the fx ``call_method`` ``view`` all match).
ZERO_COST_OPS = frozenset(
    {
        "view",
        "_unsafe_view",
        "reshape",
        "expand",
        "expand_as",
        "permute",
        "transpose",
        "t",
        "unsqueeze",
        "squeeze",
        "slice",
        "select",
        "getitem",
        "clone",
        "contiguous",
        "detach",
        "alias",
        "lift_fresh_copy",
        "flatten",
        "unflatten",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "as_strided",
        "view_as",
        "size",
        "sym_size",
        "sym_numel",
        "sym_stride",
    }
)


#: Runtime checks dropped at import (module docstring), matched on the op name
#: without its overload: they compute nothing and produce no tensor a real op reads.
NO_OP_CHECKS = frozenset(
    {
        "_assert",
        "_assert_async",
        "_assert_scalar",
        "_assert_tensor_metadata",
        "_functional_assert_async",
        "_functional_assert_scalar",
        "_functional_sym_constrain_range",
        "_functional_sym_constrain_range_for_size",
        "sym_constrain_range",
        "sym_constrain_range_for_size",
    }
)


class TorchImportError(MtppError, ValueError):
    """The module cannot be imported (torch missing, or neither tracer works)."""


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise TorchImportError(
            "the PyTorch importer needs torch: pip install torch==2.13.0 (or '.[torch]' in a clone of mtpp)"
        ) from exc
    return torch


def _tensors(value: Any) -> list[Any]:
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _nbytes(value: Any, spec: DeviceSpec, param: bool = False) -> float:
    """Bytes of the tensors in ``value``: floating point at the device's width for
    activations (``param=False``) or parameters, else at the tensor's own dtype."""
    total = 0.0
    deployed = spec.param_bytes_per_element if param else spec.bytes_per_element
    for t in _tensors(value):
        width = deployed if t.dtype.is_floating_point and deployed else t.element_size()
        total += float(t.numel()) * width
    return total


def from_torch(
    module: Any,
    example_inputs: Sequence[Any] | Any,
    device_spec: str | DeviceSpec = "a100",
    name: str | None = None,
    *,
    keep_zero_cost_ops: bool = False,
) -> Graph:
    """Import ``module`` called on ``example_inputs`` (a tuple of positional
    arguments, or one tensor) as an :class:`mtpp.Graph` priced on ``device_spec``.
    ``keep_zero_cost_ops=True``: operator granularity, every view, constant, input
    and output its own zero-work op (module docstring)."""
    ops, edges = torch_costed_ops(module, example_inputs, device_spec, keep_zero_cost_ops=keep_zero_cost_ops)
    return costed_graph(ops, edges, device_spec, name=name or type(module).__name__)


def torch_costed_ops(
    module: Any,
    example_inputs: Sequence[Any] | Any,
    device_spec: str | DeviceSpec = "a100",
    fx_fallback: bool = True,
    *,
    keep_zero_cost_ops: bool = False,
) -> tuple[list[CostedOp], list[tuple[int, int]]]:
    """The ops (FLOPs and bytes, before pricing) and edges of :func:`from_torch`, in
    traced order.  ``fx_fallback=False``: only ``torch.export``, whose failure raises
    :class:`TorchImportError` with the exporter's reason."""
    if not isinstance(keep_zero_cost_ops, bool):
        raise InvalidParameterError(f"keep_zero_cost_ops must be True or False, got {keep_zero_cost_ops!r}")
    torch = _torch()
    spec = get_device(device_spec)
    if not isinstance(module, torch.nn.Module):
        raise InvalidParameterError(f"expected a torch.nn.Module, got {type(module).__name__}")
    args = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    try:
        ep = torch.export.export(module, args, strict=False).run_decompositions()
    except Exception as export_error:  # torch raises many types; fall back to fx
        if not fx_fallback:
            name = type(module).__name__
            raise TorchImportError(f"torch.export cannot trace {name}: {export_error}") from export_error
        try:
            return _from_fx(module, args, spec, keep_zero_cost_ops)
        except Exception as fx_error:
            raise TorchImportError(
                f"torch.export failed ({export_error}) and so did torch.fx ({fx_error})"
            ) from fx_error
    sig = ep.graph_signature
    weights = {*sig.inputs_to_parameters, *sig.inputs_to_buffers}
    if keep_zero_cost_ops:
        return _build(ep.graph, weights, spec, _registry_flops, constants=set(sig.inputs_to_lifted_tensor_constants))
    return _build(ep.graph, weights | set(sig.inputs_to_lifted_tensor_constants), spec, _registry_flops)


def _registry_flops(node: Any) -> float:
    from torch.fx.node import map_aggregate
    from torch.utils.flop_counter import flop_registry

    packet = getattr(node.target, "_overloadpacket", None)
    if packet not in flop_registry:
        return 0.0

    def val(a: Any) -> Any:
        return a.meta["val"] if hasattr(a, "meta") and "val" in a.meta else a

    args = map_aggregate(node.args, val)
    kwargs = map_aggregate(node.kwargs, val)
    return float(flop_registry[packet](*args, **kwargs, out_val=node.meta.get("val")))


def _base_name(node: Any) -> str:
    """The op name without its overload (``view.default`` -> ``view``)."""
    if node.target is operator.getitem:
        return "getitem"
    return str(getattr(node.target, "__name__", node.target)).split(".")[0]


def _build(
    graph: Any, const_names: set[str], spec: DeviceSpec, flops_of: Any, constants: set[str] | None = None
) -> tuple[list[CostedOp], list[tuple[int, int]]]:
    """Costed ops of a traced fx graph whose nodes carry ``meta["val"]`` (and, for
    the fx path, ``meta["flops"]``).  ``const_names``: placeholders that are
    parameters, buffers or constants, folded into their readers.  ``constants``:
    ``None`` for the default granularity; a set of non-parameter constant
    placeholders for ``keep_zero_cost_ops`` (module docstring), which keeps them,
    views, constant ops, inputs and outputs as zero-work ops."""
    keep = constants is not None
    const: set[str] = set()  # folded into their readers' parameters
    constant_ids: set[str] = set()  # kept non-parameter constants (keep_zero_cost_ops)
    ops: list[CostedOp] = []
    index: dict[str, int] = {}
    pending: list[tuple[str, int]] = []
    used_by: dict[str, list[Any]] = {}
    dropped = _checks(graph)
    for node in graph.nodes:
        if node.name in dropped:
            continue  # a check reads a tensor's metadata, not its data: no consumer
        for a in node.all_input_nodes:
            used_by.setdefault(a.name, []).append(node)

    def add(node: Any, op: CostedOp, reads: list[Any]) -> None:
        index[node.name] = len(ops)
        ops.append(op)
        pending.extend((a.name, index[node.name]) for a in reads)

    for node in graph.nodes:
        val = node.meta.get("val")
        if node.name in dropped:
            continue  # runtime checks (NO_OP_CHECKS): no op, no edge
        if node.op == "output":
            if keep:
                _add_outputs(node, index, ops, pending, spec)
            continue
        if node.op in ("placeholder", "get_attr"):
            if keep and node.name in (constants or ()) and _tensors(val):
                constant_ids.add(node.name)
                add(node, CostedOp(node.name, "Constant", None, 0.0, 0.0, _nbytes(val, spec), 0.0, work=0.0), [])
            elif node.op == "get_attr" or node.name in const_names:
                const.add(node.name)
            elif _tensors(val) and (keep or node.name in used_by):
                add(node, CostedOp(node.name, "Input", node.target, 0.0, 0.0, _nbytes(val, spec), 0.0), [])
            else:
                const.add(node.name)  # non-tensor inputs (ints) carry nothing
            continue
        inputs = [a for a in node.all_input_nodes if a.name not in dropped]
        acts = [a for a in inputs if a.name not in const]
        param = sum(_nbytes(a.meta.get("val"), spec, param=True) for a in inputs if a.name in const)
        if not acts and node.op == "call_function" and (not keep or inputs):
            const.add(node.name)  # constant-only: folded into the params of its readers
            continue
        scope = _scope(node)
        path = scope[-1].split("@")[0] if scope else None
        target = str(getattr(node.target, "__name__", node.target))
        if keep and node.op == "call_function" and param == 0.0 and all(a.name in constant_ids for a in acts):
            # a non-parameter constant: no tensor input, or computed from constants only
            # (one that also reads a weight, a lookup of fixed positions, is a real op)
            constant_ids.add(node.name)
            size = _nbytes(val, spec)
            add(node, CostedOp(node.name, target, path, 0.0, 0.0, size, 0.0, work=0.0, scope=scope), acts)
            continue
        param += float(node.meta.get("module_param_bytes", 0.0))
        out_bytes = _nbytes(val, spec)
        # a lookup reads only the rows it returns, not its whole table
        read = out_bytes if target in GATHER_OPS else param
        moved = sum(_nbytes(a.meta.get("val"), spec) for a in acts) + out_bytes + read
        consumers = used_by.get(node.name, [])
        if consumers and all(c.op == "call_function" and c.target is operator.getitem for c in consumers):
            size_out = sum(_nbytes(c.meta.get("val"), spec) for c in consumers if c.name in used_by)
        else:
            size_out = _nbytes(val, spec)
        getitem = node.op == "call_function" and node.target is operator.getitem
        if keep and _base_name(node) in ZERO_COST_OPS:
            kind = "getitem" if getitem else target
            add(node, CostedOp(node.name, kind, path, 0.0, 0.0, size_out, param, work=0.0, scope=scope), acts)
            continue
        flops = 0.0 if getitem else flops_of(node)
        kind = "Output" if getitem else target
        if getitem:
            moved = 0.0
        add(node, CostedOp(node.name, kind, path, flops, moved, size_out, param, scope=scope), acts)
    edges = [(index[src], dst) for src, dst in pending]
    return ops, edges


def _checks(graph: Any) -> set[str]:
    """The names of the runtime checks in ``graph`` (:data:`NO_OP_CHECKS`) and of the
    ops that only feed them a non-tensor value (``x.dim() == 2`` for ``torch._assert``,
    a symbolic ``u0 >= 0`` for ``_assert_scalar``)."""
    dropped = {n.name for n in graph.nodes if n.op == "call_function" and _base_name(n) in NO_OP_CHECKS}
    for node in reversed(list(graph.nodes)):
        users = list(node.users)
        if (
            node.op in ("call_function", "call_method")
            and users
            and all(u.name in dropped for u in users)
            and not _tensors(node.meta.get("val"))
        ):
            dropped.add(node.name)
    return dropped


def _add_outputs(
    node: Any, index: dict[str, int], ops: list[CostedOp], pending: list[tuple[str, int]], spec: DeviceSpec
) -> None:
    """One zero-work ``Output`` op per model output tensor, reading its producer."""
    from torch.fx.node import map_aggregate

    produced: list[Any] = []
    map_aggregate(node.args, lambda a: produced.append(a) if hasattr(a, "name") else None)
    taken = set(index)
    for i, producer in enumerate(produced):
        if producer.name not in index:
            continue  # a parameter returned as is: nothing to read
        oid = f"{node.name}_{i}"
        while oid in taken:
            oid += "_"
        taken.add(oid)
        size = _nbytes(producer.meta.get("val"), spec)
        index[oid] = len(ops)
        ops.append(CostedOp(oid, "Output", None, 0.0, 0.0, size, 0.0, work=0.0))
        pending.append((producer.name, index[oid]))


def _scope(node: Any) -> tuple[str, ...]:
    """The module calls enclosing ``node``, outermost first, from the
    ``nn_module_stack`` that torch.export records: values are (qualified name, type)
    and keys end in ``@i`` for the ``i``-th repeated call of a module; the root
    module (empty name) is left out."""
    stack = node.meta.get("nn_module_stack") or {}
    scope = []
    for key, (qualname, _) in stack.items():
        if qualname:
            call = key.rpartition("@")[2] if "@" in key else ""
            scope.append(f"{qualname}@{call}" if call else qualname)
    return tuple(scope)


def _from_fx(
    module: Any, args: tuple[Any, ...], spec: DeviceSpec, keep_zero_cost_ops: bool = False
) -> tuple[list[CostedOp], list[tuple[int, int]]]:
    """The fx path: symbolic_trace, then run the graph once, timing FLOPs per node
    with FlopCounterMode and recording each node's output as ``meta["val"]``."""
    torch = _torch()
    from torch.utils.flop_counter import FlopCounterMode

    gm = torch.fx.symbolic_trace(module)
    calls: dict[str, int] = {}

    class Recorder(torch.fx.Interpreter):  # type: ignore[misc,name-defined]
        def run_node(self, n: Any) -> Any:
            with FlopCounterMode(display=False) as fc:
                result = super().run_node(n)
            n.meta["val"] = result
            n.meta["flops"] = float(fc.get_total_flops())
            if n.op == "call_module":
                sub = gm.get_submodule(n.target)
                n.meta["module_param_bytes"] = sum(_nbytes(t, spec, True) for t in [*sub.parameters(), *sub.buffers()])
                call = calls[n.target] = calls.get(n.target, -1) + 1
                n.meta["nn_module_stack"] = {f"{n.target}@{call}" if call else n.target: (n.target, type(sub))}
            return result

    with torch.no_grad():
        Recorder(gm).run(*args)
    return _build(gm.graph, set(), spec, lambda n: n.meta.get("flops", 0.0), set() if keep_zero_cost_ops else None)
