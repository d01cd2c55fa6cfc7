"""Backends by name, imported lazily, and the ``"auto"`` backend that falls back.

``get_backend("highs" | "scip" | "gurobi" | "cpsat" | "auto")``.  Nothing is
imported until a backend is asked for, and a missing package raises
:class:`~solvers.errors.SolverNotInstalledError` naming it.  ``"auto"`` tries
:data:`AUTO_ORDER` in turn at solve time: a backend whose package is missing or whose
licence refuses the model (the size-limited pip licence of Gurobi) is skipped.
"""

from __future__ import annotations

import importlib

import numpy as np

from solvers.base import Backend
from solvers.errors import SolverError, SolverLicenseError, SolverNotInstalledError, UnknownSolverError
from solvers.model import Model
from solvers.result import SolveResult

BACKENDS: dict[str, str] = {
    "highs": "solvers.highs:HighsBackend",
    "scip": "solvers.scip:ScipBackend",
    "gurobi": "solvers.gurobi:GurobiBackend",
    "cpsat": "solvers.cpsat:CpSatBackend",
}
AUTO_ORDER: tuple[str, ...] = ("gurobi", "highs", "scip", "cpsat")
"""Gurobi first (fastest where its licence allows the model), then the embedded HiGHS."""


def backend_class(name: str) -> type[Backend]:
    """The adapter class for ``name`` (imports the adapter module, not the solver)."""
    key = name.lower() if isinstance(name, str) else ""
    if key not in BACKENDS:
        raise UnknownSolverError(str(name), tuple(BACKENDS))
    module, cls = BACKENDS[key].split(":")
    return getattr(importlib.import_module(module), cls)


def get_backend(name: str = "auto") -> Backend | AutoBackend:
    """A ready backend for ``name``; raises :class:`UnknownSolverError` or
    :class:`SolverNotInstalledError`."""
    if isinstance(name, str) and name.lower() == "auto":
        return AutoBackend()
    return backend_class(name)()


def available_backends() -> list[str]:
    """Names of the backends whose packages import here."""
    return [name for name in BACKENDS if backend_class(name).available()]


class AutoBackend:
    """Tries the backends of ``order`` until one accepts the model."""

    name = "auto"
    integral_data = False

    def __init__(self, order: tuple[str, ...] = AUTO_ORDER) -> None:
        self.order = order

    def solve(
        self,
        model: Model,
        *,
        time_limit: float | None = None,
        threads: int = 1,
        seed: int = 0,
        mip_start: np.ndarray | None = None,
        dual_bound_target: float | None = None,
        rel_gap: float = 0.0,
        verbose: bool = False,
    ) -> SolveResult:
        """Like :meth:`Backend.solve`; the result names the backend that ran."""
        reasons = []
        for name in self.order:
            try:
                backend = backend_class(name)()
                return backend.solve(
                    model, time_limit=time_limit, threads=threads, seed=seed, mip_start=mip_start,
                    dual_bound_target=dual_bound_target, rel_gap=rel_gap, verbose=verbose,
                )  # fmt: skip
            except (SolverNotInstalledError, SolverLicenseError) as exc:
                reasons.append(str(exc))
        raise SolverError("no solver could take the model: " + "; ".join(reasons))

