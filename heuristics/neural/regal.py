"""REGAL: a GNN that picks BRKGA's per-gene mutant distributions (REGAL Section 2.2, 2.3, App. A.3).

BRKGA (:mod:`heuristics.brkga`) searches node priorities that Kahn's algorithm decodes
into topological orders, scored by either objective of
:mod:`heuristics.neural.objectives` (peak memory or the SliceGraph bottleneck).  Its
mutants are normally i.i.d. uniform; REGAL draws gene ``i`` from ``Beta(alpha_i,
beta_i)`` instead, with ``alpha_i`` and ``beta_i`` chosen per node by a policy over a
discrete set of values (Section 2.3): ``H(G, D)`` is BRKGA with the distributions
``D``, ``H(G, U)`` plain BRKGA.  Only the scheduling-priority genes exist here (one
per node, ``d + 1 = 1``): the device-affinity genes of the paper have no counterpart,
since the partitioner places nothing.

The network is App. A.3 Eq. (1), with every MLP ``Linear-ReLU-Linear`` of width
``hidden``::

    h_v^0   = MLP_n(x_v),            h_e = MLP_e(x_e)
    m_e^t   = MLP_msg ([h_src, h_dst, h_e])   summed into the target (forward edges)
    m_e^t'  = MLP'_msg([h_src, h_dst, h_e])   summed into the source (backward edges)
    h_v^t+1 = MLP_node([h_v^t, sum_{e: dst=v} m_e^t + sum_{e: src=v} m_e^t'])
    logits  = MLP_a(h_v^T), MLP_b(h_v^T)  over ``choices``  (alpha and beta)

with the message and update MLPs shared by the ``rounds`` rounds (Eq. 1 has no
round index on them).  Choices the paper leaves open, made here:

* node features ``x_v``: :func:`heuristics.neural.features.node_features` with
  ``pe_dim = in_features - N_SCALAR``;
* edge features ``x_e`` (:data:`EDGE_FEATURES`): the producer's ``size_out`` over the
  graph's largest, and ``1 / out-degree`` of the producer (the share of the tensor's
  consumers this edge is).  Both objectives price a tensor by its size and by how
  long its consumers keep it alive or how many blocks it is sent to;
* ``choices`` (:data:`DEFAULT_CHOICES`) = ``0.25, 0.5, 1, 2, 4``: with ``alpha = beta
  = 1`` uniform (plain BRKGA) is reachable, ``alpha, beta < 1`` gives U-shaped
  mutants (extreme priorities), ``alpha > beta`` pushes a node early, ``alpha <
  beta`` late, and large equal values concentrate the priority near 1/2.  1 must be
  among the choices;
* the last layer of each head starts with small weights (x 0.1) and a bias of
  ``log(len(choices) - 1)`` on the choice 1, so an untrained policy picks 1 with
  probability about 1/2 and its greedy choice is ``Beta(1, 1)``, i.e. plain BRKGA.

:func:`regal_brkga` runs BRKGA with the greedy (argmax) choices of a model (a
shipped name, a weights path or a :class:`RegalGNN`); :func:`uniform_brkga` is the
same run with uniform mutants.  Both seed the first population with the kahn, dfs
and bfs priorities (as the MTPP orderers do), so they never do worse than those.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from heuristics.brkga import BrkgaParams, Progress, brkga
from heuristics.kahn import kahn_order
from heuristics.neural.features import N_SCALAR, PE_DIM, node_features
from heuristics.neural.forward_budget import regal_skip
from heuristics.neural.objectives import OrderObjective
from heuristics.neural.weights import load_model
from heuristics.traversal import classic_priorities
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph

KIND = "regal"
EDGE_FEATURES = ("producer_size_out", "inverse_fanout")
EDGE_DIM = len(EDGE_FEATURES)
DEFAULT_CHOICES = (0.25, 0.5, 1.0, 2.0, 4.0)
HEAD_INIT_SCALE = 0.1
MIN_TIME_LEFT = 1e-6  # seconds for BRKGA when loading the model spent the limit (its first chunk still runs)


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidParameterError(f"RegalConfig.{name} = {value!r}; expected an integer >= {minimum}")
    return int(value)


@dataclass(frozen=True)
class RegalConfig:
    """Sizes of :class:`RegalGNN` and the discrete Beta parameter values.

    ``in_features`` is ``N_SCALAR + pe_dim`` of the node features, ``edge_features``
    must be ``len(EDGE_FEATURES)`` (2), ``rounds`` is ``T`` of Eq. (1), ``choices`` the
    increasing, positive values ``alpha`` and ``beta`` are picked from (1.0 among
    them).  Invalid values raise :class:`~mtpp.core.errors.InvalidParameterError`.
    """

    in_features: int = N_SCALAR + PE_DIM
    edge_features: int = EDGE_DIM
    hidden: int = 64
    rounds: int = 3
    choices: tuple[float, ...] = DEFAULT_CHOICES

    def __post_init__(self) -> None:
        object.__setattr__(self, "in_features", _check_int("in_features", self.in_features, N_SCALAR))
        object.__setattr__(self, "edge_features", _check_int("edge_features", self.edge_features, 1))
        if self.edge_features != EDGE_DIM:
            raise InvalidParameterError(
                f"RegalConfig.edge_features = {self.edge_features}; the edge features are {EDGE_DIM} "
                f"({', '.join(EDGE_FEATURES)})"
            )
        object.__setattr__(self, "hidden", _check_int("hidden", self.hidden, 1))
        object.__setattr__(self, "rounds", _check_int("rounds", self.rounds, 1))
        raw = self.choices
        if isinstance(raw, (str, bytes)) or not hasattr(raw, "__iter__"):
            raise InvalidParameterError(f"RegalConfig.choices = {raw!r}; expected a sequence of numbers")
        values = []
        for c in raw:
            if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)):
                raise InvalidParameterError(f"RegalConfig.choices contains {c!r}; expected numbers")
            values.append(float(c))
        if not values or any(not (math.isfinite(c) and c > 0) for c in values):
            raise InvalidParameterError(f"RegalConfig.choices = {raw!r}; expected finite numbers > 0")
        if any(b <= a for a, b in itertools.pairwise(values)):
            raise InvalidParameterError(f"RegalConfig.choices = {raw!r}; expected strictly increasing values")
        if 1.0 not in values:
            raise InvalidParameterError(
                f"RegalConfig.choices = {raw!r}; 1.0 must be a choice so that uniform mutants are reachable"
            )
        object.__setattr__(self, "choices", tuple(values))

    @property
    def pe_dim(self) -> int:
        """The Laplacian encoding width the node features need."""
        return self.in_features - N_SCALAR

    @property
    def uniform_index(self) -> int:
        """The index of the choice 1.0 (``Beta(1, 1)`` is uniform)."""
        return self.choices.index(1.0)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["choices"] = list(self.choices)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RegalConfig:
        if not isinstance(data, dict):
            raise InvalidParameterError(f"a RegalConfig needs a dictionary, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise InvalidParameterError(f"unknown RegalConfig fields {sorted(unknown)}")
        d = dict(data)
        if "choices" in d and isinstance(d["choices"], list):
            d["choices"] = tuple(d["choices"])
        return cls(**d)


def _mlp(inp: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, hidden), nn.ReLU(), nn.Linear(hidden, out))


class RegalGNN(nn.Module):
    """The message-passing network of App. A.3 Eq. (1) with the alpha and beta heads.

    ``forward(x, edge_x, src, dst)`` takes node features ``(n, in_features)``, edge
    features ``(m, edge_features)`` and the edge endpoints ``(m,)`` (int64) and returns
    the logits ``(n, len(choices))`` of the alpha and the beta choice of every node.
    """

    def __init__(self, config: RegalConfig) -> None:
        super().__init__()
        self.config = config
        h, c = config.hidden, len(config.choices)
        self.node_in = _mlp(config.in_features, h, h)  # MLP_n
        self.edge_in = _mlp(config.edge_features, h, h)  # MLP_e
        self.msg_fwd = _mlp(3 * h, h, h)  # MLP_msg: along the edge, into its target
        self.msg_bwd = _mlp(3 * h, h, h)  # MLP'_msg: against the edge, into its source
        self.update = _mlp(2 * h, h, h)  # MLP_node
        self.head_a = _mlp(h, h, c)  # MLP_a
        self.head_b = _mlp(h, h, c)  # MLP_b
        with torch.no_grad():
            for head in (self.head_a, self.head_b):
                last = head[-1]
                assert isinstance(last, nn.Linear)
                last.weight.mul_(HEAD_INIT_SCALE)
                last.bias.zero_()
                if c > 1:
                    last.bias[config.uniform_index] = math.log(c - 1)

    def forward(self, x: Tensor, edge_x: Tensor, src: Tensor, dst: Tensor) -> tuple[Tensor, Tensor]:
        h = self.node_in(x)
        he = self.edge_in(edge_x)
        for _ in range(self.config.rounds):
            pair = torch.cat([h[src], h[dst], he], dim=1)
            agg = torch.zeros_like(h).index_add(0, dst, self.msg_fwd(pair)).index_add(0, src, self.msg_bwd(pair))
            h = self.update(torch.cat([h, agg], dim=1))
        return self.head_a(h), self.head_b(h)


def edge_features(graph: Graph) -> np.ndarray:
    """The ``(m, 2)`` float32 edge features :data:`EDGE_FEATURES` (module docstring)."""
    src = graph.edge_src
    top = float(graph.size_out.max()) if graph.n else 0.0
    size = graph.size_out[src] / top if top > 0 else np.zeros(len(src))
    fanout = np.diff(graph.succ_ptr)[src].astype(np.float64)
    return np.column_stack([size, 1.0 / np.maximum(fanout, 1.0)]).astype(np.float32).reshape(len(src), EDGE_DIM)


@dataclass(frozen=True)
class GraphInputs:
    """A graph's model inputs as tensors (computed once, reused by every forward)."""

    x: Tensor
    edge_x: Tensor
    src: Tensor
    dst: Tensor

    @classmethod
    def of(cls, graph: Graph, config: RegalConfig) -> GraphInputs:
        return cls(
            torch.from_numpy(node_features(graph, config.pe_dim)),
            torch.from_numpy(edge_features(graph)),
            torch.from_numpy(np.array(graph.edge_src, dtype=np.int64)),
            torch.from_numpy(np.array(graph.edge_dst, dtype=np.int64)),
        )


def regal_logits(model: RegalGNN, graph: Graph | GraphInputs) -> tuple[Tensor, Tensor]:
    """The alpha and beta logits ``(n, len(choices))`` of every node (Eq. 1); gradients
    flow unless the caller runs it under ``torch.no_grad()``."""
    inputs = graph if isinstance(graph, GraphInputs) else GraphInputs.of(graph, model.config)
    return model(inputs.x, inputs.edge_x, inputs.src, inputs.dst)


def sample_betas(
    logits: tuple[Tensor, Tensor],
    choices: Sequence[float],
    seed: int | np.random.Generator | None = None,
    greedy: bool = False,
) -> tuple[np.ndarray, np.ndarray, Tensor]:
    """Pick ``alpha`` and ``beta`` per node from ``choices`` (Section 2.3, the bandit's
    actions): the argmax of each softmax when ``greedy`` (inference), otherwise one draw
    from each categorical with a numpy generator made from ``seed`` (training).  Returns
    ``alpha`` and ``beta`` (float64 arrays of length ``n``) and the log-probability of
    the picks, the sum over nodes of both categorical log-probabilities (a scalar tensor
    that carries the gradient of ``logits``)."""
    values = np.asarray(choices, dtype=np.float64)
    picks, total = [], None
    rng = None if greedy else np.random.default_rng(seed)
    for lg in logits:
        if lg.ndim != 2 or lg.shape[1] != len(values):
            raise InvalidParameterError(f"logits have shape {tuple(lg.shape)}; expected (n, {len(values)})")
        logp = torch.log_softmax(lg, dim=1)
        if rng is None:
            idx = np.asarray(torch.argmax(lg.detach(), dim=1).numpy(), dtype=np.int64)
        else:
            cdf = np.cumsum(np.exp(logp.detach().double().numpy()), axis=1)
            u = rng.random((lg.shape[0], 1)) * cdf[:, -1:]
            idx = np.minimum((cdf <= u).sum(axis=1), len(values) - 1).astype(np.int64)
        part = logp.gather(1, torch.from_numpy(idx)[:, None]).sum()
        total = part if total is None else total + part
        picks.append(values[idx])
    assert total is not None
    return picks[0], picks[1], total


def regal_betas(
    model: RegalGNN, graph: Graph, greedy: bool = True, seed: int | np.random.Generator | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``alpha`` and ``beta`` arrays a model picks for ``graph`` (no gradient)."""
    with torch.no_grad():
        alpha, beta, _ = sample_betas(regal_logits(model, graph), model.config.choices, seed, greedy)
    return alpha, beta


def load_regal(source: str | os.PathLike[str] = "regal-mtpp") -> RegalGNN:
    """The :class:`RegalGNN` of a weights file (a shipped name such as ``"regal-mtpp"``
    or a path), in eval mode, cached per file (and its modification time).  A missing,
    unreadable or mismatched file is a :class:`~mtpp.core.errors.WeightsError`."""
    model, _ = load_model(source, KIND, lambda w: RegalGNN(RegalConfig.from_dict(w.config)))
    return model


@dataclass(frozen=True)
class RegalResult:
    """A BRKGA run: the best priorities (``keys``), their Kahn ``order`` and its
    ``cost``, the evaluations spent, the best cost per generation, the mutant
    distributions (``alpha``/``beta``, ``None`` for uniform mutants), whether the
    time limit stopped it, and a note when the model was skipped
    (``"fell back to ...: <reason>"``)."""

    keys: np.ndarray
    order: np.ndarray
    cost: float
    evaluations: int
    history: tuple[float, ...]
    alpha: np.ndarray | None
    beta: np.ndarray | None
    stopped_by_time: bool
    note: str = ""


def beta_brkga(
    graph: Graph,
    objective: OrderObjective,
    mutant_beta: tuple[np.ndarray, np.ndarray] | None,
    evaluations: int = 5000,
    seed: int = 0,
    time_limit: float | None = None,
    progress: Progress | None = None,
    initial: np.ndarray | None = None,
) -> RegalResult:
    """``H(G, D)`` of Section 2.2: BRKGA over node priorities with ``objective.key_costs``
    as the decoder, ``BrkgaParams.for_budget(evaluations)``, mutants from
    ``Beta(alpha_i, beta_i)`` (``mutant_beta = None``: uniform), the first population
    seeded with :func:`classic_priorities` followed by the rows of ``initial``."""
    if isinstance(evaluations, bool) or not isinstance(evaluations, (int, np.integer)) or evaluations < 1:
        raise InvalidParameterError(f"evaluations must be an integer >= 1, got {evaluations!r}")
    n = graph.n
    if mutant_beta is not None:
        a = np.ascontiguousarray(mutant_beta[0], dtype=np.float64)
        b = np.ascontiguousarray(mutant_beta[1], dtype=np.float64)
        if a.shape != (n,) or b.shape != (n,):
            raise InvalidParameterError(f"mutant_beta arrays have shapes {a.shape}, {b.shape}; expected ({n},)")
        if not (np.all(a > 0) and np.all(b > 0) and np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise InvalidParameterError("mutant_beta parameters must be finite and > 0")
        mutant_beta = (a, b)
    seeds = classic_priorities(graph)
    if initial is not None:
        extra = np.atleast_2d(np.asarray(initial, dtype=np.float64))
        if extra.shape[1] != n:
            raise InvalidParameterError(f"initial priorities have {extra.shape[1]} entries; expected {n}")
        seeds = np.vstack([seeds, extra])

    def decode(keys: np.ndarray, upper_bound: float) -> np.ndarray:
        return objective.key_costs(graph, keys, upper_bound)

    res = brkga(
        decode,
        n,
        BrkgaParams.for_budget(int(evaluations)),
        seed=seed,
        initial=seeds,
        mutant_beta=mutant_beta,
        time_limit=time_limit,
        progress=progress,
    )
    order = kahn_order(graph, res.keys)
    alpha, beta = (None, None) if mutant_beta is None else mutant_beta
    return RegalResult(res.keys, order, res.fitness, res.evaluations, res.history, alpha, beta, res.stopped_by_time)


def uniform_brkga(
    graph: Graph,
    objective: OrderObjective,
    evaluations: int = 5000,
    seed: int = 0,
    time_limit: float | None = None,
    progress: Progress | None = None,
    initial: np.ndarray | None = None,
) -> RegalResult:
    """``H(G, U)``: BRKGA with uniform mutants, seeded as :func:`regal_brkga` is."""
    return beta_brkga(graph, objective, None, evaluations, seed, time_limit, progress, initial)


def regal_brkga(
    graph: Graph,
    objective: OrderObjective,
    model_or_weights: RegalGNN | str | os.PathLike[str] | None = None,
    evaluations: int = 5000,
    seed: int = 0,
    time_limit: float | None = None,
    progress: Progress | None = None,
    initial: np.ndarray | None = None,
) -> RegalResult:
    """``M(G) = H(G, D)`` with ``D`` the greedy choices of the model (Section 2.3): one
    forward pass of Eq. (1), then BRKGA.  ``model_or_weights`` is a :class:`RegalGNN`,
    a weights path or a shipped name; ``None`` means the shipped ``regal-<objective>``.
    ``time_limit`` caps the whole call: the model's load and forward pass (0.8 s on
    2,000 ops, 2 cores) come off what BRKGA gets, and a forward pass estimated not to
    fit in it, or over the memory cap (:func:`heuristics.neural.forward_budget.regal_skip`),
    is skipped for uniform mutants (:func:`uniform_brkga`), ``note`` saying why."""
    start = time.perf_counter()
    if model_or_weights is None:
        model_or_weights = f"regal-{objective.name}"
    model = model_or_weights if isinstance(model_or_weights, RegalGNN) else load_regal(model_or_weights)
    left = None if time_limit is None else max(time_limit - (time.perf_counter() - start), MIN_TIME_LEFT)
    note = regal_skip(graph.n, graph.m, model.config.rounds, left)
    mutants = None
    if not note:
        mutants = regal_betas(model, graph, greedy=True)
        left = None if time_limit is None else max(time_limit - (time.perf_counter() - start), MIN_TIME_LEFT)
    res = beta_brkga(graph, objective, mutants, evaluations, seed, left, progress, initial)
    return replace(res, note=f"fell back to uniform mutants (plain BRKGA): {note}") if note else res
