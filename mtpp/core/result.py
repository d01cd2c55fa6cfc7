"""One result contract for :func:`mtpp.partition`, :func:`mtpp.certify`,
:func:`mtpp.schedule` and :func:`mtpp.place`.

Every result (:class:`mtpp.Solution`, :class:`mtpp.Certificate`,
:class:`mtpp.Schedule`, :class:`mtpp.Placement`) is a :class:`Result`:

* ``upper_bound``: the value of the returned partition / order / placement,
  re-checked by the independent evaluator and rounded *upwards* by the evaluator's
  bound on its own rounding error (:func:`upper_rounded`), so it is never below the
  solution's exact cost (the domain names ``bottleneck``, ``peak`` and ``makespan``
  stay as aliases);
* ``lower_bound``: the best proven bound on the optimum (``0.0`` when nothing beyond
  the trivial bound was proven), every bound rounded downwards by its own method;
  a bound above the upper bound cannot be one: that method *failed*, its step says
  so with both numbers, and it never makes a result ``optimal`` (:func:`settle`);
* ``gap``: ``(upper_bound - lower_bound) / upper_bound`` as a **fraction** (0 when the
  upper bound is 0);
* ``optimal``: the upper bound is proven optimal to the call's tolerance;
* ``status``: one :class:`mtpp.core.status.ResultStatus`;
* ``wall_time``: seconds the call took;
* ``steps``: the methods that produced the bounds, as :class:`Step` records;
* ``order``: node ids (``index_order``: the same as node indices);
* ``to_dict()`` / ``to_json()``: the documented JSON document of
  :mod:`mtpp.results_schema` (``format`` ``mtpp-solution``, ``mtpp-certificate``,
  ``mtpp-schedule``, ``mtpp-placement``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mtpp.core.status import ResultStatus


@dataclass(frozen=True)
class Step:
    """One method run inside a call: its name, how it ended, the value of what it
    found (``upper_bound``, ``None`` if it found nothing) and the bound it proved
    (``lower_bound``, ``None`` if none), its time and a detail line."""

    method: str
    status: ResultStatus
    upper_bound: float | None
    lower_bound: float | None
    wall_time: float
    detail: str = ""


def relative_gap(upper: float, lower: float) -> float:
    """``(upper - lower) / upper`` (0 when ``upper`` is 0 or below, never negative;
    ``inf`` when ``upper`` is infinite)."""
    if not math.isfinite(upper):
        return math.inf
    return 0.0 if upper <= 0 else max(0.0, (upper - lower) / upper)


def upper_rounded(value: float, error: float) -> float:
    """A float at least the true value of a computed ``value`` whose error is at most
    ``error`` (``|value - true| <= error``): ``value`` itself when ``error`` is 0 (the
    sums were exact), else ``value + error`` rounded up by one ulp (the addition
    rounds to nearest, so it may fall half an ulp short of ``value + error``).  The
    upper bound every result reports: the re-checked cost rounded upwards, as lower
    bounds are rounded downwards (:func:`mtpp.core.rounding.lower_by`)."""
    if not math.isfinite(value) or error <= 0:
        return float(value)
    return math.nextafter(float(value) + float(error), math.inf)


@dataclass(frozen=True)
class Settled:
    """The bounds of one result after :func:`settle`: the upper bound rounded upwards,
    the best lower bound that does not exceed it and the method that proved it, and
    the methods whose bound exceeded it (``(method, bound)``: failed methods, their
    bounds dropped)."""

    upper_bound: float
    lower_bound: float
    bound_method: str
    failed: tuple[tuple[str, float], ...] = ()

    def failure_message(self, bound: float) -> str:
        """The detail line of a failed method: its bound and the upper bound it exceeds."""
        return (
            f"failed: its bound {bound!r} exceeds the re-checked upper bound {self.upper_bound!r} "
            "(the cost of a returned solution, rounded up); the bound was dropped"
        )


def settle(value: float, error: float, bounds: Iterable[tuple[str, float]]) -> Settled:
    """The result contract (module docstring) for one result: ``value`` is the
    re-checked cost of the returned solution, ``error`` the evaluator's bound on its
    rounding, ``bounds`` the ``(method, proven bound)`` pairs of the call.  The upper
    bound is :func:`upper_rounded`; a bound above it cannot be a bound (the optimum is
    at most the returned solution's exact cost), so its method failed: it is listed in
    ``failed`` and never counts.  The lower bound is the best of the others (0.0 and
    ``"none"`` when there are none)."""
    ub = upper_rounded(value, error)
    kept: list[tuple[str, float]] = []
    bad: list[tuple[str, float]] = []
    for method, bound in bounds:
        if bound is None or math.isnan(bound):
            continue
        (bad if bound > ub else kept).append((method, float(bound)))
    best = max(kept, key=lambda mb: mb[1], default=("none", 0.0))
    return Settled(ub, max(best[1], 0.0), best[0], tuple(bad))


def finite_or_none(x: float | None) -> float | None:
    """``x``, or ``None`` when it is ``None``, infinite or NaN."""
    return None if x is None or not math.isfinite(x) else float(x)


class Result:
    """The shared base of the four results (module docstring).  A subclass provides
    ``upper_bound``, ``lower_bound``, ``optimal``, ``status``, ``wall_time``,
    ``steps`` and ``_document()`` (its :mod:`mtpp.results_schema` document)."""

    @property
    def gap(self) -> float:
        """``(upper_bound - lower_bound) / upper_bound`` as a fraction (module docstring)."""
        ub, lb = getattr(self, "upper_bound"), getattr(self, "lower_bound")  # noqa: B009
        return relative_gap(ub, lb)

    def _document(self) -> Any:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The result's JSON document (:mod:`mtpp.results_schema`) as plain data."""
        return self._document().model_dump(mode="json")  # type: ignore[no-any-return]

    def to_json(self, indent: int | None = 2) -> str:
        """The result's JSON document (:mod:`mtpp.results_schema`), strict JSON."""
        return self._document().model_dump_json(indent=indent)  # type: ignore[no-any-return]


class FieldsEqual:
    """Equality of a pydantic result by its fields only: the graph or problem it
    keeps privately for :meth:`Result.to_json` does not count, so a result equals
    itself read back from ``model_dump_json``."""

    def __eq__(self, other: object) -> bool:
        dump = getattr(self, "model_dump")  # noqa: B009
        return type(other) is type(self) and dump() == getattr(other, "model_dump")()  # noqa: B009
