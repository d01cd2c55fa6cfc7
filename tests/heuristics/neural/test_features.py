"""Node features (Topoformer App. C.5) against networkx and the definitions."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from heuristics.neural.features import (
    DENSE_LIMIT,
    N_SCALAR,
    PE_DIM,
    SCALAR_FEATURES,
    laplacian_encoding,
    node_features,
)
from mtpp import Graph
from mtpp.core.errors import InvalidParameterError
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph
from tests.oracle import random_dag


def _hops(graph: Graph) -> np.ndarray:
    g = graph.to_networkx()
    g = nx.relabel_nodes(g, {node_id: i for i, node_id in enumerate(graph.ids)})
    sources = [v for v in g if g.in_degree(v) == 0]
    sinks = [v for v in g if g.out_degree(v) == 0]
    out = np.zeros((graph.n, 4))
    for v in g:
        up = [len(p) - 1 for s in sources for p in nx.all_simple_paths(g, s, v)] + ([0] if v in sources else [])
        down = [len(p) - 1 for t in sinks for p in nx.all_simple_paths(g, v, t)] + ([0] if v in sinks else [])
        out[v] = min(up), max(up), min(down), max(down)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_scalar_features_follow_their_definitions(seed: int) -> None:
    g = random_dag(np.random.default_rng(seed), 8, p=0.35)
    x = node_features(g)
    assert x.shape == (g.n, N_SCALAR + PE_DIM) and x.dtype == np.float32
    col = {name: x[:, i].astype(np.float64) for i, name in enumerate(SCALAR_FEATURES)}
    for name in ("size_out", "size_param", "work"):
        w = getattr(g, name)
        np.testing.assert_allclose(col[name], w / w.max() if w.max() > 0 else 0 * w, rtol=1e-6)
    indeg, outdeg = np.diff(g.pred_ptr), np.diff(g.succ_ptr)
    top = max(indeg.max(), outdeg.max(), 1)
    np.testing.assert_allclose(col["in_degree"], indeg / top, rtol=1e-6)
    np.testing.assert_allclose(col["out_degree"], outdeg / top, rtol=1e-6)
    hops = _hops(g)
    depth = max(hops[:, 1].max(), 1)
    names = ("min_hops_from_source", "max_hops_from_source", "min_hops_to_sink", "max_hops_to_sink")
    for j, name in enumerate(names):
        np.testing.assert_allclose(col[name], hops[:, j] / depth, rtol=1e-6, atol=1e-7)


def _union(parts: list[Graph]) -> Graph:
    """The disjoint union of ``parts`` (one component or more each)."""
    offsets = np.cumsum([0] + [p.n for p in parts])
    edges = np.concatenate([np.stack([p.edge_src, p.edge_dst], axis=1) + o for p, o in zip(parts, offsets)])
    cat = lambda field: np.concatenate([getattr(p, field) for p in parts])  # noqa: E731
    return Graph.from_arrays(cat("work"), cat("size_param"), cat("size_out"), edges)


def _components_graph() -> Graph:
    """Above DENSE_LIMIT ops: a component solved by Lanczos, small ones solved dense,
    isolated ops, and more zero eigenvalues than the encoding has columns."""
    small = [layered_graph(int(n), seed=int(n)) for n in np.random.default_rng(0).integers(3, 40, 24)]
    lone = Graph.from_arrays(np.ones(3), np.ones(3), np.ones(3), np.zeros((0, 2), dtype=np.int64))
    return _union([small[0], layered_graph(DENSE_LIMIT + 60, seed=1), *small[1:], lone])


@pytest.mark.parametrize("n", [30, 700, 0])
def test_laplacian_encoding_is_made_of_eigenvectors(n: int) -> None:
    """On connected graphs either side of DENSE_LIMIT, and on one of many components
    (``n = 0``) whose spectrum is gathered from theirs."""
    g = layered_graph(n, seed=n) if n else _components_graph()
    n = g.n
    pe = laplacian_encoding(g) / np.sqrt(n)
    np.testing.assert_allclose(pe.T @ pe, np.eye(PE_DIM), atol=1e-8)  # orthonormal columns
    a = nx.to_numpy_array(g.to_networkx().to_undirected(), nodelist=list(g.ids))
    d = a.sum(1)
    inv = np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-300)), 0)
    lap = np.eye(n) - inv[:, None] * a * inv[None, :]
    vals = np.linalg.eigvalsh(lap)
    for j in range(PE_DIM):
        v = pe[:, j]
        lam = v @ lap @ v
        assert np.linalg.norm(lap @ v - lam * v) < 1e-6
        assert lam == pytest.approx(vals[j + 1], abs=1e-6)  # the (j+1)-th smallest, the trivial one skipped
        assert v[np.argmax(np.abs(v))] > 0  # the sign convention


def test_the_sparse_eigensolve_is_reproducible() -> None:
    """Above DENSE_LIMIT ops ARPACK solves; with its own random start vector the
    encoding of a REGAL-style graph of 1000 ops (a null space of many components)
    differed by up to 20 between two calls, and so did every learned order."""
    g = regal_graph(1000, seed=3_000_000)
    assert g.n > DENSE_LIMIT
    assert np.array_equal(laplacian_encoding(g), laplacian_encoding(g))
    u = _components_graph()
    assert np.array_equal(laplacian_encoding(u), laplacian_encoding(u))


def test_tiny_graphs_are_zero_padded_and_deterministic() -> None:
    g = Graph.from_arrays([1.0, 2.0], [0.0, 0.0], [3.0, 1.0], [(0, 1)])
    x = node_features(g)
    assert np.all(x[:, N_SCALAR + 1 :] == 0)
    assert np.array_equal(x, node_features(g))
    single = Graph.from_arrays([0.0], [0.0], [0.0], [])
    assert np.all(node_features(single) == 0)
    with pytest.raises(InvalidParameterError, match="pe_dim"):
        node_features(g, pe_dim=-1)


def test_a_component_lanczos_does_not_converge_on_is_solved_dense(monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to DENSE_FALLBACK_LIMIT ops a stalled Lanczos hands the component to the dense
    solve (the same encoding); above, the pairs it did converge are kept."""
    import heuristics.neural.features as features

    g = layered_graph(DENSE_LIMIT + 60, seed=1)
    expected = laplacian_encoding(g)

    def stalled(*args: object, **kwargs: object) -> None:
        raise features.spla.ArpackNoConvergence("stalled", np.full(3, 2.0), np.eye(g.n, 3))

    monkeypatch.setattr(features.spla, "eigsh", stalled)
    np.testing.assert_allclose(laplacian_encoding(g), expected, atol=1e-8)
    monkeypatch.setattr(features, "DENSE_FALLBACK_LIMIT", DENSE_LIMIT)
    kept = laplacian_encoding(g)
    assert np.count_nonzero(np.abs(kept).sum(axis=0)) == 2  # three pairs converged: the trivial one skipped
