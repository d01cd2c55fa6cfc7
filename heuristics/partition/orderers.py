"""Orderers: the ways SliceGraph searches over topological orders (Section 4.2, App. C.1).

Every orderer works in priority space: it produces node priorities, Kahn's
algorithm (Algorithm 3) turns them into an order, and SliceGraph slices the order.
One interface, :class:`Orderer`: ``orderer(problem, seed=..., time_limit=...,
progress=...) -> OrderSearch``.  Names accepted by :func:`get_orderer`:

``kahn``
    all priorities equal: Kahn by node index.
``dfs`` / ``bfs``
    depth-first / breadth-first Kahn (:mod:`heuristics.traversal`).
``random-T``
    T i.i.d. uniform priority vectors, the best sliced order kept (``random`` = random-100).
``brkga-N``
    BRKGA on the sliced bottleneck (Algorithm 2) with about N evaluations,
    population = generations = sqrt(N) (``brkga`` = brkga-10000 = 100 x 100).  The
    first population is seeded with the kahn, dfs and bfs priorities, so it never
    does worse than those.
``mla`` / ``mla-weighted`` (optionally ``-N``)
    BRKGA on the linear-arrangement objective (:mod:`heuristics.partition.mla`), 10000
    evaluations by default; the best arrangement is then sliced.
``topoformer`` / ``topoformer-sample[-N]`` / ``topoformer-beam[-N]``
    the learned Topoformer policy (:mod:`heuristics.neural`, needs ``mtpp[neural]``):
    its greedy order, the best of N sampled orders (Eq. 8, default 16) or of a beam
    of width N, each scored by the sliced bottleneck.  Weights: the shipped
    ``topoformer-mtpp`` unless ``weights`` names another file.
``regal-brkga[-N]``
    BRKGA whose mutant distributions the REGAL GNN predicts (weights ``regal-mtpp``
    by default), N evaluations (default 10000), seeded with the kahn, dfs and bfs orders like ``brkga``.
``topoformer-brkga[-N]``
    the same BRKGA with mutants drawn around the Topoformer policy's priorities
    (:mod:`heuristics.neural.prior_mutants`, weights ``topoformer-mtpp`` by default).

All are seeded and reproducible.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from heuristics.brkga import BrkgaParams, Decoder, Progress, brkga, decode_until
from heuristics.kahn import kahn_order, priorities_for
from heuristics.partition.mla import mla_fitness
from heuristics.partition.slicegraph import Segmentation, sort_and_slice
from heuristics.traversal import bfs_order, classic_priorities, dfs_order
from mtpp.core.errors import InvalidParameterError
from mtpp.core.problem import Problem

RANDOM_BATCH = 64


@dataclass(frozen=True)
class OrderSearch:
    """What an orderer found: its best priorities, the Kahn order they give, the
    number of orders it decoded, and the objective it minimised with its history.
    ``split``: the optimal slicing of ``order`` where the search already computed it
    (the bottleneck searches), so the caller need not slice it again.  ``note``: why a
    learned orderer fell back to its classical counterpart (``"fell back to ...: <reason>"``)."""

    priorities: np.ndarray
    order: np.ndarray
    evaluations: int
    objective: str
    history: tuple[float, ...] = ()
    stopped_by_time: bool = False
    split: Segmentation | None = None
    note: str = ""


class BestSplit:
    """A bottleneck decoder that remembers the best slicing it has seen; each decode
    stops at the search's ``deadline`` (a row it cuts off counts as ``inf``)."""

    def __init__(self, problem: Problem, time_limit: float | None) -> None:
        self.problem = problem
        self.deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
        self.best: Segmentation | None = None

    def __call__(self, keys: np.ndarray, ub: float) -> np.ndarray:
        fit, seg = sort_and_slice(self.problem, keys, upper_bound=ub, deadline=self.deadline)
        if seg is not None and (self.best is None or seg.bottleneck < self.best.bottleneck):
            self.best = seg
        return fit

    def search(self, keys: np.ndarray, evaluations: int, history: tuple[float, ...], stopped: bool) -> OrderSearch:
        """The :class:`OrderSearch` of a search whose best priorities are ``keys``:
        the remembered slicing's order (the same value) where there is one."""
        best = self.best
        order = kahn_order(self.problem.graph, keys) if best is None else best.order
        return OrderSearch(keys, order, evaluations, "bottleneck", history, stopped, best)


class Orderer(Protocol):
    def __call__(
        self, problem: Problem, *, seed: int, time_limit: float | None, progress: Progress | None
    ) -> OrderSearch: ...


def _fixed(make_order: Callable[[Problem], np.ndarray]) -> Orderer:
    def run(problem: Problem, *, seed: int, time_limit: float | None, progress: Progress | None) -> OrderSearch:
        order = make_order(problem)
        return OrderSearch(priorities_for(order), order, evaluations=1, objective="none")

    return run


def random_orderer(samples: int) -> Orderer:
    """random-T: best of ``samples`` uniform priority vectors (App. C.1)."""

    def run(problem: Problem, *, seed: int, time_limit: float | None, progress: Progress | None) -> OrderSearch:
        rng = np.random.default_rng(seed)
        decode = BestSplit(problem, time_limit)
        deadline = decode.deadline
        best_keys, best, done = None, math.inf, 0
        history = []
        while done < samples:
            keys = rng.random((min(RANDOM_BATCH, samples - done), problem.graph.n))
            fit, count = decode_until(decode, keys, best, deadline)  # a large graph's batch stops at the limit
            keys, fit = keys[:count], fit[:count]
            done += count
            i = int(np.argmin(fit))
            if fit[i] < best or best_keys is None:
                best, best_keys = float(fit[i]), keys[i]
            history.append(best)
            if progress is not None:
                progress(done, samples, best)
            if time.perf_counter() >= deadline:
                break
        assert best_keys is not None
        return decode.search(best_keys, done, tuple(history), done < samples)

    return run


def brkga_orderer(evaluations: int, objective: str = "bottleneck") -> Orderer:
    """BRKGA with about ``evaluations`` decodes on the sliced bottleneck (Algorithm 2)
    or on the ``mla`` / ``mla-weighted`` objective."""
    params = BrkgaParams.for_budget(evaluations)

    def run(problem: Problem, *, seed: int, time_limit: float | None, progress: Progress | None) -> OrderSearch:
        split = None
        decode: Decoder
        if objective == "bottleneck":
            decode = split = BestSplit(problem, time_limit)
            initial = classic_priorities(problem.graph)
        else:
            weighted = objective == "mla-weighted"

            def decode(keys: np.ndarray, ub: float) -> np.ndarray:
                return mla_fitness(problem, keys, weighted)

            initial = None
        res = brkga(
            decode, problem.graph.n, params, seed=seed, initial=initial, time_limit=time_limit, progress=progress
        )
        if split is not None:
            return split.search(res.keys, res.evaluations, res.history, res.stopped_by_time)
        return OrderSearch(
            res.keys,
            kahn_order(problem.graph, res.keys),
            res.evaluations,
            objective,
            res.history,
            res.stopped_by_time,
        )

    return run


FIXED: dict[str, Callable[[Problem], np.ndarray]] = {
    "kahn": lambda p: kahn_order(p.graph),
    "dfs": lambda p: dfs_order(p.graph),
    "bfs": lambda p: bfs_order(p.graph),
}


def topoformer_orderer(mode: str, count: int, weights: str | None) -> Orderer:
    """The learned Topoformer orderer (:func:`heuristics.neural.inference.topoformer_order`)
    on the sliced bottleneck of the problem."""

    def run(problem: Problem, *, seed: int, time_limit: float | None, progress: Progress | None) -> OrderSearch:
        start = time.perf_counter()
        from heuristics.neural.inference import topoformer_order
        from heuristics.neural.objectives import Bottleneck

        left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - start))  # torch's import
        objective = Bottleneck.of(problem)
        found = topoformer_order(problem.graph, objective, weights or "topoformer-mtpp", mode, count, seed, left)
        if progress is not None:
            progress(1, 1, found.cost)
        order, cost = found.order, (found.cost,)
        return OrderSearch(priorities_for(order), order, found.evaluations, "bottleneck", cost, note=found.note)

    return run


def learned_brkga_orderer(family: str, evaluations: int, weights: str | None) -> Orderer:
    """BRKGA with learned mutant distributions: the REGAL GNN's
    (:func:`heuristics.neural.regal.regal_brkga`, ``family = "regal-brkga"``) or the
    Topoformer priorities' (:func:`heuristics.neural.prior_mutants.topoformer_brkga`,
    ``"topoformer-brkga"``)."""

    def run(problem: Problem, *, seed: int, time_limit: float | None, progress: Progress | None) -> OrderSearch:
        start = time.perf_counter()
        from heuristics.neural.objectives import Bottleneck
        from heuristics.neural.weights import require_torch

        require_torch()
        from heuristics.neural.prior_mutants import topoformer_brkga
        from heuristics.neural.regal import MIN_TIME_LEFT, regal_brkga

        # importing torch (over a second) comes off the time limit like the search
        left = None if time_limit is None else max(time_limit - (time.perf_counter() - start), MIN_TIME_LEFT)
        search = regal_brkga if family == "regal-brkga" else topoformer_brkga  # None: the shipped <family>-mtpp
        res = search(
            problem.graph,
            Bottleneck.of(problem),
            weights or None,
            evaluations,
            seed=seed,
            time_limit=left,
            progress=progress,
        )
        return OrderSearch(
            res.keys, res.order, res.evaluations, "bottleneck", (res.cost,), res.stopped_by_time, note=res.note
        )

    return run


_PATTERN = re.compile(
    r"^(random|brkga|mla|mla-weighted|topoformer-sample|topoformer-beam|topoformer-brkga|regal-brkga)(?:-(\d+))?$"
)
DEFAULT_BUDGET = {
    "random": 100,
    "brkga": 10000,
    "mla": 10000,
    "mla-weighted": 10000,
    "topoformer-sample": 16,
    "topoformer-beam": 16,
    "topoformer-brkga": 10000,
    "regal-brkga": 10000,
}
ORDERER_NAMES = (
    "kahn",
    "dfs",
    "bfs",
    "random-T",
    "brkga-N",
    "mla[-N]",
    "mla-weighted[-N]",
    "topoformer",
    "topoformer-sample[-N]",
    "topoformer-beam[-N]",
    "topoformer-brkga[-N]",
    "regal-brkga[-N]",
)
LEARNED = ("topoformer", "regal-brkga")


def with_budget(name: str, evaluations: int) -> str | None:
    """The orderer of ``name``'s family with ``evaluations`` evaluations (samples for
    ``topoformer-sample`` / ``-beam``) or its own budget if larger, or ``None`` for an
    orderer without a budget (``kahn``, ``dfs``, ``bfs``, ``topoformer``)."""
    match = _PATTERN.match(name)
    if match is None:
        return None
    own = int(match.group(2) or DEFAULT_BUDGET[match.group(1)])
    return f"{match.group(1)}-{max(own, evaluations)}"


def get_orderer(name: str, weights: str | None = None) -> Orderer:
    """The orderer called ``name`` (see the module docstring for the names); ``weights``
    (a path or shipped name) replaces the default weights of a learned orderer."""
    if weights is not None and not name.startswith(LEARNED):
        raise InvalidParameterError(f"orderer {name!r} has no weights; only {', '.join(LEARNED)}* do")
    if name in FIXED:
        return _fixed(FIXED[name])
    if name == "topoformer":
        return topoformer_orderer("greedy", 1, weights)
    match = _PATTERN.match(name)
    if match is None:
        raise InvalidParameterError(f"unknown orderer {name!r}; choose from {', '.join(ORDERER_NAMES)}")
    family, budget = match.group(1), int(match.group(2) or DEFAULT_BUDGET[match.group(1)])
    if budget < 1:
        raise InvalidParameterError(f"orderer {name!r} needs a budget >= 1")
    if family == "random":
        return random_orderer(budget)
    if family in ("regal-brkga", "topoformer-brkga"):
        return learned_brkga_orderer(family, budget, weights)
    if family.startswith("topoformer"):
        return topoformer_orderer(family.removeprefix("topoformer-"), budget, weights)
    return brkga_orderer(budget, "bottleneck" if family == "brkga" else family)
