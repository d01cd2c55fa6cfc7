"""Combinatorial lower bounds on the MTPP optimum.

The MIP bounds of Section 3 live in :mod:`formulations`; this module holds the
closed-form bound every run reports.
"""

from __future__ import annotations

import math

from mtpp.cost import overflow_cost
from mtpp.problem import Problem


def simple_lower_bound(problem: Problem) -> float:
    """Lemma 3.3 (Eq. 13): ``L = max(max_v work(v), (1/k) sum_v work(v)) <= OPT``.

    Extended soundly with the overflow term of Eq. (2): the block holding ``v``
    pays at least ``work(v) + overflow({v})``, and since ``x -> (x - c)^+`` is
    convex, the k blocks together pay at least ``W + (P - k (M - R))^+ / B`` where
    ``W`` and ``P`` are the total work and parameter size.  With unlimited memory
    (the default) this is exactly the paper's ``L``.  IO is ignored, so this bound is
    valid for every partition, however its tensors are cut.  ``O(n)``.
    """
    g, k = problem.graph, problem.k
    per_node = float((g.work + overflow_cost(problem, g.size_param)).max())
    spread_overflow = 0.0
    if math.isfinite(problem.param_budget):
        excess = float(g.size_param.sum()) - k * problem.param_budget
        spread_overflow = max(excess, 0.0) / problem.bandwidth
    return max(per_node, (float(g.work.sum()) + spread_overflow) / k)
