"""The device model for placement: devices with speeds and memory, links between them.

Units follow :mod:`mtpp.core.devices`: a graph's ``work`` is the time of each op on a
*reference device* (microseconds for imported graphs), sizes are bytes, bandwidths are
bytes per time unit (bytes per microsecond) and latencies are time units.

* :class:`Device`: ``name``; ``speed`` (how many times faster than the reference device
  it runs an op: time = work / speed); ``op_speed`` overrides the speed per op type
  (``graph.ops``); ``memory`` capacity in bytes (``inf`` = unlimited).
* :class:`DeviceSet`: the devices, a symmetric ``bandwidth`` matrix and a symmetric
  ``latency`` matrix between each pair.  Diagonal entries are ignored: a tensor used on
  the device that produced it is never transferred.  ``time_table`` optionally gives
  per-op times on every device (node id as a string -> one time per device); ops it
  does not list fall back to the speed factors.

Moving the output of ``u`` from device ``a`` to device ``b != a`` costs
``size_out(u) / bandwidth[a][b] + latency[a][b]`` (REGAL App. A.1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph


class DeviceModelError(InvalidParameterError):
    """A device set is inconsistent: the message names the device, pair or op at fault."""


class _Checked(BaseModel):
    """Construction raises :class:`DeviceModelError` (not pydantic's ValidationError)
    with the first problem found, so callers catch mtpp's own error classes.  An unknown
    key (a misspelt ``"sped"``) is refused, naming where it is, never ignored."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            err = exc.errors()[0]
            msg = str(err["msg"]).removeprefix("Value error, ")
            where = ".".join(str(x) for x in err["loc"])
            raise DeviceModelError(f"{where}: {msg}" if where else msg) from None


class Device(_Checked):
    """One device: its name, speed factors relative to the reference device, memory."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

    name: str = Field(min_length=1)
    speed: float = 1.0
    op_speed: dict[str, float] = Field(default_factory=dict)
    memory: float = math.inf

    @model_validator(mode="after")
    def _check(self) -> Device:
        if not (math.isfinite(self.speed) and self.speed > 0):
            raise DeviceModelError(f"device {self.name!r} has speed {self.speed!r}; it must be finite and > 0")
        for op, s in self.op_speed.items():
            if not (math.isfinite(s) and s > 0):
                raise DeviceModelError(f"device {self.name!r} has speed {s!r} for op type {op!r}; it must be > 0")
        if math.isnan(self.memory) or self.memory <= 0:
            raise DeviceModelError(f"device {self.name!r} has memory {self.memory!r}; it must be > 0")
        return self


class DeviceSet(_Checked):
    """Devices and the links between them (symmetric matrices, diagonal ignored)."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

    name: str = ""
    devices: tuple[Device, ...]
    bandwidth: tuple[tuple[float, ...], ...]
    latency: tuple[tuple[float, ...], ...]
    time_table: dict[str, tuple[float, ...]] | None = None
    source: str = ""

    @model_validator(mode="after")
    def _check(self) -> DeviceSet:
        d = len(self.devices)
        if d == 0:
            raise DeviceModelError("a device set needs at least one device")
        names = [dev.name for dev in self.devices]
        for i, nm in enumerate(names):
            if nm in names[:i]:
                raise DeviceModelError(f"duplicate device name {nm!r}")
        for label, mat in (("bandwidth", self.bandwidth), ("latency", self.latency)):
            if len(mat) != d or any(len(row) != d for row in mat):
                raise DeviceModelError(f"{label} must be a {d} x {d} matrix (one row and column per device)")
            for a in range(d):
                for b in range(a + 1, d):
                    x, y = mat[a][b], mat[b][a]
                    pair = f"{names[a]!r} <-> {names[b]!r}"
                    if x != y:
                        raise DeviceModelError(f"{label} is not symmetric: {pair} has {x!r} and {y!r}")
                    if label == "bandwidth" and not (x > 0 and not math.isnan(x)):
                        raise DeviceModelError(f"bandwidth {pair} is {x!r}; it must be > 0 (inf = free)")
                    if label == "latency" and not (math.isfinite(x) and x >= 0):
                        raise DeviceModelError(f"latency {pair} is {x!r}; it must be finite and >= 0")
        if self.time_table is not None:
            for op, row in self.time_table.items():
                if len(row) != d:
                    raise DeviceModelError(f"time_table[{op!r}] has {len(row)} entries for {d} devices")
                if any(not (math.isfinite(t) and t >= 0) for t in row):
                    raise DeviceModelError(f"time_table[{op!r}] = {row!r}; times must be finite and >= 0")
        return self

    # ------------------------------------------------------------------ builders
    @classmethod
    def uniform(
        cls, devices: list[Device], bandwidth: float, latency: float = 0.0, name: str = "", source: str = ""
    ) -> DeviceSet:
        """Every pair of devices linked with the same bandwidth and latency."""
        d = len(devices)
        bw = tuple(tuple(bandwidth for _ in range(d)) for _ in range(d))
        lat = tuple(tuple(latency for _ in range(d)) for _ in range(d))
        return cls(name=name, devices=tuple(devices), bandwidth=bw, latency=lat, source=source)

    # ------------------------------------------------------------------ arrays
    @property
    def d(self) -> int:
        return len(self.devices)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dev.name for dev in self.devices)

    def index(self, name: str) -> int:
        """The index of the device called ``name``."""
        try:
            return self.names.index(name)
        except ValueError:
            raise DeviceModelError(f"unknown device {name!r}; devices are {', '.join(self.names)}") from None

    def memory_array(self) -> np.ndarray:
        """Memory capacity per device, bytes (``inf`` = unlimited)."""
        return np.array([dev.memory for dev in self.devices], dtype=np.float64)

    def link_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(inv_bw, lat)``: ``d x d`` arrays with zero diagonals, so that moving ``s``
        bytes from ``a`` to ``b`` costs ``s * inv_bw[a, b] + lat[a, b]`` (0 when a == b)."""
        bw = np.array(self.bandwidth, dtype=np.float64)
        inv = np.zeros_like(bw)
        off = ~np.eye(self.d, dtype=bool)
        inv[off] = 1.0 / bw[off]
        lat = np.array(self.latency, dtype=np.float64)
        lat[~off] = 0.0
        return inv, lat

    def times(self, graph: Graph) -> np.ndarray:
        """``n x d`` run times: ``time_table`` where it lists the op, else
        ``work / speed`` with the device's ``op_speed`` for the op's type."""
        n, d = graph.n, self.d
        out = np.empty((n, d), dtype=np.float64)
        for j, dev in enumerate(self.devices):
            speed = np.array([dev.op_speed.get(op or "", dev.speed) for op in graph.ops], dtype=np.float64)
            out[:, j] = graph.work / speed
        if self.time_table:
            known = {str(i) for i in graph.ids}
            for op in self.time_table:
                if op not in known:
                    raise DeviceModelError(f"time_table names op {op!r}, which is not in the graph")
            for i, node_id in enumerate(graph.ids):
                times = self.time_table.get(str(node_id))
                if times is not None:
                    out[i] = times
        return out
