"""The independent evaluator: the single source of truth for a partition's cost.

Every partition any mtpp method returns is passed through :func:`evaluate`, which
checks it from scratch (every node assigned, blocks in ``0..k-1``, acyclic quotient
graph) and recomputes the block costs of Eq. (3) with :mod:`mtpp.cost`, without
reusing anything the method computed.

Rounding.  The reported costs are float sums (:mod:`mtpp.cost`).  Work and the input
and output tensors of a block are sums of at most ``n + m`` non-negative terms, so
each is within ``gamma(n + m)`` of its exact value *relative to itself* (Higham Eq.
4.4); dividing by ``B`` and adding the four terms adds a few ``u``.  Only the
overflow cancels: ``(size_param(S) [+ peak(S)] - (M - R))^+ / B`` subtracts the
budget from a sum that may be far larger than the result, so its error is bounded
against what it touched: ``gamma(2n + m) size_param(V) + 2u |M - R|``, plus
``gamma(2n + m) 2 size_out(V)`` with peak-aware costs (the peak is a running sum of
live tensors, each added and freed once), over ``B``.  :attr:`Evaluation.rounding` is the sum of both parts, an absolute
bound on ``|bottleneck - exact bottleneck|``; ``mtpp.certify`` adds it to the upper
bound before it calls a partition optimal.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mtpp.cost import BlockCosts, block_costs
from mtpp.errors import InvalidPartitionError, QuotientCycleError, UnknownNodeError
from mtpp.graph import Graph, NodeId
from mtpp.memory import check_order
from mtpp.problem import Problem
from mtpp.rounding import UNIT, gamma
from mtpp.validation import check_instance

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


def rounding_error(problem: Problem, bottleneck: float) -> float:
    """A bound on ``|bottleneck - exact|`` for a bottleneck computed by
    :func:`mtpp.cost.block_costs` (module docstring)."""
    g = problem.graph
    relative = gamma(g.n + g.m + 8) * bottleneck
    if not np.isfinite(problem.param_budget):
        return relative
    touched = float(g.size_param.sum()) + (2.0 * float(g.size_out.sum()) if problem.peak_aware else 0.0)
    overflow = gamma(2 * g.n + g.m + 8) * touched + 2.0 * UNIT * abs(problem.param_budget)
    return relative + overflow * (1.0 + 8.0 * UNIT) / problem.bandwidth


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
