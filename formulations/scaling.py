"""Scaling an MTPP instance so that its MIPs have ``O(1)`` data.

The block cost of Eq. (1)-(3) is positively homogeneous in the weights: dividing
``work``, ``size_param``, ``size_out``, ``M`` and ``R`` by ``s > 0`` (``B`` unchanged)
divides every block cost, hence OPT and every bound of Section 3, by ``s``.  The
MIPs are built and solved on the scaled instance and their bounds multiplied back.

``s`` is the power of two nearest to the simple bound ``L`` (Lemma 3.3), so the
scaled ``L`` lies in ``[1/sqrt 2, sqrt 2]`` and the bottleneck variable of every
model is ``O(1)``.  A power of two makes the division exact in floating point:
the scaled instance is the same instance, only its units change, and integer or
dyadic data stay dyadic (which keeps CP-SAT's integer relaxation exact, see
:mod:`solvers.integral`).  This is what makes the solvers' absolute tolerances
mean the same thing at weights of ``1e-3`` and of ``1e12``.
"""

from __future__ import annotations

import math

import numpy as np

from mtpp.bounds.simple import simple_lower_bound
from mtpp.core.graph import Graph
from mtpp.core.problem import Problem


def model_scale(problem: Problem) -> float:
    """The power of two nearest to the simple bound ``L`` (or, when ``L = 0``, to the
    largest tensor cost ``size_out / B``; 1 when every weight is 0)."""
    g = problem.graph
    ref = simple_lower_bound(problem)
    if not ref > 0:
        ref = float(g.size_out.max()) / problem.bandwidth
    if not (ref > 0 and math.isfinite(ref)):
        return 1.0
    return math.ldexp(1.0, round(math.log2(ref)))


def scaled_problem(problem: Problem, scale: float) -> Problem:
    """``problem`` with every weight, ``M`` and ``R`` divided by ``scale`` (a power of
    two, so the division is exact); same ids, edges and ``k``."""
    g = problem.graph
    graph = Graph(
        g.ids,
        g.work / scale,
        g.size_param / scale,
        g.size_out / scale,
        g.edge_src,
        g.edge_dst,
        g.names,
        g.ops,
        g.name,
    )
    return Problem(
        graph,
        problem.k,
        bandwidth=problem.bandwidth,
        memory=problem.memory / scale,
        reserve=problem.reserve / scale,
        peak_aware=problem.peak_aware,
    )


def normalised(problem: Problem) -> tuple[Problem, float]:
    """``(scaled problem, scale)`` with :func:`model_scale`; bounds of the scaled
    problem times ``scale`` are bounds of ``problem``."""
    s = model_scale(problem)
    if s == 1.0:
        return problem, 1.0
    scaled = scaled_problem(problem, s)
    if not np.all(np.isfinite(scaled.graph.size_out)):  # pragma: no cover - weights are bounded at load
        return problem, 1.0
    return scaled, s
