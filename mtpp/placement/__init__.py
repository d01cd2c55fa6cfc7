"""Heterogeneous device placement: op -> device assignment plus a schedule (issue 8).

* :mod:`mtpp.placement.devices`: the device model (speeds, memory, links) and presets;
* :mod:`mtpp.placement.simulator`: the REGAL-style cost model every placement is scored by;
* :mod:`mtpp.placement.api`: :func:`place`, the one entry point.
"""

from mtpp.placement.devices import PRESETS, Device, DeviceModelError, DeviceSet, get_devices
from mtpp.placement.simulator import SimResult, simulate

__all__ = ["PRESETS", "Device", "DeviceModelError", "DeviceSet", "SimResult", "get_devices", "simulate"]
