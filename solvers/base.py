"""The one backend interface every solver adapter implements.

An adapter (cvxpy / MathOpt style) knows three things: how to import its solver
lazily (:meth:`Backend.import_solver`), how to hand a neutral
:class:`~solvers.model.Model` to it in bulk, and how to translate the answer back
into a neutral :class:`~solvers.result.SolveResult`.  Everything that is the same
for all solvers (argument checks, timing, the post-checks that keep a result
honest) lives here, once.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from types import ModuleType
from typing import ClassVar

import numpy as np

from solvers.errors import SolverError, SolverNotInstalledError
from solvers.model import Model, ObjSense
from solvers.quiet import silenced_stdout
from solvers.result import SolveResult, Status

EPS = 2.0**-52


@dataclass(frozen=True)
class Tolerances:
    """The tolerances a backend sets on its solver (all absolute unless named relative).

    ``feasibility``: row and bound violation a solver accepts; ``optimality``: dual
    feasibility (reduced cost) tolerance of its LPs; ``integrality``: distance from an
    integer it accepts; ``abs_gap`` / ``rel_gap``: the gap at which it stops."""

    feasibility: float
    optimality: float
    integrality: float
    abs_gap: float
    rel_gap: float = 0.0

    def margin(self, model: Model, bound: float) -> float:
        """How far below a proven dual ``bound`` the true optimum of ``model`` may lie
        through the solver's tolerances (minimisation; see :meth:`SolveResult.safe_bound`).

        A floating-point MIP solver proves its bound for the model *up to its
        tolerances*: LP bounds carry dual-feasibility and primal-feasibility errors on
        every row, presolve reductions are valid only up to the feasibility tolerance,
        and nodes whose LP solution is integral to within ``integrality`` are closed at
        their LP value.  Each effect moves the objective by at most its tolerance times
        the magnitude of the rows it acts on: ``M = max_r sum_j |a_rj| max|x_j|`` (the
        largest row activity over the variable domains, plus the objective's) for
        feasibility and optimality errors, ``A = max_r sum_{j integer} |a_rj|`` for
        integrality slack.  The margin is

            2 (feasibility + optimality + 16 eps) (1 + M) + 2 integrality A
            + abs_gap + rel_gap |bound|,

        twice the first-order error, which is why the formulations scale
        their models to ``O(1)`` magnitudes first (then the margin is a few 1e-9)."""
        act, int_mag = model.magnitudes()
        first_order = (self.feasibility + self.optimality + 16 * EPS) * (1.0 + act) + self.integrality * int_mag
        return 2.0 * first_order + self.abs_gap + self.rel_gap * abs(bound)


@dataclass(frozen=True)
class SolveOptions:
    """Options common to all backends.

    ``mip_start`` is a full-length vector of values (``NaN`` = no value for that
    variable).  ``robust`` asks for the backend's :attr:`Backend.robust_tolerances`
    instead of its tight :attr:`Backend.tolerances`: for a bound that need not prove a
    partition optimal to ``5e-7``, where the tight ones misfire on mixed scales (the
    margin then grows with the looser tolerances).  ``dual_bound_target``: stop as soon as the proven dual bound reaches
    this value (``>=`` when minimising, ``<=`` when maximising); useful when a bound
    is only needed up to a known upper bound, since ``min(UB, dual)`` cannot improve
    beyond it.  ``rel_gap`` is the relative optimality gap at which to stop (``0``
    proves optimality up to the solver's absolute tolerance)."""

    time_limit: float | None = None
    threads: int = 1
    seed: int = 0
    mip_start: np.ndarray | None = None
    dual_bound_target: float | None = None
    rel_gap: float = 0.0
    verbose: bool = False
    robust: bool = False

    def target_reached(self, bound: float, sense: ObjSense) -> bool:
        """Whether the proven ``bound`` has reached ``dual_bound_target``."""
        t = self.dual_bound_target
        if t is None or not math.isfinite(bound):
            return False
        return bound >= t if sense is ObjSense.MINIMIZE else bound <= t


@dataclass
class RawResult:
    """What an adapter's :meth:`Backend._solve` hands back, before the common post-checks."""

    status: Status
    dual_bound: float
    objective: float | None = None
    solution: np.ndarray | None = None
    node_count: int | None = None
    message: str = ""


class Backend(ABC):
    """A MILP solver behind the neutral interface.

    Subclasses set :attr:`name` and :attr:`package` and implement
    :meth:`_import`, :meth:`version` and :meth:`_solve`.  Instantiating a backend
    imports its package (raising :class:`SolverNotInstalledError` if that fails)."""

    name: ClassVar[str]
    package: ClassVar[str]
    tolerances: ClassVar[Tolerances]
    """What the adapter sets on its solver; :meth:`Tolerances.margin` turns them into
    the safety margin of every dual bound it reports."""
    robust_tolerances: ClassVar[Tolerances | None] = None
    """What it sets instead for a solve with :attr:`SolveOptions.robust` (``None``: the same)."""
    robust_range: ClassVar[float] = math.inf
    """A model whose matrix coefficients span more than this ratio (largest over smallest
    non-zero magnitude, :meth:`Model.coefficient_range`) is solved as if
    :attr:`SolveOptions.robust` were set (``inf``: never)."""
    uses_mip_start: ClassVar[bool] = True
    """Whether the adapter hands ``mip_start`` to its solver (HiGHS does not: its MIP
    start gave wrong optima)."""
    integral_data: ClassVar[bool] = False
    """Capability flag: the solver works on an integer rounding of the model (CP-SAT),
    so builders should prefer integer variables where the formulation allows them."""
    STATUS_MAP: ClassVar[dict[str, Status]] = {}
    """The solver's stop reasons, by the name the solver gives them, as neutral
    statuses (cvxpy's ``STATUS_MAP``); a name not listed is :attr:`Status.ERROR`."""
    BUILD_SECONDS_PER_NONZERO: ClassVar[float] = 0.0
    """Measured time to hand one matrix non-zero to the solver (``0``: negligible).
    A solve whose build alone would outlast its time limit is not started
    (:meth:`build_seconds`); the ``"auto"`` backend passes over a backend whose build
    would take more than a quarter of it."""

    def takes(self, variables: int, rows: int) -> bool:
        """Whether this solver's licence allows a model of this size (known before it is
        built: :func:`formulations.size.estimate_model_size`); only a size-limited
        licence says no."""
        return True

    @classmethod
    def build_seconds(cls, model: Model) -> float:
        """The estimated time to build ``model`` in this solver."""
        return cls.BUILD_SECONDS_PER_NONZERO * model.matrix("csr").nnz if cls.BUILD_SECONDS_PER_NONZERO else 0.0

    @classmethod
    def tolerances_for(cls, opts: SolveOptions) -> Tolerances:
        """The tolerances a solve with ``opts`` runs under."""
        return cls.robust_tolerances if opts.robust and cls.robust_tolerances is not None else cls.tolerances

    @classmethod
    def neutral_status(cls, name: str) -> Status:
        """The neutral status of the solver's stop reason ``name`` (:attr:`STATUS_MAP`)."""
        return cls.STATUS_MAP.get(name, Status.ERROR)

    def __init__(self) -> None:
        self.module = self.import_solver()

    # ------------------------------------------------------------------ import
    @classmethod
    def import_solver(cls) -> ModuleType:
        """Import the solver package, or raise :class:`SolverNotInstalledError` naming it."""
        try:
            return cls._import()
        except ImportError as exc:
            raise SolverNotInstalledError(cls.name, cls.package, str(exc)) from exc

    @classmethod
    def available(cls) -> bool:
        """Whether the package imports (does not check a licence)."""
        try:
            cls.import_solver()
        except SolverNotInstalledError:
            return False
        return True

    @classmethod
    @abstractmethod
    def _import(cls) -> ModuleType:
        """Import and return the solver module (lazily: only ever called from here)."""

    @abstractmethod
    def version(self) -> str:
        """Solver version string."""

    # ------------------------------------------------------------------ solve
    def solve(self, model: Model, options: SolveOptions | None = None) -> SolveResult:
        """Solve ``model`` under ``options`` (default :class:`SolveOptions`) and
        return a :class:`SolveResult`.

        The dual bound is always the solver's proven bound, never an incumbent.  A
        solver failure gives status ``ERROR`` (with the message); a licence that
        forbids the model raises :class:`~solvers.errors.SolverLicenseError` so that
        a caller (the ``"auto"`` backend) can fall back to another solver."""
        opts = checked_options(model, options)
        if not opts.robust and math.isfinite(self.robust_range) and model.coefficient_range() > self.robust_range:
            opts = replace(opts, robust=True)
        t0 = time.perf_counter()
        build = self.build_seconds(model)
        if opts.time_limit is not None and build > opts.time_limit:
            message = (
                f"not started: building the model in {self.name} takes about {build:.3g} s, "
                f"more than the time limit of {opts.time_limit:.3g} s"
            )
            return self._finish(model, opts, RawResult(Status.TIME_LIMIT, _no_bound(model.sense), message=message), 0.0)
        try:
            if opts.verbose:
                raw = self._solve(model, opts)
            else:
                with silenced_stdout():
                    raw = self._solve(model, opts)
        except SolverError:
            raise
        except Exception as exc:  # a solver crash must not look like a bound
            raw = RawResult(Status.ERROR, _no_bound(model.sense), message=f"{type(exc).__name__}: {exc}")
        wall = time.perf_counter() - t0
        return self._finish(model, opts, raw, wall)

    @abstractmethod
    def _solve(self, model: Model, opts: SolveOptions) -> RawResult:
        """Run the solver on ``model``."""

    # ------------------------------------------------------------------ common post-checks
    def _finish(self, model: Model, opts: SolveOptions, raw: RawResult, wall: float) -> SolveResult:
        status, dual, message = raw.status, float(raw.dual_bound), raw.message
        objective, solution = raw.objective, raw.solution
        if status is Status.ERROR:
            dual, objective, solution = _no_bound(model.sense), None, None
        elif status is Status.INFEASIBLE:
            dual = -_no_bound(model.sense)
            objective, solution = None, None
        if solution is not None:
            solution = np.asarray(solution, dtype=np.float64)
            if not model.is_feasible(solution, tol=1e-5):
                message = (message + "; " if message else "") + "solver solution violates the model; dropped"
                objective, solution = None, None
            else:
                objective = model.objective_value(solution)
        if status in (Status.TIME_LIMIT, Status.INTERRUPTED) and opts.target_reached(dual, model.sense):
            status = Status.BOUND_REACHED
        if status is Status.OPTIMAL and solution is None:
            status = Status.RELAXED_OPTIMAL if math.isfinite(dual) else Status.ERROR
        margin = self.tolerances_for(opts).margin(model, dual) if math.isfinite(dual) else 0.0
        if status is Status.OPTIMAL and objective is not None and math.isfinite(dual):
            slack = 10 * margin + 1e-7 * max(1.0, abs(objective))  # how far "optimal" may leave the two apart
            apart = objective - dual if model.sense is ObjSense.MINIMIZE else dual - objective
            if apart > slack:  # seen with HiGHS 1.16, a MIP start and fixed variables: a 0.7% gap called optimal
                status = Status.INTERRUPTED
                message = (message + "; " if message else "") + (
                    f"reported optimal with its dual bound {dual!r} apart from its solution {objective!r}: "
                    "only the dual bound is used"
                )
        return SolveResult(
            status=status,
            objective=objective,
            dual_bound=dual,
            solution=solution,
            wall_time=wall,
            node_count=raw.node_count,
            solver=self.name,
            version=self.version(),
            message=message,
            margin=margin,
            sense=model.sense,
        )


def checked_options(model: Model, options: SolveOptions | None) -> SolveOptions:
    """``options`` checked against ``model``: a positive time limit, at least one
    thread, a MIP start of one value per variable."""
    opts = SolveOptions() if options is None else options
    if opts.time_limit is not None and not (opts.time_limit > 0):
        raise ValueError(f"time_limit must be > 0, got {opts.time_limit!r}")
    if opts.threads < 1:
        raise ValueError(f"threads must be >= 1, got {opts.threads!r}")
    start = None
    if opts.mip_start is not None:
        start = np.asarray(opts.mip_start, dtype=np.float64).reshape(-1)
        if start.shape != (model.num_vars,):
            raise ValueError(f"mip_start has {start.size} values for {model.num_vars} variables")
    return SolveOptions(
        opts.time_limit,
        int(opts.threads),
        int(opts.seed),
        start,
        opts.dual_bound_target,
        float(opts.rel_gap),
        bool(opts.verbose),
        bool(opts.robust),
    )


def _no_bound(sense: ObjSense) -> float:
    """The trivial dual bound: ``-inf`` when minimising, ``+inf`` when maximising."""
    return -math.inf if sense is ObjSense.MINIMIZE else math.inf
