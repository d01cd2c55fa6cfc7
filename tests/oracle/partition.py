"""The MTPP oracle: the truth of Eq. (1)-(4) of the MTPP paper by brute force.

Written straight from the definitions with Python sets, integers and rationals, sharing no
code with mtpp's vectorised cost model, DP or solvers: block costs, OPT over every
assignment, over chains of down-sets and in exact rationals, the best segmentation of an
order, the best split-point plan, and the cheapest convex block with a share of weights.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from fractions import Fraction

import numpy as np

from mtpp import Graph, Problem
from tests.oracle.graphs import random_dag


def naive_block_peak(graph: Graph, ops: Sequence[int]) -> float:
    """peak(S) of a block whose ops run in the sequence ``ops``, step by step: a tensor
    made in S is live from its step to its last consumer in S, or to the end of the
    block if a consumer is outside S (a tensor with no consumer only during its own
    step); an input tensor from outside S is live from the start to its last consumer
    in S."""
    step = {int(v): t for t, v in enumerate(ops)}
    best = 0.0
    for t in range(len(ops)):
        mem = 0.0
        for u in range(graph.n):
            cons = [int(w) for w in graph.successors(u)]
            inside = [step[w] for w in cons if w in step]
            if u in step:
                p = step[u]
                leaves = len(inside) < len(cons)
                if p == t or (p < t and (leaves or any(c >= t for c in inside))):
                    mem += float(graph.size_out[u])
            elif inside and max(inside) >= t:
                mem += float(graph.size_out[u])
        best = max(best, mem)
    return best


def naive_block_cost(problem: Problem, block: set[int], run_order: Sequence[int] | None = None) -> float:
    """f(S) of Eq. (3), counting each tensor once per block.  With peak-aware costs the
    block's ops run in the relative order of ``run_order`` (a topological order of the
    whole graph; default: the graph's own)."""
    g = problem.graph
    succ = {u: set(g.successors(u).tolist()) for u in range(g.n)}
    inputs = {u for u in range(g.n) if u not in block and succ[u] & block}
    outputs = {u for u in block if succ[u] - block}
    io_in = sum(float(g.size_out[u]) for u in inputs) / problem.bandwidth
    io_out = sum(float(g.size_out[u]) for u in outputs) / problem.bandwidth
    work = sum(float(g.work[v]) for v in block)
    params = sum(float(g.size_param[v]) for v in block)
    if problem.peak_aware:
        seq = g.topological_order.tolist() if run_order is None else [int(v) for v in run_order]
        params += naive_block_peak(g, [v for v in seq if v in block])
    overflow = max(params - (problem.memory - problem.reserve), 0.0) / problem.bandwidth
    return io_in + work + overflow + io_out


def quotient_is_acyclic(graph: Graph, assignment: Sequence[int], k: int) -> bool:
    """Whether the blocks form a DAG (checked by repeatedly removing source blocks)."""
    edges = {
        (assignment[u], assignment[v])
        for u, v in zip(graph.edge_src.tolist(), graph.edge_dst.tolist())
        if assignment[u] != assignment[v]
    }
    alive = set(range(k))
    while alive:
        sources = [b for b in alive if not any(e[1] == b and e[0] in alive for e in edges)]
        if not sources:
            return False
        alive -= set(sources)
    return True


def brute_force_optimum(problem: Problem) -> tuple[float, tuple[int, ...]]:
    """OPT of Eq. (4) by enumerating all k^n assignments (use n <= 7, k <= 3)."""
    g, k = problem.graph, problem.k
    best, best_a = math.inf, ()
    for a in itertools.product(range(k), repeat=g.n):
        if not quotient_is_acyclic(g, a, k):
            continue
        value = max(naive_block_cost(problem, {v for v in range(g.n) if a[v] == b}) for b in range(k))
        if value < best:
            best, best_a = value, a
    return best, best_a


def down_set_optimum(problem: Problem) -> float:
    """OPT of Eq. (4) over chains of down-sets ``{} = I_0 <= I_1 <= ... <= I_k = V``
    (every acyclic partition, blocks in a topological order of its quotient, is such
    a chain and every chain is one), each block priced by :func:`naive_block_cost`.
    Enumerates the ``2^n`` subsets once: fast for ``n <= 9`` at any ``k``."""
    g, k, n = problem.graph, problem.k, problem.graph.n
    pred = [0] * n
    for u, v in zip(g.edge_src.tolist(), g.edge_dst.tolist()):
        pred[v] |= 1 << u
    ideals = [m for m in range(1 << n) if all(not (m >> i & 1) or not (pred[i] & ~m) for i in range(n))]
    cost: dict[int, float] = {}

    def f(mask: int) -> float:
        if mask not in cost:
            cost[mask] = naive_block_cost(problem, {i for i in range(n) if mask >> i & 1}) if mask else 0.0
        return cost[mask]

    best = {i: (0.0 if i == 0 else math.inf) for i in ideals}
    for _ in range(k):
        best = {i: min(max(best[j], f(i & ~j)) for j in ideals if not j & ~i) for i in ideals}
    return best[(1 << n) - 1]


# ---------------------------------------------------------------- exact rationals
class ExactCosts:
    """``f(S)`` of Eq. (1)-(3) in exact rational arithmetic: every float weight, ``M``,
    ``R`` and ``B`` is taken as the rational it stores (``Fraction(x)`` is exact).  For
    speed the costs are kept as integers ``g(S) = f(S) * divisor`` (every weight has a
    power-of-two denominator; ``B = p / q``, so ``divisor = D p`` with ``D`` the common
    denominator of the weights), and a positive scale preserves min and max.  Peak-aware
    problems are rejected: the activation peak is not priced here."""

    def __init__(self, problem: Problem) -> None:
        if problem.peak_aware:
            raise ValueError("the exact oracle prices Eq. (3) with a fixed reserve, not peak-aware costs")
        g = problem.graph
        self.n = n = g.n
        work = [Fraction(float(x)) for x in g.work]
        param = [Fraction(float(x)) for x in g.size_param]
        out = [Fraction(float(x)) for x in g.size_out]
        budget = None if math.isinf(problem.memory) else Fraction(problem.memory) - Fraction(problem.reserve)
        d = math.lcm(1, *(x.denominator for x in (*work, *param, *out, *(() if budget is None else (budget,)))))
        b = Fraction(problem.bandwidth)
        p, q = b.numerator, b.denominator
        # g(S) = D p f(S) = q D (io(S) + overflow(S)) + p D work(S)
        self.work = [int(x * d) * p for x in work]
        self.param = [int(x * d) for x in param]
        self.out = [int(x * d) * q for x in out]
        self.budget = None if budget is None else int(budget * d)  # an integer (d is a multiple of its denominator)
        self.q = q
        self.divisor = d * p
        self.succ = [0] * n
        self.pred = [0] * n
        for u, v in zip(g.edge_src.tolist(), g.edge_dst.tolist()):
            self.succ[u] |= 1 << v
            self.pred[v] |= 1 << u
        self._cache: dict[int, int] = {0: 0}

    def scaled(self, mask: int) -> int:
        """``g(S) = divisor * f(S)`` of the block ``S`` given as a bitmask (an empty block costs 0)."""
        value = self._cache.get(mask)
        if value is None:
            work = params = io = 0
            for u in range(self.n):
                if mask >> u & 1:
                    work += self.work[u]
                    params += self.param[u]
                    if self.succ[u] & ~mask:  # output tensor, once per producer
                        io += self.out[u]
                elif self.succ[u] & mask:  # input tensor, once per producer
                    io += self.out[u]
            if self.budget is not None and params > self.budget:
                io += (params - self.budget) * self.q
            value = self._cache[mask] = work + io
        return value

    def cost(self, block: Iterable[int]) -> Fraction:
        """``f(S)`` of a block given by node indices."""
        return Fraction(self.scaled(sum(1 << int(v) for v in set(block))), self.divisor)

    def bottleneck(self, assignment: Sequence[int]) -> Fraction:
        """The exact objective of a partition (block per node index; acyclicity not checked)."""
        blocks: dict[int, int] = {}
        for v, b in enumerate(assignment):
            blocks[int(b)] = blocks.get(int(b), 0) | 1 << v
        return Fraction(max(self.scaled(m) for m in blocks.values()), self.divisor)


def down_sets(pred: Sequence[int], cap: int | None = None) -> list[int] | None:
    """Every down-set of the DAG whose node ``v`` has the predecessors in the bitmask
    ``pred[v]``, as bitmasks by size (``None`` if there are more than ``cap``)."""
    n = len(pred)
    seen, frontier = {0}, [0]
    while frontier:
        nxt = []
        for mask in frontier:
            for v in range(n):
                if not mask >> v & 1 and not pred[v] & ~mask:
                    grown = mask | 1 << v
                    if grown not in seen:
                        seen.add(grown)
                        nxt.append(grown)
        if cap is not None and len(seen) > cap:
            return None
        frontier = nxt
    return sorted(seen, key=lambda m: (m.bit_count(), m))


def exact_optimum(problem: Problem) -> Fraction:
    """OPT of Eq. (4) as an exact rational: the chains of down-sets of
    :func:`down_set_optimum`, every block priced by :class:`ExactCosts` (no rounding
    anywhere, so huge and tiny weights in one graph cannot cancel).
    ``O(P k)`` for the ``P`` pairs ``J <= I`` of down-sets (``P <= 3^n``)."""
    costs = ExactCosts(problem)
    ideals = down_sets(costs.pred)
    assert ideals is not None
    index = {m: i for i, m in enumerate(ideals)}
    # pairs[i]: (j, g(I_i \ I_j)) for every down-set I_j inside I_i, the empty block (j = i) included
    pairs = [[(index[j], costs.scaled(i ^ j)) for j in ideals[: index[i] + 1] if not j & ~i] for i in ideals]
    best = [costs.scaled(i) for i in ideals]  # one block
    for _ in range(problem.k - 1):
        best = [min(max(best[j], c) for j, c in row) for row in pairs]
    return Fraction(best[-1], costs.divisor)


def rational_optimum(problem: Problem) -> Fraction:
    """OPT in exact rationals (:func:`exact_optimum`); with peak-aware costs, which the
    exact oracle does not price, the float brute force (:func:`brute_force_optimum`)."""
    return Fraction(brute_force_optimum(problem)[0]) if problem.peak_aware else exact_optimum(problem)


# ---------------------------------------------------------------- restricted problems
def brute_force_segmentation(problem: Problem, order: Sequence[int]) -> float:
    """Best split of ``order`` into at most k contiguous (possibly empty) segments."""
    n, k = problem.graph.n, problem.k
    best = math.inf
    for cuts in itertools.combinations_with_replacement(range(n + 1), k - 1):
        bounds = [0, *cuts, n]
        value = max(naive_block_cost(problem, set(order[bounds[i] : bounds[i + 1]]), order) for i in range(k))
        best = min(best, value)
    return best


def brute_force_units(problem: Problem, starts: list[int]) -> float:
    """Best split into at most k blocks cutting only at ``starts`` (naive costs)."""
    n, best = problem.graph.n, math.inf
    inner = starts[1:-1]
    for blocks in range(1, problem.k + 1):
        for cuts in itertools.combinations(inner, blocks - 1):
            bounds = [0, *cuts, n]
            best = min(best, max(naive_block_cost(problem, set(range(a, b))) for a, b in itertools.pairwise(bounds)))
    return best


def ideals(g: Graph) -> Iterator[frozenset[int]]:
    """Every down-set of ``g`` (a set holding the predecessors of each of its ops), as
    frozensets, by trying every subset."""
    pred = [set(g.predecessors(v).tolist()) for v in range(g.n)]
    for r in range(g.n + 1):
        for s in itertools.combinations(range(g.n), r):
            if all(pred[v] <= set(s) for v in s):
                yield frozenset(s)


def convex(graph: Graph, block: set[int]) -> bool:
    """No path leaves ``block`` and comes back (brute force over the descendants of its ops)."""
    below: set[int] = set()
    stack = [int(w) for v in block for w in graph.successors(v).tolist() if int(w) not in block]
    while stack:
        v = stack.pop()
        if v not in below:
            below.add(v)
            stack.extend(int(w) for w in graph.successors(v).tolist())
    return not (below & block)


def cheapest_share(problem: Problem, weights: np.ndarray) -> float:
    """``min f(S)`` over convex ``S`` with ``weights(S) >= max(sum(weights) / k, max(weights))``,
    every subset tried (exact rationals for the weight test; without peaks, as the MIP)."""
    g = problem.graph
    free = replace(problem, peak_aware=False, reserve=0.0) if problem.peak_aware else problem
    share = max(sum(Fraction(float(w)) for w in weights) / problem.k, Fraction(float(max(weights))))
    best = math.inf
    for r in range(1, g.n + 1):
        for s in itertools.combinations(range(g.n), r):
            block = set(s)
            if sum(Fraction(float(weights[v])) for v in s) >= share and convex(g, block):
                best = min(best, naive_block_cost(free, block))
    return best


# ---------------------------------------------------------------- instances
def mixed_scale_problem(rng: np.random.Generator, trial: int, p: float = 0.5) -> Problem:
    """A random problem of 2-6 ops at k = 2 whose weights mix scales 1e-3..1e12 (each op's
    work, parameter and output size scaled apart), B in 0.3 / 1 / 7, and every other
    trial a finite memory (1.5 the median parameter size)."""
    n = int(rng.integers(2, 7))
    g = random_dag(rng, n, p=p, integral=False)
    scales = 10.0 ** rng.integers(-3, 13, size=(3, n))
    g = Graph.from_arrays(g.work * scales[0], g.size_param * scales[1], g.size_out * scales[2], g.edges())
    memory = math.inf if trial % 2 else float(np.median(g.size_param)) * 1.5
    return Problem(g, 2, bandwidth=float(rng.choice([0.3, 1.0, 7.0])), memory=memory)
