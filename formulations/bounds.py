"""Certified lower bounds from the MIPs of Section 3: one entry point, any backend.

``solve_bound(problem, method="exact" | "bottleneck" | "guess", solver="highs")``
builds the neutral model, hands it to the backend by name and turns the answer into
a :class:`BoundResult` whose ``bound`` is always a valid lower bound on OPT:

* the model is built on the instance scaled by a power of two near the simple bound
  (:mod:`formulations.scaling`), so its data and objective are ``O(1)`` whatever the
  units, and the bound is scaled back;
* only the solver's proven dual bound is used, never an incumbent, lowered by the
  margin its own tolerances allow (:meth:`solvers.base.Tolerances.margin`); a
  timed-out solve still contributes the bound it proved;
* a solver status counts only where the mathematics makes it evidence.  Every model
  here has solutions (the superblock MIPs: everything in block 2; the exact MIP: any
  partition, and with an upper bound the partition that gave it, which the fixings
  keep), so "infeasible" is a solver failure: it raises
  :class:`~formulations.errors.InfeasibleFormulationError`, never a bound;
* every model's optimum is at least the simple bound ``L`` (Lemma 3.3; by (14) for
  the superblock models, by Lemma 3.3 itself for the exact one), so the bound is
  ``max(L, dual)``; a solver error leaves ``L`` standing;
* with a known ``upper_bound`` (the value of a partition) the exact model fixes
  ``y`` variables and the solves stop once their dual bound reaches it; the bound
  is then ``min(UB, ...)``, valid for any ``UB`` (:mod:`formulations.fixing`);
* guess-the-bottleneck takes the minimum over ``j`` of its sub-MIPs (Section 3.3).

For ``exact`` the decoded assignment is returned too; callers re-check it with
:func:`mtpp.evaluate`.

:func:`build_models` returns the named model(s) a method solves, built by the same
code as :func:`solve_bound` but on the unscaled instance, e.g. to write them out
with :meth:`solvers.model.Model.write_mps`.  An unknown, missing or licence-limited
solver raises the typed errors of :mod:`solvers.errors`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from formulations.errors import InfeasibleFormulationError
from formulations.exact import ExactMip, build_exact
from formulations.scaling import normalised
from formulations.size import check_model_size
from formulations.superblock import SuperblockMip, build_bottleneck, build_guess
from mtpp.bounds.simple import simple_lower_bound
from mtpp.core.errors import InvalidParameterError, MtppError
from mtpp.core.evaluate import Evaluation, evaluate
from mtpp.core.problem import Problem
from mtpp.core.records import MIP_METHODS, BoundRecord, failed
from solvers.base import SolveOptions
from solvers.model import Model
from solvers.registry import get_backend
from solvers.result import SolveResult, Status

METHODS = MIP_METHODS
DONE = (Status.OPTIMAL, Status.RELAXED_OPTIMAL, Status.BOUND_REACHED)
GUESS_MIN_SECONDS = 0.05
"""A guess sub-MIP with less time than this left is not started (its ``LB_j`` is then
the simple bound: the minimum stays valid)."""
"""Statuses after which more time would not raise a bound."""


@dataclass(frozen=True)
class BoundResult:
    """A lower bound on OPT and how it was obtained.

    ``bound``: valid lower bound.  ``proven_optimal``: the method's MIP(s) were solved
    to optimality, so no more time would raise this bound (for ``exact``: ``bound ==
    OPT``).  ``objective``: the MIP's primal value (``exact``: an upper bound on OPT,
    attained by ``assignment``).  ``parts``: the sub-MIP results of ``guess`` (by ``j``).
    ``margin``: what the solvers' tolerances took off the dual bound (in the problem's
    units, the largest over the parts)."""

    method: str
    bound: float
    status: Status
    proven_optimal: bool
    solver: str
    solver_version: str
    wall_time: float
    objective: float | None = None
    assignment: np.ndarray | None = field(default=None, repr=False)
    parts: tuple[SolveResult, ...] = field(default=(), repr=False)
    message: str = ""
    margin: float = 0.0


def _capped(res: SolveResult, scale: float, floor: float, upper_bound: float | None) -> float:
    """``min(UB, max(L, scale * safe dual))`` of a scaled model's result."""
    dual = res.safe_bound * scale
    b = max(floor, dual) if math.isfinite(dual) else floor
    return min(b, upper_bound) if upper_bound is not None else b


def _check_status(res: SolveResult, method: str) -> None:
    """Every model here has solutions (module docstring): "infeasible" is a failure."""
    if res.status is Status.INFEASIBLE:
        raise InfeasibleFormulationError(method, res.solver, res.message or "the model always has solutions")


def _options(
    time_limit: float | None, threads: int, seed: int, target: float | None, start: np.ndarray | None = None
) -> SolveOptions:
    return SolveOptions(time_limit=time_limit, threads=threads, seed=seed, dual_bound_target=target, mip_start=start)


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise InvalidParameterError(f"unknown bound method {method!r}; choose one of {', '.join(METHODS)}")


def _part_names(problem: Problem, method: str) -> list[str]:
    """Names of the models ``method`` solves: ``exact``, ``bottleneck`` or
    ``guess_j01 .. guess_jk`` (zero-padded to at least two digits)."""
    if method != "guess":
        return [method]
    width = max(2, len(str(problem.k)))
    return [f"guess_j{j:0{width}d}" for j in range(1, problem.k + 1)]


def _build(
    problem: Problem,
    method: str,
    j: int | None = None,
    upper_bound: float | None = None,
    fix: bool = True,
    binary_cuts: bool = False,
) -> ExactMip | SuperblockMip:
    """The one place that maps a method (and guess ``j``) to its builder."""
    if method == "exact":
        return build_exact(problem, upper_bound=upper_bound, fix=fix, binary_cuts=binary_cuts)
    if method == "bottleneck":
        return build_bottleneck(problem, binary_cuts=binary_cuts)
    if method == "guess" and j is not None:
        return build_guess(problem, j, binary_cuts=binary_cuts)
    raise InvalidParameterError(f"cannot build method {method!r} with guess j={j!r}")


def build_models(
    problem: Problem,
    method: str = "exact",
    upper_bound: float | None = None,
    fix: bool = True,
    binary_cuts: bool = False,
) -> list[tuple[str, Model]]:
    """The neutral model(s) that :func:`solve_bound` solves for ``method``, named:
    ``[("exact", m)]``, ``[("bottleneck", m)]`` or ``[("guess_j01", m_1), ...,
    ("guess_jk", m_k)]`` (Section 3.3, one sub-MIP per ``j``).

    ``upper_bound`` and ``fix`` shape the exact model only (the ``y``-fixing of
    :mod:`formulations.fixing`); for the other methods an
    upper bound only stops the solve early, so it does not change their models.
    ``binary_cuts`` declares the cut variables binary, as :func:`solve_bound` does for
    integer-only backends (CP-SAT).  Write a model out with ``m.write_mps(path)``."""
    _check_method(method)
    check_model_size(problem, method, problem.k)  # every guess sub-MIP is alive at once here
    names = _part_names(problem, method)
    if method == "guess":
        return [(name, _build(problem, method, j, binary_cuts=binary_cuts).model) for j, name in enumerate(names, 1)]
    return [(names[0], _build(problem, method, None, upper_bound, fix, binary_cuts).model)]


def solve_bound(
    problem: Problem,
    method: str = "exact",
    solver: str = "highs",
    time_limit: float | None = None,
    upper_bound: float | None = None,
    warm_start: np.ndarray | None = None,
    threads: int = 1,
    seed: int = 0,
    n_jobs: int = 1,
    fix: bool = True,
) -> BoundResult:
    """Lower bound on OPT by ``method`` with backend ``solver`` (see the module docstring).

    ``time_limit`` is the wall-clock budget of the whole method in seconds (for
    ``guess`` it is shared out over the rounds of ``n_jobs`` parallel sub-MIPs).
    ``warm_start`` (an assignment, ``exact`` only) becomes a MIP start.  ``fix``
    enables the ``y``-fixing of :mod:`formulations.fixing` when ``upper_bound`` is given.

    Raises :class:`~solvers.errors.UnknownSolverError`,
    :class:`~solvers.errors.SolverNotInstalledError` or
    :class:`~solvers.errors.SolverLicenseError` (a model too large for Gurobi's
    size-limited licence; ``solver="auto"`` falls back instead), and
    :class:`~formulations.errors.InfeasibleFormulationError` when the solver calls a
    model infeasible (all of them have solutions: a solver failure)."""
    _check_method(method)
    check_model_size(problem, method, n_jobs)  # a model that cannot fit in memory is refused before it is built
    if method == "guess":
        return solve_guess(problem, solver, time_limit, upper_bound, threads, seed, n_jobs)
    t0 = time.perf_counter()
    backend = get_backend(solver)
    binary = bool(getattr(backend, "integral_data", False))
    L = simple_lower_bound(problem)
    scaled, s = normalised(problem)
    ub = None if upper_bound is None else upper_bound / s
    mip = _build(scaled, method, None, ub, fix, binary)
    start = mip.start(warm_start) if warm_start is not None and isinstance(mip, ExactMip) else None
    res = backend.solve(mip.model, _options(time_limit, threads, seed, ub, start))
    _check_status(res, method)
    assignment = mip.decode(res.solution) if isinstance(mip, ExactMip) and res.solution is not None else None
    return BoundResult(
        method=method,
        bound=_capped(res, s, L, upper_bound),
        status=res.status,
        proven_optimal=res.status in DONE,
        solver=res.solver,
        solver_version=res.version,
        wall_time=time.perf_counter() - t0,
        objective=None if res.objective is None else res.objective * s,
        assignment=assignment,
        parts=(res,),
        message=res.message,
        margin=res.margin * s,
    )


def _solve_guess_one(
    problem: Problem,
    j: int,
    solver: str,
    time_limit: float | None,
    threads: int,
    seed: int,
    target: float | None,
    deadline: float | None = None,
) -> SolveResult:
    """One sub-MIP ``LB_j`` (module-level so joblib can ship it to a worker); not
    started once the wall clock (``time.time()``, shared by the workers) passes
    ``deadline``: its result then proves nothing (dual bound ``-inf``)."""
    if deadline is not None:
        left = deadline - time.time()
        if left < GUESS_MIN_SECONDS:
            return SolveResult(Status.TIME_LIMIT, None, -math.inf, solver=solver, message="not started: time spent")
        time_limit = left if time_limit is None else min(time_limit, left)
    backend = get_backend(solver)
    sb = _build(problem, "guess", j, binary_cuts=bool(getattr(backend, "integral_data", False)))
    return backend.solve(sb.model, _options(time_limit, threads, seed, target))  # problem is scaled


def solve_guess(
    problem: Problem,
    solver: str = "highs",
    time_limit: float | None = None,
    upper_bound: float | None = None,
    threads: int = 1,
    seed: int = 0,
    n_jobs: int = 1,
) -> BoundResult:
    """Guess-the-bottleneck (Section 3.3): ``min_j LB_j`` over ``j = 1..k``, the
    sub-MIPs run in parallel with joblib (``n_jobs`` processes).  With
    ``upper_bound`` each sub-MIP stops once its dual bound reaches it, since it can
    then no longer lower the minimum; each ``LB_j`` is reported as
    ``min(UB, max(L, dual_j))``, so the minimum stays a valid bound.  Raises the
    errors of :func:`solve_bound`; a sub-MIP called infeasible is a solver failure
    (each has the solution "everything in block 2": block 2 = V carries work and
    overflow at least ``L``)."""
    from joblib import Parallel, delayed

    t0 = time.perf_counter()
    get_backend(solver)  # an unknown or missing solver fails here, before any worker starts
    k = problem.k
    L = simple_lower_bound(problem)
    scaled, s = normalised(problem)
    target = None if upper_bound is None else upper_bound / s
    per_sub = None
    if time_limit is not None:
        rounds = math.ceil(k / max(1, n_jobs))
        per_sub = max(time_limit / rounds, 0.01)
    deadline = (
        None if time_limit is None else time.time() + time_limit
    )  # the whole method, every sub-MIP's build included
    jobs = [
        delayed(_solve_guess_one)(scaled, j, solver, per_sub, threads, seed, target, deadline) for j in range(1, k + 1)
    ]
    if n_jobs == 1 or k == 1:
        parts = [job[0](*job[1], **job[2]) for job in jobs]
    else:
        parts = Parallel(n_jobs=min(n_jobs, k))(jobs)
    for j, r in enumerate(parts, 1):  # every LB_j model has solutions (everything in block 2)
        _check_status(r, f"guess_j{j}")
    lbs = [_capped(r, s, L, upper_bound) for r in parts]
    all_done = all(r.status in DONE for r in parts)
    worst = next((r.status for r in parts if r.status not in DONE), Status.OPTIMAL)
    first = parts[0]
    return BoundResult(
        method="guess",
        bound=min(lbs),
        status=Status.OPTIMAL if all_done else worst,
        proven_optimal=all_done,
        solver=first.solver,
        solver_version=first.version,
        wall_time=time.perf_counter() - t0,
        parts=tuple(parts),
        message="; ".join(f"j={j}: {r.message}" for j, r in enumerate(parts, 1) if r.message),
        margin=max(r.margin for r in parts) * s,
    )


def bound_record(
    problem: Problem,
    method: str,
    solver: str,
    time_limit: float,
    threads: int,
    n_jobs: int,
    upper_bound: float,
    assignment: np.ndarray | None,
    seed: int,
) -> tuple[BoundRecord, Evaluation | None]:
    """One MIP method as a :class:`~mtpp.core.records.BoundRecord` (never raising for a
    solver failure: an ``error`` record says what broke) and, for ``exact``, its
    incumbent re-checked by the evaluator."""
    t0 = time.perf_counter()
    try:
        res = solve_bound(
            problem,
            method,
            solver=solver,
            time_limit=time_limit,
            upper_bound=upper_bound,
            warm_start=assignment if method == "exact" else None,
            threads=threads,
            seed=seed,
            n_jobs=n_jobs,
        )
    except KeyboardInterrupt:
        return failed(method, solver, t0, "interrupted", "interrupted by the user"), None
    except Exception as exc:  # a solver failure must not break the certificate
        return failed(method, solver, t0, "error", f"{type(exc).__name__}: {exc}"), None
    bound = res.bound
    status = "time_limit" if res.status.value == "interrupted" else res.status.value  # only Ctrl-C stops certify
    incumbent = None
    if res.assignment is not None:
        try:
            incumbent = evaluate(problem, res.assignment)
        except MtppError:
            incumbent = None  # an invalid incumbent is simply not used
    record = BoundRecord(
        method=method,
        bound=bound,
        status=status,
        proven_optimal=res.proven_optimal,
        solver=res.solver,
        solver_version=res.solver_version,
        wall_time=res.wall_time,
        message=res.message,
        margin=res.margin,
    )
    return record, incumbent
