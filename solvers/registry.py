"""Backends by name, imported lazily, and the ``"auto"`` backend that falls back.

``get_backend("highs" | "scip" | "gurobi" | "cpsat" | "auto")``.  Nothing is
imported until a backend is asked for, and a missing package raises
:class:`~solvers.errors.SolverNotInstalledError` naming it.  ``"auto"`` tries
:data:`AUTO_ORDER` in turn at solve time: a backend whose package is missing or whose
licence refuses the model (the size-limited pip licence of Gurobi) is skipped.
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from types import ModuleType

from solvers.base import Backend, RawResult, SolveOptions, checked_options
from solvers.errors import SolverError, SolverLicenseError, SolverNotInstalledError, UnknownSolverError
from solvers.model import Model
from solvers.result import SolveResult

BACKENDS: dict[str, str] = {
    "highs": "solvers.highs:HighsBackend",
    "scip": "solvers.scip:ScipBackend",
    "gurobi": "solvers.gurobi:GurobiBackend",
    "cpsat": "solvers.cpsat:CpSatBackend",
}
BUILD_SHARE = 0.25
"""``"auto"`` passes over a backend whose model build would take more than this share of the time limit."""
AUTO_ORDER: tuple[str, ...] = ("gurobi", "scip", "highs", "cpsat")
"""Gurobi first (fastest where its licence allows the model), then by strength on the
MIPs its pip licence refuses (the measurement is in ``docs/decisions.md``); SCIP comes
with the ``mtpp[scip]`` extra, HiGHS with every install."""


def backend_class(name: str) -> type[Backend]:
    """The adapter class for ``name`` (imports the adapter module, not the solver)."""
    key = name.lower() if isinstance(name, str) else ""
    if key not in BACKENDS:
        raise UnknownSolverError(str(name), tuple(BACKENDS))
    module, cls = BACKENDS[key].split(":")
    return getattr(importlib.import_module(module), cls)


def get_backend(name: str = "auto") -> Backend:
    """A ready backend for ``name``; raises :class:`UnknownSolverError` or
    :class:`SolverNotInstalledError`."""
    if isinstance(name, str) and name.lower() == "auto":
        return AutoBackend()
    return backend_class(name)()


def available_backends() -> list[str]:
    """Names of the backends whose packages import here."""
    return [name for name in BACKENDS if backend_class(name).available()]


class AutoBackend(Backend):
    """The backend ``"auto"``: tries the backends of ``order`` until one takes the model
    (its package imports and its licence allows the model).  It is a
    :class:`Backend` like any other: :meth:`solve` takes a model and a
    :class:`SolveOptions`, and the result names the backend that ran, whose
    tolerances set its margin."""

    name = "auto"
    package = "solvers"

    def __init__(self, order: tuple[str, ...] = AUTO_ORDER) -> None:
        self.order = order
        self.module = self.import_solver()

    @classmethod
    def _import(cls) -> ModuleType:
        return importlib.import_module("solvers.registry")

    def version(self) -> str:
        return "auto: " + ", ".join(self.order)

    def runs_on(self, variables: int, rows: int) -> str | None:
        """The backend :meth:`solve` would run a model of this size on (the first of
        ``order`` that is installed and whose licence takes it; its build time aside),
        or ``None``."""
        for name in self.order:
            cls = backend_class(name)
            try:
                if cls.available() and cls().takes(variables, rows):
                    return name
            except SolverLicenseError:  # no usable licence: solve() passes over it too
                continue
        return None

    def solve(self, model: Model, options: SolveOptions | None = None) -> SolveResult:
        """Like :meth:`Backend.solve`, on the first backend of ``order`` that takes the
        model; when an earlier one refused it, the result's ``message`` says which and
        why (a certificate's bound record then shows the fallback)."""
        opts = checked_options(model, options)
        reasons = []
        for i, name in enumerate(self.order):
            cls = backend_class(name)
            build = cls.build_seconds(model) if cls.BUILD_SECONDS_PER_NONZERO else 0.0
            later = any(backend_class(b).available() for b in self.order[i + 1 :])
            if opts.time_limit is not None and later and build > BUILD_SHARE * opts.time_limit:
                reasons.append(f"{name}: building the model would take about {build:.3g} s of {opts.time_limit:.3g}")
                continue
            try:
                res = cls().solve(model, opts)
            except (SolverNotInstalledError, SolverLicenseError) as exc:
                reasons.append(str(exc))
                continue
            if not reasons:
                return res
            fallback = f"auto fell back to {name}: " + "; ".join(reasons)
            return replace(res, message=f"{res.message}; {fallback}" if res.message else fallback)
        raise SolverError("no solver could take the model: " + "; ".join(reasons))

    def _solve(self, model: Model, opts: SolveOptions) -> RawResult:  # pragma: no cover - solve() delegates
        raise NotImplementedError("AutoBackend hands whole solves to the backend that takes the model")
