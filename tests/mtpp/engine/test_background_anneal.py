"""Annealing on a spare core during a budgeted certify (mtpp/engine/background.py): when it
runs and when it does not, its partitions re-checked and its report lines all delivered,
its halt prompt, its failure a note that loses nothing."""

from __future__ import annotations

import math
import re
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

import mtpp
import mtpp.engine.background as background
from heuristics.partition.anneal import CYCLE_MOVES, Annealed, anneal_partition, spread_start
from mtpp import Problem


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """The compiled kernels of the certify calls below loaded before their budgets start:
    on a fresh clone compiling them takes most of a 12 s budget, and the thread starts
    only when a second of it is left after the first bounds."""
    mtpp.certify(mtpp.regal_graph(30, seed=4401), k=[2, 4], bounds="simple,cut,crossing,pigeonhole")


def fake_call(runs: object, left: object) -> object:
    """What the annealer reads of a certify call: its runs, its clock and its report."""
    return SimpleNamespace(runs=runs, left=left, budget=SimpleNamespace(say=print), tag=lambda problem: "")


def _certify(monkeypatch: pytest.MonkeyPatch, cores: int, **kwargs: object) -> tuple[list[mtpp.Certificate], list[str]]:
    monkeypatch.setattr(background, "usable_cores", lambda: cores)
    lines: list[str] = []
    g = mtpp.regal_graph(120, seed=4402)
    certs = mtpp.certify(g, k=[8, 16], bounds="simple,cut,crossing,pigeonhole", report=lines.append, **kwargs)
    return certs, lines


def test_it_runs_beside_the_mips_and_every_partition_it_gives_is_re_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    certs, lines = _certify(monkeypatch, cores=2, budget=12)
    summary = [line for line in lines if line.startswith("background annealing:")]
    assert len(summary) == 1
    cycles, better = map(int, re.findall(r"\d+", summary[0]))
    assert cycles >= 1
    found = [line for line in lines if "annealing in the background" in line]
    assert len(found) == better  # every line its thread queued reached the report
    g = mtpp.regal_graph(120, seed=4402)
    for cert in certs:
        blocks = np.array([cert.assignment[str(op)] for op in g.ids])
        again = mtpp.evaluate(Problem(g, cert.k), blocks)
        assert again.bottleneck == pytest.approx(cert.upper_bound, rel=1e-12)
        assert cert.lower_bound <= cert.upper_bound


def test_it_stays_off_without_a_spare_core_a_budget_or_the_fill(monkeypatch: pytest.MonkeyPatch) -> None:
    for cores, kwargs in (
        (1, {"budget": 6}),  # the solver's thread takes the only core
        (2, {"budget": 6, "threads": 2}),
        (8, {"budget": 6, "fill_budget": False}),  # a batch row's partition stays its orderer's
        (8, {"time_limit": 1.0}),  # no budget: the call stays deterministic
    ):
        _, lines = _certify(monkeypatch, cores, **kwargs)
        assert not any("background" in line for line in lines), (cores, kwargs)


def test_a_halt_stops_annealing_within_a_chunk() -> None:
    problem = Problem(mtpp.regal_graph(150, seed=4403), 8)
    start = mtpp.partition(problem, orderer="kahn", presolve=False).evaluation.assignment
    anneal_partition(problem, start, moves=1000)  # the compiled kernel loaded before timing
    halt = threading.Event()
    threading.Timer(0.3, halt.set).start()
    t = time.perf_counter()
    res = anneal_partition(problem, start, time_limit=30.0, halt=halt)
    assert res is not None and res.moves > 0
    assert time.perf_counter() - t < 1.0


def test_a_failure_in_the_thread_becomes_a_note_and_the_call_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(background, "anneal_partition", broken)
    certs, lines = _certify(monkeypatch, cores=2, budget=6)
    assert any("background annealing stopped by an error: RuntimeError: boom" in line for line in lines)
    for cert in certs:
        assert any("RuntimeError: boom" in note for note in cert.notes)
        assert cert.lower_bound <= cert.upper_bound


def test_the_widest_gap_gets_the_cycles_until_they_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen: list[int] = []

    def nothing_better(problem: SimpleNamespace, *args: object, **kwargs: object) -> Annealed:
        chosen.append(problem.k)
        return Annealed(np.zeros(1, dtype=np.int64), math.inf, 1, 0.0)

    monkeypatch.setattr(background, "anneal_partition", nothing_better)
    monkeypatch.setattr(background, "spread_start", lambda problem, seed: None)  # restarts: no graph here
    runs = [  # k = 2 within 0.2% of its bound, k = 8 40% away
        SimpleNamespace(
            problem=SimpleNamespace(k=k, graph=SimpleNamespace(n=10)),
            lb=lb,
            ub=100.0,
            ub_hi=100.0,
            best_eval=SimpleNamespace(assignment=None),
        )
        for k, lb in ((2, 99.8), (8, 60.0))
    ]
    clock = iter(range(12, -1, -1))  # seconds left: the thread stops when they run out
    annealer = background.BackgroundAnnealer(fake_call(runs, lambda: float(next(clock))))  # type: ignore[arg-type]
    annealer._loop()
    assert annealer._error is None
    # 0.4 x 0.5^s stays above 0.002 for s <= 7 stalls; then k = 2 has its turn, and halves
    assert chosen[:10] == [8] * 8 + [2, 8]


def test_a_stalled_k_alternates_restarts_from_fresh_starts_with_cycles_from_its_best(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    problem = Problem(mtpp.layered_graph(50, seed=5), 8)
    best = np.zeros(problem.graph.n, dtype=np.int64)  # one block
    starts: list[np.ndarray] = []
    moves: list[object] = []

    def nothing_better(on: Problem, start: np.ndarray, *args: object, **kwargs: object) -> Annealed:
        starts.append(np.asarray(start))
        moves.append(kwargs.get("moves"))
        return Annealed(start, math.inf, 1, 0.0)

    monkeypatch.setattr(background, "anneal_partition", nothing_better)
    run = SimpleNamespace(problem=problem, lb=10.0, ub=100.0, ub_hi=100.0, best_eval=SimpleNamespace(assignment=best))
    clock = iter(range(6, -1, -1))
    annealer = background.BackgroundAnnealer(fake_call([run], lambda: float(next(clock))))  # type: ignore[arg-type]
    annealer._loop()
    assert annealer._error is None and len(starts) >= 4
    assert all(start is best for start in starts[0::2])  # the first cycle, and every other one after a stall
    for fresh in starts[1::2]:
        assert np.unique(fresh).size == problem.k  # every block has ops
        g = problem.graph
        assert (fresh[g.edge_src] <= fresh[g.edge_dst]).all()  # monotone: an acyclic partition
    assert not np.array_equal(starts[1], starts[3])  # a new seed per cycle
    # cycles of 8 moves per op cubed: 10^6 on 50 ops, far below the two-second cycle's 1.7 10^7
    assert moves == [background.CYCLE_MOVES_PER_OP_CUBED * 50**3] * len(starts) and moves[0] < CYCLE_MOVES


def test_its_kernels_are_compiled_on_the_calling_thread_before_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile holds the interpreter lock for seconds: from the thread it starved the
    foreground's bounds (the docstring of :meth:`BackgroundAnnealer.start`)."""
    calls: list[tuple[str, str, object]] = []

    def record(name: str) -> object:
        def call(problem: Problem, start: object, *args: object, **kwargs: object) -> Annealed:
            calls.append((name, threading.current_thread().name, kwargs.get("moves")))
            return Annealed(np.zeros(problem.graph.n, dtype=np.int64), math.inf, 1, 0.0)

        return call

    monkeypatch.setattr(background, "anneal_partition", record("anneal"))
    monkeypatch.setattr(
        background,
        "spread_start",
        lambda problem, seed: calls.append(("spread", threading.current_thread().name, None)),
    )
    problem = Problem(mtpp.layered_graph(60, seed=6), 4)
    best = np.zeros(problem.graph.n, dtype=np.int64)
    run = SimpleNamespace(problem=problem, lb=10.0, ub=100.0, ub_hi=100.0, best_eval=SimpleNamespace(assignment=best))
    clock = iter(range(4, -1, -1))
    annealer = background.BackgroundAnnealer(fake_call([run], lambda: float(next(clock, 0))))  # type: ignore[arg-type]
    annealer.start()
    waited = time.monotonic() + 30.0
    while len(calls) < 3 and time.monotonic() < waited:  # the thread's first cycle (stop() may not pre-empt it)
        time.sleep(0.01)
    annealer.stop()
    here = threading.current_thread().name
    assert calls[:2] == [("spread", here, None), ("anneal", here, 1)]  # one move: what compiles
    assert any(thread == "mtpp-background-anneal" for _, thread, _ in calls[2:])  # then the thread anneals


def test_fresh_starts_escape_the_one_block_trap() -> None:
    # IO dominates this layered graph: certify's searches kept one block (all the work) at
    # k = 8, and annealing from it cannot move (only a sink may take another label); the
    # ideal DP proves a partition into eight blocks below it
    problem = Problem(mtpp.layered_graph(50, seed=5), 8)
    work = float(problem.graph.work.sum())
    optimum = mtpp.certify(problem).upper_bound
    assert optimum < work
    one = anneal_partition(problem, np.zeros(problem.graph.n, dtype=np.int64), moves=200_000)
    assert one is not None and one.bottleneck == work
    fresh = [anneal_partition(problem, spread_start(problem, s), moves=200_000, seed=s) for s in range(10)]
    found = min(r.bottleneck for r in fresh if r is not None)
    assert optimum <= found < work


def test_cycles_count_moves_on_small_graphs_only(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[int, object] = {}

    def nothing_better(on: SimpleNamespace, start: object, *args: object, **kwargs: object) -> Annealed:
        seen[on.graph.n] = kwargs.get("moves")
        return Annealed(np.zeros(1, dtype=np.int64), math.inf, 1, 0.0)

    monkeypatch.setattr(background, "anneal_partition", nothing_better)
    for n in (50, 127, 128, 500):
        run = SimpleNamespace(
            problem=SimpleNamespace(k=4, graph=SimpleNamespace(n=n)),
            lb=1.0,
            ub=2.0,
            best_eval=SimpleNamespace(assignment=None),
        )
        background.BackgroundAnnealer(fake_call([run], lambda: 10.0))._cycle(run, 2.0)  # type: ignore[arg-type]
    # 8 n^3 moves while below the counted cycle's cap (2^24); from 128 ops the two-second cycle
    assert seen == {50: 8 * 50**3, 127: 8 * 127**3, 128: None, 500: None}
