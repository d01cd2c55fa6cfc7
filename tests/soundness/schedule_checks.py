"""Soundness of ``mtpp.schedule`` on one fresh tiny graph per seed (issue 73), for
``tests/soundness/test_schedule_soundness.py`` and ``benchmarks/soundness.py``.

:func:`schedule_findings` draws a graph of at most :data:`MAX_N` ops from the seed
(sizes of every scale from ``1e-3`` to ``1e12`` in one graph, zero-size tensors and
parameters, sizes a hair off an integer and below ``1e-9``, which the CP-SAT scaling
rounds either way), computes the minimum peak by enumerating every topological order
in exact arithmetic (the sizes as integers over one power-of-two denominator), and
checks against it:

* ``mtpp.schedule`` with every method of :data:`mtpp.scheduling.METHODS` (the ones that
  need torch only where it imports): no exception, a topological order, ``upper_bound
  == peak`` at least the exact peak of the returned order (so at least the optimum),
  ``lower_bound`` and every stage's bound at most the optimum, no failed stage, and
  ``optimal`` only when the order's exact peak is within ``REL_TOL`` of the optimum;
* the bound methods that the pipeline rarely reaches on tiny graphs (it proves them
  optimal first), called directly: the local, forced-live and min-cut bounds, the
  state DP (exact, beams of 1 and 2, pruned by a known order), the best-first search
  (forward, backward, without free moves, with a memory cap that stops it at once)
  and the CP-SAT model with the tightest valid rows (``C >=`` the optimum rounded
  down, ``C <=`` the optimal order's model peak), whose bound, mapped back, must stay
  at or below the optimum.

Each finding is one line naming the seed, the method and both numbers (``draw_graph(seed)``
rebuilds the graph, ``draw_graph(seed).to_json()`` for a report); an empty list means
the seed found nothing.
"""

from __future__ import annotations

import importlib.util
import math
import random
import traceback
from collections.abc import Callable, Collection
from fractions import Fraction

import numpy as np

import mtpp
from mtpp.core.memory import REL_TOL
from mtpp.scheduling import LEARNED, LEARNED_BRKGA, METHODS
from tests.oracle import ExactPeak

MAX_N = 7
TIME_LIMITS = (0.02, 0.2, 2.0)  # seconds per schedule call, drawn (the shortest stop some methods early)
TIME_LIMIT = 2.0  # seconds for CP-SAT called directly (tiny graphs finish far sooner)
TORCH_METHODS = (*LEARNED, *LEARNED_BRKGA)
REL = Fraction(REL_TOL)


def torch_available() -> bool:
    """Whether torch imports (the learned methods of :data:`TORCH_METHODS` need it)."""
    if importlib.util.find_spec("torch") is None:
        return False
    try:
        import torch  # noqa: F401
    except Exception:  # a broken install counts as none
        return False
    return True


def runnable_methods() -> tuple[str, ...]:
    """Every schedule method that can run here."""
    skip = () if torch_available() else TORCH_METHODS
    return tuple(m for m in METHODS if m not in skip)


# ---------------------------------------------------------------- graphs
FAMILIES = ("mixed", "mixed", "integral", "one-scale", "tiny")
"""Drawn uniformly: ``mixed``, every size at its own scale in 1e-3 .. 1e12; ``integral``,
integers with values a hair off an integer or at most ``1e-9``; ``one-scale``, one
scale for every size; ``tiny``, every size at most ``1e-9`` (all of them "integral"
at scale 1 for CP-SAT's scaling, so the model rounds every one of them to 0)."""


def _size(rng: random.Random, family: str, unit: float) -> float:
    """One size of ``family`` (:data:`FAMILIES`): zero in 15% of the draws; else a
    value a hair off an integer (within ``1e-9`` relative) or at most ``1e-9``, the
    values CP-SAT's scaling rounds up and down
    (:func:`formulations.schedule.integer_scale` calls them integral); else a decimal."""
    r = rng.random()
    if r < 0.15:
        return 0.0
    if family == "tiny" or (r < 0.3 if family == "integral" else r < 0.2):
        return rng.uniform(0.0, 1e-9) if rng.random() < 0.8 else rng.uniform(0.0, 1e-12)
    if r < 0.35:
        k = rng.randint(1, 10 ** rng.randint(0, 12))
        return float(k + rng.uniform(-1.0, 1.0) * 1e-9 * k)
    if family == "integral":
        return float(rng.randint(1, 10 ** rng.randint(1, 3)))
    scale = 10.0 ** rng.randint(-3, 12) if family == "mixed" else unit
    return round(rng.uniform(0.0, 10.0), rng.choice([0, 1, 2, 6])) * scale


def draw_graph(seed: int) -> mtpp.Graph:
    """A random DAG of 1 .. :data:`MAX_N` ops from ``seed``: edges with a random density,
    sizes of one of :data:`FAMILIES`, node ids shuffled strings."""
    rng = random.Random(seed)
    n = rng.randint(1, MAX_N)
    perm = list(range(n))
    rng.shuffle(perm)
    p = rng.choice([0.2, 0.45, 0.7])
    edges = [(perm[i], perm[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    family, unit = rng.choice(FAMILIES), 10.0 ** rng.randint(-3, 12)
    out = [_size(rng, family, unit) for _ in range(n)]
    param = [_size(rng, family, unit) for _ in range(n)]
    work = [rng.uniform(0.0, 10.0) for _ in range(n)]
    ids = [f"op{x}" for x in rng.sample(range(100), n)]
    return mtpp.Graph.from_arrays(work, param, out, edges, ids=ids, name=f"fuzz-{seed}-{family}")


# ---------------------------------------------------------------- exact truth
def float_below(q: Fraction) -> float:
    """The largest float at or below ``q`` (a valid bound when ``q`` is the optimum)."""
    f = float(q)
    return math.nextafter(f, -math.inf) if Fraction(f) > q else f


# ---------------------------------------------------------------- checks
def _schedule_checks(tag: str, s: mtpp.Schedule, exact: ExactPeak, opt: Fraction) -> list[str]:
    found = []
    if not exact.is_order(s.index_order):
        return [f"{tag}: the returned order is not a topological order of every op: {s.index_order.tolist()}"]
    true = exact.peak(s.index_order)
    ub, lb = Fraction(s.upper_bound), Fraction(s.lower_bound)
    if s.peak != s.upper_bound:
        found.append(f"{tag}: peak {s.peak!r} differs from upper_bound {s.upper_bound!r}")
    if ub < true:
        found.append(f"{tag}: upper bound {s.upper_bound!r} below the exact peak {float(true)!r} of its order")
    if ub < opt:
        found.append(f"{tag}: upper bound {s.upper_bound!r} below the optimum {float(opt)!r}")
    if lb > opt:
        found.append(f"{tag}: lower bound {s.lower_bound!r} ({s.bound_method}) above the optimum {float(opt)!r}")
    if s.optimal and true > opt * (1 + REL):
        found.append(f"{tag}: called optimal, but its order's exact peak {float(true)!r} > optimum {float(opt)!r}")
    if s.optimal != (s.status == "optimal"):
        found.append(f"{tag}: optimal {s.optimal} disagrees with status {s.status!r}")
    for st in s.stages:
        if st.status == "error":
            found.append(f"{tag}: stage {st.method} failed: {st.detail}")
        if Fraction(st.lower_bound) > opt:
            found.append(f"{tag}: stage {st.method} bound {st.lower_bound!r} above the optimum {float(opt)!r}")
        if math.isfinite(st.peak) and Fraction(st.peak) < opt:
            found.append(f"{tag}: stage {st.method} peak {st.peak!r} below the optimum {float(opt)!r}")
    return found


def _bound_checks(tag: str, graph: mtpp.Graph, exact: ExactPeak, opt: Fraction, best: tuple[int, ...]) -> list[str]:
    """The bound methods called directly (module docstring)."""
    from formulations.schedule import build_schedule
    from heuristics.peak_memory.best_first import best_first_search
    from heuristics.peak_memory.orders import traversal_order
    from heuristics.peak_memory.state_dp import state_dp
    from mtpp.bounds.peak_cut import cut_live_bound
    from mtpp.bounds.peak_memory import forced_live_bound
    from mtpp.core.memory import local_lower_bound
    from mtpp.scheduling import _cpsat_lower
    from solvers.cpsat_schedule import solve_schedule
    from solvers.result import Status

    found: list[str] = []
    top = opt * (1 + REL)

    def bound(name: str, value: float) -> None:
        if Fraction(value) > opt:
            found.append(f"{tag}: {name} bound {value!r} above the optimum {float(opt)!r}")

    def searched(name: str, order: np.ndarray, lower: float, optimal: bool) -> None:
        bound(name, lower)
        if not exact.is_order(order):
            found.append(f"{tag}: {name} returned a non-topological order {np.asarray(order).tolist()}")
            return
        if optimal and exact.peak(order) > top:
            found.append(f"{tag}: {name} called its order optimal at {float(exact.peak(order))!r} > {float(opt)!r}")

    def run(name: str, call: Callable[[], None]) -> None:
        try:
            call()
        except Exception as exc:
            found.append(f"{tag}: {name} raised {type(exc).__name__}: {exc} | {traceback.format_exc(limit=-2)!r}")

    run("local", lambda: bound("local", local_lower_bound(graph)))
    run("forced-live", lambda: bound("forced-live", forced_live_bound(graph)))
    run("cut-live", lambda: bound("cut-live", cut_live_bound(graph)))
    dfs = traversal_order(graph, "dfs").order

    def dp() -> None:
        for width in (None, 1, 2):
            r = state_dp(graph, beam_width=width)
            searched(f"state_dp(width={width})", r.order, r.lower_bound, r.exact)
        r = state_dp(graph, upper_order=dfs)
        searched("state_dp(upper=dfs)", r.order, r.lower_bound, r.exact)

    def search() -> None:
        for backward, free in ((False, True), (True, True), (False, False)):
            r = best_first_search(graph, dfs, memory_mb=2, backward=backward, free_moves=free)
            searched(f"best_first(backward={backward}, free={free})", r.order, r.lower_bound, r.optimal)
        r = best_first_search(graph, dfs, memory_mb=1e-4)
        searched("best_first(memory cap)", r.order, r.lower_bound, r.optimal)

    def cpsat() -> None:
        for lower, upper in ((0.0, None), (float_below(opt), np.array(best, dtype=np.int64))):
            model = build_schedule(graph, lower_bound=lower, upper_order=upper)
            r = solve_schedule(model, hint=upper, time_limit=TIME_LIMIT, threads=1)
            name = f"cpsat(rows={'tight' if upper is not None else 'none'}, scale={model.scale:g})"
            if r.status in (Status.INFEASIBLE, Status.ERROR):
                found.append(f"{tag}: {name} says {r.status.value}: the rows cut off every order {r.message}")
                continue
            bound(name, _cpsat_lower(graph, model, r.bound))
            if r.order is not None and not exact.is_order(r.order):
                found.append(f"{tag}: {name} returned a non-topological order")

    run("state_dp", dp)
    run("best_first", search)
    run("cpsat", cpsat)
    return found


def schedule_findings(seed: int, *, methods: Collection[str] | None = None, bounds: bool = True) -> list[str]:
    """Every unsound finding on the graph drawn from ``seed`` (module docstring): a
    lower bound above the optimum, an upper bound below it or below the exact peak of
    the returned order, a false ``optimal``, a failed stage, an exception.  ``methods``
    (default: every one that can run here, :func:`runnable_methods`) limits the schedule
    methods; ``bounds=False`` skips the direct calls of the bound methods."""
    graph = draw_graph(seed)
    exact = ExactPeak(graph)
    opt, best = exact.optimum()
    rng = random.Random(seed ^ 0x5EED)
    found: list[str] = []
    for method in runnable_methods() if methods is None else methods:
        width, limit = rng.choice([None, 1, 2, 3]), rng.choice(TIME_LIMITS)
        tag = f"seed={seed} n={graph.n} method={method} beam_width={width} time_limit={limit}"
        try:
            s = mtpp.schedule(graph, method=method, time_limit=limit, seed=seed, beam_width=width)
        except Exception as exc:
            found.append(f"{tag}: raised {type(exc).__name__}: {exc} | {traceback.format_exc(limit=-2)!r}")
            continue
        found += _schedule_checks(tag, s, exact, opt)
    if bounds:
        found += _bound_checks(f"seed={seed} n={graph.n}", graph, exact, opt, best)
    return found
