"""The exact MIP of Figure 3 (Section 3.1, Theorem 3.2 of the MTPP paper).

    minimise  bottleneck                                              (5)
    s.t.      bottleneck >= block_b                         for all b  (6)
              block_b = sum_v work(v) x_vb + (1/B) sum_u size_out(u) c_ub
                        [+ o_b, the linear overflow term]               (7)
              DAG (8), tensor cuts (9)-(10) in the stronger form of
              formulations.blocks, x via y by Eq. (11)

The skeleton (``y``, ``c``, ``o`` and rows (8)-(11)) is :mod:`formulations.blocks`;
``block_b`` is not a variable, its right-hand side goes straight into row (6).
Optionally, a known upper bound ``UB`` fixes ``y`` variables
(:mod:`formulations.fixing`); the caller must then
report ``min(UB, dual bound)``.  ``O(nk)`` variables, ``O(mk)`` rows and non-zeros.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from formulations.blocks import BlockModel, build_blocks
from formulations.fixing import fixings
from mtpp.core.cost import block_costs
from mtpp.core.evaluate import dag_numbering
from mtpp.core.problem import Problem
from solvers.model import Model


@dataclass
class ExactMip:
    """The model, its bottleneck variable ``t`` and the skeleton (for decoding)."""

    blocks: BlockModel
    t: int
    upper_bound: float | None
    num_fixed: int

    @property
    def model(self) -> Model:
        return self.blocks.model

    def decode(self, solution: np.ndarray) -> np.ndarray:
        """Assignment (node index -> block ``0..k-1``) of a solution vector."""
        return self.blocks.decode(solution)

    def start(self, assignment: np.ndarray) -> np.ndarray:
        """A complete MIP start for a valid partition (renumbered in DAG order)."""
        problem = self.blocks.problem
        a = dag_numbering(problem, np.asarray(assignment, dtype=np.int64))
        x = self.blocks.encode(a)
        x[self.t] = float(block_costs(problem, a).total.max())
        return x


def build_exact(
    problem: Problem, upper_bound: float | None = None, fix: bool = True, binary_cuts: bool = False
) -> ExactMip:
    """Figure 3 for ``problem`` (``k = problem.k`` blocks).  With ``upper_bound``
    (the value of a known partition) and ``fix``, ``y`` variables are fixed (see the
    module docstring); ``bottleneck`` is never capped at it.  ``binary_cuts``
    declares the ``c`` variables binary (better for integer-only solvers)."""
    k = problem.k
    bm = build_blocks(problem, k, name=f"exact_k{k}", binary_cuts=binary_cuts)
    m = bm.model
    cap = bm.cost_cap  # never the UB: SCIP 10 returned "optimal" at the cap with t <= UB (tests/soundness)
    num_fixed = 0
    if upper_bound is not None and fix:
        zero, one = fixings(problem.graph, k, upper_bound)
        m.set_bounds(bm.y[zero], upper=0.0)
        m.set_bounds(bm.y[one], lower=1.0)
        num_fixed = int(zero.sum() + one.sum())
    t = int(m.add_variables(1, "continuous", lower=0.0, upper=cap, name="bottleneck")[0])
    for b in range(k):
        bm.add_epigraph(t, b)
    m.set_objective(np.array([t]), 1.0)
    return ExactMip(bm, t, upper_bound, num_fixed)
