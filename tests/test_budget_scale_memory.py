"""The memory caps behind issue 24 (``mtpp schedule`` at 20,000 ops had reached 7.4 GB):
the min-cut matrices and the search's residuals are skipped above the cap, the
search's bound data has no ``n x n`` temporaries, and ``schedule`` skips a search that
would exceed the cap with a record instead of attempting it."""

from __future__ import annotations

import numpy as np
import pytest

from heuristics.peak_memory.best_first import (
    best_first_search,
    relative_tops,
    search_memory_bytes,
)
from heuristics.peak_memory.state_dp import state_dp
from mtpp import schedule
from mtpp.bounds.peak_cut import bits_to_bool, cut_live_memory, cut_memory_bytes
from mtpp.bounds.peak_memory import ancestor_bits, forced_live_memory, needed_bits
from mtpp.core.memory import peak_memory
from mtpp.generators import layered_graph
from tests.oracle import brute_force_peak, is_topological, random_dag


def test_cuts_above_the_memory_cap_are_skipped_and_the_values_stay_forced_live() -> None:
    g = layered_graph(60, seed=7)
    need = cut_memory_bytes(g.n, g.m, every_op=True)
    assert need > cut_memory_bytes(g.n, g.m) > 0
    values, done, resid = cut_live_memory(g, every_op=True, max_bytes=need / 2)
    assert not done.any() and resid.shape == (0, 0)
    np.testing.assert_array_equal(values, forced_live_memory(g))
    full, done_full, resid_full = cut_live_memory(g, every_op=True, max_bytes=need)
    assert done_full.any() and resid_full.shape == (g.n, g.n)
    assert np.all(full >= values)  # the cuts only raise the (valid) values


def test_a_search_without_residuals_is_still_exact() -> None:
    rng = np.random.default_rng(2404)
    for it in range(40):
        g = random_dag(rng, int(rng.integers(1, 8)), p=float(rng.uniform(0.1, 0.7)), integral=it % 2 == 0)
        opt = brute_force_peak(g)
        static, _, _ = cut_live_memory(g)
        for backward in (False, True):
            res = best_first_search(g, static_bound=static, residuals=np.zeros((0, 0)), backward=backward)
            assert res.optimal and abs(res.peak - opt) <= 1e-9 * max(1.0, opt)
            assert res.lower_bound <= opt + 1e-9 and is_topological(g, res.order)
            assert res.peak == peak_memory(g, res.order)


def test_relative_tops_match_the_dense_formula() -> None:
    rng = np.random.default_rng(2405)
    for _ in range(20):
        g = random_dag(rng, int(rng.integers(2, 70)), p=float(rng.uniform(0.05, 0.5)))
        static, _, resid = cut_live_memory(g, every_op=True)
        anc = ancestor_bits(g.topological_order, g.pred_ptr, g.pred_idx)
        reach = needed_bits(g.topological_order, g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx)
        q_bits = reach & ~anc
        idx = np.arange(g.n)
        q_bits[idx, idx >> 6] &= ~(np.uint64(1) << (idx & 63).astype(np.uint64))
        forced = forced_live_memory(g)
        q = bits_to_bool(q_bits, g.n)
        dense = np.maximum(forced + q @ g.size_out, static + (q * resid).sum(axis=1))
        np.testing.assert_allclose(relative_tops(q_bits, forced, static, g.size_out, resid), dense, rtol=1e-12)
        plain = np.maximum(forced + q @ g.size_out, static)
        np.testing.assert_allclose(
            relative_tops(q_bits, forced, static, g.size_out, np.zeros((0, 0))), plain, rtol=1e-12
        )


def test_search_memory_estimate_grows_with_the_graph() -> None:
    assert search_memory_bytes(20_000, 512, residuals=False) < search_memory_bytes(40_000, 512, residuals=False)
    assert search_memory_bytes(4000, 512) - search_memory_bytes(4000, 512, residuals=False) == 8 * 4000 * 4000


def test_schedule_skips_a_search_over_the_memory_cap_with_a_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTPP_MAX_MODEL_GB", "1e-6")  # 1 kB: below the search (512 MB of states) and the cuts
    g = layered_graph(40, seed=9)
    res = schedule(g, method="search", time_limit=30)
    stage = next(s for s in res.stages if s.method == "search")
    assert stage.status == "skipped" and "memory cap" in stage.detail
    assert res.peak == peak_memory(g, res.index_order) and res.lower_bound <= res.peak
    cut = next(s for s in res.stages if s.method == "cut-live")
    assert cut.detail == "cuts=0"  # the cut matrices did not fit either


def test_a_beam_stopped_by_its_limit_still_ends_with_an_order() -> None:
    g = layered_graph(300, seed=11)
    res = state_dp(g, beam_width=1000, time_limit=0.0)
    assert res.stopped_by_time and is_topological(g, res.order)
    assert res.peak == peak_memory(g, res.order) and res.lower_bound <= res.peak
