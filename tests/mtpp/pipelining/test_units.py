"""Where split points can cut (module call scopes), and measured costs spread over ops."""

from __future__ import annotations

import pytest

from mtpp.core.errors import InvalidParameterError
from mtpp.pipelining.timing import measured_work
from mtpp.pipelining.units import module_units

# x (input), stem, block 0 (a, shared act called twice, b, residual add), block 1, head
SCOPES = [
    (),
    ("stem",),
    ("blocks.0", "blocks.0.a"),
    ("blocks.0", "blocks.0.act"),
    ("blocks.0", "blocks.0.b"),
    ("blocks.0", "blocks.0.act@1"),
    ("blocks.0",),
    ("blocks.1", "blocks.1.a"),
    ("blocks.1",),
    (),
    ("head",),
]


def test_units_cut_where_a_call_used_once_starts_or_ends() -> None:
    units = module_units(SCOPES)
    # between b and act@1 only "blocks.0.act" (called twice) and b (END) change: b's END cuts;
    # between act and b: act (twice) ends, b begins -> b BEGINNING; between act@1 and the add:
    # act@1 ends, nothing begins -> not expressible
    assert units.starts == (0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11)
    assert units.split[1] == (("stem", "BEGINNING"),)
    assert units.split[2] == (("blocks.0", "BEGINNING"), ("blocks.0.a", "BEGINNING"), ("stem", "END"))
    assert units.split[3] == (("blocks.0.a", "END"),)
    assert units.split[4] == (("blocks.0.b", "BEGINNING"),)
    assert units.split[5] == (("blocks.0.b", "END"),)
    assert units.split[8] == (("blocks.1", "END"),)
    assert units.calls(0, 2) == ("stem",)
    assert units.calls(2, 7) == ("blocks.0",)
    assert units.calls(2, 4) == ("blocks.0.a", "blocks.0.act")
    assert units.calls(4, 7) == ("blocks.0.b", "blocks.0.act@1", "blocks.0 (part)")


def test_granularity_keeps_calls_up_to_a_depth() -> None:
    units = module_units(SCOPES, granularity=1)
    assert units.starts == (0, 1, 2, 7, 9, 10, 11)
    assert units.calls(2, 9) == ("blocks.0", "blocks.1")
    with pytest.raises(InvalidParameterError, match="granularity"):
        module_units(SCOPES, granularity=0)


def test_measured_time_is_spread_by_roofline_within_each_call() -> None:
    scopes = [(), ("a",), ("a",), ("a", "a.b"), ("c",)]
    roofline = [0.0, 1.0, 3.0, 5.0, 0.0]
    times = {"": 2.0, "a": 8.0, "a.b": 7.0}  # "c" was not timed: its op falls to the root
    work = measured_work(scopes, roofline, times)
    assert work == pytest.approx([1.0, 2.0, 6.0, 7.0, 1.0])
    assert sum(work) == pytest.approx(sum(times.values()))
