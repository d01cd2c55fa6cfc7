"""REGAL synthetic computation graphs (MTPP paper, App. C.2; REGAL, App. A.1.4).

App. C.2 of the MTPP paper describes the synthetic graphs of Paliwal et al. (REGAL,
``papers/regal-brkga-gnn-graph-optimization.txt``, whose App. A.1.4 our copy lacks):

* a base graph of ``50 <= n <= 200`` nodes from a classic random-graph model,
* made acyclic by orienting every edge along a random topological order,
* every tensor (one per node, its output) of size ``size_out ~ N(50, 10)``,
* every node costs "the sum of its input and output tensor costs plus a random
  fraction ``r ~ N(0, 0.1)`` of the total memory cost (i.e., the sum of all tensor
  sizes)",
* and only graphs "sufficiently hard for their min-peak scheduling objective" are kept
  (the data set's release: BRKGA with a high evaluation limit beats a low one by 20%).

Two generators follow it:

* :func:`regal_graph` / :func:`regal_sample` (``mtpp generate regal``), the faithful
  one: ``work(v) = (in(v) + size_out(v)) (1 + r_v)`` with ``in(v)`` the sizes of its
  input tensors, i.e. ``r_v`` a fraction of the memory the node touches ("the sum of
  all tensor sizes" read per node), ``r`` *not* clipped (an op may cost less than its
  output; ``work`` is clipped at 0 only where ``r < -1``, a 10-sigma draw), no edges
  added (a graph may have several components and isolated nodes, like the released
  files, whose parentless nodes hang off ``_SOURCE`` by control edges only), and the
  hardness filter of :mod:`mtpp.generators.hardness`: draws are repeated (``n`` and the
  model redrawn when not given) until BRKGA lowers the peak memory of its starting
  orders by ``min_gain`` (default 20%).  The other reading, ``r`` times the *graph's*
  total tensor size, makes compute dwarf every tensor (std ``0.1 * 50 n``, 250-1000)
  and contradicts the release's example file (compute 58, 47, 58 for outputs 70, 52,
  55): ``cost="graph"`` gives it, ``cost="output"`` the rule ``size_out (1 + r)`` that
  fits that example best.
* :func:`regal_connected_graph` / :func:`regal_connected_sample` (``mtpp generate
  regal-connected``), mtpp's first REGAL-style generator, kept so that its seeds give
  the same graphs: ``r`` clipped at 0 and times the graph's total tensor size (so
  ``work >= in + size_out``), one edge added per extra component (weakly connected),
  no filter.

Choices of ours, shared, where the description is silent or our copy lacks the detail:

* **models and parameters** (REGAL's Table 2 is not in our copy): ``erdos_renyi``
  (``G(n, p)`` with mean degree ``~U(2, 4)``), ``barabasi_albert`` (``m ~ U{1, 2, 3}``),
  ``watts_strogatz`` (``k ~ U{2, 4, 6}``, rewiring ``p ~ U(0.1, 0.5)``),
  ``random_geometric`` (2-d, radius for mean degree ``~U(2, 4)``) and
  ``stochastic_block`` (``U{2..5}`` near-equal blocks, mean in-block degree ``~U(2, 4)``,
  about 0.5 edges per node between blocks), drawn from networkx generators given an
  integer seed taken from the numpy generator;
* tensor sizes are **rounded to integers** (REGAL's files store integer sizes) and
  clipped at 0; ``r`` is drawn per node;
* ``size_param`` is 0 (REGAL has no parameter memory) unless ``param_mean > 0``, which
  draws ``size_param ~ N(param_mean, param_mean / 5)`` clipped at 0, last, so that the
  rest of the graph does not change.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.validation import MAX_NODES, check_int
from mtpp.generators.hardness import DEFAULT_MIN_GAIN, check_min_gain, peak_memory_room
from mtpp.generators.seeding import as_rng

if TYPE_CHECKING:
    import networkx as nx

MODELS = ("erdos_renyi", "barabasi_albert", "watts_strogatz", "random_geometric", "stochastic_block")
N_RANGE = (50, 200)
SIZE_MEAN, SIZE_STD = 50.0, 10.0
R_STD = 0.1
COSTS = ("node", "graph", "output")
DEFAULT_MAX_TRIES = 50


@dataclass(frozen=True)
class RegalSample:
    """Everything one draw of :func:`regal_sample` (or :func:`regal_connected_sample`)
    made: the model, the oriented edges (``(m, 2)`` index pairs), the tensor sizes, the
    per-node fractions ``r`` and the resulting weights; for the filtered generator also
    the peak-memory gain of the hardness filter, how many draws it took and whether the
    kept one passed.  :meth:`to_graph` builds the :class:`Graph`."""

    model: str
    edges: np.ndarray
    size_out: np.ndarray
    r: np.ndarray
    work: np.ndarray
    size_param: np.ndarray
    name: str
    gain: float = math.nan
    tries: int = 1
    hard: bool = False

    @property
    def n(self) -> int:
        return int(self.size_out.size)

    def to_graph(self) -> Graph:
        return Graph.from_arrays(self.work, self.size_param, self.size_out, self.edges, name=self.name)


def _input_sizes(size_out: np.ndarray, edges: np.ndarray) -> np.ndarray:
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return np.bincount(e[:, 1], weights=size_out[e[:, 0]], minlength=size_out.size)


def regal_work(size_out: np.ndarray, edges: np.ndarray, r: np.ndarray, cost: str = "node") -> np.ndarray:
    """The cost rule of App. C.2, per node (``edges`` as ``(m, 2)`` index pairs, no
    duplicates), clipped at 0: ``cost="node"`` (default) ``(in + size_out) (1 + r)``;
    ``"graph"`` ``in + size_out + r * sum(size_out)``; ``"output"`` ``size_out (1 + r)``
    (see the module docstring)."""
    if cost not in COSTS:
        raise InvalidParameterError(f"cost must be one of {', '.join(COSTS)}, got {cost!r}")
    size_out = np.asarray(size_out, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    if cost == "output":
        work = size_out * (1.0 + r)
    elif cost == "graph":
        work = _input_sizes(size_out, edges) + size_out + r * size_out.sum()
    else:
        work = (_input_sizes(size_out, edges) + size_out) * (1.0 + r)
    return np.maximum(work, 0.0)


def regal_connected_work(size_out: np.ndarray, edges: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The rule of :func:`regal_connected_sample`: input tensor sizes + own output size
    + ``r`` (clipped at 0 by the caller) times the total tensor size, per node."""
    size_out = np.asarray(size_out, dtype=np.float64)
    return _input_sizes(size_out, edges) + size_out + np.asarray(r, dtype=np.float64) * size_out.sum()


def _base_graph(model: str, n: int, rng: np.random.Generator) -> nx.Graph:
    """An undirected base graph from ``model`` with parameters drawn from ``rng``."""
    import networkx as nx  # 0.1 s to import: only the REGAL generators need it

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


def _orient(base: nx.Graph, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The base graph's edges oriented along a random order: ``(m, 2)`` index pairs,
    the order and every node's rank in it."""
    order = rng.permutation(n)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    e = np.array(sorted(base.edges()), dtype=np.int64).reshape(-1, 2)
    forward = rank[e[:, 0]] < rank[e[:, 1]]
    return np.where(forward[:, None], e, e[:, ::-1]), order, rank


def _orient_and_connect(base: nx.Graph, n: int, rng: np.random.Generator) -> np.ndarray:
    """Edges oriented along a random order, plus one edge per extra component (see the
    module docstring); returns ``(m, 2)`` index pairs."""
    import networkx as nx

    e, order, rank = _orient(base, n, rng)
    heads = sorted((min(comp, key=lambda v: rank[v]) for comp in nx.connected_components(base)), key=lambda v: rank[v])
    extra = [(int(order[rng.integers(rank[h])]), int(h)) for h in heads[1:]]
    return np.concatenate([e, np.array(extra, dtype=np.int64).reshape(-1, 2)])


def regal_connected_sample(
    n: int | None = None,
    model: str | None = None,
    seed: int | np.random.Generator | None = 0,
    *,
    param_mean: float = 0.0,
) -> RegalSample:
    """One graph of mtpp's first REGAL-style generator, with its random draws exposed:
    ``r`` clipped at 0, weakly connected, no hardness filter (module docstring).

    ``n`` nodes (``None``: uniform in 50..200, any ``n >= 2`` accepted), from ``model``
    (one of :data:`MODELS`; ``None``: drawn uniformly); at most
    :data:`mtpp.core.validation.MAX_NODES` (10^7).  The same integer ``seed`` gives
    the same sample on any machine for a given networkx version; ``None`` draws fresh
    entropy; a ``numpy.random.Generator`` is used (and advanced) as is.
    Raises :class:`InvalidParameterError` naming a bad argument.
    """
    n = _check_args(n, model, param_mean)
    rng = as_rng(seed)
    n = int(rng.integers(N_RANGE[0], N_RANGE[1], endpoint=True)) if n is None else int(n)
    model = MODELS[int(rng.integers(len(MODELS)))] if model is None else model

    edges = _orient_and_connect(_base_graph(model, n, rng), n, rng)
    size_out = np.maximum(np.rint(rng.normal(SIZE_MEAN, SIZE_STD, size=n)), 0.0)
    r = np.maximum(rng.normal(0.0, R_STD, size=n), 0.0)
    work = regal_connected_work(size_out, edges, r)
    size_param = np.zeros(n)
    if param_mean > 0:
        size_param = np.maximum(rng.normal(float(param_mean), float(param_mean) / 5.0, size=n), 0.0)
    label = f"_seed{int(seed)}" if isinstance(seed, Integral) else ""
    return RegalSample(model, edges, size_out, r, work, size_param, f"regal_{model}_n{n}{label}")


def regal_connected_graph(
    n: int | None = None,
    model: str | None = None,
    seed: int | np.random.Generator | None = 0,
    *,
    param_mean: float = 0.0,
) -> Graph:
    """mtpp's first REGAL-style graph (``mtpp generate regal-connected``): the
    :class:`Graph` of :func:`regal_connected_sample`; the same seeds give the graphs
    ``regal_graph`` gave up to then."""
    return regal_connected_sample(n, model, seed, param_mean=param_mean).to_graph()


def _check_args(n: object, model: object, param_mean: object) -> int | None:
    if n is not None:
        n = check_int("n", n, low=2, high=MAX_NODES)
    if model is not None and model not in MODELS:
        raise InvalidParameterError(f"model must be one of {', '.join(MODELS)} or None, got {model!r}")
    if isinstance(param_mean, bool) or not isinstance(param_mean, Real) or not (0 <= float(param_mean) < math.inf):
        raise InvalidParameterError(f"param_mean must be a finite number >= 0, got {param_mean!r}")
    return None if n is None else int(n)


def regal_sample(
    n: int | None = None,
    model: str | None = None,
    seed: int | np.random.Generator | None = 0,
    *,
    cost: str = "node",
    min_gain: float = DEFAULT_MIN_GAIN,
    max_tries: int = DEFAULT_MAX_TRIES,
    param_mean: float = 0.0,
) -> RegalSample:
    """One REGAL graph, faithful to MTPP App. C.2, with its random draws exposed.

    Draws (``n`` uniform in 50..200 unless given, any ``n >= 2`` accepted; ``model``
    uniform in :data:`MODELS` unless given), orients along a random order, draws
    ``size_out ~ N(50, 10)`` rounded and ``r ~ N(0, 0.1)``, prices every node by
    :func:`regal_work` with ``cost``, and keeps the draw when
    :func:`mtpp.generators.hardness.peak_memory_room` finds a gain ``>= min_gain``
    (``0`` switches the filter off); else it draws again, up to ``max_tries`` times,
    and then returns the draw with the largest gain, with ``hard=False`` (tiny graphs
    may have no room at all).  Each try costs about 0.1-0.3 s at 50-200 nodes.
    The same integer ``seed`` gives the same sample on any machine for a given
    networkx version; ``None`` draws fresh entropy; a ``numpy.random.Generator`` is
    used (and advanced) as is.  Raises :class:`InvalidParameterError` naming a bad
    argument.
    """
    n = _check_args(n, model, param_mean)
    if cost not in COSTS:
        raise InvalidParameterError(f"cost must be one of {', '.join(COSTS)}, got {cost!r}")
    min_gain = check_min_gain(min_gain)
    max_tries = check_int("max_tries", max_tries, low=1)
    rng = as_rng(seed)
    label = f"_seed{int(seed)}" if isinstance(seed, Integral) else ""
    best: RegalSample | None = None
    for tries in range(1, max_tries + 1):
        size = int(rng.integers(N_RANGE[0], N_RANGE[1], endpoint=True)) if n is None else n
        kind = MODELS[int(rng.integers(len(MODELS)))] if model is None else model
        edges, _, _ = _orient(_base_graph(kind, size, rng), size, rng)
        size_out = np.maximum(np.rint(rng.normal(SIZE_MEAN, SIZE_STD, size=size)), 0.0)
        r = rng.normal(0.0, R_STD, size=size)
        work = regal_work(size_out, edges, r, cost)
        name = f"regal_{kind}_n{size}{label}"
        draw = RegalSample(kind, edges, size_out, r, work, np.zeros(size), name, tries=tries)
        gain = peak_memory_room(draw.to_graph()).gain if min_gain > 0 else math.nan
        hard = min_gain == 0 or gain >= min_gain
        if best is None or hard or gain > best.gain:
            best = dataclasses.replace(draw, gain=gain, hard=hard)
        if hard:
            break
    assert best is not None
    best = dataclasses.replace(best, tries=tries)
    if param_mean > 0:
        params = np.maximum(rng.normal(float(param_mean), float(param_mean) / 5.0, size=best.n), 0.0)
        best = dataclasses.replace(best, size_param=params)
    return best


def regal_graph(
    n: int | None = None,
    model: str | None = None,
    seed: int | np.random.Generator | None = 0,
    *,
    cost: str = "node",
    min_gain: float = DEFAULT_MIN_GAIN,
    max_tries: int = DEFAULT_MAX_TRIES,
    param_mean: float = 0.0,
) -> Graph:
    """A REGAL synthetic computation graph (MTPP paper, App. C.2; ``mtpp generate
    regal``): the :class:`Graph` of :func:`regal_sample` with the same arguments.
    Graphs differ from those of mtpp's first generator; :func:`regal_connected_graph`
    gives those."""
    return regal_sample(
        n, model, seed, cost=cost, min_gain=min_gain, max_tries=max_tries, param_mean=param_mean
    ).to_graph()
