"""The plan of a certify call: its methods in the order they run, cheapest first, and the
loop that runs them.

:data:`PLAN` is the one table (cvxpy's ``reductions/solvers/defines.py`` is the model):
each entry is a :class:`~mtpp.engine.method.Method` class that says whether it runs once
for every open k or at each k, what it needs to run at all, how its share of the budget
is set and when it is skipped.  :func:`run_plan` makes one object of each for the call
(each method keeps its own state there, where a later one may read it) and runs them in
turn; a method that breaks costs only its own records (:func:`recorded_failure`).
``docs/budget.md`` is generated from the table by :func:`budget_page`
(``python -m mtpp.engine.plan > docs/budget.md``), so the order cannot drift from the code.
"""

from __future__ import annotations

import re

from mtpp.engine.background import BackgroundStart, BackgroundStop, stop_background
from mtpp.engine.call import MIN_RUN_SECONDS, Call, recorded_failure, share_lower_bounds
from mtpp.engine.combinatorial import Clique, Crossing, Cut, IdealDp, Reach, ReachResume
from mtpp.engine.method import Method
from mtpp.engine.partitions import Anneal, Band, Fill, Merge, QuickPartition, Search
from mtpp.engine.solver_bounds import DemotedMips, ExactFirst, Mips, Pigeonhole, PigeonholeResume

PLAN: tuple[type[Method], ...] = (
    QuickPartition,
    Cut,
    IdealDp,
    BackgroundStart,
    Crossing,
    Reach,
    Search,
    Anneal,
    ExactFirst,
    Pigeonhole,
    Mips,
    PigeonholeResume,
    ReachResume,
    DemotedMips,
    Clique,
    BackgroundStop,
    Band,
    Fill,
    Merge,
)
"""Every method of a certify call, in the order it runs."""


def run_plan(call: Call) -> None:
    """Run the plan's methods that the call wants, in order, then give each k the bounds
    proven for the larger ks.  The background annealing is stopped whatever happens."""
    methods = [kind() for kind in PLAN]
    for method in methods:
        call.register(method)
    try:
        for method in methods:
            if not method.wanted(call):
                continue
            if method.essential:
                method.run(call)
                continue
            with recorded_failure(call.runs, call.say, *(method.records or (method.name,))):
                method.run(call)
    finally:
        stop_background(call)
    share_lower_bounds(call.runs)


def budget_page() -> str:
    """``docs/budget.md``: the plan as a table, from the methods' own descriptions."""
    lines = [
        "# How certify spends its budget",
        "",
        "Generated from `mtpp/engine/plan.py` by `python -m mtpp.engine.plan > docs/budget.md`; "
        "`tests/mtpp/engine/test_plan.py` checks that it is current.",
        "",
        "A call runs these methods in this order, cheapest first. Each takes its share of the budget "
        "*left when it starts*, so what one leaves goes to the next; `time_limit` caps each method at "
        "each k. A k proven optimal gives its time back: the methods after that skip it. Without a "
        "budget every method runs to its own limit (`time_limit`, or its move count). A method is "
        f"skipped when less than {MIN_RUN_SECONDS:g} s of its share is left.",
        "",
        "| # | method | runs | needs | share of the budget | skipped |",
        "|---|---|---|---|---|---|",
    ]
    for i, kind in enumerate(PLAN, 1):
        cells = [str(i), f"`{kind.name}`", kind.scope, kind.needs, kind.share, kind.skipped]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    lines += ["", "## The methods", ""]
    for kind in PLAN:
        doc = re.sub(r":(?:mod|func|class|data|meth|attr):", "", " ".join((kind.__doc__ or "").split()))
        doc = doc.replace("``", "`")
        lines += [f"**`{kind.name}`** ({kind.__module__}.{kind.__name__}). {doc}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(budget_page(), end="")
