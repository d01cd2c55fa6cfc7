"""The MIPs of Section 3 of the MTPP paper, emitted as solver-neutral models."""

from formulations.bounds import METHODS, BoundResult, build_models, solve_bound, solve_guess
from formulations.errors import FormulationError, InfeasibleFormulationError
from formulations.exact import ExactMip, build_exact
from formulations.superblock import SuperblockMip, build_bottleneck, build_guess

__all__ = [
    "METHODS",
    "BoundResult",
    "ExactMip",
    "FormulationError",
    "InfeasibleFormulationError",
    "SuperblockMip",
    "build_bottleneck",
    "build_exact",
    "build_guess",
    "build_models",
    "solve_bound",
    "solve_guess",
]
