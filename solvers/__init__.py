"""Solver-neutral MILP layer: build a :class:`Model`, solve it with any backend.

Knows nothing about MTPP.  Solver packages are imported only when a backend is used.
"""

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
