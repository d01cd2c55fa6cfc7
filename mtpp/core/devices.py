"""Device specs: the machine a model is partitioned for, and the roofline cost model.

Units used everywhere the importers produce numbers:

* **time in microseconds** (``work`` of a node; ``size / B`` with ``B`` in bytes per
  microsecond);
* **sizes in bytes** (``size_out``, ``size_param``, the fast memory ``M``).

A :class:`DeviceSpec` stores its rates in the units of datasheets (FLOP/s, bytes/s)
and converts: ``work(v) = roofline_time(flops, bytes) = max(flops / peak,
bytes / mem_bw)`` in microseconds, and :meth:`DeviceSpec.problem` builds an
:class:`mtpp.Problem` whose bandwidth is ``B`` in bytes per microsecond and whose
memory is ``M`` in bytes, the units of the imported graph.

:class:`CostedOp` is what an importer knows about one op (FLOPs, bytes moved, its
output and parameter bytes); :func:`costed_graph` prices a list of them on a device
and builds the :class:`mtpp.Graph`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from mtpp.core.graph import Graph, NodeId
from mtpp.core.problem import Problem

MICROSECONDS_PER_SECOND = 1e6


class DeviceSpec(BaseModel):
    """One pipeline stage's processor.

    ``peak_flops``: FLOP/s of the matrix units at the deployed precision;
    ``mem_bandwidth``: bytes/s between the processor and its own memory;
    ``link_bandwidth``: bytes/s between consecutive stages (the paper's ``B``, one
    direction); ``memory``: bytes of fast memory per stage (the paper's ``M``);
    ``bytes_per_element``: width at which floating-point activations are costed
    (the deployed precision), or ``None`` to keep each tensor's own dtype;
    ``param_bytes_per_element``: the same for parameters, buffers and constants,
    ``None`` (the default) to price them at their real dtype (fp32 weights at 4
    bytes).  Integer and boolean tensors always keep their dtype's width.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    peak_flops: float = Field(gt=0, allow_inf_nan=False)
    mem_bandwidth: float = Field(gt=0, allow_inf_nan=False)
    link_bandwidth: float = Field(gt=0, allow_inf_nan=False)
    memory: float = Field(gt=0)
    bytes_per_element: int | None = Field(default=None, gt=0)
    param_bytes_per_element: int | None = Field(default=None, gt=0)
    source: str = ""

    def roofline_time(self, flops: float, bytes_moved: float) -> float:
        """``max(flops / peak_flops, bytes_moved / mem_bandwidth)`` in **microseconds**."""
        return MICROSECONDS_PER_SECOND * max(flops / self.peak_flops, bytes_moved / self.mem_bandwidth)

    @property
    def bandwidth_bytes_per_us(self) -> float:
        """The inter-stage bandwidth ``B`` in bytes per microsecond (the graph's units)."""
        return self.link_bandwidth / MICROSECONDS_PER_SECOND

    def problem(self, graph: Graph, k: int, *, limit_memory: bool = False, reserve: float = 0.0) -> Problem:
        """An :class:`mtpp.Problem` for ``graph`` (imported for this device) on ``k``
        stages: bandwidth ``B`` in bytes/us; memory ``M`` in bytes if ``limit_memory``,
        else unlimited (parameters never overflow)."""
        return Problem(
            graph,
            k,
            bandwidth=self.bandwidth_bytes_per_us,
            memory=self.memory if limit_memory else math.inf,
            reserve=reserve,
        )


IMPORT_UNITS = {"time": "us", "size": "bytes"}  # the ``units`` of every imported graph


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
    ops: Sequence[CostedOp], edges: Sequence[tuple[int, int]], device: str | DeviceSpec, name: str | None = None
) -> Graph:
    """The :class:`mtpp.Graph` of ``ops`` (edges as index pairs into ``ops``) with
    ``work`` = the device's roofline time in microseconds, sizes in bytes
    (``units`` = :data:`IMPORT_UNITS`)."""
    from mtpp.core.presets import get_device  # the registry imports this module

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
    )
