"""One exception hierarchy for everything mtpp rejects.

Every error raised on bad input is a subclass of :class:`MtppError` and names the
offending node, edge, block or parameter, so callers can catch one base class and
users can read what went wrong without a traceback from deep inside a solver.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar


class MtppError(Exception):
    """Base class of every error mtpp raises on purpose: one ``except`` catches
    everything mtpp rejects (the solver layer's errors, :mod:`solvers.errors`, too)."""


class GraphError(MtppError, ValueError):
    """The computation graph is not a valid MTPP input."""


class EmptyGraphError(GraphError):
    """The graph has no nodes."""

    def __init__(self) -> None:
        super().__init__("the graph is empty: it needs at least one node")


class DuplicateNodeError(GraphError):
    """Two nodes share one id."""

    def __init__(self, node_id: Any) -> None:
        self.node_id = node_id
        super().__init__(f"duplicate node id {node_id!r}")


class InvalidNodeIdError(GraphError):
    """A node id is neither a string nor an integer."""

    def __init__(self, node_id: Any) -> None:
        self.node_id = node_id
        super().__init__(f"node id {node_id!r} has type {type(node_id).__name__}; ids must be str or int")


class InvalidWeightError(GraphError):
    """A node weight is negative, NaN, infinite or not a number (a string, a boolean)."""

    def __init__(self, node_id: Any, field: str, value: Any) -> None:
        self.node_id = node_id
        self.field = field
        self.value = value
        kind = "finite numbers >= 0" if isinstance(value, float) else "numbers (not strings or booleans)"
        super().__init__(f"node {node_id!r} has {field} = {value!r}; weights must be {kind}")


class WeightOverflowError(GraphError):
    """The weights are so large that block costs would overflow float64."""

    def __init__(self, what: str, total: float) -> None:
        self.what = what
        self.total = total
        super().__init__(
            f"{what} sum to {total!r}, beyond {WEIGHT_LIMIT:g}: block costs would overflow float64; "
            "express the weights in larger units"
        )


WEIGHT_LIMIT = 1e300
"""Largest total of all weights (and of their IO costs ``size / B``) mtpp accepts."""


class AmbiguousNodeIdError(GraphError):
    """Two node ids differ only in type (``1`` and ``"1"``): they read the same in
    JSON object keys, partition files and on the command line."""

    def __init__(self, first: Any, second: Any) -> None:
        self.ids = (first, second)
        super().__init__(
            f"node ids {first!r} and {second!r} are distinct but read the same as text "
            "(in partition files and on the command line); rename one"
        )


class UnknownNodeError(GraphError, KeyError):
    """An edge or an assignment names a node id that is not in the graph."""

    def __init__(self, node_id: Any, where: str = "") -> None:
        self.node_id = node_id
        suffix = f" ({where})" if where else ""
        super().__init__(f"unknown node id {node_id!r}{suffix}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class SelfLoopError(GraphError):
    """An edge goes from a node to itself."""

    def __init__(self, node_id: Any) -> None:
        self.node_id = node_id
        super().__init__(f"self-loop on node {node_id!r}: an op cannot consume its own output")


class CycleError(GraphError):
    """The graph has a directed cycle; ``cycle`` lists its node ids in edge order."""

    def __init__(self, cycle: Sequence[Any]) -> None:
        self.cycle = list(cycle)
        path = " -> ".join(repr(v) for v in [*self.cycle, self.cycle[0]])
        super().__init__(f"the graph has a cycle: {path}")


class InputFileError(MtppError, ValueError):
    """An input or output path is unusable: missing, unreadable, binary, not JSON, a
    directory where a file is expected (or the reverse), in a missing directory."""


class GraphFormatError(InputFileError):
    """A graph file cannot be read: bad JSON or a document that breaks the schema."""


class InvalidParameterError(MtppError, ValueError):
    """A problem parameter (k, bandwidth, memory, reserve, an option) is out of range."""


class InvalidPartitionError(MtppError, ValueError):
    """An assignment of nodes to blocks is not a valid partition."""


class QuotientCycleError(InvalidPartitionError):
    """The blocks of a partition form a cycle in the quotient graph.

    ``cycle`` lists the blocks in edge order; ``witnesses`` gives, for each quotient
    edge of the cycle, one graph edge (producer id, consumer id) that induces it.
    """

    def __init__(self, cycle: Sequence[int], witnesses: Sequence[tuple[Any, Any]]) -> None:
        self.cycle = list(cycle)
        self.witnesses = list(witnesses)
        hops = ", ".join(
            f"block {a} -> block {b} via edge {u!r} -> {v!r}"
            for (a, b), (u, v) in zip(zip(self.cycle, [*self.cycle[1:], self.cycle[0]]), self.witnesses)
        )
        super().__init__(f"the quotient graph has a cycle: {hops}")


class MissingDependencyError(MtppError, ImportError):
    """An optional dependency (an extra such as ``mtpp[neural]``) is not installed."""


class WeightsError(MtppError, ValueError):
    """A weights file for a learned model is missing, unreadable, or does not fit the model."""


class InternalError(MtppError, RuntimeError):
    """A bug inside mtpp, not a fault of the input: an entry point (``partition``,
    ``certify``, ``schedule``, ``place``) caught an exception that no method handled.
    The original exception is its ``__cause__``; please report the input."""


_F = TypeVar("_F", bound=Callable[..., Any])


def entry_point(func: _F) -> _F:
    """Make ``func`` an entry point of the API: whatever it raises is an
    :class:`MtppError`.  Arguments that do not fit its signature (too many by position,
    an unknown keyword) are an :class:`InvalidParameterError` saying so; an exception
    of any other type (a bug: each method inside already records its own failure and
    the call goes on) becomes an :class:`InternalError` naming the call and the
    original, chained as its cause.  ``KeyboardInterrupt`` and ``SystemExit`` pass
    unchanged."""
    signature = inspect.signature(func)

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidParameterError(f"mtpp.{func.__name__}(): {exc}") from None
        try:
            return func(*args, **kwargs)
        except MtppError:
            raise
        except Exception as exc:
            raise InternalError(
                f"internal error in mtpp.{func.__name__}: {type(exc).__name__}: {exc}; please report this input"
            ) from exc

    return call  # type: ignore[return-value]
