"""Compiled kernels that skip the compiler on tiny inputs.

``from mtpp.core.jit import njit`` is a drop-in for ``numba.njit`` (the same options): the
decorated function becomes a :class:`Kernel`.  Called on arguments whose arrays all
have at most :func:`threshold` elements, a kernel runs its plain Python function;
otherwise it imports numba and runs the compiled function (cached on disk as before).
A new interpreter takes about 0.45 s to import numba and load the cached kernels of
one ``partition`` call, where a one-op or 20-op graph's whole computation takes
milliseconds in Python: a command on a tiny graph never loads numba.

Both paths run the same code with the same results.  The kernels use no
``fastmath``, so float arithmetic is the same IEEE double arithmetic (scalar ``exp``
and ``log`` are ``math``'s, which numba calls too); integers read from arrays are
numpy scalars that wrap on overflow as numba's do (the Python path silences numpy's
overflow and invalid-value warnings, as numba is silent); scalar results come back
as Python scalars, as from numba.  ``tests/mtpp/core/test_jit.py`` runs every kernel both ways
on random small instances and compares the results exactly.

* A kernel called by a kernel runs on its caller's path.  A compiled caller is
  compiled with it: numba types the :class:`Kernel` global through
  :attr:`Kernel._numba_type_` (the compiled function) and inlines a kernel with
  ``inline="always"`` from :attr:`Kernel.py_func` and :attr:`Kernel.targetoptions`,
  as it inlines its own dispatchers.
* Once the Python path has taken :data:`PYTHON_BUDGET` seconds in a process, every
  later call is compiled: a search that calls kernels thousands of times on a small
  graph (BRKGA) pays for numba once, after at most that budget in Python.
* A kernel whose work is not bounded by its arrays' sizes caps it on a first call
  (the ideal enumeration: :data:`heuristics.partition.ideals.PYTHON_IDEALS`) and calls
  :attr:`Kernel.dispatcher` if that was not enough.
* :data:`objmode` is ``numba.objmode``, a no-op on the Python path.
* :func:`compiling` calls back when numba starts compiling (the command line's notice).

Environment: ``MTPP_JIT_THRESHOLD=N`` sets the threshold (array elements; ``0``
compiles every call, as before this module); ``MTPP_JIT_CHECK=1`` makes every
Python-path call also run compiled on copies of its arguments and raise
:class:`PathMismatch` where the results or the arguments differ (slow; for tests and
debugging: ``MTPP_JIT_CHECK=1 pytest`` checks the paths on every tiny call of the
suite).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, overload

import numpy as np

THRESHOLD_ENV = "MTPP_JIT_THRESHOLD"
CHECK_ENV = "MTPP_JIT_CHECK"
DEFAULT_THRESHOLD = 256
"""Array elements up to which an argument is tiny.  ``benchmarks/tiny_inputs.py
--kernels`` (partition, certify, schedule and place on graphs of 1-40 ops): with every
array at most 256 elements a call takes 0.17 ms in Python (median; the slowest 33 ms,
a wide graph's first 1,024 ideals) against 0.004 ms compiled; at 257-1,024 elements
26 ms against 0.3 ms."""
PYTHON_BUDGET = 0.1
"""Seconds of Python-path calls in a process after which every call is compiled: a
quarter of what loading numba costs, about 600 tiny calls (a 20-op chain's certify
takes 10 ms)."""

KERNELS: list[Kernel] = []
"""Every kernel defined so far (the tests walk them)."""


class PathMismatch(AssertionError):
    """Under ``MTPP_JIT_CHECK=1``: a kernel's Python and compiled paths disagree."""


class _State(threading.local):
    depth = 0  # Python-path kernel calls on this thread's stack


_local = _State()
_settings: dict[str, Any] = {
    "threshold": int(os.environ.get(THRESHOLD_ENV, DEFAULT_THRESHOLD)),
    "check": os.environ.get(CHECK_ENV, "") not in ("", "0"),
    "budget": PYTHON_BUDGET,
    "spent": 0.0,  # seconds of outermost Python-path calls in this process
}
_on_compile: list[Callable[[], None]] = []  # callbacks of compiling(), waiting for numba


def threshold() -> int:
    """The largest array (elements) that counts as tiny; 0: every call is compiled
    (the budget is spent, or ``MTPP_JIT_THRESHOLD=0``).  Under the path check the
    budget does not apply: every tiny call is checked."""
    spent = _settings["spent"] >= _settings["budget"] and not _settings["check"]
    return 0 if spent else int(_settings["threshold"])


@contextlib.contextmanager
def settings(threshold: int | None = None, check: bool | None = None, budget: float | None = None) -> Iterator[None]:
    """Within the block, use this ``threshold`` (``0``: compile every call), turn the
    path check on or off, and give the Python path ``budget`` seconds (default
    :data:`PYTHON_BUDGET`) from zero.  For tests and benchmarks."""
    saved = dict(_settings)
    _settings["spent"] = 0.0
    for key, value in (("threshold", threshold), ("check", check), ("budget", budget)):
        if value is not None:
            _settings[key] = value
    try:
        yield
    finally:
        _settings.update(saved)


def _numba() -> ModuleType:
    """Import numba (once): the first compiled call pays for it."""
    fresh = "numba" not in sys.modules
    import numba

    if fresh:
        for callback in _on_compile:
            _register(numba, callback)
    return numba


def _register(numba: ModuleType, callback: Callable[[], None]) -> None:
    from numba.core import event

    class Listener(event.Listener):  # type: ignore[misc]
        def on_start(self, ev: Any) -> None:
            callback()

        def on_end(self, ev: Any) -> None:
            pass

    listener = Listener()
    event.register("numba:compile", listener)
    _listeners[callback] = listener


_listeners: dict[Callable[[], None], Any] = {}


@contextlib.contextmanager
def compiling(callback: Callable[[], None]) -> Iterator[None]:
    """Within the block, call ``callback()`` whenever numba starts compiling a kernel
    (not when it loads one from its cache), without importing numba for it."""
    _on_compile.append(callback)
    if "numba" in sys.modules:
        _register(sys.modules["numba"], callback)
    try:
        yield
    finally:
        _on_compile.remove(callback)
        listener = _listeners.pop(callback, None)
        if listener is not None:
            from numba.core import event

            event.unregister("numba:compile", listener)


class _ObjMode:
    """``numba.objmode`` where a kernel is compiled, and a no-op context manager where
    it runs in Python (numba finds a with-context by its ``mutate_with_body``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> _ObjMode:
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

    def mutate_with_body(self, *args: Any, **kwargs: Any) -> Any:
        return _numba().objmode.mutate_with_body(*args, **kwargs)

    @property
    def _numba_type_(self) -> Any:
        numba = _numba()
        return numba.typeof(numba.objmode)


objmode = _ObjMode()


def _plain(value: Any) -> Any:
    """Numpy scalars (and tuples of them) as Python scalars, as numba returns them."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _same(a: Any, b: Any) -> bool:
    """Exactly equal: arrays in dtype, shape and every element (NaN equal to NaN),
    scalars in type and value."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


class Kernel:
    """A function that runs compiled by numba, or as plain Python on tiny inputs
    (module docstring).  ``targetoptions`` are ``numba.njit``'s options."""

    def __init__(self, py_func: Callable[..., Any], targetoptions: dict[str, Any]) -> None:
        self.py_func = py_func
        self.targetoptions = targetoptions
        self._dispatcher: Any = None
        functools.update_wrapper(self, py_func)
        KERNELS.append(self)

    @property
    def dispatcher(self) -> Any:
        """The numba dispatcher (created, with numba imported, on first use)."""
        if self._dispatcher is None:
            self._dispatcher = _numba().njit(**self.targetoptions)(self.py_func)
        return self._dispatcher

    @property
    def _numba_type_(self) -> Any:
        # numba's typeof() of this kernel where a compiled kernel calls it
        return self.dispatcher._numba_type_

    def __repr__(self) -> str:
        return f"<kernel {self.py_func.__module__}.{self.py_func.__qualname__}>"

    def tiny(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether every array argument has at most :func:`threshold` elements."""
        limit = threshold()
        if limit <= 0:
            return False
        for a in (*args, *kwargs.values()):
            if isinstance(a, np.ndarray) and a.size > limit:
                return False
        return True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _local.depth:  # called by a kernel on the Python path: its caller times and converts
            return self.py_func(*args, **kwargs)
        if not self.tiny(args, kwargs):
            return self.dispatcher(*args, **kwargs)
        copies = copy.deepcopy((args, kwargs)) if _settings["check"] else None
        t0 = time.perf_counter()
        _local.depth += 1
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                result = _plain(self.py_func(*args, **kwargs))
        finally:
            _local.depth -= 1
            _settings["spent"] += time.perf_counter() - t0
        if copies is not None:
            self._check(args, kwargs, result, *copies)
        return result

    def _check(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, c_args: tuple[Any, ...], c_kw: dict[str, Any]
    ) -> None:
        """Raise :class:`PathMismatch` unless the compiled path, run on copies of the
        arguments, gives ``result`` and leaves the arguments as the Python path did."""
        compiled = self.dispatcher(*c_args, **c_kw)
        if not _same(result, compiled):
            raise PathMismatch(f"{self!r}: Python path returned {result!r}, compiled {compiled!r}")
        for i, (a, b) in enumerate(zip((*args, *kwargs.values()), (*c_args, *c_kw.values()))):
            if isinstance(a, np.ndarray) and not _same(a, b):
                raise PathMismatch(f"{self!r}: argument {i} differs after the call:\n{a!r}\n{b!r}")


@overload
def njit(func: Callable[..., Any], **options: Any) -> Kernel: ...


@overload
def njit(func: None = None, **options: Any) -> Callable[[Callable[..., Any]], Kernel]: ...


def njit(func: Callable[..., Any] | None = None, **options: Any) -> Kernel | Callable[[Callable[..., Any]], Kernel]:
    """``numba.njit`` that runs tiny calls in Python (module docstring): ``@njit``,
    ``@njit(cache=True)``, ``@njit(cache=True, inline="always")``."""
    if func is None:
        return lambda f: Kernel(f, options)
    return Kernel(func, options)


@njit(cache=True)
def clock() -> float:
    """:func:`time.perf_counter` from compiled code (deadlines inside kernels)."""
    with objmode(now="float64"):
        now = time.perf_counter()
    return now
