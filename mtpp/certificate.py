"""``mtpp.certify``: a partition plus the lower-bound hierarchy of Section 3.

A :class:`Certificate` holds the best partition found (SliceGraph's, or an exact-MIP
incumbent if that is better; either way re-checked by :func:`mtpp.evaluate`) and
every lower bound computed for it, cheapest first:

``simple``      Lemma 3.3, always present, needs no solver;
``bottleneck``  three-superblock MIP (Section 3.2);
``guess``       guess-the-bottleneck, ``min_j`` of k sub-MIPs (Section 3.3);
``exact``       the MIP of Figure 3.

MIP bounds are the solvers' *proven dual bounds*, never incumbents, on models scaled
to ``O(1)`` data and lowered by the margin each solver's own tolerances allow
(:mod:`formulations.bounds`); a solve that stops at its time limit contributes the
bound it proved, and a solver that fails (an error, or "infeasible" for a model that
has solutions) only adds an ``error`` record: the simple bound always stands.

Defence in depth: a MIP bound above the re-checked upper bound is a solver failure
and is dropped (an ``error`` record says so); a claim of optimality from a MIP is
cross-checked with the exact MIP on a second backend where that is cheap, and when
two proofs disagree the smaller bound is reported and a note says so.

``optimal`` means ``LB >= (1 - OPTIMALITY_TOLERANCE) UB``: the partition is within a
relative ``5e-7`` of the optimum.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from mtpp.errors import InvalidParameterError, MtppError
from mtpp.evaluate import Evaluation, evaluate
from mtpp.graph import Graph
from mtpp.partitioner import as_problem, partition
from mtpp.problem import Problem, check_seed, check_time_limit

MIP_METHODS = ("bottleneck", "guess", "exact")
METHODS = ("simple", *MIP_METHODS)
OPTIMALITY_TOLERANCE = 5e-7
CROSS_CHECK_MAX_VARIABLES = 1500
"""Largest exact model (``y`` variables, ``n k``) whose optimality claim is re-proved on a second backend."""
CROSS_CHECK_TIME = 10.0

Report = Callable[[str], None]


class BoundRecord(BaseModel):
    """One lower bound: which method, how it ended, and what it proved."""

    model_config = ConfigDict(frozen=True)

    method: str
    bound: float | None
    status: str
    proven_optimal: bool
    solver: str | None = None
    solver_version: str | None = None
    wall_time: float = 0.0
    message: str = ""


class Certificate(BaseModel):
    """A partition (upper bound) and the lower bounds proven for it.

    The optimum lies in ``[lower_bound, upper_bound]``; ``ratio`` is their quotient
    and ``gap_percent`` is ``100 (UB - LB) / UB``.  ``optimal`` is true when the gap
    is within ``OPTIMALITY_TOLERANCE`` (relative).  ``notes`` say how the bounds were
    obtained, and record any disagreement between proofs.
    """

    model_config = ConfigDict(frozen=True)

    mtpp_version: str
    graph: str | None
    n: int
    m: int
    k: int
    bandwidth: float
    memory: float | None
    reserve: float
    peak_aware: bool
    upper_bound: float
    partition_source: str
    assignment: dict[str, int]
    order: list[str]
    block_costs: list[float]
    bounds: list[BoundRecord]
    lower_bound: float
    lower_bound_method: str
    ratio: float
    gap_percent: float
    optimal: bool
    wall_time: float
    notes: list[str]

    def bound(self, method: str) -> BoundRecord | None:
        """The record of ``method``, if it was computed."""
        return next((b for b in self.bounds if b.method == method), None)


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
    unknown = [b for b in names if b not in METHODS]
    if unknown:
        raise InvalidParameterError(f"unknown bound method(s) {unknown}; choose from {', '.join(METHODS)} or 'all'")
    return tuple(m for m in METHODS if m in names)


def _check_solver(solver: str) -> None:
    """Fail fast on an unknown or missing solver, before any work is done."""
    from solvers.registry import get_backend

    get_backend(solver)


def certify(
    graph_or_problem: Graph | Problem,
    k: int | None = None,
    *,
    bounds: str | Iterable[str] = METHODS,
    solver: str = "auto",
    time_limit: float = 60.0,
    threads: int = 1,
    n_jobs: int = 1,
    orderer: str = "brkga",
    seed: int = 0,
    bandwidth: float | None = None,
    memory: float | None = None,
    reserve: float | None = None,
    peak_aware: bool | None = None,
    report: Report | None = None,
) -> Certificate:
    """Partition the graph and prove how good the partition is.

    ``bounds`` selects the methods (``"all"`` or names from ``simple``,
    ``bottleneck``, ``guess``, ``exact``; ``simple`` is always computed).
    ``time_limit`` is the budget in seconds of *each* MIP method; ``threads`` goes
    to the solver; ``n_jobs`` runs guess-the-bottleneck's sub-MIPs in parallel.
    ``solver`` is ``auto`` (Gurobi where its licence allows, else HiGHS, SCIP,
    CP-SAT), ``highs``, ``scip``, ``gurobi`` or ``cpsat``.  ``report(line)`` is
    called as each method finishes.  Ctrl-C during a MIP keeps everything finished
    so far and returns the certificate with that method marked ``interrupted``.
    """
    import mtpp

    start = time.perf_counter()
    problem = as_problem(graph_or_problem, k, bandwidth, memory, reserve, peak_aware)
    methods = parse_bounds(bounds)
    time_limit = check_time_limit(time_limit)
    seed = check_seed(seed)
    if any(m in MIP_METHODS for m in methods):
        _check_solver(solver)
    say = report or (lambda line: None)

    sol = partition(problem, orderer=orderer, seed=seed)
    best_eval, best_order = sol.evaluation, sol.order
    source = f"slicegraph ({sol.orderer}, seed {seed})"
    say(f"partition: {source}: upper bound {sol.bottleneck:.6g}")
    records = [BoundRecord(method="simple", bound=sol.lower_bound, status="optimal", proven_optimal=True)]
    say(f"simple: {sol.lower_bound:.6g}")

    notes = _notes(problem)
    for method in (m for m in methods if m in MIP_METHODS):
        best_lb = max(r.bound for r in records if r.bound is not None)
        if _closes(best_lb, best_eval.bottleneck):
            records.append(BoundRecord(method=method, bound=None, status="skipped", proven_optimal=False,
                                       message="the partition is already proven optimal"))  # fmt: skip
            continue
        record, incumbent = _run_mip(problem, method, solver, time_limit, threads, n_jobs, best_eval.bottleneck,
                                     best_eval.assignment, seed)  # fmt: skip
        if incumbent is not None and incumbent.bottleneck < best_eval.bottleneck:
            best_eval, best_order = incumbent, problem.graph.topological_order
            source = f"exact MIP incumbent ({record.solver})"
            say(f"exact MIP found a better partition: {incumbent.bottleneck:.6g}")
        records.append(_checked(record, best_eval.bottleneck))
        record = records[-1]
        say(f"{method}: {record.status}" + (f", bound {record.bound:.6g}" if record.bound is not None else "")
            + (f" ({record.message})" if record.message and record.status == "error" else ""))  # fmt: skip
        if record.status == "interrupted":
            break
        if record.bound is not None and _closes(record.bound, best_eval.bottleneck):
            records, extra = _cross_check(problem, records, record, solver, best_eval.bottleneck, seed, say)
            notes.extend(extra)

    records = [_checked(r, best_eval.bottleneck) for r in records]  # a better partition may expose a bad bound
    ub = best_eval.bottleneck
    proven = [r for r in records if r.bound is not None]
    top = max(proven, key=lambda r: r.bound or 0.0)
    lb = float(top.bound or 0.0)
    g = problem.graph
    ratio = 1.0 if ub == 0 else lb / ub
    return Certificate(
        mtpp_version=mtpp.__version__,
        graph=g.name, n=g.n, m=g.m, k=problem.k, bandwidth=problem.bandwidth,
        memory=None if math.isinf(problem.memory) else problem.memory, reserve=problem.reserve,
        peak_aware=problem.peak_aware,
        upper_bound=ub, partition_source=source,
        assignment={str(g.ids[i]): int(b) for i, b in enumerate(best_eval.assignment.tolist())},
        order=[str(g.ids[i]) for i in best_order.tolist()],
        block_costs=[float(c) for c in best_eval.block_costs],
        bounds=records, lower_bound=lb, lower_bound_method=top.method, ratio=ratio,
        gap_percent=0.0 if ub == 0 else 100.0 * (ub - lb) / ub,
        optimal=_closes(lb, ub),
        wall_time=time.perf_counter() - start,
        notes=notes,
    )  # fmt: skip


def _closes(lb: float, ub: float) -> bool:
    """Whether ``lb`` proves ``ub`` optimal to the relative ``OPTIMALITY_TOLERANCE``."""
    return lb >= ub * (1 - OPTIMALITY_TOLERANCE)


def _checked(record: BoundRecord, ub: float) -> BoundRecord:
    """``record``, or an ``error`` record if its bound exceeds the re-checked upper
    bound ``ub`` (the cost of a real partition): then the solver failed."""
    if record.bound is None or record.bound <= ub * (1 + 1e-12):
        return record
    return record.model_copy(update={
        "bound": None, "status": "error", "proven_optimal": False,
        "message": f"solver failure: its bound {record.bound!r} exceeds the cost {ub!r} of a re-checked partition; "
                   "the bound was dropped",
    })  # fmt: skip


def _cross_check(
    problem: Problem, records: list[BoundRecord], claim: BoundRecord, solver: str, ub: float, seed: int, say: Report,
) -> tuple[list[BoundRecord], list[str]]:  # fmt: skip
    """Re-prove a MIP's claim of optimality with the exact MIP on a second backend,
    where the model is small enough to be cheap.  If the second proof stops below the
    claim, both bounds are kept, the smaller one is reported (the claim's record is
    lowered to it) and a note says so."""
    from solvers.registry import AUTO_ORDER, backend_class

    if problem.graph.n * problem.k > CROSS_CHECK_MAX_VARIABLES:
        return records, []
    others = [b for b in AUTO_ORDER if b != claim.solver and backend_class(b).available()]
    if not others:
        return records, []
    for other in others:  # the first backend whose licence takes the model
        record, _ = _run_mip(problem, "exact", other, CROSS_CHECK_TIME, 1, 1, ub, None, seed)
        if "SolverLicenseError" not in record.message:
            break
    record = _checked(record, ub)
    if record.bound is None:
        return records, [f"cross-check of {claim.method} ({claim.solver}) by {other} failed: {record.message}"]
    claimed = float(claim.bound or 0.0)
    if _closes(record.bound, ub):
        say(f"cross-check: {other} agrees, bound {record.bound:.6g}")
        return records, [f"optimality of {claim.method} ({claim.solver}) cross-checked by the exact MIP on "
                         f"{other}: bound {record.bound!r}"]  # fmt: skip
    if record.status not in ("optimal", "relaxed_optimal", "bound_reached"):
        return records, [f"cross-check of {claim.method} ({claim.solver}) by {other} inconclusive "
                         f"({record.status}, bound {record.bound!r})"]  # fmt: skip
    say(f"cross-check: {other} disagrees: {record.bound:.6g} < {claimed:.6g}; reporting the smaller bound")
    lowered = [r if r.bound is None or r.bound <= record.bound else
               r.model_copy(update={"bound": record.bound, "message": (r.message + "; " if r.message else "")
                                    + f"lowered to the {other} cross-check's bound"}) for r in records]
    note = (f"proofs disagree: {claim.method} ({claim.solver}) proved {claimed!r}, the exact MIP on {other} "
            f"only {record.bound!r}; the smaller bound is reported")  # fmt: skip
    return lowered, [note]


def _notes(problem: Problem) -> list[str]:
    notes = ["MIP bounds are proven dual bounds on models scaled to O(1), lowered by each solver's tolerance margin"]
    if problem.peak_aware:
        notes.append("peak-aware overflow (size_param(S) + peak(S) - M)^+ / B, each block running its ops in 'order'; "
                     "the simple and MIP bounds ignore peak(S) >= 0, which only lowers them: they remain valid")
    else:
        notes.append("overflow uses a fixed activation reserve R: (size_param(S) - (M - R))^+ / B")
    return notes


def _failed(method: str, solver: str, t0: float, status: str, message: str) -> BoundRecord:
    return BoundRecord(method=method, bound=None, status=status, proven_optimal=False, solver=solver,
                       wall_time=time.perf_counter() - t0, message=message)  # fmt: skip


def _run_mip(
    problem: Problem, method: str, solver: str, time_limit: float, threads: int, n_jobs: int,
    upper_bound: float, assignment: np.ndarray | None, seed: int,
) -> tuple[BoundRecord, Evaluation | None]:  # fmt: skip
    """One MIP method as a record (never raising for a solver failure) and, for
    ``exact``, its incumbent re-checked by the evaluator."""
    from formulations.bounds import solve_bound

    t0 = time.perf_counter()
    try:
        res = solve_bound(
            problem, method, solver=solver, time_limit=time_limit, upper_bound=upper_bound,
            warm_start=assignment if method == "exact" else None, threads=threads, seed=seed, n_jobs=n_jobs,
        )  # fmt: skip
    except KeyboardInterrupt:
        return _failed(method, solver, t0, "interrupted", "interrupted by the user"), None
    except Exception as exc:  # a solver failure must not break the certificate
        return _failed(method, solver, t0, "error", f"{type(exc).__name__}: {exc}"), None
    bound = res.bound
    status = "time_limit" if res.status.value == "interrupted" else res.status.value  # only Ctrl-C stops certify
    incumbent = None
    if res.assignment is not None:
        try:
            incumbent = evaluate(problem, res.assignment)
        except MtppError:
            incumbent = None  # an invalid incumbent is simply not used
    record = BoundRecord(
        method=method, bound=bound, status=status, proven_optimal=res.proven_optimal,
        solver=res.solver, solver_version=res.solver_version, wall_time=res.wall_time, message=res.message,
    )  # fmt: skip
    return record, incumbent


def export_models(problem: Problem, bounds: str | Iterable[str], directory: str | os.PathLike[str]) -> list[Path]:
    """Write the MIP(s) of each requested method as MPS files into ``directory``
    (guess-the-bottleneck gives one file per ``j``), so anyone can re-solve them
    with any solver.  The models are the plain formulations, without the fixings
    that depend on a particular upper bound.  Returns the paths written."""
    from formulations.bounds import build_models

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for method in (m for m in parse_bounds(bounds) if m in MIP_METHODS):
        for name, model in build_models(problem, method):
            path = out / f"{name}.mps"
            model.write_mps(path)
            paths.append(path)
    return paths
