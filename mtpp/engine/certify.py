"""``mtpp.certify``: a partition plus the lower-bound hierarchy of Section 3, for one or
several k within one budget.

The call runs the methods of :data:`mtpp.engine.plan.PLAN` in order, cheapest first
(``docs/budget.md``, generated from that table, says what each needs and how its share
of the budget is set): the first partitions, the combinatorial bounds of
:mod:`mtpp.bounds` and the ideal DP, the partition searches, the MIP bounds (the
solvers' *proven dual bounds*, never incumbents, on models scaled to ``O(1)`` data and
lowered by the margin each solver's own tolerances allow), then the last searches.
A bound above the re-checked upper bound is a failed method and is dropped; a claim of
optimality from a MIP is cross-checked on a second backend where that is cheap.

Several k in one call share bounds both ways: ``OPT(k)`` does not increase with k
(blocks may be empty), so a lower bound proven for ``k' >= k`` holds for ``k`` and a
partition for ``k'' <= k`` is one for ``k`` (re-checked by the evaluator at ``k``); a
shared bound's record says which k proved it (``from_k``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, overload

from heuristics.partition.ideals import DEFAULT_MAX_IDEALS
from heuristics.partition.orderers import get_orderer
from heuristics.partition.presolve import presolve as presolve_problem
from mtpp.core.budget import Budget, Report
from mtpp.core.errors import InvalidParameterError, entry_point
from mtpp.core.graph import Graph
from mtpp.core.problem import Problem
from mtpp.core.records import BOUND_METHODS, MIP_METHODS, SOLVER_METHODS
from mtpp.core.schema import Machine
from mtpp.core.validation import check_bool, check_count, check_instance, check_k, check_seed, check_time_limit
from mtpp.engine.call import QUICK_ORDERER, Call, Options
from mtpp.engine.certificate import Certificate, build_certificate
from mtpp.engine.plan import run_plan
from mtpp.partitioner import resolve_problem, warn_machine

if TYPE_CHECKING:
    from mtpp.core.devices import DeviceSpec

METHODS = BOUND_METHODS


def parse_bounds(bounds: str | Iterable[str]) -> tuple[str, ...]:
    """Normalise ``"all"``, a comma-separated string or a list of method names."""
    if isinstance(bounds, str):
        names = [b.strip() for b in bounds.split(",")]
    elif isinstance(bounds, Iterable) and all(isinstance(b, str) for b in bounds):
        names = list(bounds)
    else:
        raise InvalidParameterError(f"bounds must be 'all', a comma-separated string or a list of names: {bounds!r}")
    if names == ["all"]:
        return METHODS
    if not names or names == [""]:
        raise InvalidParameterError(
            f"bounds names no method; give 'all' or at least one of {', '.join(METHODS)} ('simple' always runs)"
        )
    unknown = [b for b in names if b not in METHODS]
    if unknown:
        raise InvalidParameterError(f"unknown bound method(s) {unknown}; choose from {', '.join(METHODS)} or 'all'")
    return tuple(m for m in METHODS if m in names)


def _check_solver(solver: str) -> None:
    """Fail fast on an unknown or missing solver, before any work is done."""
    from solvers.registry import get_backend

    get_backend(solver)


@overload
def certify(
    graph_or_problem: Graph | Problem,
    k: int | None = None,
    *,
    bounds: str | Iterable[str] = ...,
    solver: str = ...,
    time_limit: float = ...,
    budget: float | None = ...,
    threads: int = ...,
    n_jobs: int = ...,
    orderer: str = ...,
    seed: int = ...,
    bandwidth: float | None = ...,
    memory: float | None = ...,
    reserve: float | None = ...,
    peak_aware: bool | None = ...,
    device: str | DeviceSpec | Machine | None = ...,
    max_ideals: int = ...,
    report: Report | None = ...,
    presolve: bool = ...,
    fill_budget: bool = ...,
) -> Certificate: ...
@overload
def certify(
    graph_or_problem: Graph | Problem,
    k: Sequence[int],
    *,
    bounds: str | Iterable[str] = ...,
    solver: str = ...,
    time_limit: float = ...,
    budget: float | None = ...,
    threads: int = ...,
    n_jobs: int = ...,
    orderer: str = ...,
    seed: int = ...,
    bandwidth: float | None = ...,
    memory: float | None = ...,
    reserve: float | None = ...,
    peak_aware: bool | None = ...,
    device: str | DeviceSpec | Machine | None = ...,
    max_ideals: int = ...,
    report: Report | None = ...,
    presolve: bool = ...,
    fill_budget: bool = ...,
) -> list[Certificate]: ...
@entry_point
def certify(
    graph_or_problem: Graph | Problem,
    k: int | Sequence[int] | None = None,
    *,
    bounds: str | Iterable[str] = METHODS,
    solver: str = "auto",
    time_limit: float = 60.0,
    budget: float | None = None,
    threads: int = 1,
    n_jobs: int = 1,
    orderer: str = "brkga",
    seed: int = 0,
    bandwidth: float | None = None,
    memory: float | None = None,
    reserve: float | None = None,
    peak_aware: bool | None = None,
    device: str | DeviceSpec | Machine | None = None,
    max_ideals: int = DEFAULT_MAX_IDEALS,
    report: Report | None = None,
    presolve: bool = True,
    fill_budget: bool = True,
) -> Certificate | list[Certificate]:
    """Partition the graph and prove how good the partition is.

    ``k`` is one number of blocks (a :class:`Certificate` is returned) or a list of
    them (one certificate per k, in increasing k, sharing bounds across k).
    ``bounds`` selects the methods (``"all"`` or names from ``simple``, ``cut``,
    ``crossing``, ``clique``, ``reach``, ``ideal-dp``, ``pigeonhole``, ``bottleneck``, ``guess``, ``exact``;
    ``simple`` is always computed).  ``time_limit`` caps each MIP method and each
    partition search; ``budget`` (seconds, default none) caps the whole call, spent
    cheapest first (module docstring); what the methods leave of it goes to a last,
    larger partition search at the ks not proven optimal, in rounds until the budget is
    spent (``fill_budget=False``: return as soon as the methods are done).  After the
    searches (without a budget, or with one and ``fill_budget``) the multi-order DP cuts
    each open k's partition
    from the prefixes of the orders every search found, never worse than the best of
    them (each k at most ``time_limit``).
    ``max_ideals`` caps the ideal DP's lattice: a wider graph gets a ``too_wide``
    record and the MIPs go on.  ``threads`` goes to the solver; ``n_jobs`` runs
    guess-the-bottleneck's sub-MIPs in parallel.  ``solver`` is ``auto`` (Gurobi
    where its licence allows, else HiGHS, SCIP, CP-SAT), ``highs``, ``scip``,
    ``gurobi`` or ``cpsat``.  ``report(line)`` is called as each method finishes.
    Ctrl-C during a MIP keeps everything finished so far and returns the
    certificate with that method marked ``interrupted``.  ``presolve`` (default on)
    runs every method on the graph without the ops that provably cost nothing where
    they join their neighbour (:mod:`heuristics.partition.presolve`: the optimum is the same,
    every bound holds for the original), and lifts the partition back; the notes say
    what was removed.

    The machine (``bandwidth`` ``B``, ``memory`` ``M``) is, per figure: the one given,
    else ``device``'s (a preset name, a :class:`~mtpp.core.devices.DeviceSpec` or a
    :class:`~mtpp.core.schema.Machine`), else the graph's recorded
    :attr:`~mtpp.Graph.machine`, else ``B = 1`` and unlimited memory
    (:mod:`mtpp.core.machine`); the certificate's ``machine`` and a note say which.  A
    graph in bytes priced at ``B = 1`` gets a :class:`~mtpp.core.machine.MachineWarning`,
    repeated in the notes.
    """
    start = time.perf_counter()
    many = isinstance(k, Sequence) and not isinstance(k, str)
    ks = sorted({check_k(x) for x in k}) if many else [None if k is None else check_k(k)]  # type: ignore[union-attr]
    if not ks:
        raise InvalidParameterError("k must name at least one number of blocks")
    first = None if many and isinstance(graph_or_problem, Problem) else ks[0]  # a Problem's own k is replaced
    original, choice = resolve_problem(graph_or_problem, first, bandwidth, memory, reserve, peak_aware, device)
    warn_machine(choice)
    if many:  # k > n is the same problem as k = n (see Problem): one certificate for them
        ks = sorted({min(kk, original.graph.n) for kk in ks if kk is not None})
    check_bool("presolve", presolve)
    check_bool("fill_budget", fill_budget)
    methods = parse_bounds(bounds)
    time_limit = check_time_limit(time_limit)
    budget_seconds = None if budget is None else check_time_limit(budget, "budget")
    seed = check_seed(seed)
    threads = check_count("threads", threads)
    n_jobs = check_count("n_jobs", n_jobs)
    max_ideals = check_count("max_ideals", max_ideals)
    check_instance("solver", solver, str, "a solver name")
    check_instance("orderer", orderer, str, "an orderer name")
    if report is not None and not callable(report):
        raise InvalidParameterError(f"report must be a callable or None, got {report!r}")
    if any(m in SOLVER_METHODS for m in methods):
        _check_solver(solver)
    if orderer != QUICK_ORDERER:
        get_orderer(orderer)  # an unknown name fails before any work
    pre = presolve_problem(original) if presolve else None
    base = original if pre is None else pre.problem
    # ks that presolve made equal (k >= the reduced graph's ops) are one problem, asked for several times
    asked: dict[int | None, list[int | None]] = {}
    for kk in ks:
        asked.setdefault(None if kk is None else min(kk, base.graph.n), []).append(kk)
    problems = [base if group[0] is None else replace(base, k=group[0]) for group in asked.values()]
    options = Options(
        methods=methods,
        solver=solver,
        time_limit=time_limit,
        threads=threads,
        n_jobs=n_jobs,
        orderer=orderer,
        seed=seed,
        max_ideals=max_ideals,
        fill_budget=fill_budget,
        many=many,
    )
    call = Call(options, Budget(budget_seconds, start=start, report=report), base, problems)
    if pre is not None and pre.reduced:
        call.say(pre.summary())
    run_plan(call)
    if choice is not None:  # which machine priced it, first among the notes
        for run in call.runs:
            run.notes[:0] = [choice.describe(), *([choice.warning] if choice.warning else [])]
    certificates = [
        build_certificate(run, start, pre, kk) for run, group in zip(call.runs, asked.values()) for kk in group
    ]
    return certificates if many else certificates[0]


def export_models(problem: Problem, bounds: str | Iterable[str], directory: str | os.PathLike[str]) -> list[Path]:
    """Write the MIP(s) of each requested method as MPS files into ``directory``
    (guess-the-bottleneck gives one file per ``j``), so anyone can re-solve them
    with any solver.  The models are the plain formulations, without the fixings
    that depend on a particular upper bound.  Returns the paths written."""
    from formulations.bounds import build_models
    from solvers.mps import write_mps

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for method in (m for m in parse_bounds(bounds) if m in MIP_METHODS):
        for name, model in build_models(problem, method):
            path = out / f"{name}.mps"
            write_mps(model, path)
            paths.append(path)
    return paths
