"""Solver-neutral MILP layer: build a :class:`Model`, solve it with any backend.

Knows nothing about MTPP's problems (from :mod:`mtpp.core` it takes only the errors
and the status vocabulary).  Solver packages are imported only when a backend is used,
and this package's own modules on first use of a name (PEP 562): ``import
solvers.errors`` costs no scipy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solvers.base import Backend, SolveOptions
    from solvers.errors import (
        SolverError,
        SolverLicenseError,
        SolverNotInstalledError,
        UnknownSolverError,
        UnsupportedModelError,
    )
    from solvers.model import Model, ObjSense, VarType
    from solvers.mps import write_mps
    from solvers.registry import AUTO_ORDER, BACKENDS, AutoBackend, available_backends, get_backend
    from solvers.result import SolveResult, Status

_LAZY = {
    "AUTO_ORDER": "solvers.registry",
    "BACKENDS": "solvers.registry",
    "AutoBackend": "solvers.registry",
    "Backend": "solvers.base",
    "Model": "solvers.model",
    "ObjSense": "solvers.model",
    "SolveOptions": "solvers.base",
    "SolveResult": "solvers.result",
    "SolverError": "solvers.errors",
    "SolverLicenseError": "solvers.errors",
    "SolverNotInstalledError": "solvers.errors",
    "Status": "solvers.result",
    "UnknownSolverError": "solvers.errors",
    "UnsupportedModelError": "solvers.errors",
    "VarType": "solvers.model",
    "available_backends": "solvers.registry",
    "get_backend": "solvers.registry",
    "write_mps": "solvers.mps",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'solvers' has no attribute {name!r}")


__all__ = [
    "AUTO_ORDER",
    "BACKENDS",
    "AutoBackend",
    "Backend",
    "Model",
    "ObjSense",
    "SolveOptions",
    "SolveResult",
    "SolverError",
    "SolverLicenseError",
    "SolverNotInstalledError",
    "Status",
    "UnknownSolverError",
    "UnsupportedModelError",
    "VarType",
    "available_backends",
    "get_backend",
    "write_mps",
]
