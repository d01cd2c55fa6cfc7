"""Presolve: graph reductions that keep the MTPP optimum exactly.

Profiled operator graphs are full of ops that cost nothing (constants, shape and
view ops, reads of inputs, dangling outputs): work 0, no parameters.  Each one that
hangs off the graph as a leaf doubles the number of ideals the exact DP enumerates,
and adds ``k`` binaries to every MIP, while it can always sit in a neighbour's
block for free.  Tarnawski et al. (NeurIPS 2020) contract such ops before their DP;
this module does the same, with more rules and a proof of each for mtpp's whole cost
model (Eq. 1-3 of the MTPP paper: ``f(S) = in(S)/B + work(S) + overflow(S) +
out(S)/B``, a tensor counted once per block).

An op ``s`` is *zero-cost* when ``work(s) = 0`` and its parameters can never raise a
block's cost: ``size_param(s) = 0``, or no block can overflow at all
(``size_param(V) <= M - R``, and costs are not peak-aware).  Every rule contracts one
zero-cost op ``s`` into a neighbour or twin ``w`` (``s`` always shares ``w``'s block);
the merged op keeps ``w``'s work and parameters and carries the one tensor of the
pair that can leave it.  Every rule rests on two claims, proven per rule below:

(a) *Lifting keeps every block's cost*: a partition of the reduced graph, with ``s``
    put in ``w``'s block, has the same blocks' costs (the merged op's inputs, output
    tensor and consumers are exactly those of ``{s, w}``), and the quotient graph is
    the same, so it stays acyclic.
(b) *Moving ``s`` into ``w``'s block never hurts*: in any partition of the original
    graph, moving ``s`` from its block ``X`` into ``w``'s block ``T`` adds no quotient
    edge that closes a cycle and raises no block's cost.

By (b) some optimal partition has ``s`` with ``w``, and by (a) it is the lift of a
partition of the reduced graph of the same cost, so ``OPT(reduced) = OPT(original)``
for every ``k``: lower bounds proven on the reduced graph hold for the original, and
lifted partitions keep their cost (re-checked by :func:`mtpp.evaluate` on the original
graph all the same).  Sizes below are ``size_out`` of the *current* (already reduced)
graph; ``in``/``out`` are a block's input and output tensors.

Rule ``zero-cost source`` (forward contraction).  ``s`` has exactly one consumer ``v``
and its producers ``P`` (none, for a constant or an input read) satisfy
``sum_{p in P} size(p) <= size(s)``.  Contract ``s`` into ``v``.
(b): ``T`` (``v``'s block) stops reading ``s``'s tensor (``-size(s)``) and may start
reading the tensors of ``P`` (``<= +sum size(p)``).  ``X`` loses ``s``; producers of
``s`` in ``X`` may now send their tensors out (``<= +sum size(p)``) but ``X`` stops
sending ``s``'s tensor (``-size(s)``, its only consumer is in ``T != X``).  A block
holding a producer outside ``X`` already sent its tensor out.  Quotient edges: the
producers' blocks precede ``X`` which precedes ``T``, so edges into ``T`` follow that
order.  (a): the merged op reads ``P`` and ``v``'s inputs, and sends ``v``'s tensor.

Rule ``zero-cost chain`` (backward contraction).  ``s`` has exactly one producer
``u``, ``s`` is ``u``'s only consumer, and ``size(s) <= size(u)``.  Contract ``s``
into ``u``; the merged op sends ``s``'s tensor to ``s``'s consumers.
(b): ``U`` (``u``'s block) stops sending ``u``'s tensor (``-size(u)``) and may send
``s``'s (``+size(s)``).  ``X`` stops reading ``u``'s tensor (``-size(u)``), its
consumers of ``s`` may now read ``s``'s tensor (``+size(s)``) and it stops sending
it; consumers elsewhere read the same tensor from another block.  ``U`` precedes
``X`` which precedes the consumers' blocks.  (a): ``u``'s tensor stays inside.

Rule ``dominated zero-cost op``.  ``s``'s tensor is empty or has no consumer (a
dangling output, a control dependency), and some ``x != s`` has
``producers(s) <= producers(x) + {x}`` and ``consumers(s) <= consumers(x) + {x}``.
Contract ``s`` into ``x`` (it adds no edge).  (b): every tensor ``s`` reads is read by
``x`` or made by ``x``, so ``T`` reads nothing new and any producer's block outside
``T`` already sends its tensor to ``x``; what ``s`` sends weighs nothing; the
producers' blocks precede ``T``, the consumers' blocks follow it, so no quotient edge
is new.  (a): the same sets.  This covers a zero-cost sink with one producer.

Off where not proven: with peak-aware costs and finite memory no rule runs (a tensor
live inside a block can raise that block's peak, Eq. 15 of the Topoformer paper).
The reduced graph is acyclic (a contracted edge ``s -> v`` or ``u -> s`` is the only
path between its ends; the dominated rule adds no edge), and every original edge
between two groups is an edge of the reduced graph, so any topological order of the
reduced graph expands group by group into one of the original
(:meth:`Presolved.lift_order`).  The size tests are exact: ``math.fsum`` rounds the
exact sum once, so the sign of ``fsum([...sizes, -size(s)])`` is exact; zero tests are
float zero.  Applied until nothing changes, in ``O((n + m) d)`` for degree ``d``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.problem import Problem

RULES = ("zero-cost source", "zero-cost chain", "dominated zero-cost op")
"""The rules, in the order they are tried on each op (module docstring)."""


@dataclass(frozen=True)
class Presolved:
    """The reduced problem and the map back.

    ``problem`` is the reduced problem (same ``k``, ``B``, ``M``, ``R``); ``kept[i]``
    is the original index of its node ``i``; ``anchor[v]`` is, for every original
    node, the original index of the kept node whose block it takes.  ``removed``
    counts the removed ops per rule."""

    original: Problem
    problem: Problem
    kept: np.ndarray
    anchor: np.ndarray
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
        each kept node's group (it and the ops contracted into it), in the original
        topological order, at the kept node's place (module docstring)."""
        groups: dict[int, list[int]] = {}
        for v in self.original.graph.topological_order.tolist():
            groups.setdefault(int(self.anchor[v]), []).append(v)
        out: list[int] = []
        for i in np.asarray(order, dtype=np.int64).tolist():
            out.extend(groups[int(self.kept[i])])
        return np.asarray(out, dtype=np.int64)

    def record(self) -> dict[str, Any]:
        """What presolve did, for a certificate: ops before and after, removed per rule."""
        return {
            "ops_before": self.original.graph.n,
            "ops_after": self.problem.graph.n,
            "edges_before": self.original.graph.m,
            "edges_after": self.problem.graph.m,
            "removed": dict(self.removed),
        }

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


def check_rules(rules: Iterable[str]) -> frozenset[str]:
    """The rule names of ``rules``; an unknown name raises :class:`InvalidParameterError`."""
    if isinstance(rules, str):
        rules = [rules]
    chosen = frozenset(rules)
    unknown = sorted(str(r) for r in chosen - set(RULES))
    if unknown:
        raise InvalidParameterError(f"unknown presolve rule(s) {unknown}; the rules are {list(RULES)}")
    return chosen


class _Contraction:
    """The graph being reduced: adjacency sets over original indices, the size of
    each kept op's outgoing tensor, and where every removed op went."""

    def __init__(self, graph: Graph) -> None:
        n = graph.n
        self.preds: list[set[int]] = [set(graph.predecessors(v).tolist()) for v in range(n)]
        self.succs: list[set[int]] = [set(graph.successors(v).tolist()) for v in range(n)]
        self.size = graph.size_out.astype(float).tolist()
        self.alive = [True] * n
        self.left = n
        self.into = list(range(n))
        self.first_alive = 0

    def contract(self, s: int, w: int) -> None:
        """Merge ``s`` into ``w``: ``w`` takes ``s``'s edges to and from the rest."""
        for p in self.preds[s]:
            self.succs[p].discard(s)
            if p != w:
                self.succs[p].add(w)
                self.preds[w].add(p)
        for c in self.succs[s]:
            self.preds[c].discard(s)
            if c != w:
                self.preds[c].add(w)
                self.succs[w].add(c)
        self.preds[w].discard(w)
        self.succs[w].discard(w)
        self.preds[s], self.succs[s] = set(), set()
        self.alive[s] = False
        self.left -= 1
        self.into[s] = w

    def forward(self, s: int) -> int | None:
        """Rule ``zero-cost source``: ``s``'s only consumer, if its producers' tensors
        weigh no more than its own."""
        if len(self.succs[s]) != 1:
            return None
        if self.preds[s] and math.fsum([*(self.size[p] for p in self.preds[s]), -self.size[s]]) > 0.0:
            return None
        return next(iter(self.succs[s]))

    def backward(self, s: int) -> int | None:
        """Rule ``zero-cost chain``: ``s``'s only producer, if ``s`` is its only
        consumer and ``s``'s tensor weighs no more than the producer's."""
        if len(self.preds[s]) != 1:
            return None
        u = next(iter(self.preds[s]))
        if len(self.succs[u]) != 1 or self.size[s] > self.size[u]:
            return None
        return u

    def dominated(self, s: int) -> int | None:
        """Rule ``dominated zero-cost op``: an op whose producers and consumers cover
        ``s``'s, if ``s``'s tensor is empty or unread."""
        preds, succs = self.preds[s], self.succs[s]
        if succs and self.size[s] != 0.0:
            return None
        if preds:
            p0 = min(preds, key=lambda p: len(self.succs[p]))
            candidates = preds | self.succs[p0]
        elif succs:
            c0 = min(succs, key=lambda c: len(self.preds[c]))
            candidates = succs | self.preds[c0]
        else:  # isolated: any other op will do
            while not self.alive[self.first_alive] or self.first_alive == s:
                self.first_alive += 1
            return self.first_alive
        for x in candidates:
            if x != s and preds <= self.preds[x] | {x} and succs <= self.succs[x] | {x}:
                return x
        return None


def presolve(problem: Problem, rules: Iterable[str] = RULES) -> Presolved:
    """Apply ``rules`` (names from :data:`RULES`, all by default; the module docstring
    proves each) until nothing changes."""
    chosen = check_rules(rules)
    g = problem.graph
    n = g.n
    zero_cost = (g.work == 0.0) & ((g.size_param == 0.0) | params_cannot_overflow(problem))
    if problem.peak_aware and not math.isinf(problem.memory):
        zero_cost[:] = False
    removed = dict.fromkeys(RULES, 0)
    if not zero_cost.any():
        return Presolved(problem, problem, np.arange(n), np.arange(n), removed)
    graph = _Contraction(g)
    methods = {RULES[0]: graph.forward, RULES[1]: graph.backward, RULES[2]: graph.dominated}
    tried = [(name, methods[name]) for name in RULES if name in chosen]
    stack = np.flatnonzero(zero_cost).tolist()[::-1]
    while stack and graph.left > 1:
        s = stack.pop()
        if not graph.alive[s] or not zero_cost[s]:
            continue
        for name, rule in tried:
            w = rule(s)
            if w is None:
                continue
            touched = graph.preds[s] | graph.succs[s] | graph.preds[w] | graph.succs[w] | {w}
            graph.contract(s, w)
            if name == RULES[1]:  # the merged op sends s's tensor
                graph.size[w] = graph.size[s]
            removed[name] += 1
            stack.extend(v for v in touched if zero_cost[v] and graph.alive[v])
            break
    return _reduced(problem, graph, removed)


def _reduced(problem: Problem, graph: _Contraction, removed: dict[str, int]) -> Presolved:
    """The reduced problem of a finished contraction, and the map back."""
    g = problem.graph
    n = g.n
    anchor = np.asarray(graph.into, dtype=np.int64)
    for v in range(n):  # follow each op's chain of contractions to a kept op
        w = v
        while not graph.alive[w]:
            w = graph.into[w]
        anchor[v] = w
    kept = np.flatnonzero(np.asarray(graph.alive))
    if kept.size == n:
        return Presolved(problem, problem, kept, anchor, removed)
    index = np.full(n, -1, dtype=np.int64)
    index[kept] = np.arange(kept.size)
    edges = np.asarray(
        [(index[u], index[v]) for u in kept.tolist() for v in sorted(graph.succs[u])], dtype=np.int64
    ).reshape(-1, 2)
    work = np.zeros(n)
    param = np.zeros(n)
    np.add.at(work, anchor, g.work)  # removed ops add exact zeros; their parameters cannot overflow
    np.add.at(param, anchor, g.size_param)
    reduced = Graph.from_arrays(
        work[kept],
        param[kept],
        np.asarray(graph.size, dtype=float)[kept],
        edges,
        ids=[g.ids[i] for i in kept.tolist()],
        name=g.name,
        units=g.units,
    )
    reduced_problem = replace(problem, graph=reduced)
    if math.isfinite(problem.memory) and (g.size_param[~np.asarray(graph.alive)] > 0).any():
        # a removed op's parameters joined a sum: no block overflows in the original
        # (params_cannot_overflow), so none may in the reduced graph by a rounding
        reduced_problem = replace(reduced_problem, memory=math.inf, reserve=0.0)
    return Presolved(problem, reduced_problem, kept, anchor, removed)
