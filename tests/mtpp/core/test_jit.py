"""The kernels' two paths (:mod:`mtpp.core.jit`): plain Python on tiny inputs, numba above.

* the mechanics: which path a call takes (threshold, budget, a kernel called by a
  kernel), objmode, scalar results, the compile notice, the path check itself;
* agreement: every kernel of mtpp and heuristics is called on random small instances
  of every family of :mod:`tests.soundness.instances` with the path check on, so each
  Python-path call is also run compiled and must give the same results, exactly;
* a command on a tiny graph imports neither numba nor scipy (a new interpreter).

The soundness fuzz (:mod:`tests.soundness.test_fuzz`) runs half its chunks checked and
half compiled (:func:`tests.kernel_paths.kernel_path`), so both paths stay tested
against the oracle."""

from __future__ import annotations

import importlib
import json
import math
import pkgutil
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import heuristics
import mtpp
from mtpp.core import jit
from mtpp.core.jit import njit, objmode
from mtpp.core.records import COMBINATORIAL_METHODS
from mtpp.core.rounding import dd_value
from mtpp.generators import layered_graph
from tests.kernel_paths import PATHS, kernel_path

ROOT = Path(__file__).resolve().parents[3]
NEEDS_EXTRAS = ("torch", "onnx", "training", "regal", "topoformer", "policy", "inference", "teacher", "proof", "plot")


# ------------------------------------------------------------------ mechanics


@njit(cache=False, inline="always")
def _inc(x):
    return x + 1


@njit(cache=False)
def _total(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return _inc(s), a.shape[0] > 2


@njit(cache=False)
def _stamp():
    with objmode(now="float64"):
        now = 1.5
    return now


@njit(cache=False)
def _wraps(a):
    return a[0] * np.int64(4)


@njit(cache=False)
def _overflows(a):
    x = 1 << 62  # a Python int on the Python path: it grows where numba's int64 wraps
    return x * a.shape[0] * 4


def test_a_tiny_call_runs_in_python_and_a_large_one_compiled() -> None:
    with jit.settings(threshold=8, budget=math.inf, check=False):
        fresh = _total._dispatcher is None
        assert _total(np.arange(3.0)) == (4.0, True)
        assert (_total._dispatcher is None) == fresh  # no compiling for it
        big = np.arange(9.0)
        assert _total(big) == (37.0, True)
        assert _total._dispatcher is not None
        assert _total.dispatcher.signatures  # compiled, _inc inlined from its Python function


def test_threshold_zero_and_a_spent_budget_compile_every_call() -> None:
    for settings in (jit.settings(threshold=0), jit.settings(threshold=10**6, budget=0.0, check=False)):
        with settings:
            assert jit.threshold() == 0
            assert not _total.tiny((np.arange(3.0),), {})
    with jit.settings(threshold=10**6, budget=math.inf):
        assert _total.tiny((np.arange(3.0), 5), {"x": np.zeros(2)})
        assert not _total.tiny((np.zeros(10**6 + 1),), {})


def test_results_are_python_scalars_on_both_paths() -> None:
    a = np.array([2, 3, 4], dtype=np.int64)
    for path in PATHS:
        with kernel_path(path):
            got = _total(a.astype(np.float64))
            assert got == (10.0, True) and type(got[0]) is float and type(got[1]) is bool
            assert _stamp() == 1.5 and type(_stamp()) is float
            assert type(_wraps(a)) is int


def test_integers_from_arrays_wrap_as_in_numba() -> None:
    a = np.array([2**62], dtype=np.int64)
    with jit.settings(check=True):
        assert _wraps(a) == 0  # 2^64 wraps to 0 on both paths, no overflow warning


def test_the_check_catches_paths_that_disagree() -> None:
    with jit.settings(check=True), pytest.raises(jit.PathMismatch, match="_overflows"):
        _overflows(np.zeros(1))


def test_a_compile_notice_only_when_numba_compiles() -> None:
    said: list[int] = []

    @njit(cache=False)
    def fresh(a):
        return a.sum() + 1.0

    with jit.compiling(lambda: said.append(1)):
        with jit.settings(threshold=10**6, budget=math.inf, check=False):
            assert fresh(np.ones(3)) == 4.0
        assert said == []  # the Python path compiles nothing
        with jit.settings(threshold=0):
            assert fresh(np.ones(3)) == 4.0
        assert said  # one call per function numba compiles (the CLI says it once)
    heard = len(said)
    with jit.settings(threshold=0):
        assert fresh(np.ones(3, dtype=np.int64)) == 4.0  # compiles again, after the block
    assert len(said) == heard


# ------------------------------------------------------------------ agreement


def kernel_modules() -> list[str]:
    """Every module of mtpp and heuristics that runs without an extra (torch, onnx)."""
    names = []
    for package in (mtpp, heuristics):
        for m in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if m.name.endswith("__main__") or any(word in m.name for word in NEEDS_EXTRAS):
                continue
            names.append(m.name)
    return names


def workload(problem: mtpp.Problem, seed: int) -> None:
    """Every kernel of mtpp and heuristics, reached through the API and the modules'
    own entry points, on ``problem`` (a small graph)."""
    from heuristics.neural.decoding import beam_search, sample_orders
    from heuristics.neural.features import node_features
    from heuristics.neural.masks import relation_matrix
    from heuristics.partition.anneal import anneal_partition
    from heuristics.partition.band_dp import band_dp
    from heuristics.partition.ideal_dp import ideal_dp_all
    from heuristics.partition.ideals import enumerate_ideals
    from heuristics.partition.merge_dp import merge_orders
    from heuristics.partition.segment_peaks import peak_column, peak_segment_table, prefix_peaks
    from heuristics.partition.segments import segment_cost_table
    from heuristics.partition.slicegraph import slice_order
    from heuristics.peak_memory.best_first import best_first_search
    from heuristics.peak_memory.state_dp import state_dp
    from heuristics.placement.coarsen import coarsen
    from mtpp.bounds.clique import clique_lower_bounds
    from mtpp.bounds.crossing import crossing_lower_bounds
    from mtpp.bounds.reach import reach_lower_bound
    from mtpp.pipelining.segmentation import (
        additive_costs,
        expressible_segmentation,
        min_max_segmentation,
        unit_costs,
    )
    from mtpp.pipelining.units import module_units

    g, k = problem.graph, problem.k
    for orderer in ("kahn", "random-3", "brkga-60", "mla", "mla-weighted"):
        sol = mtpp.partition(problem, orderer=orderer, seed=seed, presolve=False)
    slice_order(problem, sol.index_order, deadline=0.0)  # the equal-work split of an order out of time
    anneal_partition(replace(problem, peak_aware=False, reserve=0.0), sol.evaluation.assignment, moves=400, seed=seed)
    anneal_partition(replace(problem, peak_aware=False), sol.evaluation.assignment, moves=200, seed=seed, push=1.0)
    anneal_partition(
        replace(problem, peak_aware=False), sol.evaluation.assignment, moves=200, seed=seed, push=0.0, swap=1.0
    )
    mtpp.certify(problem, bounds=",".join(COMBINATORIAL_METHODS), seed=seed, presolve=False)
    reach_lower_bound(problem, 0.0, sol.evaluation.bottleneck)  # certify's ideal DP proves tiny graphs first
    crossing_lower_bounds(problem, [k])
    clique_lower_bounds(problem, [k], max_candidates=g.n)
    merge_orders(problem, [sol.index_order, g.topological_order], sol.evaluation.bottleneck)
    lattice = enumerate_ideals(g)
    assert lattice is not None
    ideal_dp_all(problem, list(range(1, k + 1)), lattice=lattice)
    band_dp(problem, sol.evaluation.assignment, 2, math.inf, 10_000, None)
    order = np.asarray(sol.index_order)
    prefix_peaks(problem, order)
    peak_segment_table(problem, order)
    peak_column(problem, order, g.n - 1)
    segment_cost_table(problem, order)
    min_max_segmentation(unit_costs(problem, list(range(g.n))), k)
    units = module_units([(), ("x",), ("y",), ("y", "z"), ()])  # split points nested two deep
    expressible_segmentation(additive_costs([1.0, 5.0, 1.0, 1.0, 1.0])[: units.count, : units.count], k, units)
    for method in ("random", "greedy", "beam", "exact-dp", "brkga", "learned-rule", "learned-rule-sample"):
        mtpp.schedule(g, method=method, seed=seed, time_limit=None if method != "brkga" else 30.0)
    state_dp(g, beam_width=2, seed=seed)
    for backward in (False, True):
        best_first_search(g, memory_mb=1.0, seed=seed, backward=backward, free_moves=not backward)
    for method in ("heft", "brkga"):  # BRKGA searches until its time limit
        mtpp.place(g, "two-devices", method=method, seed=seed, time_limit=0.2)
    coarsen(g, target=max(1, g.n // 2))
    relation_matrix(g)
    node_features(g)
    prio = np.random.default_rng(seed).normal(size=g.n)
    sample_orders(g, prio, 3, seed=seed)
    for collapse in ("peak", "logp", "none"):
        beam_search(g, prio, width=3, collapse=collapse)
    assert dd_value(1.0, 2.0**-60) == 1.0


def wide_lattice(n: int) -> None:
    """The ideal enumeration of ``n`` independent ops (``2^n`` ideals) with its arrays
    and hash table grown several times over, in one kernel call."""
    from heuristics.partition.ideals import MAX_LATTICE_BYTES, enumerate_kernel

    g = mtpp.Graph.from_arrays(np.ones(n), np.ones(n), np.ones(n), [])
    zob = np.random.default_rng(n).integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    *arrays, complete = enumerate_kernel(
        n,
        g.succ_ptr,
        g.succ_idx,
        g.pred_ptr,
        g.pred_idx,
        g.work,
        g.size_param,
        g.size_out,
        zob,
        2**n,
        MAX_LATTICE_BYTES,
    )
    assert complete and arrays[0].shape[0] == 2**n


def test_every_kernel_gives_the_same_results_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    from heuristics.peak_memory.best_first import best_first_search
    from tests.soundness.instances import FAMILIES, make_instance

    for name in kernel_modules():
        importlib.import_module(name)
    called: set[jit.Kernel] = set()
    call = jit.Kernel.__call__

    def recording(self: jit.Kernel, *args: object, **kwargs: object) -> object:
        called.add(self)
        return call(self, *args, **kwargs)

    monkeypatch.setattr(jit.Kernel, "__call__", recording)
    rng = random.Random(24)
    with jit.settings(check=True, threshold=10**6):
        for i, family in enumerate(FAMILIES * 2):
            problem = make_instance(rng, family, max_n=9)
            workload(problem, seed=i)
        wide_lattice(12)  # its hash table rehashed too
        best_first_search(layered_graph(10, seed=1), memory_mb=1.0)  # pair moves: a search with exact sums
    clocks = {k for k in jit.KERNELS if k.__name__ == "clock"}  # the time differs: called below
    missing = sorted(repr(k) for k in set(jit.KERNELS) - called - clocks if not k.__module__.startswith("tests."))
    assert not missing, f"kernels no workload reached: {missing}"
    for clock in clocks:
        for path in PATHS:
            with kernel_path(path), jit.settings(check=False):
                assert abs(clock() - __import__("time").perf_counter()) < 1.0


# ------------------------------------------------------------------ a new interpreter


@pytest.mark.parametrize("n", [1, 20])
def test_commands_on_a_tiny_graph_import_neither_numba_nor_scipy(tmp_path: Path, n: int) -> None:
    g = mtpp.Graph.from_arrays([1.0] * n, [1.0] * n, [1.0] * n, [(i, i + 1) for i in range(n - 1)])
    path = tmp_path / "g.json"
    g.to_json(path)
    sol = tmp_path / "sol.json"
    commands = [
        ["info", str(path)],
        ["solve", str(path), "-k", "2", "-o", str(sol)],
        ["evaluate", str(path), str(sol)],
        ["certify", str(path), "-k", "2"],
        ["schedule", str(path)],
        ["place", str(path)],
        ["generate", "layered", "-n", "20"],
    ]
    code = (
        "import contextlib, io, json, sys\n"
        "from mtpp.cli.main import main\n"
        "done = []\n"
        "for argv in json.loads(sys.argv[1]):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        done.append(main(argv))\n"
        "print(json.dumps([done, sorted(m for m in ('numba', 'scipy.sparse', 'networkx') if m in sys.modules)]))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(commands)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    codes, heavy = json.loads(out.stdout.splitlines()[-1])
    assert codes == [0] * len(commands)
    assert heavy == []
