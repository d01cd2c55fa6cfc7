"""The peak-memory oracle: the minimum peak over every topological order, by the
definition (Eq. (2), (3), (15) of Topoformer; :mod:`mtpp.core.memory`), in floats and in
exact arithmetic."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from fractions import Fraction

from mtpp import Graph
from tests.oracle.graphs import topological_orders


def reference_profile(graph: Graph, order) -> list[float]:
    """``M_t`` by Eq. (2), (3), (15) literally: ``M_t = I_{t-1} + m(s_t) + p(s_t)``,
    ``I_t = M_t - p(s_t) - sum_{i in S_t} m_i`` where ``S_t`` are the scheduled, not yet
    freed nodes all of whose consumers are scheduled."""
    succ = {u: set(graph.successors(u).tolist()) for u in range(graph.n)}
    done: set[int] = set()
    freed: set[int] = set()
    held = 0.0
    profile = []
    for v in [int(x) for x in order]:
        m_t = held + float(graph.size_out[v]) + float(graph.size_param[v])
        profile.append(m_t)
        done.add(v)
        s_t = {i for i in done if i not in freed and succ[i] <= done}
        freed |= s_t
        held = m_t - float(graph.size_param[v]) - sum(float(graph.size_out[i]) for i in s_t)
    return profile


def brute_force_peak(graph: Graph) -> float:
    """The minimum peak over all topological orders."""
    return min(max(reference_profile(graph, o)) for o in topological_orders(graph))


class ExactPeak:
    """The graph's sizes as integers over one power-of-two denominator (every float is
    ``m 2^e``), so that every peak is an exact integer sum."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        ratios = [x.as_integer_ratio() for x in (*graph.size_out.tolist(), *graph.size_param.tolist())]
        self.den = max(d for _, d in ratios)
        ints = [num * (self.den // d) for num, d in ratios]
        self.out, self.param = ints[: graph.n], ints[graph.n :]
        self.succ = [graph.successors(u).tolist() for u in range(graph.n)]
        self.pred = [set(graph.predecessors(v).tolist()) for v in range(graph.n)]

    def peak(self, order: Collection[int]) -> Fraction:
        """The peak of a topological order by the definition (:mod:`mtpp.core.memory`): at
        step ``t`` the op's parameters plus every tensor whose producer ran at or before
        ``t`` and whose last consumer runs at or after ``t`` (a sink's: its own step)."""
        pos = {int(v): t for t, v in enumerate(order)}
        last = [max((pos[z] for z in self.succ[u]), default=pos[u]) for u in range(self.graph.n)]
        best = 0
        for t, v in enumerate(order):
            step = self.param[int(v)] + sum(self.out[u] for u in range(self.graph.n) if pos[u] <= t <= last[u])
            best = max(best, step)
        return Fraction(best, self.den)

    def orders(self) -> Iterator[tuple[int, ...]]:
        """Every topological order (:func:`tests.oracle.graphs.topological_orders`)."""
        return topological_orders(self.graph)

    def optimum(self) -> tuple[Fraction, tuple[int, ...]]:
        """The minimum peak and an order that reaches it."""
        return min(((self.peak(o), o) for o in self.orders()), key=lambda po: po[0])

    def is_order(self, order: Collection[int]) -> bool:
        seq = [int(v) for v in order]
        if sorted(seq) != list(range(self.graph.n)):
            return False
        seen: set[int] = set()
        for v in seq:
            if not self.pred[v] <= seen:
                return False
            seen.add(v)
        return True


def exact_peak(graph: Graph, order) -> Fraction:
    """The peak of ``order`` in exact arithmetic (:class:`ExactPeak`)."""
    return ExactPeak(graph).peak(order)


def exact_peak_optimum(graph: Graph) -> Fraction:
    """The minimum peak over every topological order, in exact arithmetic."""
    return ExactPeak(graph).optimum()[0]
