"""Fresh, seeded training graphs for the learned orderers.

Topoformer Section 5.1 and App. C.1: a new training set every epoch, so the model
cannot overfit a fixed one; REGAL Section 3.1 trains on a generated family too.
Peak memory trains on layered graphs (Topoformer App. A; half of them with the
parameter costs of Eq. 15, half without, as the shared test graphs), the MTPP bottleneck on
REGAL-style graphs (MTPP paper App. C.2).  Graph ``i`` of epoch ``e`` for seed ``s``
is always the same graph, which makes training resumable and reproducible.

The training loops (:mod:`heuristics.neural.training`,
:mod:`heuristics.neural.regal_training`) take :func:`epoch_graphs` from their caller
(:class:`heuristics.neural.datasets.EpochGraphs`): a REGAL-style graph's hardness
filter runs :func:`mtpp.schedule`, which the heuristics layer may not import.
"""

from __future__ import annotations

import numpy as np

from heuristics.neural.datasets import VALIDATION_EPOCH, check_nodes
from heuristics.neural.jobs import ordered_map
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph

__all__ = ["VALIDATION_EPOCH", "epoch_graphs", "training_graph"]


def training_graph(objective: str, nodes: tuple[int, int], seed: int, epoch: int, index: int) -> Graph:
    """Graph ``index`` of ``epoch``: layered for ``"peak"``, REGAL-style for ``"mtpp"``,
    with a node count uniform in ``nodes``."""
    lo, hi = check_nodes(nodes)
    rng = np.random.default_rng([int(seed), int(epoch) + 1, int(index)])
    n = int(rng.integers(lo, hi, endpoint=True))
    if objective == "peak":
        return layered_graph(n, seed=rng, param_costs=bool(rng.random() < 0.5))
    if objective == "mtpp":
        return regal_graph(n, seed=rng)
    raise InvalidParameterError(f"unknown objective {objective!r}; choose from peak, mtpp")


def epoch_graphs(
    objective: str, nodes: tuple[int, int], seed: int, epoch: int, count: int, jobs: int = 1
) -> list[Graph]:
    """The ``count`` graphs of one epoch (``epoch = VALIDATION_EPOCH``: the validation set),
    drawn over ``jobs`` processes when more than one: a REGAL-style graph's filter for
    graphs hard for min-peak scheduling (:mod:`mtpp.generators.hardness`) runs BRKGA
    schedules, 0.6 s per graph of 150-400 ops, three quarters of a REINFORCE epoch
    of ``topoformer-mtpp`` on one core."""
    return ordered_map(training_graph, [(objective, nodes, seed, epoch, i) for i in range(count)], jobs)
