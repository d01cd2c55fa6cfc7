"""An MTPP instance: a graph, the number of blocks and the machine parameters."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mtpp.core.errors import WEIGHT_LIMIT, InvalidParameterError, WeightOverflowError
from mtpp.core.graph import Graph
from mtpp.core.schema import Machine
from mtpp.core.validation import check_bool, check_instance, check_k, check_real


@dataclass(frozen=True)
class Problem:
    """Graph + k + bandwidth ``B`` + fast memory ``M`` + activation reserve ``R``.

    Block cost (Eq. 3 of the MTPP paper) is input IO + work + overflow + output IO,
    with IO measured in time as ``size / B`` (Eq. 1) and the overflow term of Eq. (2)
    taken with a fixed activation reserve: ``(size_param(S) - (M - R))^+ / B``
    (Section 3: "reserving a buffer for activations ... and treating the remaining
    amount of fast memory as the new budget").  ``M = inf`` (the default) means
    parameters never overflow.

    ``peak_aware=True`` uses Eq. (2) itself: ``(size_param(S) + peak(S) - M)^+ / B``
    with ``peak(S)`` the activation peak of the block's ops run in their order
    (:func:`mtpp.core.memory.block_peak`); the reserve must then be 0, since the peak
    replaces it.  The MIP lower bounds ignore ``peak(S) >= 0``, which only lowers
    them, so they stay valid.

    ``k`` larger than the number of ops is stored as ``n``: at most ``n`` blocks can
    be non-empty, so it is the same problem (and ``k = 10^9`` takes no memory);
    ``requested_k`` keeps the number asked for.
    Arguments are checked by :mod:`mtpp.core.validation`.

    ``machine`` names the machine whose bandwidth and memory these are (a graph's
    recorded machine or a device preset, :mod:`mtpp.core.machine`; ``None``: figures
    given by hand, or the defaults).  It only labels the problem: the figures are
    ``bandwidth`` and ``memory``, and results repeat the label.
    """

    graph: Graph
    k: int
    bandwidth: float = 1.0
    memory: float = math.inf
    reserve: float = 0.0
    peak_aware: bool = False
    machine: Machine | None = field(default=None, compare=False)
    requested_k: int = field(init=False, repr=False, compare=False)
    """The ``k`` asked for (``k`` itself unless it was clamped to ``n``): an assignment
    may use blocks up to ``requested_k - 1`` (:func:`mtpp.evaluate` renumbers them)."""

    def __post_init__(self) -> None:
        check_instance("graph", self.graph, Graph, "an mtpp.Graph")
        object.__setattr__(self, "requested_k", check_k(self.k))
        object.__setattr__(self, "k", min(self.requested_k, self.graph.n))  # k > n: the same problem as k = n
        object.__setattr__(self, "bandwidth", check_real("bandwidth", self.bandwidth, positive=True, allow_inf=False))
        object.__setattr__(self, "memory", check_real("memory", self.memory, positive=True, allow_inf=True))
        object.__setattr__(self, "reserve", check_real("reserve", self.reserve, positive=False, allow_inf=False))
        check_bool("peak_aware", self.peak_aware)
        if self.machine is not None:
            check_instance("machine", self.machine, Machine, "an mtpp.core.schema.Machine or None")
        if self.peak_aware and self.reserve != 0:
            raise InvalidParameterError("reserve must be 0 with peak_aware=True: the computed peak replaces it")
        g = self.graph
        with np.errstate(over="ignore"):
            io_total = (float(g.size_param.sum()) + 2 * float(g.size_out.sum())) / self.bandwidth + float(g.work.sum())
        if not io_total <= WEIGHT_LIMIT:
            raise WeightOverflowError(f"work + (size_param + twice size_out) / B at B = {self.bandwidth!r}", io_total)
        if self.reserve > self.memory:
            raise InvalidParameterError(
                f"reserve ({self.reserve}) exceeds memory ({self.memory}): no memory left for parameters"
            )

    @property
    def param_budget(self) -> float:
        """Fast memory left for parameters, ``M - R`` (``inf`` when memory is unlimited)."""
        return self.memory - self.reserve

    @property
    def consumed_io(self) -> float:
        """The transfer time of every tensor that has a consumer, ``sum size_out / B``: what
        a partition may pay for input/output, set against the work by certify's shaving rule
        and the annealer's share of swaps."""
        g = self.graph
        return float(g.size_out[np.diff(g.succ_ptr) > 0].sum()) / self.bandwidth

    @property
    def has_overflow(self) -> bool:
        """Whether some block can pay an overflow cost: the parameters exceed one
        block's budget, or peak-aware costs with finite memory."""
        return float(self.graph.size_param.sum()) > self.param_budget or (
            self.peak_aware and self.param_budget < float("inf")
        )
