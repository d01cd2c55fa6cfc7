"""REGAL-style synthetic computation graphs (MTPP paper, App. C.2).

App. C.2 of the MTPP paper describes the synthetic graphs of Paliwal et al. (REGAL,
``papers/regal-brkga-gnn-graph-optimization.txt``; their App. A.1.4):

* a base graph of ``50 <= n <= 200`` nodes from a classic random-graph model,
* made acyclic by orienting every edge along a random order of the nodes,
* every tensor (one per node, its output) of size ``size_out ~ N(50, 10)``,
* every node costs the sizes of its input tensors plus its output tensor plus a random
  fraction ``r ~ N(0, 0.1)`` of the total memory (the sum of all tensor sizes):
  ``work(v) = sum_{u -> v} size_out(u) + size_out(v) + r_v * sum_u size_out(u)``.

Choices of ours, where the description is silent or our copy of it lacks the detail:

* **models and parameters** (REGAL's Table 2 is not in our copy): ``erdos_renyi``
  (``G(n, p)`` with mean degree ``~U(2, 4)``), ``barabasi_albert`` (``m ~ U{1, 2, 3}``),
  ``watts_strogatz`` (``k ~ U{2, 4, 6}``, rewiring ``p ~ U(0.1, 0.5)``),
  ``random_geometric`` (2-d, radius for mean degree ``~U(2, 4)``) and
  ``stochastic_block`` (``U{2..5}`` near-equal blocks, mean in-block degree ``~U(2, 4)``,
  about 0.5 edges per node between blocks), drawn from networkx generators given an
  integer seed taken from the numpy generator;
* **connectivity**: the DAG is made weakly connected: each connected component of the
  base graph but the one holding the first node of the order gets one extra edge from
  a uniformly random earlier node (in the order) to its own earliest node, so it stays
  acyclic and every component hangs off an earlier one;
* tensor sizes are **rounded to integers** (REGAL's files store integer sizes) and
  clipped at 0; ``r`` is **clipped at 0** so that ``work >= 0``; ``r`` is drawn per node;
* ``size_param`` is 0 (REGAL has no parameter memory) unless ``param_mean > 0``, which
  draws ``size_param ~ N(param_mean, param_mean / 5)`` clipped at 0, last, so that the
  rest of the graph does not change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import networkx as nx
import numpy as np

from mtpp.errors import InvalidParameterError
from mtpp.generators.seeding import as_rng
from mtpp.graph import Graph

MODELS = ("erdos_renyi", "barabasi_albert", "watts_strogatz", "random_geometric", "stochastic_block")
N_RANGE = (50, 200)
SIZE_MEAN, SIZE_STD = 50.0, 10.0
R_STD = 0.1


@dataclass(frozen=True)
class RegalSample:
    """Everything one draw of :func:`regal_sample` made: the model, the oriented edges
    (``(m, 2)`` index pairs), the tensor sizes, the per-node fractions ``r`` and the
    resulting weights.  :meth:`to_graph` builds the :class:`Graph`."""

    model: str
    edges: np.ndarray
    size_out: np.ndarray
    r: np.ndarray
    work: np.ndarray
    size_param: np.ndarray
    name: str

    @property
    def n(self) -> int:
        return int(self.size_out.size)

    def to_graph(self) -> Graph:
        return Graph.from_arrays(self.work, self.size_param, self.size_out, self.edges, name=self.name)


def regal_work(size_out: np.ndarray, edges: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The cost rule of App. C.2: input tensor sizes + own output size + ``r`` times the
    total tensor size, per node (``edges`` as ``(m, 2)`` index pairs, no duplicates)."""
    size_out = np.asarray(size_out, dtype=np.float64)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    inputs = np.bincount(e[:, 1], weights=size_out[e[:, 0]], minlength=size_out.size)
    return inputs + size_out + np.asarray(r, dtype=np.float64) * size_out.sum()


def _base_graph(model: str, n: int, rng: np.random.Generator) -> nx.Graph:
    """An undirected base graph from ``model`` with parameters drawn from ``rng``."""
    if model == "erdos_renyi":
        degree = rng.uniform(2.0, 4.0)
        return nx.gnp_random_graph(n, min(1.0, degree / max(n - 1, 1)), seed=_nx_seed(rng))
    if model == "barabasi_albert":
        m = min(int(rng.integers(1, 3, endpoint=True)), n - 1)
        return nx.barabasi_albert_graph(n, m, seed=_nx_seed(rng)) if m >= 1 else nx.empty_graph(n)
    if model == "watts_strogatz":
        k = min(int(rng.choice([2, 4, 6])), n - 1)
        p = rng.uniform(0.1, 0.5)
        return nx.watts_strogatz_graph(n, k, p, seed=_nx_seed(rng))
    if model == "random_geometric":
        degree = rng.uniform(2.0, 4.0)
        radius = math.sqrt(degree / (math.pi * max(n - 1, 1)))
        return nx.random_geometric_graph(n, radius, seed=_nx_seed(rng))
    # stochastic_block
    blocks = min(int(rng.integers(2, 5, endpoint=True)), n)
    sizes = [n // blocks + (1 if b < n % blocks else 0) for b in range(blocks)]
    degree = rng.uniform(2.0, 4.0)
    p_out = min(1.0, 0.5 / max(n - n // blocks, 1))
    probs = [
        [min(1.0, degree / max(sizes[a] - 1, 1)) if a == b else p_out for b in range(blocks)] for a in range(blocks)
    ]
    return nx.stochastic_block_model(sizes, probs, seed=_nx_seed(rng))


def _nx_seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


def _orient_and_connect(base: nx.Graph, n: int, rng: np.random.Generator) -> np.ndarray:
    """Edges oriented along a random order, plus one edge per extra component (see the
    module docstring); returns ``(m, 2)`` index pairs."""
    order = rng.permutation(n)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    e = np.array(sorted(base.edges()), dtype=np.int64).reshape(-1, 2)
    forward = rank[e[:, 0]] < rank[e[:, 1]]
    e = np.where(forward[:, None], e, e[:, ::-1])
    heads = sorted((min(comp, key=lambda v: rank[v]) for comp in nx.connected_components(base)), key=lambda v: rank[v])
    extra = [(int(order[rng.integers(rank[h])]), int(h)) for h in heads[1:]]
    return np.concatenate([e, np.array(extra, dtype=np.int64).reshape(-1, 2)])


def regal_sample(
    n: int | None = None,
    model: str | None = None,
    seed: int | np.random.Generator | None = 0,
    *,
    param_mean: float = 0.0,
) -> RegalSample:
    """One REGAL-style graph with its random draws exposed (MTPP paper, App. C.2).

    ``n`` nodes (``None``: uniform in 50..200, any ``n >= 2`` accepted), from ``model``
    (one of :data:`MODELS`; ``None``: drawn uniformly).  The same integer ``seed`` gives
    the same sample on any machine for a given networkx version; ``None`` draws fresh
    entropy; a ``numpy.random.Generator`` is used (and advanced) as is.
    Raises :class:`InvalidParameterError` naming a bad argument.
    """
    if n is not None and (isinstance(n, bool) or not isinstance(n, Integral) or n < 2):
        raise InvalidParameterError(f"n must be an integer >= 2 or None, got {n!r}")
    if model is not None and model not in MODELS:
        raise InvalidParameterError(f"model must be one of {', '.join(MODELS)} or None, got {model!r}")
    if isinstance(param_mean, bool) or not isinstance(param_mean, Real) or not (0 <= param_mean < math.inf):
        raise InvalidParameterError(f"param_mean must be a finite number >= 0, got {param_mean!r}")
    rng = as_rng(seed)
    n = int(rng.integers(N_RANGE[0], N_RANGE[1], endpoint=True)) if n is None else int(n)
    model = MODELS[int(rng.integers(len(MODELS)))] if model is None else model

    edges = _orient_and_connect(_base_graph(model, n, rng), n, rng)
    size_out = np.maximum(np.rint(rng.normal(SIZE_MEAN, SIZE_STD, size=n)), 0.0)
    r = np.maximum(rng.normal(0.0, R_STD, size=n), 0.0)
    work = regal_work(size_out, edges, r)
    size_param = np.zeros(n)
    if param_mean > 0:
        size_param = np.maximum(rng.normal(float(param_mean), float(param_mean) / 5.0, size=n), 0.0)
    label = f"_seed{int(seed)}" if isinstance(seed, Integral) else ""
    return RegalSample(model, edges, size_out, r, work, size_param, f"regal_{model}_n{n}{label}")


def regal_graph(
    n: int | None = None,
    model: str | None = None,
    seed: int | np.random.Generator | None = 0,
    *,
    param_mean: float = 0.0,
) -> Graph:
    """A REGAL-style synthetic computation graph (MTPP paper, App. C.2): the
    :class:`Graph` of :func:`regal_sample` with the same arguments."""
    return regal_sample(n, model, seed, param_mean=param_mean).to_graph()
