"""Argument checks shared by every public function and command (one home, in the
spirit of scikit-learn's parameter validation).

Each checker takes the argument's name and value, returns the value normalised
(``int``, ``float``, ``str``) and raises :class:`mtpp.core.errors.InvalidParameterError`
naming the argument and the bad value otherwise.  Booleans are never numbers here
(``True`` is not a seed, a thread count or a time limit), and a value of the wrong
type (``orderer=123``, ``None`` where a graph is expected) gets the same typed error,
never a ``TypeError`` from deep inside.  The functions check their arguments once, at
their head, and trust them afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any, TypeVar

from mtpp.core.errors import InvalidParameterError

T = TypeVar("T")

MAX_NODES = 10_000_000
"""The largest graph the generators build (``n``); a larger request is refused
before any memory is taken (10^7 ops already take a few GB)."""


def check_int(name: str, value: object, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an ``int``; :class:`InvalidParameterError` unless it is an integer
    (not a bool, not a float such as ``2.0``) within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        bounds = "" if low is None else f" >= {low}"
        raise InvalidParameterError(f"{name} must be an integer{bounds}, got {value!r}")
    x = int(value)
    if low is not None and x < low:
        raise InvalidParameterError(f"{name} must be >= {low}, got {x}")
    if high is not None and x > high:
        raise InvalidParameterError(f"{name} must be <= {high:,}, got {x:,}")
    return x


def check_optional_int(name: str, value: object, *, low: int | None = None, high: int | None = None) -> int | None:
    """``None``, or :func:`check_int`."""
    return None if value is None else check_int(name, value, low=low, high=high)


def check_k(k: object) -> int:
    """``k`` as an int; :class:`InvalidParameterError` unless it is an integer >= 1."""
    return check_int("k", k, low=1)


def check_seed(seed: object, name: str = "seed") -> int:
    """``seed`` as an int; :class:`InvalidParameterError` unless it is an integer >= 0."""
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise InvalidParameterError(f"{name} must be an integer >= 0, got {seed!r}")
    return int(seed)


def check_count(name: str, value: object) -> int:
    """A count of at least one: ``threads``, ``n_jobs``, ``max_ideals``, a beam width."""
    return check_int(name, value, low=1)


def check_optional_count(name: str, value: object) -> int | None:
    """``None`` (the default applies), or :func:`check_count`."""
    return None if value is None else check_count(name, value)


def check_time_limit(time_limit: object, name: str = "time_limit") -> float:
    """Seconds; :class:`InvalidParameterError` unless it is a number > 0 (``inf``
    allowed, ``nan`` and booleans not)."""
    if isinstance(time_limit, bool) or not isinstance(time_limit, Real) or not float(time_limit) > 0:
        raise InvalidParameterError(f"{name} must be a number of seconds > 0, got {time_limit!r}")
    return float(time_limit)


def check_optional_time_limit(time_limit: object, name: str = "time_limit") -> float | None:
    """``None`` (no limit), or :func:`check_time_limit`."""
    return None if time_limit is None else check_time_limit(time_limit, name)


def check_real(name: str, value: object, *, positive: bool, allow_inf: bool) -> float:
    """A number: ``> 0`` (``positive``) or ``>= 0``, finite unless ``allow_inf`` (then
    ``+inf`` is allowed); never ``nan`` or a bool."""
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(value):
        raise InvalidParameterError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if math.isinf(x) and not (allow_inf and x > 0):
        raise InvalidParameterError(f"{name} must be finite, got {value!r}")
    if x < 0 or (positive and x == 0):
        raise InvalidParameterError(f"{name} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return x


def check_bool(name: str, value: object) -> bool:
    """``True`` or ``False`` (not ``0``/``1``, not a string)."""
    if not isinstance(value, bool):
        raise InvalidParameterError(f"{name} must be True or False, got {value!r}")
    return value


def check_choice(name: str, value: object, choices: Iterable[str]) -> str:
    """One of the names in ``choices`` (a tuple or the keys of a table)."""
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise InvalidParameterError(f"{name} must be one of {', '.join(options)}; got {value!r}")
    return value


def check_instance(name: str, value: object, kind: type[T] | tuple[type, ...], what: str) -> T:
    """``value`` if it is an instance of ``kind``; ``what`` names the expected type in
    the message (e.g. ``"an mtpp.Graph"``)."""
    if not isinstance(value, kind):
        raise InvalidParameterError(f"{name} must be {what}, got {_describe(value)}")
    return value  # type: ignore[return-value]


def check_iterable(name: str, value: object, what: str) -> Iterable[Any]:
    """``value`` if it can be iterated (a string cannot stand for a list here)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidParameterError(f"{name} must be {what}, got {_describe(value)}")
    return value


def _describe(value: object) -> str:
    """The type of a wrong value (``None`` as itself)."""
    return "None" if value is None else type(value).__name__
