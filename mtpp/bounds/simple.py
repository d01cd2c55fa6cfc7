"""Combinatorial lower bounds on the MTPP optimum.

The MIP bounds of Section 3 live in :mod:`formulations`; this module holds the
closed-form bound every run reports.
"""

from __future__ import annotations

import math

from mtpp.core.cost import overflow_cost
from mtpp.core.problem import Problem
from mtpp.core.rounding import UNIT, gamma, lower_by
from mtpp.core.validation import check_instance


def simple_lower_bound(problem: Problem) -> float:
    """Lemma 3.3 (Eq. 13): ``L = max(max_v work(v), (1/k) sum_v work(v)) <= OPT``.

    Extended soundly with the overflow term of Eq. (2): the block holding ``v``
    pays at least ``work(v) + overflow({v})``, and since ``x -> (x - c)^+`` is
    convex, the k blocks together pay at least ``W + (P - k (M - R))^+ / B`` where
    ``W`` and ``P`` are the total work and parameter size.  With unlimited memory
    (the default) this is exactly the paper's ``L``.  IO is ignored, so this bound is
    valid for every partition, however its tensors are cut.  ``O(n)``.

    Rounding (:mod:`mtpp.core.rounding`): ``W`` is a sum of ``n`` non-negative terms
    (relative error ``gamma(n)``); the overflows subtract the budget ``M - R`` (itself
    rounded) from ``size_param(v)`` or ``P``, an error bounded against what they
    touched, ``(gamma(n) P + 2u k |M - R|) / B``, plus a few ``u`` of the result.  Each term is lowered by its bound.
    """
    check_instance("problem", problem, Problem, "an mtpp.Problem (a graph with k: mtpp.Problem(graph, k))")
    g, k = problem.graph, problem.k
    inv_b = 1.0 / problem.bandwidth
    rel = gamma(g.n + 8)
    budget = problem.param_budget
    params = float(g.size_param.sum())
    touched = 0.0 if not math.isfinite(budget) else (gamma(g.n) * params + 2.0 * UNIT * k * abs(budget)) * inv_b
    per_node = float((g.work + overflow_cost(problem, g.size_param)).max())  # exact without overflow
    if math.isfinite(budget):
        per_node = lower_by(per_node, rel, touched)
    spread_overflow = 0.0
    if math.isfinite(budget):
        spread_overflow = max(params - k * budget, 0.0) * inv_b
    return max(per_node, lower_by((float(g.work.sum()) + spread_overflow) / k, rel, touched / k))
