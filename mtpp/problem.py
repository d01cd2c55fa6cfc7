"""An MTPP instance: a graph, the number of blocks and the machine parameters."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from mtpp.errors import WEIGHT_LIMIT, InvalidParameterError, WeightOverflowError
from mtpp.graph import Graph


def check_k(k: object) -> int:
    """``k`` as an int; :class:`InvalidParameterError` unless it is an integer >= 1."""
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise InvalidParameterError(f"k must be an integer >= 1, got {k!r}")
    if k < 1:
        raise InvalidParameterError(f"k must be >= 1, got {k}")
    return int(k)


def check_seed(seed: object) -> int:
    """``seed`` as an int; :class:`InvalidParameterError` unless it is an integer >= 0."""
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise InvalidParameterError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


def check_time_limit(time_limit: object) -> float:
    """``time_limit`` in seconds; :class:`InvalidParameterError` unless it is a number > 0."""
    if isinstance(time_limit, bool) or not isinstance(time_limit, Real) or not float(time_limit) > 0:
        raise InvalidParameterError(f"time_limit must be a number of seconds > 0, got {time_limit!r}")
    return float(time_limit)


def _check_real(name: str, value: object, *, positive: bool, allow_inf: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(value):
        raise InvalidParameterError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if math.isinf(x) and not (allow_inf and x > 0):
        raise InvalidParameterError(f"{name} must be finite, got {value!r}")
    if x < 0 or (positive and x == 0):
        raise InvalidParameterError(f"{name} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return x


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
    (:func:`mtpp.memory.block_peak`); the reserve must then be 0, since the peak
    replaces it.  The MIP lower bounds ignore ``peak(S) >= 0``, which only lowers
    them, so they stay valid.
    """

    graph: Graph
    k: int
    bandwidth: float = 1.0
    memory: float = math.inf
    reserve: float = 0.0
    peak_aware: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.graph, Graph):
            raise InvalidParameterError(f"graph must be an mtpp.Graph, got {type(self.graph).__name__}")
        object.__setattr__(self, "k", check_k(self.k))
        object.__setattr__(self, "bandwidth", _check_real("bandwidth", self.bandwidth, positive=True, allow_inf=False))
        object.__setattr__(self, "memory", _check_real("memory", self.memory, positive=True, allow_inf=True))
        object.__setattr__(self, "reserve", _check_real("reserve", self.reserve, positive=False, allow_inf=False))
        if not isinstance(self.peak_aware, bool):
            raise InvalidParameterError(f"peak_aware must be True or False, got {self.peak_aware!r}")
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
    def has_overflow(self) -> bool:
        """Whether some block can pay an overflow cost: the parameters exceed one
        block's budget, or peak-aware costs with finite memory."""
        return float(self.graph.size_param.sum()) > self.param_budget or (
            self.peak_aware and self.param_budget < float("inf")
        )
