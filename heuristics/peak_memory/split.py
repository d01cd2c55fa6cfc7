"""Safe splitting of the minimum-peak-memory problem at cut nodes (the divide and
conquer of Serenity, Ahn et al. 2020, "Ordering Chaos", Section 3.2).

Problem: minimise ``peak(sigma) = max_t M_t`` over topological orders ``sigma``
(Topoformer Eq. 1-3, 15; :mod:`mtpp.core.memory`).

*Cut nodes.*  Call ``c`` a cut if every other op is an ancestor or a descendant of
``c``.  Then every topological order runs exactly ``anc(c)`` before ``c`` and
``desc(c)`` after it, so with cuts ``c_1 < ... < c_k`` (in any topological order)
every order is the concatenation of one order of each *segment*
``J_0 = anc(c_1) + c_1``, ``J_j = (desc(c_j) cap anc(c_{j+1})) + c_{j+1}``, ...,
``J_k = desc(c_k)``, and the segments' orders can be chosen independently.  A cut
is found in ``O(n + m)``: at position ``p`` of a topological order, node ``c`` is a
cut iff every node before ``p`` has a successor at a position ``<= p`` and every
node after ``p`` has a predecessor at a position ``>= p`` (by induction on the
distance to ``p``, each node before reaches ``c`` and each node after is reached
from it; conversely the first edge of a path to ``c`` ends at a position
``<= p``).  Only prefix maxima and suffix minima are needed.

*Parts.*  The memory at a step of ``J`` depends only on the order inside ``J``:
a tensor produced before ``J`` is live at a step of ``J`` iff it has a consumer at
or after that step, i.e. a consumer in ``J`` not yet run, or a consumer after
``J`` (then it is live during all of ``J``); a tensor of ``J`` with a consumer
after ``J`` stays live until ``J`` ends.  :func:`split_graph` turns ``J`` into an
ordinary :class:`Graph` (a *part*) with the same step memories:

* one pseudo-source per tensor produced before ``J`` that is consumed in or after
  ``J`` (same ``size_out``, no parameters), with its edges into ``J``; the
  pseudo-sources form a chain ending at the previous cut ``c_j``, whose tensor
  every source of ``J`` consumes, so every order of the part runs them first;
* the ops of ``J`` with their edges inside ``J``;
* when ``J`` is not the last segment, a sink ``END`` (no memory) consuming
  every tensor that has a consumer after ``J`` and the cut ``c_{j+1}`` (the only
  sink of ``J``), so it runs last and keeps those tensors live to the end.

Every step of ``J`` sees the same live tensors in the part as in the whole graph
(a pseudo-source is freed after its last consumer in ``J``, never if it feeds
``END``; the chain edges are consumed before ``J`` starts).  The extra steps never
raise the peak: the ``i``-th pseudo-source step holds ``i`` of the tensors that are
all live at ``J``'s first step, and ``END``'s step holds what stays live after
``c_{j+1}``, a subset of ``c_{j+1}``'s step.  Hence for every order ``sigma_j`` of
each ``J_j``, ``peak(concat_j sigma_j) = max_j peak_part_j(sigma_j)``, so

    OPT = max_j OPT_j,    and    max_j LB_j <= OPT <= max_j peak_part_j(sigma_j)

for any lower bounds ``LB_j`` of the parts and any orders ``sigma_j``: solving the
parts exactly and concatenating their orders (:meth:`Part.lift`) is exact.  No float
arithmetic happens here (a part copies the sizes; ``END`` and the pseudo-sources'
parameters are exact zeros), so a part's bound that is proven in exact arithmetic on
its sizes, as every bound of :mod:`heuristics.peak_memory.best_first` is after its rounding
margin, is one for the whole graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtpp.core.graph import Graph


def cut_nodes(graph: Graph) -> np.ndarray:
    """Positions (in ``graph.topological_order``) of the cut nodes: every other op is
    an ancestor or a descendant of them (module docstring), ``O(n + m)``."""
    g = graph
    n = g.n
    topo = g.topological_order
    pos = np.empty(n, dtype=np.int64)
    pos[topo] = np.arange(n)
    min_succ = np.full(n, n, dtype=np.int64)
    np.minimum.at(min_succ, g.edge_src, pos[g.edge_dst])
    max_pred = np.full(n, -1, dtype=np.int64)
    np.maximum.at(max_pred, g.edge_dst, pos[g.edge_src])
    by_pos_succ = min_succ[topo]
    by_pos_pred = max_pred[topo]
    before = np.concatenate(([-1], np.maximum.accumulate(by_pos_succ)[:-1]))  # max over positions < p
    after = np.concatenate((np.minimum.accumulate(by_pos_pred[::-1])[::-1][1:], [n]))  # min over positions > p
    p = np.arange(n)
    return np.flatnonzero((before <= p) & (after >= p))


@dataclass(frozen=True)
class Part:
    """One segment as its own problem: ``graph`` numbers the pseudo-sources
    ``0..sources-1``, then the segment's ops (``ops``, full-graph indices, in that
    order), then ``END`` if ``has_end``."""

    graph: Graph
    ops: np.ndarray
    sources: int
    has_end: bool

    def lift(self, local_order: np.ndarray) -> np.ndarray:
        """The segment's ops (full-graph indices) in the order ``local_order`` (an
        order of the part) runs them."""
        local = np.asarray(local_order, dtype=np.int64)
        real = local[(local >= self.sources) & (local < self.sources + self.ops.size)]
        return self.ops[real - self.sources]

    def restrict(self, order: np.ndarray) -> np.ndarray:
        """The order of the part that runs the segment's ops as ``order`` (a
        topological order of the whole graph) does: pseudo-sources first, ``END``
        last."""
        rank = np.empty(int(np.max(order)) + 1, dtype=np.int64)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
        inner = self.sources + np.argsort(rank[self.ops], kind="stable")
        end = [self.graph.n - 1] if self.has_end else []
        return np.concatenate((np.arange(self.sources), inner, end)).astype(np.int64)


def split_graph(graph: Graph, min_ops: int = 1) -> list[Part]:
    """The parts of ``graph`` between consecutive cut nodes (module docstring), in run
    order; each part has at least ``min_ops`` ops of the segment where the cuts allow
    it (adjacent segments are merged, which keeps the construction exact: a merged
    segment is still delimited by cuts).  One part (the graph itself, relabelled)
    when there is no cut.  ``O(n + m)`` plus the parts' edges."""
    g = graph
    n = g.n
    topo = g.topological_order
    pos = np.empty(n, dtype=np.int64)
    pos[topo] = np.arange(n)
    ends = []
    start = 0
    for c in cut_nodes(g).tolist():
        if c + 1 - start >= min_ops and c < n - 1:
            ends.append(c)
            start = c + 1
    bounds = list(zip([-1, *ends], [*ends, n - 1]))
    # last position of any consumer, per producer position
    last_use = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last_use, pos[g.edge_src], pos[g.edge_dst])
    src_pos, dst_pos = pos[g.edge_src], pos[g.edge_dst]
    parts = []
    for lo, hi in bounds:  # the segment is positions lo+1 .. hi; lo is the previous cut
        seg = np.arange(lo + 1, hi + 1)
        # tensors produced before the segment and used in or after it; the previous cut (a
        # producer of every source of the segment) comes last, which closes the chain
        ext = np.flatnonzero((np.arange(n) <= lo) & (last_use > lo))
        e, s = ext.size, seg.size
        local = np.full(n, -1, dtype=np.int64)  # position -> local index
        local[ext] = np.arange(e)
        local[seg] = e + np.arange(s)
        inside = (dst_pos > lo) & (dst_pos <= hi) & (src_pos <= hi)
        edges = [np.stack([local[src_pos[inside]], local[dst_pos[inside]]], axis=1)]
        edges.append(np.stack([np.arange(e - 1), np.arange(1, e)], axis=1))
        has_end = hi < n - 1
        if has_end:
            kept = np.concatenate((ext, seg))
            kept = kept[last_use[kept] > hi]
            end = e + s
            edges.append(np.stack([local[kept], np.full(kept.size, end)], axis=1))  # the closing cut is kept
        order_pos = np.concatenate((ext, seg))
        nodes = topo[order_pos]
        zero = [0.0] if has_end else []
        part = Graph.from_arrays(
            work=np.concatenate((g.work[nodes], zero)),
            size_param=np.concatenate((np.zeros(e), g.size_param[topo[seg]], zero)),
            size_out=np.concatenate((g.size_out[nodes], zero)),
            edges=np.concatenate(edges).astype(np.int64),
            name=f"{g.name or 'graph'}[{lo + 1}:{hi + 1}]",
        )
        parts.append(Part(part, topo[seg].astype(np.int64), e, has_end))
    return parts
