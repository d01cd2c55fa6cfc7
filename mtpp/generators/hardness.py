"""The hardness filter of the REGAL data set: keep graphs with room for improvement.

Paliwal et al. keep only synthetic graphs that are "sufficiently hard for their
min-peak scheduling objective" (MTPP paper, App. C.2).  Their data set's release
(``deepmind-research/regal/README.md``, "Filtering") says how: a graph is kept when
BRKGA with a *high* fitness-evaluation limit beats BRKGA with a *low* one by a margin
(20% for running time; for memory, when only the high limit fits the device).

Our version, for the peak memory of one device (Topoformer Eq. 1-3, 15; the measure of
:func:`mtpp.schedule`):

* the *low* effort is the best of the orders BRKGA starts from (depth-first,
  breadth-first and the greedy state DP: ``mtpp.schedule`` methods ``dfs``, ``bfs``,
  ``greedy``), i.e. BRKGA stopped before its first evaluation;
* the *high* effort is ``mtpp.schedule(method="brkga")`` without a time limit: 50 x 200
  = 10,000 evaluations seeded with those orders, so it is never worse;
* the graph has *room for improvement* when ``1 - high / low >= min_gain``
  (:data:`DEFAULT_MIN_GAIN` = 0.2, the release's 20%).

Deterministic for a given ``seed`` (no time limit anywhere).  The filter goes through
the public :func:`mtpp.schedule` (a core module may not import :mod:`heuristics`), so
a change to those methods' defaults changes which graphs ``regal_graph`` keeps for a
seed; the tests pin the filter on constructed graphs.  ``O(10^4 (n log n + m))``,
about 0.1-0.3 s for 50-200 ops once numba has compiled the kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.validation import check_instance, check_seed

DEFAULT_MIN_GAIN = 0.2
LOW_METHODS = ("dfs", "bfs", "greedy")
HIGH_METHOD = "brkga"


@dataclass(frozen=True)
class PeakRoom:
    """Peaks of the low- and high-effort schedules of one graph and the relative gain
    ``1 - high / low`` (0 when ``low`` is 0)."""

    low: float
    high: float

    @property
    def gain(self) -> float:
        return 0.0 if self.low <= 0 else max(0.0, 1.0 - self.high / self.low)


def peak_memory_room(graph: Graph, seed: int = 0) -> PeakRoom:
    """The peak of the best low-effort order and of BRKGA (see the module docstring)."""
    check_instance("graph", graph, Graph, "an mtpp.Graph")
    seed = check_seed(seed)
    from mtpp.scheduling import schedule  # the public API; lazy, it composes heuristics

    low = min(schedule(graph, method=m, seed=seed, time_limit=None).peak for m in LOW_METHODS)
    high = schedule(graph, method=HIGH_METHOD, seed=seed, time_limit=None).peak
    return PeakRoom(float(low), float(min(high, low)))


def check_min_gain(min_gain: object) -> float:
    if isinstance(min_gain, bool) or not isinstance(min_gain, Real) or not (0 <= float(min_gain) < 1):
        raise InvalidParameterError(f"min_gain must be a number in [0, 1), got {min_gain!r}")
    return float(min_gain)


def is_hard_for_peak_memory(graph: Graph, min_gain: float = DEFAULT_MIN_GAIN, seed: int = 0) -> bool:
    """True when BRKGA's 10,000 evaluations lower the peak of the low-effort orders by
    at least ``min_gain`` (a fraction): the REGAL release's "room for improvement"."""
    min_gain = check_min_gain(min_gain)
    return peak_memory_room(graph, seed).gain >= min_gain
