"""The ideal DP on a band of a partition's order (:mod:`heuristics.partition.band_dp`):
the prefixes at width 0, every ideal when the band is as wide as the graph, never worse
than slicing the order, and never a partition its evaluation disowns."""

from __future__ import annotations

import random

import numpy as np
import pytest

from heuristics.kahn import kahn_order
from heuristics.partition.band_dp import band_dp, band_ideals, partition_order, renumber
from heuristics.partition.ideal_dp import ideal_dp
from heuristics.partition.ideals import enumerate_ideals
from heuristics.partition.slicegraph import slice_order
from mtpp import Graph, Problem, evaluate, layered_graph
from tests.heuristics.partition.test_slicegraph import random_problem
from tests.soundness.instances import FAMILIES, _check_partition, make_case, make_instance


def test_a_band_of_width_zero_holds_the_prefixes_and_a_wide_one_every_ideal() -> None:
    rng = np.random.default_rng(41)
    for _ in range(60):
        problem = random_problem(rng, n_max=9)
        g = renumber(problem.graph, kahn_order(problem.graph, rng.random(problem.graph.n)))
        prefixes = band_ideals(g, 0, 10_000)
        assert prefixes is not None and prefixes.count == g.n + 1
        assert [prefixes.members(s).tolist() for s in range(prefixes.count)] == [list(range(i)) for i in range(g.n + 1)]
        every, full = band_ideals(g, g.n, 10_000), enumerate_ideals(g)
        assert every is not None and full is not None and every.count == full.count
        widths = [band_ideals(g, b, 10_000) for b in range(g.n + 1)]
        counts = [w.count for w in widths if w is not None]
        assert counts == sorted(counts)  # a wider band holds the narrower one's ideals
    assert band_ideals(layered_graph(60, seed=3), 20, 50) is None  # past the cap


def test_never_worse_than_slicing_its_order_and_optimal_when_the_band_holds_every_ideal() -> None:
    rng = np.random.default_rng(42)
    for _ in range(80):
        problem = random_problem(rng, n_max=9, k_max=4)
        g = problem.graph
        order = kahn_order(g, rng.random(g.n))
        sliced = slice_order(problem, order)
        assert sliced is not None
        above = sliced.bottleneck * 1.5 + 1.0
        for band in (0, 2, g.n):
            res = band_dp(problem, sliced.assignment, band, above, 100_000, None)
            assert res is not None
            value, assignment = res
            assert value <= sliced.bottleneck * (1 + 1e-9) + 1e-12
            assert evaluate(problem, assignment).bottleneck == pytest.approx(value, rel=1e-9, abs=1e-12)
        exact = ideal_dp(problem)
        assert exact.value is not None and value == pytest.approx(exact.value, rel=1e-9, abs=1e-12)


def test_partitions_pass_the_exact_oracle_on_every_fuzz_family() -> None:
    """Mixed scales up to 1e15, B != 1, finite memory: every partition found is one the
    exact oracle accepts at the value the evaluator gives."""
    rng = random.Random(2313)
    for trial in range(40):
        family = FAMILIES[trial % len(FAMILIES)]
        problem = make_instance(rng, family, max_n=7)
        case = make_case(problem, family)
        start = np.zeros(problem.graph.n, dtype=np.int64)  # one block: every partition beats or ties it
        res = band_dp(problem, start, 3, np.inf, 100_000, None)
        assert res is not None
        assert not _check_partition(case, "band", res[1]), case.describe()


def test_the_partition_order_lists_the_blocks_one_after_another() -> None:
    problem = Problem(layered_graph(80, seed=9911), 6)
    assignment = slice_order(problem, kahn_order(problem.graph, np.random.default_rng(1).random(80))).assignment  # type: ignore[union-attr]
    order = partition_order(problem, assignment)
    position = np.empty(80, dtype=np.int64)
    position[order] = np.arange(80)
    assert all(position[u] < position[v] for u, v in zip(*_edges(problem.graph), strict=True))
    blocks = assignment[order]
    runs = 1 + int(np.count_nonzero(np.diff(blocks)))
    assert runs == len(set(blocks.tolist()))  # each block one run of the order


def test_a_band_reshapes_a_partition_that_slicing_its_order_cannot() -> None:
    problem = Problem(layered_graph(110, seed=8131), 16)
    start = slice_order(problem, kahn_order(problem.graph, np.random.default_rng(7).random(110)))
    assert start is not None
    again = slice_order(problem, partition_order(problem, start.assignment))
    res = band_dp(problem, start.assignment, 12, start.bottleneck, 1_000_000, None)
    assert again is not None and res is not None
    assert res[0] < again.bottleneck <= start.bottleneck * (1 + 1e-12)


def _edges(g: Graph) -> tuple[np.ndarray, np.ndarray]:
    return np.repeat(np.arange(g.n), np.diff(g.succ_ptr)), g.succ_idx
