"""Teachers for the imitation warm start of the learned orderers (not in the papers).

A policy trained by REINFORCE alone from a random start needs GPU-days (Topoformer
App. C.1); on a CPU and minutes, both trainers can first imitate a good order and
only then optimise the objective.  The teacher is the approximate DP with state
collapsing for peak memory (Topoformer App. C.3, ``effort`` states per level) and
BRKGA for other objectives (``effort`` evaluations).  Topoformer imitates the
teacher's order by its likelihood under the policy
(:func:`heuristics.neural.training.imitation_loss`); the exact teacher's proven
orders come from data sets (:mod:`heuristics.neural.proof_data`).  REGAL's target
is, per node, the ``Beta(alpha, beta)`` pair from the choices whose mean is closest
to ``1 - position / (n - 1)``, among the sharpest such pairs, so mutants are noisy
copies of the teacher's priorities (:func:`beta_targets`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from heuristics.brkga import BrkgaParams, brkga
from heuristics.kahn import kahn_order, priorities_for
from heuristics.neural.objectives import OrderObjective
from heuristics.peak_memory.state_dp import state_dp
from heuristics.traversal import bfs_order, dfs_order
from mtpp.core.graph import Graph


def teacher_order(graph: Graph, objective: OrderObjective, effort: int, seed: int) -> np.ndarray:
    """A good order to imitate: the approximate DP (``effort`` states per level) for
    peak memory, BRKGA with about ``effort`` evaluations (seeded with the dfs and bfs
    orders) for any other objective."""
    if objective.name == "peak":
        return state_dp(graph, beam_width=effort, seed=seed).order
    initial = np.vstack([priorities_for(o(graph)) for o in (dfs_order, bfs_order)])
    res = brkga(
        lambda keys, ub: objective.key_costs(graph, keys, ub),
        graph.n,
        BrkgaParams.for_budget(effort),
        seed=seed,
        initial=initial,
    )
    return kahn_order(graph, res.keys)


def positions(order: np.ndarray) -> np.ndarray:
    """``pos[v]``: the step of node ``v`` in ``order``."""
    pos = np.empty(order.size)
    pos[order] = np.arange(order.size)
    return pos


def beta_targets(order: np.ndarray, choices: Sequence[float]) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices into ``choices`` of each node's target ``(alpha, beta)``: the pair whose
    mean ``alpha / (alpha + beta)`` is closest to ``1 - position / (n - 1)`` (early
    nodes get high priorities, which Kahn's algorithm schedules first), ties to the
    larger ``alpha + beta`` (the sharper distribution)."""
    c = np.asarray(choices, dtype=np.float64)
    ia = np.repeat(np.arange(c.size), c.size)  # every (alpha, beta) index pair
    ib = np.tile(np.arange(c.size), c.size)
    means = c[ia] / (c[ia] + c[ib])
    rank = np.lexsort((-(c[ia] + c[ib]), means))  # by mean, sharpest first among equal means
    ia, ib, means = ia[rank], ib[rank], means[rank]
    pos = positions(order)
    want = 1.0 - pos / max(order.size - 1, 1)
    best = np.abs(want[:, None] - means[None, :]).argmin(axis=1)  # first minimum: the sharpest
    return torch.from_numpy(ia[best]), torch.from_numpy(ib[best])
