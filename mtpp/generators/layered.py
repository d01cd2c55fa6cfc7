"""Random layered graphs: the synthetic NN-like DAG family of the Topoformer paper.

Appendix A of Gagrani et al., "Neural Topological Ordering for Computation Graphs"
(NeurIPS 2022; ``papers/topoformer-neural-topological-ordering.txt``):

1. **Nodes into layers** (Algorithm 1): a width factor ``W ~ U(0.25, 0.5)`` sets the
   target layer count ``L = ceil(sqrt(|V| (1/W - 1)))`` (Eq. 11); each layer then gets
   ``N_l ~ U{ceil(|V|/L (1 - s)), ..., floor(|V|/L (1 + s))}`` nodes (Eq. 12, ``s`` the
   node-count variability), and layers are added until ``|V|`` nodes are placed (the
   last one is cut short).
2. **Edges between adjacent layers** (Algorithm 2): ``round(N_1 N_2 rho_E + (1 - rho_E)
   max(N_1, N_2))`` edges per pair (Eq. 13), spread as evenly as possible over the nodes
   of the larger layer (the remainder to a random subset, which is what the paper's
   "smallest count first, ties broken randomly" loop gives), each node's edges going to
   a contiguous run of the other layer centred under it (the "cone").
3. **Skip connections** (Algorithm 3): ``ceil(|E| rho_S / (1 - rho_S))`` extra edges
   (Eq. 14) from a random node of a random layer to the node "more or less below it"
   in a random layer at least two further down.
4. **Costs** (Eq. 16): output and parameter memory drawn from the Gaussian mixture
   ``sum_i w_i N(mu_i, sigma_i)`` with ``w = (.3, .3, .3, .1)``, ``mu = (.5, 1, 3, 5)``,
   ``sigma = (.5, 1, 1, 1)``, restricted to the positive reals.

Where the paper leaves a detail open, :func:`layered_graph` follows the released data
sets built with this generator (the Moccasin layered graphs in ``shared/graphs/layered``,
which it reproduces: their adjacent-layer edges match Eq. 13 and the cone rule exactly,
see ``tests/mtpp/generators/test_generators.py``):

* a single **source** and **sink** node are the first and last layer (``source_sink``);
  ``n`` counts them, Algorithm 1 places the other ``n - 2`` nodes, and skip
  connections stay among the inner layers (Eq. 14 still counts all edges);
* on a tie ``N_1 == N_2`` the later layer plays the "larger" one (the printed
  Algorithm 2 says the earlier; the data say the later);
* memory costs are drawn **per node**, scaled by ``memory_scale = 1000`` and rounded to
  multiples of ``memory_scale / 100`` (at least one such unit); the paper's text draws
  one cost per layer, available as ``per_layer_costs=True``;
* "restricted to the positive reals" is read as redrawing non-positive samples;
* run times (``duration``, which the paper does not model) are integers uniform in
  ``[0, max_duration)``, ``max_duration = 1000``, and 0 on the source and sink.

mtpp weights: ``size_out`` = output memory, ``work`` = duration, ``size_param`` =
parameter memory (0 unless ``param_costs=True``, as in the data sets).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.validation import MAX_NODES, check_int
from mtpp.generators.seeding import as_rng

GMM_WEIGHTS = (0.3, 0.3, 0.3, 0.1)
GMM_MEANS = (0.5, 1.0, 3.0, 5.0)
GMM_STDS = (0.5, 1.0, 1.0, 1.0)


def target_layer_count(n: int, width: float) -> int:
    """Eq. (11): ``L = ceil(sqrt(n (1/W - 1)))``, at least 1."""
    return max(1, math.ceil(math.sqrt(n * (1.0 / width - 1.0)) - 1e-9))


def layer_sizes(n: int, width: float, node_variability: float, rng: np.random.Generator) -> list[int]:
    """Algorithm 1 with Eq. (12): layer sizes drawn uniformly (both ends included) until
    ``n`` nodes are placed; the last layer is cut to fit."""
    mean = n / target_layer_count(n, width)
    lo = max(1, math.ceil(mean * (1.0 - node_variability) - 1e-9))
    hi = max(lo, math.floor(mean * (1.0 + node_variability) + 1e-9))
    sizes: list[int] = []
    placed = 0
    while placed < n:
        size = min(int(rng.integers(lo, hi, endpoint=True)), n - placed)
        sizes.append(size)
        placed += size
    return sizes


def edge_budget(n1: int, n2: int, edge_density: float) -> int:
    """Eq. (13): edges between adjacent layers of ``n1`` and ``n2`` nodes, rounded to
    the nearest integer."""
    return math.floor(n1 * n2 * edge_density + (1.0 - edge_density) * max(n1, n2) + 0.5)


def cone_targets(i: int, count: int, n_src: int, n_dst: int) -> range:
    """Algorithm 2's cone: the ``count`` consecutive nodes of a layer of ``n_dst`` nodes
    centred under node ``i`` of the larger layer of ``n_src`` nodes, shifted to fit.  The
    centre ``i (n_dst - 1) / (n_src - 1)`` is rounded half to even (Python's ``round``),
    which is what the released data sets show (half up disagrees with them)."""
    center = 0 if n_src == 1 else round(i * (n_dst - 1) / (n_src - 1))
    lo = min(max(center - (count - 1) // 2, 0), n_dst - count)
    return range(lo, lo + count)


def _adjacent_edges(
    sizes: list[int], offsets: np.ndarray, edge_density: float, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """Algorithm 2 over every pair of adjacent layers."""
    edges: list[tuple[int, int]] = []
    for layer in range(len(sizes) - 1):
        n1, n2 = sizes[layer], sizes[layer + 1]
        budget = edge_budget(n1, n2, edge_density)
        s, t = (layer, layer + 1) if n1 > n2 else (layer + 1, layer)
        ns, nt = sizes[s], sizes[t]
        counts = np.full(ns, budget // ns, dtype=np.int64)
        counts[rng.choice(ns, size=budget % ns, replace=False)] += 1
        for i in range(ns):
            u = int(offsets[s]) + i
            for j in cone_targets(i, int(counts[i]), ns, nt):
                v = int(offsets[t]) + j
                edges.append((u, v) if s < t else (v, u))
    return edges


def _skip_edges(
    sizes: list[int],
    offsets: np.ndarray,
    first: int,
    last: int,
    n_edges: int,
    skip_density: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Algorithm 3 with Eq. (14), source layers ``first .. last - 2`` and target layers up
    to ``last`` (both inclusive)."""
    if last - first + 1 < 3 or skip_density == 0.0:
        return np.empty((0, 2), dtype=np.int64)
    count = math.ceil(n_edges * skip_density / (1.0 - skip_density) - 1e-9)
    size = np.asarray(sizes, dtype=np.int64)
    ls = rng.integers(first, last - 2, size=count, endpoint=True)
    lt = rng.integers(ls + 2, last, endpoint=True)
    xs = rng.random(count)
    xt = np.minimum(xs + 0.2 * rng.random(count), 0.999)
    src = offsets[ls] + np.floor(xs * size[ls]).astype(np.int64)
    dst = offsets[lt] + np.floor(xt * size[lt]).astype(np.int64)
    return np.stack([src, dst], axis=1)


def gmm_costs(count: int, rng: np.random.Generator) -> np.ndarray:
    """Eq. (16): ``count`` draws of the 4-component Gaussian mixture, redrawing the
    non-positive ones (the mixture restricted to the positive reals)."""
    out = np.empty(count)
    todo = np.arange(count)
    while todo.size:
        comp = rng.choice(len(GMM_WEIGHTS), size=todo.size, p=GMM_WEIGHTS)
        x = rng.normal(np.take(GMM_MEANS, comp), np.take(GMM_STDS, comp))
        ok = x > 0
        out[todo[ok]] = x[ok]
        todo = todo[~ok]
    return out


def _quantise(x: np.ndarray, scale: float) -> np.ndarray:
    """``x * scale`` rounded to multiples of ``scale / 100``, at least one multiple."""
    return np.maximum(np.rint(x * 100.0), 1.0) * (scale / 100.0)


def _check_fraction(name: str, value: object, lo: float, hi: float, *, hi_open: bool, lo_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise InvalidParameterError(f"{name} must be a finite number, got {value!r}")
    x = float(value)
    if x < lo or x > hi or (lo_open and x == lo) or (hi_open and x == hi):
        left, right = "(" if lo_open else "[", ")" if hi_open else "]"
        raise InvalidParameterError(f"{name} must lie in {left}{lo}, {hi}{right}, got {value!r}")
    return x


def layered_graph(
    n: int,
    seed: int | np.random.Generator | None = 0,
    width: float | None = None,
    node_variability: float = 0.75,
    edge_density: float = 0.2,
    skip_density: float = 0.14,
    *,
    width_range: tuple[float, float] = (0.25, 0.5),
    source_sink: bool = True,
    per_layer_costs: bool = False,
    param_costs: bool = False,
    memory_scale: float = 1000.0,
    max_duration: int = 1000,
) -> Graph:
    """A random layered graph of ``n`` nodes (Topoformer paper, App. A, Alg. 1-3, Eq. 11-16).

    ``width`` is the width factor ``W`` of Eq. (11) (``None``: drawn uniformly from
    ``width_range``, the paper's ``U(0.25, 0.5)``); ``node_variability``, ``edge_density``
    and ``skip_density`` are ``sigma_N``, ``rho_E`` and ``rho_S``, with the paper's values
    as defaults.  See the module docstring for the keyword-only options and for the
    details taken from the released data sets.  Node ``i`` is the ``i``-th in layer order
    (with ``source_sink``, 0 is the source and ``n - 1`` the sink).

    The same ``seed`` (an int) gives the same graph on any machine; ``None`` draws fresh
    entropy; a ``numpy.random.Generator`` is used (and advanced) as is.  Random draws
    happen in a fixed order (width, layers, edges, skips, memory, durations, parameters),
    so ``param_costs`` changes nothing else.  ``n`` is at most
    :data:`mtpp.core.validation.MAX_NODES` (10^7).  Raises :class:`InvalidParameterError`
    naming a bad argument.
    """
    n = check_int("n", n, high=MAX_NODES)  # at most 10^7 nodes: a larger graph is refused before any memory is taken
    if n < (3 if source_sink else 1):
        raise InvalidParameterError(f"n must be >= {3 if source_sink else 1} (source_sink={source_sink}), got {n}")
    sigma = _check_fraction("node_variability", node_variability, 0.0, 1.0, hi_open=True)
    rho_e = _check_fraction("edge_density", edge_density, 0.0, 1.0, hi_open=False)
    rho_s = _check_fraction("skip_density", skip_density, 0.0, 1.0, hi_open=True)
    scale = _check_fraction("memory_scale", memory_scale, 0.0, math.inf, hi_open=True, lo_open=True)
    if isinstance(max_duration, bool) or not isinstance(max_duration, Integral) or max_duration < 1:
        raise InvalidParameterError(f"max_duration must be an integer >= 1, got {max_duration!r}")
    if width is None:
        if not isinstance(width_range, tuple) or len(width_range) != 2:
            raise InvalidParameterError(f"width_range must be a pair (a, b), got {width_range!r}")
        a = _check_fraction("width_range[0]", width_range[0], 0.0, 1.0, hi_open=True, lo_open=True)
        b = _check_fraction("width_range[1]", width_range[1], 0.0, 1.0, hi_open=True, lo_open=True)
        if a > b:
            raise InvalidParameterError(f"width_range must have a <= b, got {width_range!r}")
    else:
        w = _check_fraction("width", width, 0.0, 1.0, hi_open=True, lo_open=True)
    rng = as_rng(seed)
    if width is None:
        w = float(rng.uniform(a, b))

    inner = layer_sizes(n - 2 if source_sink else n, w, sigma, rng)
    sizes = [1, *inner, 1] if source_sink else inner
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    adjacent = _adjacent_edges(sizes, offsets, rho_e, rng)
    first, last = (1, len(sizes) - 2) if source_sink else (0, len(sizes) - 1)
    skips = _skip_edges(sizes, offsets, first, last, len(adjacent), rho_s, rng)
    edges = np.concatenate([np.asarray(adjacent, dtype=np.int64).reshape(-1, 2), skips])

    layer_of = np.repeat(np.arange(len(sizes)), sizes)
    if per_layer_costs:
        size_out = _quantise(gmm_costs(len(sizes), rng), scale)[layer_of]
    else:
        size_out = _quantise(gmm_costs(n, rng), scale)
    work = rng.integers(0, int(max_duration), size=n).astype(np.float64)
    size_param = np.zeros(n)
    if param_costs:
        draws = gmm_costs(len(sizes), rng)[layer_of] if per_layer_costs else gmm_costs(n, rng)
        size_param = _quantise(draws, scale)
    if source_sink:
        work[[0, n - 1]] = 0.0
        size_param[[0, n - 1]] = 0.0

    label = f"_seed{int(seed)}" if isinstance(seed, Integral) else ""
    name = f"layered_n{n}_w{w:.2f}_nlv{sigma:g}_ed{rho_e:g}_scd{rho_s:g}{label}"
    return Graph.from_arrays(work, size_param, size_out, edges, name=name)
