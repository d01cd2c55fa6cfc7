"""Heterogeneous device placement: op -> device assignment plus a schedule (issue 8).

* :mod:`mtpp.placement.devices`: the device model (speeds, memory, links); its presets
  live in the one registry, :mod:`mtpp.presets`;
* :mod:`mtpp.placement.simulator`: the REGAL-style cost model every placement is scored by;
* :mod:`mtpp.placement.api`: :func:`place`, the one entry point.
"""

from mtpp.placement.devices import Device, DeviceModelError, DeviceSet
from mtpp.placement.simulator import SimResult, simulate

__all__ = ["PRESETS", "Device", "DeviceModelError", "DeviceSet", "SimResult", "get_devices", "simulate"]


def __getattr__(name: str) -> object:
    """``PRESETS`` (the device sets of :mod:`mtpp.presets`) and ``get_devices``, read
    lazily: the registry imports this package."""
    if name in ("PRESETS", "get_devices"):
        from mtpp import presets

        return presets.DEVICE_SETS if name == "PRESETS" else presets.get_devices
    raise AttributeError(f"module 'mtpp.placement' has no attribute {name!r}")
