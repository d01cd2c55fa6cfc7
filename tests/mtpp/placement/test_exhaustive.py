"""Every placement and every priority order of tiny graphs: the fast
simulator against the slow reference, its error bounds against exact arithmetic, and
every placement bound against the brute-force optimum.

The instances are the fuzz's (:func:`tests.soundness.placement_checks.draw_instance`):
1-4 ops on 2 or 3 devices, zero-work ops and zero-size tensors, weights at scales
1e-3 .. 1e12 mixed within one graph, power-of-two, decimal and infinite bandwidths,
zero and non-zero latencies, finite and infinite memories, speeds or drawn time tables.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from formulations.placement import build_placement, simple_lower_bound
from mtpp.core.device_sets import DeviceSet
from mtpp.core.graph import Graph
from mtpp.core.memory import local_lower_bound, peak_memory, profile_error
from mtpp.core.simulator import PlacementContext
from tests.oracle.placement import Optima, Replay, brute_force_peak, exact_optima, fits
from tests.soundness.placement_checks import draw_instance


def check_all(g: Graph, ds: DeviceSet, times: np.ndarray | None, worst: list[float] | None = None) -> Optima:
    """Every placement and order: fast == slow (times exactly, peaks to the error
    bound, exactly when the sums are exact), the error bounds against exact values, the
    one-device peak against :func:`mtpp.core.memory.peak_memory`; returns the exact optima
    (and appends every peak's error bound to ``worst``)."""
    ctx = PlacementContext(g, ds, times)

    def check(place: tuple[int, ...], order: list[int], slow: Replay) -> None:
        p = np.array(place, dtype=np.int64)
        fast = ctx.run(p, np.array(order, dtype=np.int64))
        where = f"place={place} order={order}"
        assert fast.makespan == slow.makespan, where
        assert fast.start.tolist() == slow.start and fast.end.tolist() == slow.end, where
        err = ctx.makespan_error(p, fast.makespan)
        assert abs(Fraction(fast.makespan) - slow.exact_makespan) <= Fraction(err), (where, err)
        for j in range(ds.d):
            off = abs(Fraction(float(fast.peak_memory[j])) - slow.peaks[j])
            assert off <= Fraction(float(fast.peak_error[j])), (where, j, fast.peak_memory[j], slow.peaks[j])
            if ctx.sizes_exact:
                assert Fraction(float(fast.peak_memory[j])) == slow.peaks[j], where
        if worst is not None:
            worst.append(float(fast.peak_error.max()))
        if fast.memory_feasible:  # the simulator's verdict is conservative
            assert fits(ds, slow.peaks), where
        if len(set(place)) == 1:  # one device: mtpp.core.memory's peak of the order, zero-time ops included
            on_one = peak_memory(g, order)
            assert abs(Fraction(on_one) - slow.peaks[place[0]]) <= Fraction(profile_error(g, on_one)), where

    return exact_optima(g, ds, times, check)


@pytest.mark.parametrize("seed", range(60))
def test_every_placement_and_order_matches_the_reference_and_bounds_hold(seed: int) -> None:
    g, ds, times = draw_instance(seed)
    errors: list[float] = []
    truth = check_all(g, ds, times, errors)
    assert truth.visited >= ds.d**g.n
    ctx = PlacementContext(g, ds, times)
    assert Fraction(simple_lower_bound(ctx)) <= truth.makespan
    assert Fraction(local_lower_bound(g)) <= truth.peak
    # the float brute force agrees with the exact optima to the simulator's error bounds
    peak, _, _ = brute_force_peak(g, ds, run=ctx)
    assert abs(Fraction(peak) - truth.peak) <= Fraction(max(errors))


@pytest.mark.parametrize("seed", range(0, 60, 3))
@pytest.mark.parametrize("memory", [False, True])
def test_cpsat_bound_is_below_the_exact_optimum(seed: int, memory: bool) -> None:
    """The model with and without memory, its proven bound mapped back by
    :meth:`PlacementModel.proven_bound`: at most the exact optimum (over the
    memory-feasible placements with memory)."""
    pytest.importorskip("ortools")
    from solvers.cpsat_placement import solve_placement
    from solvers.result import Status

    g, ds, times = draw_instance(seed)
    truth = check_all(g, ds, times)
    target = truth.feasible_makespan if memory else truth.makespan
    model = build_placement(PlacementContext(g, ds, times), memory=memory)
    res = solve_placement(model, time_limit=20, threads=1)
    if target is None:  # nothing fits: the relaxation may still find a schedule, or prove none
        assert res.status in (Status.OPTIMAL, Status.INFEASIBLE)
        return
    assert res.status is Status.OPTIMAL, res.status
    assert Fraction(model.proven_bound(res.bound)) <= target
