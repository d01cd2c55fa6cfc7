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

:func:`mtpp.io.costed.costed_graph` prices what an importer measured for each op
(:class:`mtpp.io.costed.CostedOp`) on a device and builds the :class:`mtpp.Graph`.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from mtpp.core.graph import Graph
from mtpp.core.machine import check_units
from mtpp.core.problem import Problem
from mtpp.core.schema import Machine, Units

MICROSECONDS_PER_SECOND = 1e6
IMPORT_UNITS = {"time": "us", "size": "bytes"}  # the ``units`` of every imported graph


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

    model_config = ConfigDict(frozen=True, extra="forbid")

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

    def machine(self, *, bandwidth_factor: float = 1.0) -> Machine:
        """This device as the machine an imported graph records
        (:attr:`mtpp.Graph.machine`): ``B`` in bytes/us (times ``bandwidth_factor``:
        ``0.5`` where gradients share the link in training), ``M`` in bytes, the units
        of :data:`IMPORT_UNITS`."""
        return Machine(
            name=self.name,
            bandwidth=self.bandwidth_bytes_per_us * bandwidth_factor,
            memory=self.memory if math.isfinite(self.memory) else None,
            units=Units(**IMPORT_UNITS),
        )

    def problem(self, graph: Graph, k: int, *, limit_memory: bool = False, reserve: float = 0.0) -> Problem:
        """An :class:`mtpp.Problem` for ``graph`` (imported for this device) on ``k``
        stages: bandwidth ``B`` in bytes/us; memory ``M`` in bytes if ``limit_memory``,
        else unlimited (parameters never overflow).  A graph whose ``units`` are not
        microseconds and bytes is refused (:class:`mtpp.core.machine.UnitsMismatchError`)."""
        machine = self.machine()
        check_units(graph.units, machine, graph.name)
        return Problem(
            graph,
            k,
            bandwidth=self.bandwidth_bytes_per_us,
            memory=self.memory if limit_memory else math.inf,
            reserve=reserve,
            machine=machine,
        )
