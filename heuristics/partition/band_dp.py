"""The ideal DP on a band of a partition's order: an exact re-partition near a known one.

The ideal DP (:mod:`heuristics.partition.ideal_dp`; Tarnawski et al., NeurIPS 2020)
is exact over every chain of ideals, but a wide graph has far too many.  SliceGraph
(Algorithm 1 of the MTPP paper) is exact over the chains of one topological order's
prefixes only.  Between the two: number the ops by their position in a topological
order and keep the ideals whose last member lies at most ``band`` positions after
their first non-member (the *band*; ``band = 0``: the prefixes).  Every prefix is in
the band, so the best chain of band ideals is never worse than SliceGraph's split of
the order, and it may move every block boundary by up to ``band`` positions at once,
each op on its own.

The DP's search walks from an ideal ``J`` to each ``I >= J`` along cover edges, so the
band must hold a path between any two of its ideals ``J <= I``: add the ops of
``I - J`` in order of position.  Each step ``K = J | (I & P_t)`` (``P_t`` the first
``t`` positions) is an ideal; its first non-member is either one of ``I``'s (then at
or after ``I``'s, while its last member is at most ``I``'s) or past ``t`` (then at or
after ``J``'s, while its last member is ``J``'s or at most ``t``), so its span is at most
``I``'s or ``J``'s.

Only the chain is used: the DP's proofs hold for the band, not for the graph, so its
lower bounds are dropped here.  The partition is an upper bound once the evaluator
re-checks it (the caller does).
"""

from __future__ import annotations

import numpy as np

from heuristics.partition.ideal_dp import ideal_dp_all
from heuristics.partition.ideals import MAX_LATTICE_BYTES, IdealLattice, enumerate_kernel, kernel_graph
from mtpp.core.evaluate import dag_numbering
from mtpp.core.graph import Graph
from mtpp.core.problem import Problem


def band_ideals(graph: Graph, band: int, max_ideals: int) -> IdealLattice | None:
    """The ideals of ``graph`` in the band (module docstring) of its node numbering, which
    must be a topological order, or ``None`` past ``max_ideals`` of them."""
    *arrays, complete = enumerate_kernel(*kernel_graph(graph), int(max_ideals), MAX_LATTICE_BYTES, int(band))
    return IdealLattice(*arrays) if complete else None


def partition_order(problem: Problem, assignment: np.ndarray) -> np.ndarray:
    """A topological order that lists ``assignment``'s blocks one after another: by the
    blocks' numbering along the quotient (:func:`mtpp.core.evaluate.dag_numbering`), then by
    the graph's topological order."""
    g = problem.graph
    labels = dag_numbering(problem, np.asarray(assignment, dtype=np.int64))
    position = np.empty(g.n, dtype=np.int64)
    position[np.asarray(g.topological_order, dtype=np.int64)] = np.arange(g.n)
    return np.lexsort((position, labels))


def band_dp(
    problem: Problem, assignment: np.ndarray, band: int, upper_bound: float, max_ideals: int, time_limit: float | None
) -> tuple[float, np.ndarray] | None:
    """The best partition into at most ``problem.k`` blocks whose chain lies in the band of
    ``assignment``'s order (:func:`partition_order`), if its value is below
    ``upper_bound``: ``(value, assignment)``, the value as the DP computed it.  ``None``
    if there is none, the band has more than ``max_ideals`` ideals or ``time_limit``
    seconds pass first."""
    order = partition_order(problem, assignment)
    renumbered = renumber(problem.graph, order)
    lattice = band_ideals(renumbered, band, max_ideals)
    if lattice is None:
        return None
    local = Problem(renumbered, problem.k, problem.bandwidth, problem.memory, problem.reserve, problem.peak_aware)
    res = ideal_dp_all(local, [problem.k], upper_bounds=[upper_bound], lattice=lattice, time_limit=time_limit)[0]
    if res.assignment is None or res.value is None or not res.value < upper_bound:
        return None
    return res.value, res.assignment[np.argsort(order)]


def renumber(graph: Graph, order: np.ndarray) -> Graph:
    """``graph`` with op ``order[i]`` numbered ``i`` (its weights and edges, no names)."""
    rank = np.empty(graph.n, dtype=np.int64)
    rank[order] = np.arange(graph.n)
    src = np.repeat(np.arange(graph.n), np.diff(graph.succ_ptr))
    edges = np.stack([rank[src], rank[graph.succ_idx]], axis=1)
    return Graph.from_arrays(graph.work[order], graph.size_param[order], graph.size_out[order], edges)
