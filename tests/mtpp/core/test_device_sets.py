"""The device model: validation, time tables, presets."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mtpp.core.device_sets import Device, DeviceModelError, DeviceSet
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.presets import DEVICE_SETS as PRESETS
from mtpp.core.presets import get_devices


def test_validation_names_the_problem() -> None:
    with pytest.raises(DeviceModelError, match="'gpu' has speed 0"):
        Device(name="gpu", speed=0)
    with pytest.raises(DeviceModelError, match="op type 'MatMul'"):
        Device(name="gpu", op_speed={"MatMul": -1})
    with pytest.raises(DeviceModelError, match="duplicate device name 'a'"):
        DeviceSet.uniform([Device(name="a"), Device(name="a")], 1.0)
    with pytest.raises(DeviceModelError, match="not symmetric: 'a' <-> 'b'"):
        DeviceSet(devices=(Device(name="a"), Device(name="b")), bandwidth=((1, 2), (3, 1)), latency=((0, 0), (0, 0)))
    with pytest.raises(DeviceModelError, match="bandwidth 'a' <-> 'b' is 0"):
        DeviceSet.uniform([Device(name="a"), Device(name="b")], 0.0)
    with pytest.raises(DeviceModelError, match="2 x 2"):
        DeviceSet(devices=(Device(name="a"), Device(name="b")), bandwidth=((1,),), latency=((0, 0), (0, 0)))
    with pytest.raises(InvalidParameterError, match="unknown device preset"):
        get_devices("nope")


def test_times_speed_op_speed_and_table() -> None:
    g = Graph.from_arrays([4, 6, 8], [0, 0, 0], [1, 1, 1], [(0, 1), (1, 2)], ops=["MatMul", "Relu", None])
    ds = DeviceSet.uniform([Device(name="c"), Device(name="g", speed=2.0, op_speed={"MatMul": 4.0})], 1.0)
    assert ds.times(g).tolist() == [[4, 1], [6, 3], [8, 4]]
    table = ds.model_copy(update={"time_table": {"1": (9.0, 9.5)}})
    assert table.times(g).tolist() == [[4, 1], [9, 9.5], [8, 4]]
    bad = ds.model_copy(update={"time_table": {"7": (1.0, 1.0)}})
    with pytest.raises(DeviceModelError, match="op '7'"):
        bad.times(g)


def test_presets() -> None:
    trio = PRESETS["cpu-igpu-dgpu"]
    assert trio.names == ("cpu", "igpu", "dgpu")
    inv, lat = trio.link_arrays()
    assert np.all(np.diag(inv) == 0) and np.all(np.diag(lat) == 0)
    assert trio.devices[2].memory == 16e9 and math.isinf(trio.bandwidth[0][0])
    assert get_devices("two-devices").d == 2
    # round trip through JSON
    assert DeviceSet.model_validate_json(trio.model_dump_json()) == trio
