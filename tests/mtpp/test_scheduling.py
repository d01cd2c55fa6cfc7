"""mtpp.core.memory and mtpp.scheduling: the peak-memory evaluator, the Schedule result and its bounds.

The truth here is written straight from Topoformer Eq. (1)-(3) and (15) with Python
sets (:func:`reference_profile`) and, for tiny DAGs, by enumerating every
topological order (:func:`brute_force_peak`); tests/heuristics/test_peak.py imports
both.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mtpp import Graph, InvalidParameterError
from mtpp.core.memory import block_peak, check_order, local_lower_bound, memory_profile, peak_memory
from mtpp.scheduling import METHODS, Schedule, schedule
from tests.oracle import (
    brute_force_peak,
    chain_of_blocks,
    is_topological,
    random_dag,
    reference_profile,
    shared_graph,
)


# ---------------------------------------------------------------- evaluator
def test_peak_memory_equals_step_by_step_reference():
    rng = np.random.default_rng(0)
    for it in range(150):
        g = random_dag(rng, int(rng.integers(1, 15)), p=float(rng.random() * 0.6), integral=bool(it % 2))
        from heuristics.kahn import kahn_order

        order = kahn_order(g, rng.random(g.n))
        ref = reference_profile(g, order)
        np.testing.assert_allclose(memory_profile(g, order), ref, rtol=1e-12, atol=1e-9)
        assert peak_memory(g, order) == pytest.approx(max(ref))
        assert peak_memory(g, order) >= local_lower_bound(g) - 1e-9


def test_sink_lives_only_during_its_step_and_params_only_while_running():
    # a -> b, a -> c; c is a sink with a big output, b has big parameters
    g = Graph.from_arrays(work=[0, 0, 0], size_param=[0, 50, 0], size_out=[1, 2, 100], edges=[(0, 1), (0, 2)])
    np.testing.assert_allclose(memory_profile(g, [0, 2, 1]), [1, 101, 53])
    np.testing.assert_allclose(memory_profile(g, [0, 1, 2]), [1, 53, 101])
    assert local_lower_bound(g) == 101


def test_check_order_names_the_problem():
    g = Graph.from_nodes(
        [{"id": "x", "work": 1}, {"id": "y", "work": 1}, {"id": "z", "work": 1}], [("x", "y"), ("y", "z")]
    )
    np.testing.assert_array_equal(check_order(g, [0, 1, 2]), [0, 1, 2])
    with pytest.raises(InvalidParameterError, match="2 entries for 3 nodes"):
        check_order(g, [0, 1])
    with pytest.raises(InvalidParameterError, match="'y' 2 times"):
        check_order(g, [0, 1, 1])
    with pytest.raises(InvalidParameterError, match="not a node index"):
        check_order(g, [0, 1, 5])
    with pytest.raises(InvalidParameterError, match=r"'z' .* before its producer 'y'"):
        peak_memory(g, [0, 2, 1])
    with pytest.raises(InvalidParameterError, match="1-D"):
        peak_memory(g, [[0, 1, 2]])


def test_block_peak_definition():
    # a -> b -> c, a -> d; parameters never count in a block's activation peak
    g = Graph.from_arrays(work=[0] * 4, size_param=[9] * 4, size_out=[1, 2, 4, 8], edges=[(0, 1), (1, 2), (0, 3)])
    assert block_peak(g, [0, 1]) == 3  # a leaves (held to the end) + b
    assert block_peak(g, [1, 2]) == 2 + 4  # input a held until b (1 + 2), then b and c (c is a sink)
    assert block_peak(g, [2]) == 2 + 4
    assert block_peak(g, []) == 0
    with pytest.raises(InvalidParameterError):
        block_peak(g, [2, 1])


# ---------------------------------------------------------------- schedule
def test_shared_100_node_graph_optimum_is_36790():
    g = shared_graph(100)
    s = schedule(g, method="exact-dp", time_limit=60)
    assert s.peak == 36790 and s.lower_bound == 36790 and s.status == "optimal" and s.gap == 0
    assert peak_memory(g, s.index_order) == 36790
    assert is_topological(g, s.index_order)
    assert [g.ids[i] for i in s.index_order] == list(s.order)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_bounds_the_brute_force_optimum(method):
    rng = np.random.default_rng(3)
    for _ in range(4):
        g = random_dag(rng, int(rng.integers(2, 7)), p=0.4, integral=True)
        opt = brute_force_peak(g)
        s = schedule(g, method=method, time_limit=10, threads=1, beam_width=2)
        assert is_topological(g, s.index_order)
        assert s.peak == pytest.approx(max(reference_profile(g, s.index_order)))
        assert s.lower_bound <= opt + 1e-9 <= s.peak + 2e-9
        assert 0 <= s.gap <= 1
        if method in ("exact-dp", "cpsat", "auto", "search"):
            assert s.status == "optimal" and s.peak == pytest.approx(opt)


def test_search_splits_a_chain_of_blocks_and_agrees_with_the_exact_dp():
    from heuristics.peak_memory.split import split_graph

    rng = np.random.default_rng(8)
    for _ in range(3):
        g = chain_of_blocks(rng, 6)
        s = schedule(g, method="search", time_limit=30)
        dp = schedule(g, method="exact-dp", time_limit=30)
        assert s.status == "optimal" and dp.status == "optimal" and s.peak == dp.peak
        assert s.peak == peak_memory(g, s.index_order) and is_topological(g, s.index_order)
        assert len(split_graph(g)) > 1


def test_cpsat_equals_brute_force_on_tiny_dags():
    from formulations.schedule import build_schedule
    from mtpp.scheduling import _cpsat_lower
    from solvers.cpsat_schedule import solve_schedule
    from solvers.result import Status

    rng = np.random.default_rng(11)
    for it in range(12):
        g = random_dag(rng, int(rng.integers(2, 8)), p=float(rng.uniform(0.2, 0.6)), integral=it % 3 != 0)
        opt = brute_force_peak(g)
        model = build_schedule(g)
        res = solve_schedule(model, time_limit=20, threads=1)
        assert res.status is Status.OPTIMAL and res.order is not None
        assert is_topological(g, res.order)
        if model.exact:
            assert res.capacity == model.capacity(res.order)
            assert model.to_size(res.bound) == pytest.approx(opt)
            assert peak_memory(g, res.order) == pytest.approx(opt)
        else:  # rounded demands: the corrected bound stays below the optimum
            assert _cpsat_lower(g, model, res.bound) <= opt + 1e-9
            assert peak_memory(g, res.order) >= opt - 1e-9


def test_cpsat_hint_and_bounds_are_kept():
    from formulations.schedule import build_schedule
    from solvers.cpsat_schedule import solve_schedule

    g = shared_graph(100)
    dfs = schedule(g, method="dfs")
    model = build_schedule(g, lower_bound=30000, upper_bound=dfs.peak)
    assert model.exact and model.scale == 1 and model.lower_bound == 30000
    assert model.capacity(dfs.index_order) == dfs.peak
    res = solve_schedule(model, hint=dfs.index_order, time_limit=5, threads=1)
    assert res.order is not None and peak_memory(g, res.order) <= dfs.peak  # the hint is a solution
    assert 30000 <= res.bound <= 36790


def test_schedule_serialises_and_records_stages():
    g = shared_graph(100)
    s = schedule(g, method="auto", time_limit=30, threads=1)
    assert isinstance(s, Schedule) and s.status == "optimal" and s.peak == 36790
    data = json.loads(s.to_json())
    assert data["format"] == "mtpp-schedule" and data["upper_bound"] == 36790 == s.upper_bound
    assert data["order"] == list(s.order) and data["status"] == "optimal" and data["optimal"]
    assert [st["method"] for st in data["stages"]][:5] == ["local", "forced-live", "dfs", "bfs", "random"]
    assert all(st.lower_bound <= s.peak for st in s.stages)


def test_bad_arguments_raise_typed_errors():
    g = random_dag(np.random.default_rng(0), 4)
    for kwargs, word in [
        ({"method": "nope"}, "method"),
        ({"objective": "latency"}, "objective"),
        ({"time_limit": 0}, "time_limit"),
        ({"time_limit": math.nan}, "time_limit"),
        ({"beam_width": 0}, "beam_width"),
        ({"threads": -1}, "threads"),
        ({"seed": 1.5}, "seed"),
    ]:
        with pytest.raises(InvalidParameterError, match=word):
            schedule(g, **kwargs)
    with pytest.raises(InvalidParameterError, match="graph"):
        schedule("graph.json")  # type: ignore[arg-type]


# ---------------------------------------------------------------- the result contract
def _unproven_graph() -> Graph:
    # dfs and bfs peak at 12, the optimum is 10, the local and forced-live bounds 9
    return Graph.from_arrays(
        work=[1] * 5, size_param=[0] * 5, size_out=[1, 8, 3, 1, 0], edges=[(0, 1), (0, 2), (2, 3), (1, 4), (3, 4)]
    )


def test_the_peak_is_rounded_up_to_the_orders_exact_peak():
    from fractions import Fraction

    from mtpp.core.memory import profile_error
    from mtpp.core.result import upper_rounded
    from tests.oracle import ExactPeak

    # a 1e15 tensor beside 1e-3 ones: the evaluator's sums are inexact
    g = Graph.from_arrays(
        work=[1] * 4, size_param=[1e-3, 0, 2e-3, 0], size_out=[1e15, 3e-3, 1e-3, 7e-3], edges=[(0, 1), (1, 2), (0, 3)]
    )
    s = schedule(g, method="dfs")
    evaluated = peak_memory(g, s.index_order)
    assert profile_error(g, evaluated) > 0
    assert s.peak == s.upper_bound == upper_rounded(evaluated, profile_error(g, evaluated)) > evaluated
    assert Fraction(s.peak) >= ExactPeak(g).peak(s.index_order)


def test_cpsat_rows_and_bound_hold_when_demands_round_either_way():
    from fractions import Fraction

    from formulations.schedule import build_schedule
    from mtpp.scheduling import _cpsat_lower
    from solvers.cpsat_schedule import solve_schedule
    from tests.oracle import ExactPeak
    from tests.soundness.schedule_checks import float_below

    # 1 and three 1e-9 tensors, all live at the sink's step: at scale 1 the small ones
    # round to 0, so the model optimum is 1 < OPT; a row C >= ceil(OPT - 1e-9 OPT) = 2
    # (rounding one way only) would make CP-SAT prove 2
    down = Graph.from_arrays([1] * 5, [0] * 5, [1, 1e-9, 1e-9, 1e-9, 0], [(0, 4), (1, 4), (2, 4), (3, 4)])
    # 0.3 at scale 10 becomes 3, above 10 fl(0.3); 1e10 - 4 at scale 1 becomes 1e10 (integral to 1e-9)
    up = Graph.from_arrays([1] * 3, [0.3, 0, 0.1], [0.7, 1e10 - 4, 0.2], [(0, 1), (1, 2)])
    for g in (down, up):
        exact = ExactPeak(g)
        opt, best = exact.optimum()
        model = build_schedule(g, lower_bound=float_below(opt), upper_order=np.array(best))
        assert not model.exact and model.lower_bound <= model.capacity(np.array(best)) == model.upper_bound
        res = solve_schedule(model, hint=np.array(best), time_limit=10, threads=1)
        assert Fraction(_cpsat_lower(g, model, res.bound)) <= opt
    assert build_schedule(down, lower_bound=float_below(ExactPeak(down).optimum()[0])).lower_bound == 1
    assert build_schedule(up).excess > 0 and build_schedule(down).deficit >= 3e-9


def test_a_bound_above_the_upper_bound_is_a_failed_stage(monkeypatch):
    import mtpp.bounds.peak_memory as bounds

    g = _unproven_graph()
    monkeypatch.setattr(bounds, "forced_live_bound", lambda graph: 1e6)
    s = schedule(g, method="dfs")
    failed = [st for st in s.stages if st.method == "forced-live"]
    assert failed[0].status == "error" and failed[0].lower_bound == 0
    assert "1000000.0" in failed[0].detail and repr(s.upper_bound) in failed[0].detail
    assert s.lower_bound == local_lower_bound(g) <= s.upper_bound and s.bound_method == "local"
    assert s.status == "feasible" and not s.optimal  # the failed bound never proves anything
    assert all(step.lower_bound is not None and step.lower_bound <= s.upper_bound for step in s.steps)


def test_a_method_that_raises_is_a_failed_stage_and_the_call_goes_on(monkeypatch):
    import heuristics.peak_memory.state_dp as dp
    import solvers.cpsat_schedule as cpsat
    from mtpp import scheduling

    g = _unproven_graph()

    def broken(*args, **kwargs):
        raise RuntimeError("solver crashed")

    monkeypatch.setattr(dp, "state_dp", broken)
    s = schedule(g, method="beam")  # the only method fails: the graph's topological order stands in
    assert [(st.method, st.status) for st in s.stages][-2:] == [("beam", "error"), ("topological", "feasible")]
    assert "RuntimeError: solver crashed" in s.stages[-2].detail
    assert is_topological(g, s.index_order) and s.peak == peak_memory(g, s.index_order)

    monkeypatch.setattr(cpsat, "solve_schedule", broken)
    monkeypatch.setattr(scheduling._Search, "proven", property(lambda self: False))  # run every stage
    s = schedule(g, method="cpsat", time_limit=5)
    assert [st.status for st in s.stages if st.method == "cpsat"] == ["error"]
    assert s.peak == 10 and s.lower_bound == 9  # the quick orders and the first bounds stand


def test_an_invalid_order_is_a_failed_stage(monkeypatch):
    import heuristics.peak_memory.orders as orders

    g = _unproven_graph()
    real = orders.traversal_order
    monkeypatch.setattr(
        orders, "traversal_order", lambda graph, kind: orders.OrderResult(real(graph, kind).order[::-1], 0)
    )
    s = schedule(g, method="dfs")
    assert s.stages[2].method == "dfs" and s.stages[2].status == "error" and "invalid order" in s.stages[2].detail
    assert is_topological(g, s.index_order)


def test_cpsat_takes_any_seed():
    from mtpp import scheduling

    search = scheduling._Search(_unproven_graph(), 5.0)
    scheduling._run_cpsat(search, 1, 2**40, 5.0, False)  # CP-SAT's own seed is an int32
    assert search.stages[-1].method == "cpsat" and search.stages[-1].status == "optimal"
    assert search.peak == 10 and search.lower == 10
