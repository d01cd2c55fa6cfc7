"""Every phase stops at its deadline with a sound partial answer, and no partition is worse
than the equal-work split of Kahn's order (issue 76).  No timed thresholds here: the
deadlines are forced (already passed, or a clock that runs out after a few looks), and
the speed goals live in ``benchmarks/scale.py``."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import mtpp
import mtpp.bounds.cut as cut_module
from heuristics.partition.orderers import OrderSearch, priorities_for
from heuristics.partition.slicegraph import Segmentation
from mtpp import Graph, Problem
from mtpp.bounds.cut import cut_bound, cut_lower_bound
from mtpp.generators.layered import layered_graph
from tests.oracle import random_dag


def equal_work_cost(problem: Problem) -> float:
    """torchgpipe's rule, by hand: Kahn's order cut into k contiguous pieces of about equal
    work (piece b ends where the running work reaches b / k of the total), re-checked."""
    g = problem.graph
    order = np.asarray(g.topological_order)
    running = np.cumsum(g.work[order])
    total = running[-1]
    block = np.minimum(np.searchsorted(running, total * np.arange(1, problem.k) / problem.k, side="right"), g.n)
    assignment = np.empty(g.n, dtype=np.int64)
    assignment[order] = np.searchsorted(block, np.arange(g.n), side="right")
    return mtpp.evaluate(problem, assignment).bottleneck


def test_a_cut_bound_past_its_deadline_returns_at_once_and_proves_nothing_false() -> None:
    problem = Problem(layered_graph(200, seed=5), 4)
    t0 = time.perf_counter()
    res = cut_bound(problem, deadline=time.perf_counter() - 1.0)
    assert not res.complete and res.tried == 0 and res.bound == 0.0 and res.op == -1
    assert time.perf_counter() - t0 < 5.0  # no minimum cut ran (a generous guard, not a speed goal)
    assert cut_lower_bound(problem, deadline=-math.inf) == (0.0, -1)


class RunsOut:
    """A clock that passes every deadline from its ``looks``-th reading on."""

    def __init__(self, looks: int) -> None:
        self.looks = looks
        self.real = time.perf_counter

    def __call__(self) -> float:
        self.looks -= 1
        return math.inf if self.looks < 0 else self.real()


def test_a_cut_bound_stopped_midway_keeps_the_maximum_over_the_ops_it_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(76)
    for trial in range(6):
        problem = Problem(random_dag(rng, 40, p=0.15), 3, bandwidth=float(rng.choice([0.5, 1.0, 4.0])))
        full = cut_bound(problem)
        assert full.complete
        real = time.perf_counter
        with monkeypatch.context() as patch:  # the first look is before the network is built, one more per op
            patch.setattr(cut_module.time, "perf_counter", RunsOut(trial + 2))
            part = cut_bound(problem, deadline=real() + 3600.0)
        assert part.tried <= trial
        assert part.bound <= full.bound  # a partial maximum: still below every true minimum
        if part.tried < full.tried:
            assert not part.complete


def test_certify_gives_the_cut_bound_a_deadline_within_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    import mtpp.engine.combinatorial as combinatorial

    seen: list[float] = []
    real = combinatorial.cut_bound

    def spy(problem: Problem, deadline: float = math.inf) -> object:
        seen.append(deadline - time.perf_counter())
        return real(problem, deadline=deadline)

    monkeypatch.setattr(combinatorial, "cut_bound", spy)
    g = layered_graph(60, seed=2)
    cert = mtpp.certify(g, 3, bounds="cut", budget=20.0, orderer="kahn")
    assert len(seen) == 1 and 0.0 < seen[0] <= combinatorial.Cut.SHARE * 20.0
    (record,) = [r for r in cert.bounds if r.method == "cut"]
    assert record.status in ("optimal", "time_limit") and record.bound is not None


def test_certify_records_a_cut_bound_stopped_by_its_deadline_as_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import mtpp.engine.combinatorial as combinatorial

    real = combinatorial.cut_bound
    monkeypatch.setattr(combinatorial, "cut_bound", lambda problem, deadline: real(problem, deadline=-math.inf))
    g = layered_graph(60, seed=2)
    cert = mtpp.certify(g, 3, bounds="cut", budget=20.0, orderer="kahn")
    (record,) = [r for r in cert.bounds if r.method == "cut"]
    assert record.status == "time_limit" and record.bound == 0.0 and not record.proven_optimal
    assert "stopped by its time limit" in record.message


def one_block_orderer(problem: Problem, seed: int = 0, time_limit: float | None = None, progress=None) -> OrderSearch:
    """A search that ends with a poor answer: a topological order other than Kahn's (the
    ready op of the largest index first), every op in one block of it."""
    g = problem.graph
    indeg = np.diff(g.pred_ptr).copy()
    ready = [v for v in range(g.n) if indeg[v] == 0]
    order = []
    while ready:
        v = max(ready)
        ready.remove(v)
        order.append(v)
        for w in g.succ_idx[g.succ_ptr[v] : g.succ_ptr[v + 1]].tolist():
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    found = np.asarray(order, dtype=np.int64)
    assert not np.array_equal(found, g.topological_order)
    value = float(mtpp.evaluate(problem, np.zeros(g.n, dtype=np.int64)).bottleneck)
    whole = Segmentation.of(found, np.zeros(1, dtype=np.int64), value)
    return OrderSearch(priorities_for(found), found, evaluations=1, objective="bottleneck", split=whole)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_partition_is_never_worse_than_the_equal_work_split_of_kahns_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    g = Graph.from_arrays(
        rng.integers(50, 100, 40).astype(float),
        np.zeros(40),
        np.ones(40),
        np.array([[i, i + 1] for i in range(19)] + [[i, i + 1] for i in range(20, 39)]),
    )
    for k in (2, 4, 8):
        problem = Problem(g, k)
        sol = mtpp.partition(problem, orderer=one_block_orderer, presolve=False)
        reference = equal_work_cost(problem)
        assert sol.evaluation.bottleneck <= reference * (1 + 1e-12)
        assert sol.evaluation.bottleneck < mtpp.evaluate(problem, np.zeros(g.n)).bottleneck  # not the one block
        assert "equal-work split" in sol.note


@pytest.mark.parametrize("seed", [4, 5])
def test_partition_and_certify_past_their_deadlines_still_beat_the_equal_work_split(seed: int) -> None:
    rng = np.random.default_rng(seed)
    g = random_dag(rng, 60, p=0.08)
    for k in (2, 5):
        problem = Problem(g, k, bandwidth=8.0)
        reference = equal_work_cost(problem)
        for time_limit in (1e-9, None):
            sol = mtpp.partition(problem, orderer="kahn", time_limit=time_limit, presolve=False)
            assert sol.evaluation.bottleneck <= reference * (1 + 1e-12)
        cert = mtpp.certify(problem, bounds="simple", budget=1e-6, orderer="kahn", presolve=False)
        assert cert.upper_bound <= reference * (1 + 1e-9)


def test_place_steps_report_their_wall_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import mtpp.placement.api as api

    g = layered_graph(400, seed=1)
    monkeypatch.setattr(api, "COARSEN_SECONDS_PER_EDGE", 1.0)  # coarsening "would" take far longer than its share
    p = mtpp.place(g, "two-devices", time_limit=2.0)
    assert p.failures["coarse-brkga"].startswith("not run: coarsening")
    timed = {st.method: st.wall_time for st in p.steps}
    assert timed["heft"] > 0.0 and timed["brkga"] > 0.0
    assert sum(p.times.values()) <= p.wall_time


def test_schedule_does_not_start_a_stage_whose_set_up_outlasts_the_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """Layered graph of 50,000 ops: ``schedule --time-limit 10`` took 16.5 s, the beam's narrow
    finish (one level per op), the exact search's set-up and CP-SAT's model running past their
    shares.  With set-up costs that no time left can hold, those stages are skipped with a record
    and the order is still a checked one."""
    import heuristics.peak_memory.state_dp as dp
    import mtpp.scheduling as sched

    monkeypatch.setattr(dp, "FINISH_SECONDS_PER_LEVEL", 1e3)
    monkeypatch.setattr(sched, "SEARCH_SETUP_PER_ELEMENT", 1e3)
    monkeypatch.setattr(sched, "CUT_LIVE_SETUP_PER_ELEMENT", 1e3)
    monkeypatch.setattr(sched, "CPSAT_OVERRUN_PER_ELEMENT", 1e3)
    g = layered_graph(120, seed=11)
    s = mtpp.schedule(g, time_limit=30.0)
    status = {st.method: st.status for st in s.stages}
    assert status["beam"] == status["search"] == status["cut-live"] == status["cpsat"] == "skipped", status
    assert "brkga" in status and s.peak >= s.lower_bound > 0
    assert s.peak >= mtpp.peak_memory(g, s.index_order)  # the re-evaluated peak, rounded upwards
