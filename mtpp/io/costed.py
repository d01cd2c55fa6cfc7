"""What the model importers measure for each op, and the graph a device prices from it.

:class:`CostedOp` is what an importer (:mod:`mtpp.io.onnx_model`,
:mod:`mtpp.io.torch_model`) knows about one op: FLOPs, bytes moved, its output and
parameter bytes.  :func:`costed_graph` prices a list of them on a device preset or
spec (:mod:`mtpp.core.presets`) with the roofline model of
:class:`mtpp.core.devices.DeviceSpec` and builds the :class:`mtpp.Graph`, in the
units of :data:`mtpp.core.devices.IMPORT_UNITS`, recording the device as the graph's
machine (:attr:`mtpp.Graph.machine`), so that ``certify(graph, k)`` prices cuts on that
device's link without being told.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mtpp.core.devices import IMPORT_UNITS, DeviceSpec
from mtpp.core.graph import Graph, NodeId
from mtpp.core.presets import get_device
from mtpp.core.schema import Machine


@dataclass(frozen=True)
class CostedOp:
    """What an importer measured for one op, before a device prices it.

    ``flops`` (see :mod:`mtpp.io.flops`), ``bytes_moved`` (inputs + outputs + parameters
    read, in bytes), ``size_out`` and ``size_param`` in bytes.  ``scope``: the module
    calls the op runs inside (PyTorch importer), each a qualified module name with
    ``@i`` appended for the ``i``-th repeated call of the same module.
    """

    id: NodeId
    op: str
    name: str | None
    flops: float
    bytes_moved: float
    size_out: float
    size_param: float
    work: float | None = None  # microseconds, overrides the roofline (a fallback or measured cost)
    scope: tuple[str, ...] = ()  # enclosing module calls, outermost first ("layer1", "layer1.0", ...)


def costed_graph(
    ops: Sequence[CostedOp],
    edges: Sequence[tuple[int, int]],
    device: str | DeviceSpec,
    name: str | None = None,
    machine: Machine | None = None,
) -> Graph:
    """The :class:`mtpp.Graph` of ``ops`` (edges as index pairs into ``ops``) with
    ``work`` = the device's roofline time in microseconds, sizes in bytes
    (``units`` = :data:`mtpp.core.devices.IMPORT_UNITS`) and the device as its
    ``machine`` (or ``machine``, e.g. the device with its link halved for training)."""
    spec = get_device(device)
    work = [op.work if op.work is not None else spec.roofline_time(op.flops, op.bytes_moved) for op in ops]
    return Graph.from_arrays(
        work,
        [op.size_param for op in ops],
        [op.size_out for op in ops],
        list(edges),
        ids=[op.id for op in ops],
        names=[op.name for op in ops],
        ops=[op.op for op in ops],
        name=name,
        units=IMPORT_UNITS,
        machine=spec.machine() if machine is None else machine,
    )
