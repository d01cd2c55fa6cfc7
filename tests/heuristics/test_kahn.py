import numpy as np

from heuristics.kahn import kahn_order, priorities_for
from heuristics.traversal import bfs_order, dfs_order
from tests.oracle import is_topological, random_dag


def test_kahn_respects_priorities():
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 25))
        g = random_dag(rng, n, p=float(rng.random() * 0.5))
        prio = rng.integers(0, 4, n).astype(float)  # many ties
        order = kahn_order(g, prio)
        assert is_topological(g, order)
        # replay: each pick is the ready node with highest priority, smallest index on ties
        placed = np.zeros(n, dtype=bool)
        for v in order:
            ready = [u for u in range(n) if not placed[u] and all(placed[g.predecessors(u)])]
            assert v == min(ready, key=lambda u: (-prio[u], u))
            placed[v] = True


def test_priorities_reproduce_any_topological_order():
    rng = np.random.default_rng(1)
    for _ in range(50):
        g = random_dag(rng, int(rng.integers(2, 30)), p=0.2)
        order = kahn_order(g, rng.random(g.n))
        prio = priorities_for(order)
        assert np.all((prio >= 0) & (prio <= 1))
        np.testing.assert_array_equal(kahn_order(g, prio), order)


def test_traversals_are_topological_and_differ_in_shape():
    rng = np.random.default_rng(2)
    for _ in range(30):
        g = random_dag(rng, int(rng.integers(1, 40)), p=0.15)
        assert is_topological(g, dfs_order(g))
        assert is_topological(g, bfs_order(g))
    # on two independent chains DFS finishes a chain first, BFS alternates
    from mtpp import Graph

    g = Graph.from_arrays([1] * 6, [0] * 6, [1] * 6, [(0, 1), (1, 2), (3, 4), (4, 5)])
    assert dfs_order(g).tolist() == [0, 1, 2, 3, 4, 5]
    assert bfs_order(g).tolist() == [0, 3, 1, 4, 2, 5]


def _kahn_with_deque(g, lifo: bool) -> list[int]:
    """The depth-/breadth-first Kahn of the textbook, with a deque: the oracle of the
    compiled kernel (sources in index order, the smallest first out; released successors
    in their order, the first released first out of a stack)."""
    from collections import deque

    indeg = np.diff(g.pred_ptr).tolist()
    ready = deque(i for i in range(g.n) if indeg[i] == 0)
    if lifo:
        ready.reverse()
    order = []
    while ready:
        u = ready.pop() if lifo else ready.popleft()
        order.append(u)
        released = []
        for v in g.succ_idx[g.succ_ptr[u] : g.succ_ptr[u + 1]].tolist():
            indeg[v] -= 1
            if indeg[v] == 0:
                released.append(v)
        ready.extend(reversed(released) if lifo else released)
    return order


def test_traversals_match_the_deque_reference_on_both_kernel_paths():
    from mtpp.core import jit
    from mtpp.generators import layered_graph

    rng = np.random.default_rng(3)
    graphs = [random_dag(rng, int(rng.integers(1, 60)), p=float(rng.choice([0.05, 0.2, 0.5]))) for _ in range(60)]
    graphs += [layered_graph(400, seed=5)]
    for threshold in (0, 10**9):  # compiled, then the Python path
        with jit.settings(threshold=threshold, budget=1e9):
            for g in graphs:
                assert dfs_order(g).tolist() == _kahn_with_deque(g, lifo=True)
                assert bfs_order(g).tolist() == _kahn_with_deque(g, lifo=False)
