"""The placement simulator on hand-worked graphs and against the slow reference."""

from __future__ import annotations

import numpy as np
import pytest

from heuristics.kahn import kahn_order
from mtpp.core.device_sets import Device, DeviceSet
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.memory import peak_memory
from mtpp.core.simulator import PlacementContext, simulate
from tests.oracle.placement import slow_simulate


def two(bw: float = 10.0, lat: float = 1.0, mem: float = float("inf")) -> DeviceSet:
    return DeviceSet.uniform([Device(name="a", memory=mem), Device(name="b", speed=2.0, memory=mem)], bw, lat)


def test_chain_across_two_devices() -> None:
    """Chain 0 -> 1 -> 2, work 1, 4, 3, outputs 10 bytes, placed a, b, a; device b is
    twice as fast; link 10 B/unit + latency 1, so every hop costs 10/10 + 1 = 2.

    0 on a: [0, 1];  send 0 -> b: arrives 3;  1 on b: [3, 3 + 4/2 = 5];
    send 1 -> a: arrives 7;  2 on a: [7, 10].  Makespan 10.
    Memory on a: out0 [0, 3) (held until its send ends), copy of out1 [5, 10), out2
    [7, 10), so peak 20 during [7, 10).  On b: copy of out0 [1, 5), out1 [3, 7):
    peak 20 during [3, 5).
    """
    g = Graph.from_arrays([1, 4, 3], [0, 0, 0], [10, 10, 10], [(0, 1), (1, 2)])
    r = simulate(g, two(), [0, 1, 0])
    assert r.makespan == 10.0
    assert r.start.tolist() == [0, 3, 7] and r.end.tolist() == [1, 5, 10]
    assert r.peak_memory.tolist() == [20, 20]
    assert r.transfers == 2 and r.transfer_bytes == 20


def test_diamond() -> None:
    """Diamond 0 -> {1, 2} -> 3, all work 2, outputs 4 bytes, params 1 byte each;
    placement a, a, b, a; device b twice as fast; link 4 B/unit + latency 1: a hop
    costs 4/4 + 1 = 2.  Order 0, 1, 2, 3.

    0 on a: [0, 2]; 1 on a: [2, 4]; send 0 -> b arrives 4; 2 on b: [4, 5];
    send 2 -> a arrives 7; 3 on a: [max(4, 7), 9].  Makespan 9.
    Memory on a: out0 [0, 4) (until 1 ends at 4 and the send ends at 4), out1 [2, 9),
    copy of out2 [5, 9), out3 [7, 9), params [0,2) [2,4) [7,9).  At 2: out0 + out1 +
    param1 = 9; at 7: out1 + copy2 + out3 + param3 = 13.  Peak 13.
    On b: copy of out0 [2, 5), out2 [4, 7), param2 [4, 5): at 4, 4 + 4 + 1 = 9.
    """
    g = Graph.from_arrays([2, 2, 2, 2], [1, 1, 1, 1], [4, 4, 4, 4], [(0, 1), (0, 2), (1, 3), (2, 3)])
    r = simulate(g, two(bw=4.0), [0, 0, 1, 0], [0, 1, 2, 3])
    assert r.makespan == 9.0
    assert r.start.tolist() == [0, 2, 4, 7]
    assert r.peak_memory.tolist() == [13, 9]


def test_fork_sends_shared_tensor_once_per_device() -> None:
    """Fork 0 -> {1, 2, 3}: 0 on a, 1 and 2 on b, 3 on a.  Work 1 each on a (0.5 on
    b), out0 is 20 bytes, the others 0; link 10 B/unit + latency 1: sending out0
    costs 3 and happens once, for both consumers on b.

    0 on a: [0, 1]; 3 on a: [1, 2]; out0 arrives on b at 4; 1 on b: [4, 4.5];
    2 on b: [4.5, 5].  Makespan 5.  One transfer of 20 bytes.
    Memory on b: one copy of out0 [1, 5): peak 20, not 40.
    On a: out0 [0, 4) (held until the send ends): peak 20.
    """
    g = Graph.from_arrays([1, 1, 1, 1], [0, 0, 0, 0], [20, 0, 0, 0], [(0, 1), (0, 2), (0, 3)])
    r = simulate(g, two(), [0, 1, 1, 0], [0, 1, 2, 3])
    assert r.makespan == 5.0
    assert r.transfers == 1 and r.transfer_bytes == 20
    assert r.peak_memory.tolist() == [20, 20]


def test_memory_feasibility_and_overflow() -> None:
    """The fork above with 15 bytes per device: both peaks (20) overflow by 5."""
    g = Graph.from_arrays([1, 1, 1, 1], [0, 0, 0, 0], [20, 0, 0, 0], [(0, 1), (0, 2), (0, 3)])
    r = simulate(g, two(mem=15.0), [0, 1, 1, 0], [0, 1, 2, 3])
    assert not r.memory_feasible and r.overflow == 10.0


def test_single_device_peak_matches_mtpp_memory() -> None:
    """On one device the event order is step order, zero-time ops included: exactly
    :func:`mtpp.core.memory.peak_memory` of the priority order (integer sizes: exact sums)."""
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = 9
        edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.3]
        work = rng.integers(1, 5, n) * (rng.random(n) < 0.6)  # about 40% zero-time ops
        g = Graph.from_arrays(work, rng.integers(0, 5, n), rng.integers(0, 9, n), edges)
        sigma = kahn_order(g, rng.random(n))
        r = simulate(g, two(), np.zeros(n, dtype=np.int64), sigma)
        assert r.peak_memory[0] == peak_memory(g, sigma)
        assert r.makespan == pytest.approx(g.work.sum())


def test_zero_time_op_holds_its_input_while_writing_its_output() -> None:
    """a -> b, b takes no time (``place_peak_zero_time.json``): at the instant b runs,
    a's output (its input), b's parameters and b's output are all live: 3 MB, on one
    device and with b on the other (the copy is allocated when the transfer starts)."""
    g = Graph.from_arrays([1.0, 0.0], [0.0, 1e6], [1e6, 1e6], [(0, 1)])
    assert simulate(g, two(), [0, 0]).peak_memory.tolist() == [3e6, 0.0]
    assert simulate(g, two(), [0, 1]).peak_memory.tolist() == [1e6, 3e6]


def test_equal_times_run_in_priority_order() -> None:
    """Three zero-time ops 0 -> 1 -> 2 at time 0 on one device, outputs 4, 2, 1 bytes:
    steps 0, 1, 2 in turn, each allocating before it frees: 4, then 4 + 2, then 2 + 1."""
    g = Graph.from_arrays([0, 0, 0], [0, 0, 0], [4, 2, 1], [(0, 1), (1, 2)])
    assert simulate(g, two(), [0, 0, 0]).peak_memory[0] == 6.0
    # a transfer that completes at an instant frees its source copy before ops allocate
    # there: out0 (10 B) goes to b during [1, 2) while op 2 runs on a; op 3 starts on a at
    # 2 with a 5 B output, when out0 is already freed there
    h = Graph.from_arrays([1, 1, 1, 1], [0, 0, 0, 0], [10, 0, 0, 5], [(0, 1)])
    r = simulate(h, two(bw=10.0, lat=0.0), [0, 1, 0, 0], [0, 2, 3, 1])
    assert r.start.tolist() == [0.0, 2.0, 1.0, 2.0] and r.peak_memory.tolist() == [10.0, 10.0]


def test_matches_slow_reference_on_random_graphs() -> None:
    rng = np.random.default_rng(7)
    ds = DeviceSet(
        devices=(Device(name="x"), Device(name="y", speed=1.5), Device(name="z", speed=0.5, op_speed={"mm": 3.0})),
        bandwidth=((1, 4, 2), (4, 1, 8), (2, 8, 1)),
        latency=((0, 1, 0.5), (1, 0, 2), (0.5, 2, 0)),
    )
    for trial in range(40):
        n = 10
        edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.25]
        ops = [("mm" if rng.random() < 0.3 else "add") for _ in range(n)]
        g = Graph.from_arrays(rng.integers(0, 5, n), rng.integers(0, 4, n), rng.integers(0, 9, n), edges, ops=ops)
        place = rng.integers(0, 3, n)
        sigma = kahn_order(g, rng.random(n))  # random priorities through Kahn
        r = simulate(g, ds, place, sigma)
        mk, peaks = slow_simulate(g, ds, place.tolist(), sigma.tolist())
        assert r.makespan == pytest.approx(mk), trial
        assert r.peak_memory == pytest.approx(peaks), trial


def test_rejects_bad_placement_and_order() -> None:
    g = Graph.from_arrays([1, 1], [0, 0], [1, 1], [(0, 1)])
    with pytest.raises(InvalidParameterError, match="op 1 is placed on device 5"):
        simulate(g, two(), [0, 5])
    with pytest.raises(InvalidParameterError):
        simulate(g, two(), [0, 1], [1, 0])
    with pytest.raises(InvalidParameterError, match="shape"):
        PlacementContext(g, two(), times=np.ones((3, 2)))
