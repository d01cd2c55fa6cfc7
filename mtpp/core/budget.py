"""The wall-clock cap of one call: :func:`mtpp.certify`'s ``budget``, the ``time_limit``
of :func:`mtpp.schedule` and :func:`mtpp.place`.

A :class:`Budget` is started when the call starts and answers one question, how many
seconds are left (``inf`` without a cap); each method of a call takes its share of
what is left when it starts (its share is documented with the method), so what one
method leaves goes to the next.  ``report(line)`` is where the call's progress lines go.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

Report = Callable[[str], None]


def _silent(line: str) -> None:
    """The report of a call that asked for none."""


class Budget:
    """``seconds`` of wall time from ``start`` (default: now; ``None``: no cap), and the
    call's report."""

    def __init__(self, seconds: float | None, *, start: float | None = None, report: Report | None = None) -> None:
        self.start = time.perf_counter() if start is None else start
        self.deadline = math.inf if seconds is None else self.start + seconds
        self.report: Report = _silent if report is None else report

    @property
    def limited(self) -> bool:
        """Whether the call has a cap."""
        return math.isfinite(self.deadline)

    def left(self) -> float:
        """Seconds left (``inf`` without a cap; negative once past the deadline)."""
        return math.inf if not self.limited else self.deadline - time.perf_counter()

    def left_or_none(self) -> float | None:
        """Seconds left, at least 0, or ``None`` without a cap (the form solvers take)."""
        return None if not self.limited else max(0.0, self.left())

    def elapsed(self) -> float:
        """Seconds since the call started."""
        return time.perf_counter() - self.start

    def say(self, line: str) -> None:
        """Report one progress line."""
        self.report(line)
