"""The training graphs a learned orderer's training loop draws, as the loop sees them.

A run trains on fresh, seeded graphs every epoch and validates on a fixed set
(Topoformer Section 5.1 and App. C.1; REGAL Section 3.1).  The graphs come from the
caller, an :class:`EpochGraphs` (the generators, :func:`mtpp.generators.training.epoch_graphs`,
sit above this layer): graph ``i`` of epoch ``e`` for seed ``s`` is always the same
graph, which makes training resumable and reproducible.
"""

from __future__ import annotations

from typing import Protocol

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph

VALIDATION_EPOCH = -1  # the epoch number whose graphs form the fixed validation set


class EpochGraphs(Protocol):
    """The ``count`` graphs of ``epoch`` (``VALIDATION_EPOCH``: the validation set) for
    ``objective`` (``"peak"`` or ``"mtpp"``), with node counts in ``nodes``, drawn for
    ``seed`` over ``jobs`` processes; the same graphs for the same arguments."""

    def __call__(
        self, objective: str, nodes: tuple[int, int], seed: int, epoch: int, count: int, jobs: int = 1
    ) -> list[Graph]: ...


def check_nodes(nodes: tuple[int, int]) -> tuple[int, int]:
    """A node-count range ``(lo, hi)`` with ``3 <= lo <= hi``."""
    try:
        lo, hi = (int(v) for v in nodes)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"nodes must be a pair (lo, hi), got {nodes!r}") from exc
    if not 3 <= lo <= hi:
        raise InvalidParameterError(f"nodes must satisfy 3 <= lo <= hi, got {nodes!r}")
    return lo, hi
