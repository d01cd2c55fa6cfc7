"""The state of one :func:`mtpp.certify` call: its options and budget (:class:`Call`) and,
for each k, the best partition and the bound records so far (:class:`Run`); the rules
every method follows to share what it finds: a partition for k blocks is one for every
larger k (:func:`share_partition`), a bound for k holds for every smaller k
(:func:`share_lower_bounds`), and a method that breaks costs only its own record
(:func:`recorded_failure`)."""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from mtpp.core.budget import Budget
from mtpp.core.evaluate import Evaluation, evaluate
from mtpp.core.problem import Problem
from mtpp.core.records import BOUND_METHODS, OPTIMALITY_TOLERANCE, BoundRecord, closes, skipped

if TYPE_CHECKING:
    from heuristics.partition.anneal import Annealed

MIN_RUN_SECONDS = 0.5
"""A method is skipped when less than this is left of its share of the budget."""
FINAL_RESERVE = 1.0
"""Seconds of a budget the last partition search keeps back for lifting and re-checking the partitions."""
QUICK_ORDERER = "kahn"
"""The first partition of every k: one SliceGraph pass over Kahn's order, milliseconds."""

_ADOPT_LOCK = threading.Lock()


@dataclass(frozen=True)
class Options:
    """The arguments of one certify call that its methods read (checked by
    :func:`mtpp.certify`)."""

    methods: tuple[str, ...]
    solver: str
    time_limit: float
    threads: int
    n_jobs: int
    orderer: str
    seed: int
    max_ideals: int
    fill_budget: bool
    many: bool
    """Several ks were asked for: report lines say which k."""


@dataclass(eq=False)
class Run:
    """The state of one k during a certify call: the best partition (re-checked by the
    evaluator), its order and where it came from, the bound records and notes, and what
    the partition methods share (the orders every search found, the cost of one DP)."""

    problem: Problem
    best_eval: Evaluation
    best_order: np.ndarray
    source: str
    records: list[BoundRecord]
    notes: list[str]
    interrupted: bool = False
    decode_seconds: float = 0.0
    """What one SliceGraph DP costs at this k: the first partition's time (its time limit
    if the DP was cut off there); the searches are sized by it."""
    found: list[np.ndarray] = field(default_factory=list)
    """The best order of every partition search at this k, for the multi-order DP."""
    implied: dict[str, str] = field(default_factory=dict)
    """Methods skipped at this k, and why: another method already proved their bound, or
    the smallest MIP showed theirs out of reach."""

    @property
    def k(self) -> int:
        return self.problem.k

    @property
    def ub(self) -> float:
        return self.best_eval.bottleneck

    @property
    def ub_hi(self) -> float:
        """The upper bound rounded up by the evaluator's bound on its rounding error."""
        return self.best_eval.upper_bound

    @property
    def proving(self) -> float:
        """A lower bound that reaches this proves the partition optimal (:func:`mtpp.core.records.closes`)."""
        return self.ub_hi * (1.0 - 0.5 * OPTIMALITY_TOLERANCE)

    @property
    def lb(self) -> float:
        return max(r.bound for r in self.records if r.bound is not None)

    @property
    def closed(self) -> bool:
        """Whether the best bound proves the partition optimal."""
        return closes(self.lb, self.ub_hi)

    @property
    def gap(self) -> float:
        """The relative gap ``1 - LB / UB``."""
        return 1.0 - self.lb / self.ub_hi

    def adopt(self, candidate: Evaluation, order: np.ndarray, source: str) -> bool:
        """Take ``candidate`` (already re-checked at this k) if it is better (one at a time:
        the background annealing adopts from its own thread)."""
        with _ADOPT_LOCK:
            if candidate.bottleneck >= self.best_eval.bottleneck:
                return False
            self.best_eval, self.best_order, self.source = candidate, order, source
            return True


class Call:
    """One certify call: its :class:`Options`, its :class:`~mtpp.core.budget.Budget`, the
    problem of each k and its :class:`Run` (increasing k), and the method objects of its
    plan by class (:meth:`method`), where one method reads another's state."""

    def __init__(self, options: Options, budget: Budget, base: Problem, problems: list[Problem]) -> None:
        self.options = options
        self.budget = budget
        self.base = base
        """The problem every k shares (after presolve), with the first k."""
        self.problems = problems
        """One problem per k, increasing; their runs are added by the first partition."""
        self.runs: list[Run] = []
        self.relay: Any = None  # the background annealer, while it runs: report lines go through it
        self._methods: dict[type, Any] = {}

    def left(self) -> float:
        return self.budget.left()

    @property
    def budgeted(self) -> bool:
        return self.budget.limited

    def say(self, line: str) -> None:
        """Report a line (through the background annealer while it runs, so that its own
        lines come first and none is lost)."""
        if self.relay is not None:
            self.relay.relay(line)
        else:
            self.budget.say(line)

    def tag(self, problem: Problem) -> str:
        """The prefix of a report line about ``problem``'s k."""
        return f"k={problem.k}: " if self.options.many else ""

    def open_runs(self) -> list[Run]:
        """The ks not yet proven optimal."""
        return [r for r in self.runs if not r.closed]

    def register(self, method: Any) -> None:
        self._methods[type(method)] = method

    def method(self, kind: type) -> Any:
        """The plan's method of class ``kind`` (its state), or ``None``."""
        return self._methods.get(kind)


def open_runs_or_skip(call: Call, method: str, limit: float) -> tuple[list[Run], float]:
    """The runs not yet proven optimal, and ``limit``; a skip record for ``method`` in
    every other run, and in every run (no runs returned) when ``limit`` is below
    :data:`MIN_RUN_SECONDS`."""
    runs = call.open_runs()
    for run in call.runs:
        if run not in runs:
            run.records.append(skipped(method, "the partition is already proven optimal"))
    if runs and limit < MIN_RUN_SECONDS:
        for run in runs:
            run.records.append(skipped(method, "the budget is spent"))
        return [], limit
    return runs, limit


@contextmanager
def recorded_failure(runs: Sequence[Run], say: Any, *methods: str) -> Iterator[None]:
    """Run one step of ``methods``; an exception inside it (a bug in that method: the
    methods record their own solver failures) becomes an ``error`` record of each
    bound method at every k where it had not recorded one yet (a note otherwise), and
    the call goes on with what it has: no finished partition or bound is lost."""
    t0 = time.perf_counter()
    try:
        yield
    except Exception as exc:
        message = f"internal error: {type(exc).__name__}: {exc}"
        for run, method in itertools.product(runs, methods):
            if method not in BOUND_METHODS or any(r.method == method for r in run.records):
                run.notes.append(f"{method}: {message}")
            else:
                run.records.append(
                    BoundRecord(
                        method=method,
                        bound=None,
                        status="error",
                        proven_optimal=False,
                        wall_time=time.perf_counter() - t0,
                        message=message,
                    )
                )
        say(f"{', '.join(methods)}: {message}")


def share_partition(call: Call, run: Run, found: Evaluation, order: np.ndarray, source: str, say: Any = None) -> bool:
    """Adopt a partition found at ``run``'s k there (saying so if it is better) and, re-checked,
    at every larger k: a partition into at most k blocks is one into more.  Whether it was
    better at ``run``'s k.  ``say``: where the line goes (default the call's report)."""
    say = call.say if say is None else say
    better = run.adopt(found, order, source)
    if better:
        say(f"{call.tag(run.problem)}partition: {source}: upper bound {run.ub:.6g}")
    for other in call.runs:
        if other.problem.k > run.problem.k:
            other.adopt(
                evaluate(other.problem, found.assignment, order), order, f"{source}, found for k={run.problem.k}"
            )
    return better


def share_annealed(call: Call, run: Run, res: Annealed, source: str, say: Any = None) -> bool:
    """Re-check an annealed partition and share it (:func:`share_partition`), its order (block by
    block, so its blocks are segments of it) joining the others for the multi-order DP.  Whether
    it was better at ``run``'s k."""
    problem = run.problem
    found = evaluate(problem, res.assignment)
    order = np.asarray(problem.graph.topological_order, dtype=np.int64)
    order = order[np.argsort(res.assignment[order], kind="stable")]
    run.found.append(order)
    return share_partition(call, run, found, order, f"{source} ({res.moves:,} moves)", say)


def share_lower_bounds(runs: list[Run]) -> None:
    """Give each k the best lower bound proven for a larger k (``OPT`` does not
    increase with k), recorded with the k that proved it."""
    for i, run in enumerate(runs):
        donors = [
            (r.bound, r, other.problem.k)
            for other in runs[i + 1 :]
            for r in other.records
            if r.bound is not None and r.from_k is None
        ]
        if not donors:
            continue
        bound, record, from_k = max(donors, key=lambda d: d[0])
        if bound > run.lb:
            run.records.append(
                record.model_copy(
                    update={
                        "from_k": from_k,
                        "wall_time": 0.0,
                        "message": f"proven for k={from_k}; OPT does not increase with k",
                    }
                )
            )


def gap_part(run: Run, waiting: list[Run], stop: float) -> float:
    """The seconds until ``stop`` that ``run``'s gap earns among the gaps of the ks ``waiting``
    (``run`` among them) for a resumed bound: what one k leaves goes to the next."""
    return (stop - time.perf_counter()) * run.gap / sum(other.gap for other in waiting)


def finite(seconds: float) -> float | None:
    """``seconds`` as a solver's time limit: ``None`` for ``inf``."""
    return None if math.isinf(seconds) else seconds
