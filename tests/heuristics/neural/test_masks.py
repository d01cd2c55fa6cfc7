"""The seven attention graphs of Topoformer Section 4.1 against a networkx oracle."""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import pytest

from heuristics.neural.masks import (
    DAG_MINUS_TR,
    DAG_MINUS_TR_REV,
    INCOMPARABLE,
    N_RELATIONS,
    RELATION_NAMES,
    SELF,
    TC_MINUS_DAG,
    TC_MINUS_DAG_REV,
    TR,
    TR_REV,
    reachability,
    relation_matrix,
    unpack_reachability,
)
from mtpp.core.graph import Graph
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph


def _graph(n: int, edges: list[tuple[int, int]] | np.ndarray) -> Graph:
    return Graph.from_arrays(np.ones(n), np.ones(n), np.ones(n), edges)


def _random_dag(n: int, density: float, seed: int) -> Graph:
    """Random edges ``i -> j``, ``i < j``, each with probability ``density``, on
    shuffled labels (so index order is not a topological order)."""
    rng = np.random.default_rng(seed)
    i, j = np.triu_indices(n, k=1)
    keep = rng.random(i.size) < density
    perm = rng.permutation(n)
    return _graph(n, np.stack([perm[i[keep]], perm[j[keep]]], axis=1))


def _oracle(graph: Graph) -> np.ndarray:
    """The relation codes from networkx: reduction, closure, reversal, the rest."""
    n = graph.n
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(graph.edge_src.tolist(), graph.edge_dst.tolist()))
    tr = nx.transitive_reduction(g)
    tc = nx.transitive_closure(g, reflexive=False)
    rel = np.full((n, n), INCOMPARABLE, dtype=np.uint8)
    np.fill_diagonal(rel, SELF)
    for codes, edges in (
        ((TC_MINUS_DAG, TC_MINUS_DAG_REV), set(tc.edges) - set(g.edges)),
        ((DAG_MINUS_TR, DAG_MINUS_TR_REV), set(g.edges) - set(tr.edges)),
        ((TR, TR_REV), set(tr.edges)),
    ):
        for u, v in edges:
            assert rel[u, v] == INCOMPARABLE and rel[v, u] == INCOMPARABLE  # the graphs are disjoint
            rel[u, v], rel[v, u] = codes
    return rel


def _cases() -> list[tuple[str, Graph]]:
    cases: list[tuple[str, Graph]] = [
        ("single node", _graph(1, [])),
        ("two nodes, no edge", _graph(2, [])),
        ("no edges", _graph(7, [])),
        ("chain", _graph(6, [(i, i + 1) for i in range(5)])),
        ("diamond", _graph(4, [(0, 1), (0, 2), (1, 3), (2, 3)])),
        ("diamond with shortcut", _graph(4, [(0, 1), (0, 2), (1, 3), (2, 3), (0, 3)])),
        ("tournament", _graph(6, [(i, j) for i in range(6) for j in range(i + 1, 6)])),
        ("64-node chain", _graph(64, [(i, i + 1) for i in range(63)])),
        ("65 isolated + edge", _graph(65, [(64, 0)])),
    ]
    rng = np.random.default_rng(2024)
    for s in range(24):
        n = int(rng.integers(2, 140))
        density = float(rng.choice([0.01, 0.05, 0.1, 0.3, 0.7]))
        cases.append((f"random n={n} p={density} seed={s}", _random_dag(n, density, s)))
    for s in range(4):
        cases.append((f"layered seed={s}", layered_graph(int(rng.integers(20, 150)), seed=s)))
        cases.append((f"regal seed={s}", regal_graph(int(rng.integers(20, 150)), seed=s)))
    return cases


CASES = _cases()


def test_enough_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize(("name", "graph"), CASES, ids=[c[0] for c in CASES])
def test_relation_matrix_matches_networkx(name: str, graph: Graph) -> None:
    rel = relation_matrix(graph)
    assert rel.shape == (graph.n, graph.n) and rel.dtype == np.uint8
    np.testing.assert_array_equal(rel, _oracle(graph), err_msg=name)


@pytest.mark.parametrize(("name", "graph"), CASES, ids=[c[0] for c in CASES])
def test_codes_partition_pairs(name: str, graph: Graph) -> None:
    rel = relation_matrix(graph)
    n = graph.n
    off = ~np.eye(n, dtype=bool)
    assert np.all(np.diag(rel) == SELF)
    assert np.all(rel[off] < N_RELATIONS)
    # the seven masks M^r of Eq. 4 cover every off-diagonal pair exactly once
    masks = np.stack([rel == r for r in range(N_RELATIONS)])
    np.testing.assert_array_equal(masks.sum(axis=0), off.astype(int))
    # each directed graph is the transpose of its reversed version; incomparability is symmetric
    for fwd, rev in ((TR, TR_REV), (DAG_MINUS_TR, DAG_MINUS_TR_REV), (TC_MINUS_DAG, TC_MINUS_DAG_REV)):
        np.testing.assert_array_equal(rel == fwd, (rel == rev).T)
    np.testing.assert_array_equal(rel == INCOMPARABLE, (rel == INCOMPARABLE).T)
    # TR and DAG \ TR split the edges
    edges = np.zeros((n, n), dtype=bool)
    edges[graph.edge_src, graph.edge_dst] = True
    np.testing.assert_array_equal((rel == TR) | (rel == DAG_MINUS_TR), edges)


@pytest.mark.parametrize(("name", "graph"), CASES, ids=[c[0] for c in CASES])
def test_reachability_matches_descendants(name: str, graph: Graph) -> None:
    bits = reachability(graph)
    assert bits.shape == (graph.n, (graph.n + 63) // 64) and bits.dtype == np.uint64
    g = graph.to_networkx()
    ids = graph.ids
    dense = unpack_reachability(bits, graph.n)
    for i in range(graph.n):
        expected = sorted(graph.index(d) for d in nx.descendants(g, ids[i]))
        assert np.flatnonzero(dense[i]).tolist() == expected, (name, i)
    # no stray bits past n in the last word (unpacking drops them)
    all_bits = np.unpackbits(bits.astype("<u8").view(np.uint8), axis=1, bitorder="little")
    assert int(all_bits.sum()) == int(dense.sum())


def test_names() -> None:
    assert N_RELATIONS == 7 and len(RELATION_NAMES) == N_RELATIONS
    assert len(set(RELATION_NAMES)) == N_RELATIONS
    assert sorted({TR, DAG_MINUS_TR, TC_MINUS_DAG, TR_REV, DAG_MINUS_TR_REV, TC_MINUS_DAG_REV, INCOMPARABLE}) == list(
        range(7)
    )
    assert SELF == 7


def test_diamond_codes() -> None:
    rel = relation_matrix(_graph(4, [(0, 1), (0, 2), (1, 3), (2, 3), (0, 3)]))
    expected = np.array(
        [
            [SELF, TR, TR, DAG_MINUS_TR],
            [TR_REV, SELF, INCOMPARABLE, TR],
            [TR_REV, INCOMPARABLE, SELF, TR],
            [DAG_MINUS_TR_REV, TR_REV, TR_REV, SELF],
        ],
        dtype=np.uint8,
    )
    np.testing.assert_array_equal(rel, expected)


def test_large_graph_is_fast() -> None:
    graph = layered_graph(2000, seed=3)
    relation_matrix(_graph(3, [(0, 1)]))  # compile / load the kernels
    start = time.perf_counter()
    rel = relation_matrix(graph)
    elapsed = time.perf_counter() - start
    assert rel.shape == (2000, 2000)
    assert elapsed < 1.0, f"relation_matrix took {elapsed:.2f} s at n=2000, m={graph.m}"
