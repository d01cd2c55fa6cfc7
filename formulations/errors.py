"""Errors of the MIP formulations (all are :class:`mtpp.core.errors.MtppError`)."""

from __future__ import annotations

from mtpp.core.errors import MtppError


class FormulationError(MtppError, RuntimeError):
    """A formulation gave an answer that a valid problem cannot have."""


class InfeasibleFormulationError(FormulationError):
    """The solver called a method's MIP infeasible.  Every model of
    :mod:`formulations` has solutions (with an upper bound, the partition that gave
    it), so this is a solver failure, never a bound."""

    def __init__(self, method: str, solver: str = "", detail: str = "") -> None:
        self.method = method
        self.solver = solver
        self.detail = detail
        by = f" by {solver}" if solver else ""
        more = f" ({detail})" if detail else ""
        super().__init__(
            f"the {method!r} MIP was called infeasible{by}, but it always has solutions: a solver failure{more}"
        )

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:  # picklable across joblib workers
        return (type(self), (self.method, self.solver, self.detail))
