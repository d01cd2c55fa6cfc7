"""The three-superblock MIPs of Sections 3.2 and 3.3 of the MTPP paper.

Both reuse the ``k = 3`` skeleton of Figure 3 (:mod:`formulations.blocks`): block 2
(index 1 here) is one real block, superblock 1 (index 0) stands for all blocks
before it and superblock 3 (index 2) for all blocks after it.  The cut variables of
the skeleton count, for a superblock, exactly the tensors crossing the superblock
boundary, each once (tensors cut between blocks inside a superblock are not seen).

Constraint (14) forces block 2 to carry at least the simple bound ``L`` of Lemma
3.3.  With finite memory we use the overflow-extended ``L`` of
:func:`mtpp.bounds.simple.simple_lower_bound` and require ``work_2 + o_2 >= L``: some block
of every partition has work plus overflow ``>= L`` (the per-node term, and the
average by convexity of ``(.)^+``), so the argument of Corollary 3.4 goes through.
Without overflow this is the paper's (14) exactly.

Each model's optimum is at least ``L`` by (14), so ``max(L, dual bound)`` is a valid
dual bound for it, which keeps a failed or timed-out solve useful.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from formulations.blocks import BlockModel, build_blocks
from mtpp.bounds.simple import simple_lower_bound
from mtpp.core.errors import InvalidParameterError
from mtpp.core.problem import Problem
from solvers.model import Model


@dataclass
class SuperblockMip:
    """A three-superblock model: skeleton, objective variable ``t`` and ``L``."""

    blocks: BlockModel
    t: int
    simple_bound: float
    guess: int | None  # j of Section 3.3, or None for Section 3.2

    @property
    def model(self) -> Model:
        return self.blocks.model


def _with_constraint_14(bm: BlockModel, L: float) -> None:
    """(14): ``sum_v work(v) x_v2 [+ o_2] >= L``."""
    cols, vals = bm.x_terms(1, bm.problem.graph.work)
    if bm.o is not None:
        cols, vals = np.r_[cols, bm.o[1]], np.r_[vals, 1.0]
    bm.model.add_rows_coo(np.zeros(cols.size, dtype=np.int64), cols, vals, 1, lower=L)


def build_bottleneck(problem: Problem, binary_cuts: bool = False) -> SuperblockMip:
    """Section 3.2: the ``k = 3`` model plus (14), minimising ``block_2`` only
    (Corollary 3.4: ``O(n)`` variables, ``O(m)`` rows, a lower bound on OPT)."""
    budget = problem.param_budget
    bm = build_blocks(
        problem, 3, budgets=np.array([math.inf, budget, math.inf]), name="bottleneck", binary_cuts=binary_cuts
    )
    L = simple_lower_bound(problem)
    _with_constraint_14(bm, L)
    t = int(bm.model.add_variables(1, lower=0.0, upper=bm.cost_cap, name="block2")[0])
    bm.add_epigraph(t, 1)
    bm.model.set_objective(np.array([t]), 1.0)
    return SuperblockMip(bm, t, L, None)


def build_guess(problem: Problem, j: int, binary_cuts: bool = False) -> SuperblockMip:
    """Section 3.3, sub-MIP ``LB_j`` for the guess that block ``j`` (1-based, in DAG
    order) is the one with work ``>= L``: ``t >= block_2``,
    ``t >= block_1 / (j - 1)`` and ``t >= block_3 / (k - j)`` (the worst block of a
    superblock costs at least its average), plus (14).  For ``j = 1`` superblock 1 is
    empty (``x_v1 = 0``), for ``j = k`` superblock 3 is (``x_v3 = 0``).  A superblock of
    ``r`` blocks has parameter budget ``r (M - R)``: its blocks overflow by at least
    ``(size_param(S) - r (M - R))^+ / B`` in total."""
    k = problem.k
    if not 1 <= j <= k:
        raise InvalidParameterError(f"guess j must be in 1..{k}, got {j}")
    n1, n3 = j - 1, k - j
    budget = problem.param_budget
    budgets = np.array([n1 * budget if n1 else math.inf, budget, n3 * budget if n3 else math.inf])
    bm = build_blocks(problem, 3, budgets=budgets, name=f"guess_j{j}_k{k}", binary_cuts=binary_cuts)
    m = bm.model
    if n1 == 0:
        m.set_bounds(bm.y[:, 0], upper=0.0)  # x_v1 = y_v1 = 0
    if n3 == 0:
        m.set_bounds(bm.y[:, 1], lower=1.0)  # x_v3 = 1 - y_v2 = 0
    L = simple_lower_bound(problem)
    _with_constraint_14(bm, L)
    t = int(m.add_variables(1, lower=0.0, upper=bm.cost_cap, name="bottleneck")[0])
    bm.add_epigraph(t, 1)
    if n1:
        bm.add_epigraph(t, 0, 1.0 / n1)
    if n3:
        bm.add_epigraph(t, 2, 1.0 / n3)
    m.set_objective(np.array([t]), 1.0)
    return SuperblockMip(bm, t, L, j)
