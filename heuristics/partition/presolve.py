"""Presolve: graph reductions that keep the MTPP optimum exactly (issue 21).

Profiled operator graphs are full of ops that cost nothing (constants, shape ops,
reads of inputs, dangling outputs): work 0, no parameters.  Each one that hangs off
the graph as a leaf doubles the number of ideals the exact DP enumerates, and adds
``k`` binaries to every MIP, while it can always sit in its neighbour's block for
free.  Tarnawski et al. (NeurIPS 2020) contract such ops before their DP; this module
does the same with proofs for mtpp's whole cost model (Eq. 1-3 of the MTPP paper).

Rule ``zero-cost leaf``.  Let ``s`` be an op with ``work(s) = 0`` whose parameters
can never raise a block's cost (``size_param(s) = 0``, or no block can overflow at all:
``size_param(V) <= M - R``, compared exactly, and costs are not peak-aware), and either

* a *source* with exactly one consumer ``v`` (any ``size_out(s)``), or
* a *sink* with exactly one producer ``u`` (its own tensor has no consumer, so it is
  never charged).

Claim: deleting ``s`` keeps OPT, and every partition of the reduced graph lifts, by
giving ``s`` the block of its neighbour ``w`` (``v`` or ``u``), to a partition of the
same cost.

*Lifting keeps every block's cost.*  In the lifted partition ``s`` shares ``w``'s
block ``T``.  A source ``s``: its tensor's only consumer is in ``T``, so it is neither
an input nor an output of any block; ``s`` has no inputs.  A sink ``s``: it reads
``u``'s tensor inside ``T``, so it adds no input to ``T``, and it cannot make ``u``'s
tensor an output of ``T``; its own tensor has no consumer.  Work and parameters of
``T`` are unchanged (``0``, or parameters that cannot overflow), and every other
block is the same set as before.  The quotient graph gains no edge, so it stays
acyclic.

*No partition of the original graph does better.*  Take any partition and move ``s``
into ``w``'s block ``T`` from its block ``S``.  ``S`` loses ``s``: for a source, the
output tensor of ``s`` (its consumer is outside ``S``) and nothing else; for a sink, at
most the input tensor of ``u``; work and overflow do not rise.  ``T`` gains ``s``: a
source's tensor stops being an input of ``T``, a sink's read stops being a consumer of
``u`` outside ``T``; nothing is added.  No block's cost rises, and moving a leaf into
its only neighbour's block adds no quotient edge, so the result is a valid partition of
no larger bottleneck, and it is the lift of a partition of the reduced graph.

Hence ``OPT(reduced) = OPT(original)`` for every ``k``, lower bounds proven on the
reduced graph hold for the original, and lifted partitions keep their cost (re-checked
by :func:`mtpp.evaluate` on the original graph all the same).  Applied until nothing
changes (a chain of zero-cost sources is removed op by op), ``O(n + m)``.  The test
``work(s) = 0`` and ``size_param(s) = 0`` is exact (float zero), and the overflow test
uses :func:`math.fsum`, which rounds the exact sum once, so its sign is exact: no
rounding enters the reduction.

With peak-aware costs (``Problem.peak_aware``) and finite memory the rule is off: a
leaf's tensor is live inside its neighbour's block and can raise that block's peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from mtpp.graph import Graph
from mtpp.problem import Problem


@dataclass(frozen=True)
class Presolved:
    """The reduced problem and the map back.

    ``problem`` is the reduced problem (same ``k``, ``B``, ``M``, ``R``);
    ``kept[i]`` is the original index of its node ``i``; ``anchor[v]`` is, for every
    original node, the original index of the kept node whose block it takes;
    ``as_source[v]`` says a removed op was removed as a source (it runs before its
    anchor) rather than as a sink.  ``removed`` counts the removed ops per rule."""

    original: Problem
    problem: Problem
    kept: np.ndarray
    anchor: np.ndarray
    as_source: np.ndarray
    removed: dict[str, int] = field(default_factory=dict)

    @property
    def reduced(self) -> bool:
        """Whether any op was removed."""
        return self.problem.graph.n < self.original.graph.n

    def lift(self, assignment: np.ndarray) -> np.ndarray:
        """A partition of the original graph from one of the reduced graph (block per
        reduced node index): every removed op takes its anchor's block."""
        a = np.asarray(assignment, dtype=np.int64)
        position = np.full(self.original.graph.n, -1, dtype=np.int64)
        position[self.kept] = np.arange(self.kept.size)
        return a[position[self.anchor]]

    def lift_order(self, order: np.ndarray) -> np.ndarray:
        """A topological order of the original graph from one of the reduced graph:
        each removed source runs just before its anchor, each removed sink just after
        (its anchor is its only producer)."""
        g = self.original.graph
        before: dict[int, list[int]] = {}
        after: dict[int, list[int]] = {}
        removed = np.ones(g.n, dtype=bool)
        removed[self.kept] = False
        for v in g.topological_order.tolist():  # a chain of removed ops keeps its own order
            if removed[v]:
                (before if self.as_source[v] else after).setdefault(int(self.anchor[v]), []).append(v)
        out: list[int] = []
        for i in np.asarray(order, dtype=np.int64).tolist():
            v = int(self.kept[i])
            out.extend(before.get(v, ()))
            out.append(v)
            out.extend(after.get(v, ()))
        return np.asarray(out, dtype=np.int64)

    def summary(self) -> str:
        """One line for a certificate's notes."""
        g = self.original.graph
        rules = ", ".join(f"{count} {rule}" for rule, count in self.removed.items() if count)
        return (
            f"presolve: {g.n - self.problem.graph.n} of {g.n} ops removed ({rules or 'none'}); bounds and "
            "partitions of the reduced graph hold for this one (heuristics/partition/presolve.py)"
        )


def params_cannot_overflow(problem: Problem) -> bool:
    """Whether no block can ever overflow: ``size_param(V) <= M - R`` exactly (and
    costs are not peak-aware, where activations also count)."""
    if math.isinf(problem.memory):
        return True
    if problem.peak_aware:
        return False
    return math.fsum([*problem.graph.size_param.tolist(), -problem.memory, problem.reserve]) <= 0.0


def presolve(problem: Problem) -> Presolved:
    """Apply the zero-cost leaf rule (module docstring) until nothing changes."""
    g = problem.graph
    n = g.n
    free_params = params_cannot_overflow(problem)
    leaf_ok = (g.work == 0.0) & ((g.size_param == 0.0) | free_params)
    if problem.peak_aware and not math.isinf(problem.memory):
        leaf_ok[:] = False
    indeg, outdeg = np.diff(g.pred_ptr).copy(), np.diff(g.succ_ptr).copy()
    alive = np.ones(n, dtype=bool)
    anchor = np.arange(n)
    as_source = np.zeros(n, dtype=bool)
    removed_order: list[int] = []
    succ_ptr, succ_idx, pred_ptr, pred_idx = g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx

    def neighbour(v: int, ptr: np.ndarray, idx: np.ndarray) -> int:
        return next(int(w) for w in idx[ptr[v] : ptr[v + 1]] if alive[w])

    stack = np.flatnonzero(leaf_ok).tolist()
    left = n
    while stack:
        v = stack.pop()
        if not alive[v] or left <= 1:
            continue
        if indeg[v] == 0 and outdeg[v] == 1:
            w = neighbour(v, succ_ptr, succ_idx)
            indeg[w] -= 1
            as_source[v] = True
        elif outdeg[v] == 0 and indeg[v] == 1:
            w = neighbour(v, pred_ptr, pred_idx)
            outdeg[w] -= 1
        else:
            continue
        alive[v] = False
        left -= 1
        anchor[v] = w
        removed_order.append(v)
        if leaf_ok[w]:
            stack.append(w)
    for v in reversed(removed_order):  # anchors removed later are resolved first
        anchor[v] = anchor[anchor[v]]
    kept = np.flatnonzero(alive)
    if kept.size == n:
        return Presolved(problem, problem, kept, anchor, as_source, {"zero-cost leaves": 0})
    index = np.full(n, -1, dtype=np.int64)
    index[kept] = np.arange(kept.size)
    keep_edge = alive[g.edge_src] & alive[g.edge_dst]
    edges = np.stack([index[g.edge_src[keep_edge]], index[g.edge_dst[keep_edge]]], axis=1)
    graph = Graph.from_arrays(
        g.work[kept],
        g.size_param[kept],
        g.size_out[kept],
        edges,
        ids=[g.ids[i] for i in kept.tolist()],
        name=g.name,
        units=g.units,
    )
    leaves = {"zero-cost leaves": int(n - kept.size)}
    return Presolved(problem, replace(problem, graph=graph), kept, anchor, as_source, leaves)
