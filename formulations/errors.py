"""Errors of the MIP formulations (all are :class:`mtpp.errors.MtppError`)."""

from __future__ import annotations

from mtpp.errors import MtppError


class FormulationError(MtppError, RuntimeError):
    """A formulation gave an answer that a valid problem cannot have."""


class InfeasibleFormulationError(FormulationError):
    """The solver proved a method's MIP infeasible although no upper bound was
    imposed: every valid problem has a partition, so the model (or the solver) is wrong."""

    def __init__(self, method: str, solver: str = "", detail: str = "") -> None:
        self.method = method
        self.solver = solver
        self.detail = detail
        by = f" by {solver}" if solver else ""
        more = f" ({detail})" if detail else ""
        super().__init__(
            f"the {method!r} MIP was proven infeasible{by} without an upper bound, which is impossible "
            f"for a valid problem{more}"
        )

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:  # picklable across joblib workers
        return (type(self), (self.method, self.solver, self.detail))
