"""The independent evaluator: the single source of truth for a partition's cost.

Every partition any mtpp method returns is passed through :func:`evaluate`, which
checks it from scratch (every node assigned, blocks in ``0..k-1``, acyclic quotient
graph) and recomputes the block costs of Eq. (3) with :mod:`mtpp.core.cost`, without
reusing anything the method computed.

Rounding.  The reported costs are float sums (:mod:`mtpp.core.cost`).  Work and the input
and output tensors of a block are sums of at most ``n + m`` non-negative terms, so
each is within ``gamma(n + m)`` of its exact value *relative to itself* (Higham Eq.
4.4); dividing by ``B`` and adding the four terms adds a few ``u``.  The overflow
``(size_param(S) [+ peak(S)] - M + R)^+ / B`` subtracts the budget from a sum that
may be far larger than the result; :func:`mtpp.core.cost.block_excess` computes it with
one correctly rounded ``fsum`` per block, so it too errs by a few ``u`` of itself,
except for the activation peak of peak-aware costs (a running sum of live tensors,
each added and freed once), whose error is bounded against what it touched,
``gamma(2n + m) 2 size_out(V) / B``.  :attr:`Evaluation.rounding` is the sum of both
parts, an absolute bound on ``|bottleneck - exact bottleneck|``, and 0 when every
sum is exact (:func:`costs_are_exact`: dyadic weights on one grid, ``B`` a power of
two).  :attr:`Evaluation.upper_bound` is the bottleneck rounded *up* by it
(:func:`mtpp.core.result.upper_rounded`): never below the partition's exact cost, the
upper bound every result reports.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mtpp.core.cost import BlockCosts, block_costs
from mtpp.core.errors import InvalidPartitionError, QuotientCycleError, UnknownNodeError
from mtpp.core.graph import Graph, NodeId
from mtpp.core.memory import check_order, exact_on_grid
from mtpp.core.problem import Problem
from mtpp.core.result import upper_rounded
from mtpp.core.rounding import UNIT, gamma
from mtpp.core.validation import check_instance

Assignment = Sequence[int] | np.ndarray | Mapping[NodeId, int]


@dataclass(frozen=True)
class Evaluation:
    """A checked partition: ``assignment[i]`` is the block of node index ``i``;
    ``rounding`` bounds the float error of ``bottleneck`` (module docstring)."""

    assignment: np.ndarray
    costs: BlockCosts
    bottleneck: float
    bottleneck_block: int
    rounding: float = 0.0

    @property
    def upper_bound(self) -> float:
        """``bottleneck`` rounded up by ``rounding``: at least the exact cost (module docstring)."""
        return upper_rounded(self.bottleneck, self.rounding)

    @property
    def block_costs(self) -> np.ndarray:
        """``f(P_b)`` for each block ``b`` (Eq. 3)."""
        return self.costs.total


def as_assignment(problem: Problem, assignment: Assignment) -> np.ndarray:
    """Normalise an assignment (array by node index, or mapping node id or its text -> block) to
    an int64 array, checking that it covers every node with a block in ``0..k-1``."""
    g, k = problem.graph, problem.requested_k
    if isinstance(assignment, Mapping):
        a = np.full(g.n, -1, dtype=np.int64)
        for node_id, block in assignment.items():
            i = _index(g, node_id)
            if a[i] >= 0:  # an id and its text both given
                text = str(g.ids[i])
                raise InvalidPartitionError(f"node {g.ids[i]!r} is given twice, as its id and as its text {text!r}")
            a[i] = _as_block(block, node_id, k)
        missing = np.flatnonzero(a < 0)
        if missing.size:
            names = ", ".join(repr(g.ids[i]) for i in missing[:5])
            more = f" and {missing.size - 5} more" if missing.size > 5 else ""
            raise InvalidPartitionError(f"{missing.size} node(s) have no block: {names}{more}")
    else:
        raw = np.asarray(assignment)
        if raw.ndim != 1 or raw.shape[0] != g.n:
            raise InvalidPartitionError(f"assignment has shape {raw.shape}; expected ({g.n},), one block per node")
        if raw.dtype.kind not in "iu":
            if raw.dtype.kind != "f" or not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
                raise InvalidPartitionError("assignment must hold integer block numbers")
        a = raw.astype(np.int64)
    bad = np.flatnonzero((a < 0) | (a >= k))
    if bad.size:
        i = bad[0]
        raise InvalidPartitionError(f"node {g.ids[i]!r} is in block {a[i]}; blocks are 0..{k - 1}")
    if k > problem.k and a.max() >= problem.k:  # k was clamped to n: number the non-empty blocks 0, 1, ...
        a = np.unique(a, return_inverse=True)[1].astype(np.int64).reshape(-1)
    return a


def _index(g: Graph, node_id: NodeId) -> int:
    """``node_id``'s index, or that of the node whose id reads ``node_id`` when it is text
    that is not an id itself: a certificate's assignment (ids as JSON keys) fed back."""
    try:
        return g.index(node_id)
    except UnknownNodeError:
        if not isinstance(node_id, str):
            raise
        return g.index_of_text(node_id)


def _as_block(block: object, node_id: NodeId, k: int) -> int:
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)):
        raise InvalidPartitionError(f"node {node_id!r} has block {block!r}; blocks are integers")
    if not 0 <= block < k:  # checked here: -1 marks "no block" below
        raise InvalidPartitionError(f"node {node_id!r} is in block {block}; blocks are 0..{k - 1}")
    return int(block)


def quotient_cycle(problem: Problem, a: np.ndarray) -> QuotientCycleError | None:
    """The error describing a cycle of the quotient graph, or None if it is acyclic."""
    g, k = problem.graph, problem.k
    bs, bd = a[g.edge_src], a[g.edge_dst]
    cut = bs != bd
    if not cut.any():
        return None
    keys, first = np.unique(bs[cut] * k + bd[cut], return_index=True)
    qs, qd = (keys // k).tolist(), (keys % k).tolist()
    succ: dict[int, list[int]] = {}
    for u, v in zip(qs, qd):
        succ.setdefault(u, []).append(v)
    # iterative DFS with colours finds a back edge -> cycle
    colour = [0] * k
    parent = [-1] * k
    for root in range(k):
        if colour[root]:
            continue
        stack = [(root, iter(succ.get(root, ())))]
        colour[root] = 1
        while stack:
            u, it = stack[-1]
            v = next(it, None)
            if v is None:
                colour[u] = 2
                stack.pop()
            elif colour[v] == 0:
                colour[v], parent[v] = 1, u
                stack.append((v, iter(succ.get(v, ()))))
            elif colour[v] == 1:
                cycle = [u]
                while cycle[-1] != v:
                    cycle.append(parent[cycle[-1]])
                cycle.reverse()
                edge_of = dict(zip(zip(qs, qd), first.tolist()))
                cut_idx = np.flatnonzero(cut)
                witnesses = []
                for x, y in zip(cycle, [*cycle[1:], cycle[0]]):
                    e = cut_idx[edge_of[(x, y)]]
                    witnesses.append((g.ids[g.edge_src[e]], g.ids[g.edge_dst[e]]))
                return QuotientCycleError(cycle, witnesses)
    return None


def evaluate(problem: Problem, assignment: Assignment, order: Sequence[int] | np.ndarray | None = None) -> Evaluation:
    """Check a partition and recompute its cost from scratch.

    ``assignment`` is either an array with the block of each node index or a mapping
    from node id to block (an id may also be given as its text, ``str(id)``, as in a
    certificate's ``assignment``: ``evaluate(problem, cert.assignment)`` re-checks it).
    Raises :class:`InvalidPartitionError` if a node is missing, given twice (as its id
    and its text) or in a block outside ``0..k-1``, :class:`QuotientCycleError` (naming
    the blocks and one edge per hop) if the quotient graph has a cycle, and
    :class:`UnknownNodeError` for an id not in the graph.

    ``order`` (node indices, a topological order of the whole graph) says in which
    order each block runs its ops; only peak-aware costs depend on it, and without
    it each block runs in the graph's own topological order.

    ``problem`` must be a :class:`Problem` (a bare graph has no ``k`` or machine:
    :class:`InvalidParameterError`).  Where ``k`` was clamped to ``n``
    (:class:`Problem`), blocks up to the ``k`` asked for are accepted and the
    non-empty ones renumbered ``0, 1, ...`` in their order (the same partition).
    """
    check_instance("problem", problem, Problem, "an mtpp.Problem (a graph with k: mtpp.Problem(graph, k))")
    try:
        a = as_assignment(problem, assignment)
    except UnknownNodeError as exc:
        raise UnknownNodeError(exc.node_id, "in the assignment") from None
    err = quotient_cycle(problem, a)
    if err is not None:
        raise err
    a.setflags(write=False)
    seq = None if order is None else check_order(problem.graph, order)
    costs = block_costs(problem, a, seq)
    total = costs.total
    b = int(np.argmax(total))
    bottleneck = float(total[b])
    return Evaluation(
        assignment=a,
        costs=costs,
        bottleneck=bottleneck,
        bottleneck_block=b,
        rounding=rounding_error(problem, bottleneck),
    )


def costs_are_exact(problem: Problem) -> bool:
    """Whether every float sum and difference the evaluator forms is exact: ``B`` is a
    power of two (dividing by it is exact, barring underflow) and the work, the sizes
    over ``B`` and ``M / B``, ``R / B`` lie on one power-of-two grid fine enough for
    their totals (:func:`mtpp.core.memory.exact_on_grid`: integer weights below ``2^50``
    in all, say).  Then :attr:`Evaluation.rounding` is 0."""
    b = problem.bandwidth
    if math.frexp(b)[0] != 0.5:
        return False
    g = problem.graph
    parts = [g.work, g.size_out / b, g.size_param / b]
    if math.isfinite(problem.memory):
        parts.append(np.array([problem.memory / b, problem.reserve / b]))
    values = np.concatenate(parts)
    if not np.all(np.isfinite(values)) or np.any((values > 0) & (values < np.finfo(float).tiny)):
        return False  # an overflow or a subnormal: the division was not exact
    magnitude = 4.0 * float(np.abs(values).sum()) * (1.0 + 2.0**-20)
    return exact_on_grid(values, magnitude)


def rounding_error(problem: Problem, bottleneck: float) -> float:
    """A bound on ``|bottleneck - exact|`` for a bottleneck computed by
    :func:`mtpp.core.cost.block_costs` (module docstring): 0 when :func:`costs_are_exact`."""
    if costs_are_exact(problem):
        return 0.0
    g = problem.graph
    relative = gamma(g.n + g.m + 8) * bottleneck
    if not (problem.peak_aware and np.isfinite(problem.param_budget)):
        return relative
    peak = gamma(2 * g.n + g.m + 8) * 2.0 * float(g.size_out.sum())
    return relative + peak * (1.0 + 8.0 * UNIT) / problem.bandwidth


def dag_numbering(problem: Problem, assignment: np.ndarray) -> np.ndarray:
    """Renumber the blocks of a valid partition in a topological order of its
    quotient graph (the order the MIPs assume); block labels keep their relative
    order where the quotient graph allows it."""
    g, k = problem.graph, problem.k
    a = np.asarray(assignment, dtype=np.int64)
    bs, bd = a[g.edge_src], a[g.edge_dst]
    cut = bs != bd
    q = np.unique(bs[cut] * k + bd[cut])
    qs, qd = q // k, q % k
    indeg = np.bincount(qd, minlength=k)
    order: list[int] = []
    ready = sorted(np.flatnonzero(indeg == 0).tolist())
    succ: dict[int, list[int]] = {}
    for s_, d_ in zip(qs.tolist(), qd.tolist()):
        succ.setdefault(s_, []).append(d_)
    heapq.heapify(ready)
    while ready:
        u = heapq.heappop(ready)
        order.append(u)
        for v in succ.get(u, []):
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(ready, v)
    if len(order) < k:
        raise InvalidPartitionError("the partition's quotient graph has a cycle")
    relabel = np.empty(k, dtype=np.int64)
    relabel[np.array(order)] = np.arange(k)
    return relabel[a]
