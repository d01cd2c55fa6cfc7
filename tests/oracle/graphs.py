"""Graphs for the oracles and the tests: random DAGs, chains of blocks, every topological
order by brute force, and the shared layered graphs beside the repository."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from mtpp import Graph


def random_dag(rng: np.random.Generator, n: int, p: float = 0.4, integral: bool = True) -> Graph:
    """A random DAG on n nodes (edges i -> j, i < j, in a shuffled labelling)."""
    perm = rng.permutation(n)
    edges = [(int(perm[i]), int(perm[j])) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    if integral:
        work, param, out = (rng.integers(0, 10, n).astype(float) for _ in range(3))
    else:
        work, param, out = (rng.random(n) * 10 for _ in range(3))
    return Graph.from_arrays(work, param, out, edges)


def chain_of_blocks(rng: np.random.Generator, blocks: int) -> Graph:
    """Diamonds and skip connections between single nodes: a chain of blocks."""
    edges, n = [], 1
    for _ in range(blocks):
        width = int(rng.integers(1, 4))
        inner = list(range(n, n + width))
        join = n + width
        edges += [(n - 1, v) for v in inner] + [(v, join) for v in inner]
        if width > 1:
            edges.append((inner[0], inner[1]))
        n = join + 1
    sizes = rng.integers(1, 10, size=(3, n)).astype(float)
    return Graph.from_arrays(sizes[0], sizes[1], sizes[2], edges)


def topological_orders(graph: Graph):
    """Every topological order (use n <= 7)."""
    pred = {v: set(graph.predecessors(v).tolist()) for v in range(graph.n)}
    for perm in itertools.permutations(range(graph.n)):
        seen: set[int] = set()
        ok = True
        for v in perm:
            if not pred[v] <= seen:
                ok = False
                break
            seen.add(v)
        if ok:
            yield perm


def is_topological(graph: Graph, order) -> bool:
    order = np.asarray(order)
    pos = np.empty(graph.n, dtype=int)
    pos[order] = np.arange(graph.n)
    return sorted(order.tolist()) == list(range(graph.n)) and bool(np.all(pos[graph.edge_src] < pos[graph.edge_dst]))


# ---------------------------------------------------------------- shared graphs
SHARED_LAYERED = Path(__file__).resolve().parents[2].parent / "shared" / "graphs" / "layered"


def shared_graph(n: int) -> Graph:
    import mtpp

    paths = sorted(SHARED_LAYERED.glob(f"random_layered_n{n}_*.json"))
    if not paths:
        import pytest

        pytest.skip(f"shared layered graphs not found at {SHARED_LAYERED}")
    return mtpp.load_graph(paths[0])
