"""Heterogeneous device placement: op -> device assignment plus a schedule.

* :mod:`mtpp.core.device_sets`: the device model (speeds, memory, links); its presets
  live in the one registry, :mod:`mtpp.core.presets`;
* :mod:`mtpp.core.simulator`: the REGAL-style cost model every placement is scored by;
* :mod:`mtpp.placement.api`: :func:`place`, the one entry point.
"""

from mtpp.core.device_sets import Device, DeviceModelError, DeviceSet
from mtpp.core.presets import get_devices
from mtpp.core.simulator import SimResult, simulate

__all__ = ["Device", "DeviceModelError", "DeviceSet", "SimResult", "get_devices", "simulate"]
