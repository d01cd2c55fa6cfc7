"""Errors of the solver layer: each an :class:`mtpp.core.errors.MtppError` (the root of
mtpp's one exception hierarchy lives in the core every package may import), so one
``except`` catches everything mtpp rejects."""

from __future__ import annotations

from mtpp.core.errors import MtppError


class SolverError(MtppError, RuntimeError):
    """A solver could not be used for a model."""


class UnknownSolverError(SolverError, ValueError):
    """No backend has this name."""

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        self.name = name
        self.known = tuple(known)
        super().__init__(f"unknown solver {name!r}; choose one of {', '.join(known)} or 'auto'")

    def __reduce__(self) -> tuple[type, tuple[str, tuple[str, ...]]]:  # picklable (joblib workers)
        return (type(self), (self.name, self.known))


class SolverNotInstalledError(SolverError, ImportError):
    """The Python package of a backend cannot be imported."""

    def __init__(self, solver: str, package: str, reason: str = "") -> None:
        self.solver = solver
        self.package = package
        self.reason = reason
        detail = f": {reason}" if reason else ""
        super().__init__(f"solver {solver!r} needs the Python package {package!r}, which cannot be imported{detail}")

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:  # picklable (joblib workers)
        return (type(self), (self.solver, self.package, self.reason))


class SolverLicenseError(SolverError):
    """The solver is installed but its licence does not allow this model (e.g. the
    size-limited pip licence of Gurobi: at most 2000 variables and 2000 constraints)."""

    def __init__(self, solver: str, message: str) -> None:
        self.solver = solver
        self.detail = message
        super().__init__(f"{solver}: {message}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # picklable (joblib workers)
        return (type(self), (self.solver, self.detail))


class UnsupportedModelError(SolverError, ValueError):
    """The backend cannot represent this model soundly (e.g. an unbounded variable
    for CP-SAT, which needs finite integer domains)."""
