"""Running a trained Topoformer: weights to priorities to orders (Topoformer Section 4.2).

``load_topoformer(source)`` reads a weights file (a shipped name such as
``"topoformer-peak"`` or a path) once per process; ``topoformer_priorities`` is one
forward pass (features, relation masks, encoder, Eq. 7 and 17) on the CPU;
``topoformer_order`` decodes them greedily, by sampling (the best of ``count``
samples of Eq. 8 under the objective) or by beam search with state collapsing.
Greedy decoding is deterministic: the forward pass runs in eval mode with no
randomness, and Kahn breaks ties by node index.  Under a ``time_limit`` a forward
pass that would not fit (:mod:`heuristics.neural.forward_budget`) is skipped for
equal priorities (Kahn by index; uniform sampling), with a note saying why.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from heuristics.brkga import decode_until
from heuristics.neural.decoding import beam_search, greedy_order, sample_orders
from heuristics.neural.features import N_SCALAR, node_features
from heuristics.neural.forward_budget import topoformer_skip
from heuristics.neural.masks import relation_matrix
from heuristics.neural.objectives import OrderObjective
from heuristics.neural.weights import LoadedWeights, load_model, require_torch
from mtpp.core.errors import InvalidParameterError, WeightsError
from mtpp.core.graph import Graph

MODES = ("greedy", "sample", "beam")


def _build(weights: LoadedWeights) -> Any:
    from heuristics.neural.topoformer import Topoformer, TopoformerConfig

    config = TopoformerConfig.from_dict(weights.config)
    pe_dim = weights.meta.get("pe_dim")
    if not isinstance(pe_dim, int) or config.in_features != N_SCALAR + pe_dim:
        raise WeightsError(
            f"{weights.path} expects {config.in_features} input features; "
            f"these features give {N_SCALAR} + pe_dim ({pe_dim!r} in the file)"
        )
    return Topoformer(config)


def _load(source: str | os.PathLike[str]) -> tuple[Any, LoadedWeights]:
    return load_model(source, "topoformer", _build)


def load_topoformer(source: str | os.PathLike[str] = "topoformer-peak") -> Any:
    """The Topoformer of a weights file, in eval mode (cached per file and its
    modification time)."""
    return _load(source)[0]


def weights_meta(source: str | os.PathLike[str]) -> dict[str, Any]:
    """What the weights file says about its training (objective, k, epochs, ...)."""
    return dict(_load(source)[1].meta)


def topoformer_priorities(graph: Graph, source: str | os.PathLike[str] = "topoformer-peak") -> np.ndarray:
    """Node priorities (Eq. 7, normalised by Eq. 17) of the model in ``source``."""
    torch = require_torch()
    model, weights = _load(source)
    with torch.no_grad():
        x = torch.from_numpy(node_features(graph, int(weights.meta["pe_dim"])))
        y = model(x, torch.from_numpy(relation_matrix(graph)))
    return np.asarray(y.double().numpy(), dtype=np.float64)


@dataclass(frozen=True)
class NeuralOrder:
    """The decoded order, its cost, the priorities it came from, the orders scored,
    and a note when the model was skipped (``"fell back to ...: <reason>"``)."""

    order: np.ndarray
    cost: float
    priorities: np.ndarray
    evaluations: int
    note: str = ""


def topoformer_order(
    graph: Graph,
    objective: OrderObjective,
    source: str | os.PathLike[str] = "topoformer-peak",
    mode: str = "greedy",
    count: int = 16,
    seed: int = 0,
    time_limit: float | None = None,
) -> NeuralOrder:
    """Decode the model's priorities: ``greedy``; ``sample`` (best of ``count`` samples
    of Eq. 8 and the greedy order); ``beam`` (width ``count``; state collapsing on the
    peak for the peak objective, a plain beam of the most likely partial orders
    otherwise; best of the final beam and the greedy order).

    ``time_limit`` (seconds) caps the call: a forward pass estimated not to fit in it,
    or over the memory cap, is skipped (:func:`heuristics.neural.forward_budget.topoformer_skip`)
    and the decoders run on equal priorities instead, with ``note`` saying so; the
    orders are scored until the limit (the greedy one always)."""
    if mode not in MODES:
        raise InvalidParameterError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise InvalidParameterError(f"count must be an integer >= 1, got {count!r}")
    start = time.perf_counter()
    deadline = math.inf if time_limit is None else start + time_limit
    note = topoformer_skip(graph.n, load_topoformer(source).config.layers, time_limit)
    if note:
        note = f"fell back to Kahn priorities (all equal): {note}"
        y = np.zeros(graph.n)
    else:
        y = topoformer_priorities(graph, source)
    candidates = [greedy_order(graph, y)[None, :]]
    if mode == "sample":
        candidates.append(sample_orders(graph, y, int(count), seed))
    elif mode == "beam":
        # collapsing by log-probability would leave one order on single-sink graphs (every
        # order shares its first n - 1 ops); without collapsing the beam keeps ``count`` orders
        collapse = "peak" if objective.name == "peak" else "none"
        candidates.append(beam_search(graph, y, int(count), collapse=collapse).orders)
    orders = np.vstack(candidates)
    # a bottleneck order costs a SliceGraph DP (0.64 s at 10,000 ops, k = 8): stop at the limit
    costs, done = decode_until(lambda rows, _: objective.order_costs(graph, rows), orders, math.inf, deadline)
    i = int(np.argmin(costs))
    return NeuralOrder(orders[i].copy(), float(costs[i]), y, done, note)
