"""What every method of certify's plan says about itself (cvxpy's solver table is the
model: one list of objects, each knowing when it applies): its name, whether it runs
once for every open k or at each k, what it needs to run at all, how its share of the
budget is set and when it is skipped.  :mod:`mtpp.engine.plan` lists them in the order
they run; ``docs/budget.md`` is generated from those descriptions."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from mtpp.engine.call import Call

EACH_K = "each k"
ALL_KS = "all ks at once"


class Method:
    """One step of a certify call.  Subclasses set the descriptions and implement
    :meth:`run`; :meth:`wanted` says whether the call runs it at all (the default: its
    name is among the requested bound methods)."""

    name: ClassVar[str]
    """Its name in records, notes and report lines."""
    records: ClassVar[tuple[str, ...]] = ()
    """The bound records it writes: an exception inside it becomes an ``error`` record of these."""
    essential: ClassVar[bool] = False
    """The call cannot go on without it (the first partitions): its failure is the call's."""
    scope: ClassVar[str] = EACH_K
    needs: ClassVar[str] = "requested in `bounds`"
    share: ClassVar[str] = ""
    skipped: ClassVar[str] = ""

    def wanted(self, call: Call) -> bool:
        return self.name in call.options.methods

    def run(self, call: Call) -> None:
        raise NotImplementedError
