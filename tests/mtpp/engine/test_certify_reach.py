"""The reach bound in certify (mtpp/engine: reach_phase, reach_resume_phase): where
it leads and its shaving did not finish, the shaving goes on after the MIPs."""

from __future__ import annotations

import pytest

import mtpp
import mtpp.engine.combinatorial
from mtpp.bounds.reach import PROBE, RISING_PROBE, ReachBound
from mtpp.engine.certify import certify


def test_shaving_goes_on_after_the_mips_where_the_reach_bound_leads(monkeypatch) -> None:
    """Simulated reach searches: the sweeps lead at 0.9 of the partition's cost, the first
    shaving is stopped by the clock, so it goes on after the MIPs from the sweeps' bound and
    its higher bound replaces the record's."""
    calls = []

    def simulated(problem, lower, upper, time_limit, target, shave=True, sweeps_first=True, stood=None, probe=PROBE):
        calls.append((problem.k, sweeps_first, lower, upper))
        if sweeps_first:
            return ReachBound(0.9 * upper, 3, 0, True, 0.01)
        if len(calls) == 2:  # certify's first shaving: stopped by the clock, nothing refuted
            return ReachBound(None, 0, 0, False, time_limit)
        return ReachBound(0.95 * upper, 2, 2, True, 0.01)

    monkeypatch.setattr(mtpp.engine.combinatorial, "reach_lower_bound", simulated)
    g = mtpp.layered_graph(60, seed=7)
    cert = certify(g, k=4, bounds="simple,reach", orderer="kahn", budget=10)
    ub = cert.upper_bound
    assert [c[:2] for c in calls] == [(4, True), (4, False), (4, False)]
    assert calls[2][2] == 0.9 * calls[0][3]  # from the sweeps' bound
    records = [r for r in cert.bounds if r.method == "reach"]
    assert len(records) == 1 and records[0].status == "optimal"
    assert "after the MIPs, 2 more with shaving" in records[0].message
    assert cert.lower_bound_method == "reach" and cert.lower_bound == pytest.approx(0.95 * ub, rel=1e-9)


def test_a_k_whose_first_test_ran_out_of_its_share_is_tried_again(monkeypatch) -> None:
    """The first sweeps' search at k = 4 decides no threshold within its part (as when its
    first call compiles the sweeps' step); after the other ks, it is tried once more with
    what they left of the phase, and its bound is the record's."""
    calls = []

    def simulated(problem, lower, upper, time_limit, target, shave=True, sweeps_first=True, stood=None, probe=PROBE):
        calls.append((problem.k, sweeps_first, time_limit))
        if sweeps_first and problem.k == 4 and sum(c[0] == 4 for c in calls) == 1:
            return ReachBound(None, 0, 0, False, time_limit)
        return ReachBound(0.9 * upper, 3, 0, True, 0.01) if sweeps_first else ReachBound(None, 0, 0, True, 0.01)

    monkeypatch.setattr(mtpp.engine.combinatorial, "reach_lower_bound", simulated)
    certs = certify(mtpp.layered_graph(60, seed=7), k=[4, 8], bounds="simple,reach", orderer="kahn", budget=10)
    sweeps = [(k, limit) for k, first, limit in calls if first]
    assert [k for k, _ in sweeps] == [4, 8, 4]
    assert sweeps[2][1] > sweeps[0][1]  # the retry has what k = 8 left, besides its own part
    record = certs[0].bound("reach")
    assert record.bound is not None and "; 3 thresholds tried between" in record.message


def test_no_shaving_after_the_mips_where_it_finished(monkeypatch) -> None:
    calls = []

    def simulated(problem, lower, upper, time_limit, target, shave=True, sweeps_first=True, stood=None, probe=PROBE):
        calls.append(sweeps_first)
        return ReachBound(0.9 * upper if sweeps_first else 0.92 * upper, 3, 0 if sweeps_first else 3, True, 0.01)

    monkeypatch.setattr(mtpp.engine.combinatorial, "reach_lower_bound", simulated)
    cert = certify(mtpp.layered_graph(60, seed=7), k=4, bounds="simple,reach", orderer="kahn", budget=10)
    assert calls == [True, False]
    assert cert.lower_bound == pytest.approx(0.92 * cert.upper_bound, rel=1e-9)


def test_shaving_runs_after_the_mips_where_the_sweeps_did_not_lead(monkeypatch) -> None:
    """Where the sweeps refute nothing above the other bounds, shaving never ran in the reach
    phase; after the MIPs it runs from the best bound, and its bound becomes the record's."""
    calls = []

    def simulated(problem, lower, upper, time_limit, target, shave=True, sweeps_first=True, stood=None, probe=PROBE):
        calls.append((sweeps_first, lower))
        if sweeps_first:
            return ReachBound(None, 3, 0, True, 0.003)  # a pass: about 0.25 x 0.001 s x 60 ops
        return ReachBound(0.95 * upper, 4, 4, True, 0.01)

    monkeypatch.setattr(mtpp.engine.combinatorial, "reach_lower_bound", simulated)
    cert = certify(mtpp.layered_graph(60, seed=7), k=4, bounds="simple,reach", orderer="kahn", budget=10)
    simple = cert.bound("simple")
    assert simple is not None and [c[0] for c in calls] == [True, False]
    assert calls[1][1] == simple.bound  # from the best bound
    record = cert.bound("reach")
    assert record is not None and "after the MIPs, 4 more with shaving" in record.message
    assert cert.lower_bound_method == "reach" and cert.lower_bound == pytest.approx(0.95 * cert.upper_bound, rel=1e-9)


def test_no_shaving_where_the_sweeps_did_not_lead_and_a_pass_would_not_fit(monkeypatch) -> None:
    calls = []

    def simulated(problem, lower, upper, time_limit, target, shave=True, sweeps_first=True, stood=None, probe=PROBE):
        calls.append(sweeps_first)
        return ReachBound(None, 1, 0, True, 1.0)  # a pass: about 0.25 x 1 s x 60 ops, past the budget

    monkeypatch.setattr(mtpp.engine.combinatorial, "reach_lower_bound", simulated)
    cert = certify(mtpp.layered_graph(60, seed=7), k=4, bounds="simple,reach", orderer="kahn", budget=10)
    assert calls == [True]
    record = cert.bound("reach")
    assert record is not None and record.bound is None and "after the MIPs" not in record.message


def test_no_shaving_where_the_sweeps_did_not_lead_on_a_graph_whose_work_dominates(monkeypatch) -> None:
    calls = []

    def simulated(problem, lower, upper, time_limit, target, shave=True, sweeps_first=True, stood=None, probe=PROBE):
        calls.append(sweeps_first)
        return ReachBound(None, 3, 0, True, 0.003)

    monkeypatch.setattr(mtpp.engine.combinatorial, "reach_lower_bound", simulated)
    g = mtpp.regal_graph(40, seed=11)
    assert not mtpp.engine.combinatorial.io_heavy(mtpp.Problem(g, 4))  # its tensors weigh a quarter of its work
    assert mtpp.engine.combinatorial.io_heavy(mtpp.Problem(mtpp.layered_graph(60, seed=7), 4))
    certify(g, k=4, bounds="simple,reach", orderer="kahn", budget=10)
    assert calls == [True]


def test_after_the_mips_the_ks_where_the_sweeps_lead_shave_first(monkeypatch) -> None:
    """At k = 4 the sweeps lead at 0.95 of the partition's cost and its shaving is stopped by
    the clock; at k = 8 they lead nowhere, so the simple bound (work / 8, far below the
    partition of an IO-heavy graph) stands: k = 8's gap is the wider, but k = 4, where the
    sweeps lead, shaves first; it gallops from a larger first step (its shaving already beat the
    other bounds), k = 8 from the usual one (one test says whether shaving can)."""
    calls, probes = [], []

    def simulated(problem, lower, upper, time_limit, target, shave=True, sweeps_first=True, stood=None, probe=PROBE):
        calls.append((problem.k, sweeps_first))
        probes.append(probe)
        if sweeps_first:
            return ReachBound(0.95 * upper if problem.k == 4 else None, 3, 0, True, 0.003)
        if calls.count((4, False)) == 1 and problem.k == 4:  # certify's first shaving: stopped by the clock
            return ReachBound(None, 0, 0, False, time_limit)
        return ReachBound(0.97 * upper, 2, 2, True, 0.01)

    monkeypatch.setattr(mtpp.engine.combinatorial, "reach_lower_bound", simulated)
    certs = certify(mtpp.layered_graph(60, seed=7), k=[4, 8], bounds="simple,reach", orderer="kahn", budget=10)
    assert calls == [(4, True), (8, True), (4, False), (4, False), (8, False)]
    assert probes == [PROBE, PROBE, PROBE, RISING_PROBE, PROBE]
    for cert in certs:
        assert cert.lower_bound_method == "reach"
        assert cert.lower_bound == pytest.approx(0.97 * cert.upper_bound, rel=1e-9)


def test_after_the_mips_the_ks_where_the_sweeps_lead_shave_widest_gap_first(monkeypatch) -> None:
    """The sweeps lead at k = 4 (0.95 of the partition's cost) and at k = 8 (0.9), and the clock
    stops both shavings: after the MIPs k = 8, the wider gap, shaves first."""
    calls = []

    def simulated(problem, lower, upper, time_limit, target, shave=True, sweeps_first=True, stood=None, probe=PROBE):
        calls.append((problem.k, sweeps_first))
        if sweeps_first:
            return ReachBound((0.95 if problem.k == 4 else 0.9) * upper, 3, 0, True, 0.003)
        if calls.count((problem.k, False)) == 1:  # certify's first shaving: stopped by the clock
            return ReachBound(None, 0, 0, False, time_limit)
        return ReachBound(0.97 * upper, 2, 2, True, 0.01)

    monkeypatch.setattr(mtpp.engine.combinatorial, "reach_lower_bound", simulated)
    certify(mtpp.layered_graph(60, seed=7), k=[4, 8], bounds="simple,reach", orderer="kahn", budget=10)
    assert calls == [(4, True), (8, True), (4, False), (8, False), (8, False), (4, False)]


def test_where_the_sweeps_did_not_lead_the_small_ks_shave_first_until_one_lifts_nothing(monkeypatch) -> None:
    """The sweeps lead nowhere at k = 4, 8 and 16.  After the MIPs k = 4 shaves first: the
    clock stops it after it lifted the bound; k = 8 lifts nothing, so k = 16 is skipped; last,
    k = 4 goes on from where it stopped (the larger first step: its shaving beat the others)."""
    calls, probes = [], []

    def simulated(problem, lower, upper, time_limit, target, shave=True, sweeps_first=True, stood=None, probe=PROBE):
        calls.append((problem.k, sweeps_first))
        probes.append(probe)
        if sweeps_first:
            return ReachBound(None, 3, 0, True, 0.003)
        if problem.k == 4:
            first = calls.count((4, False)) == 1
            return ReachBound((0.9 if first else 0.95) * upper, 2, 2, not first, 0.01)
        return ReachBound(None, 1, 1, True, 0.01)

    monkeypatch.setattr(mtpp.engine.combinatorial, "reach_lower_bound", simulated)
    certs = certify(mtpp.layered_graph(60, seed=7), k=[4, 8, 16], bounds="simple,reach", orderer="kahn", budget=10)
    assert calls == [(4, True), (8, True), (16, True), (4, False), (8, False), (4, False)]
    assert probes[3:] == [PROBE, PROBE, RISING_PROBE]
    assert certs[0].lower_bound_method == "reach"
    assert certs[0].lower_bound == pytest.approx(0.95 * certs[0].upper_bound, rel=1e-9)
    assert certs[2].bound("reach").bound is None and "after the MIPs" not in certs[2].bound("reach").message
