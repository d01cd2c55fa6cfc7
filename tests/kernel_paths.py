"""The two paths of the kernels (:mod:`mtpp.core.jit`) as a test parameter: tiny inputs run
in Python, larger ones compiled, and a long test process soon compiles everything (the
Python path's budget), so tests that must cover both say which one they run."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from mtpp.core import jit

PATHS = ("checked", "compiled")


@contextlib.contextmanager
def kernel_path(path: str) -> Iterator[None]:
    """``"checked"``: tiny calls take the Python path and each is compared with the
    compiled path (``MTPP_JIT_CHECK=1``, no budget); ``"compiled"``: every call is
    compiled, the path of a large graph (``MTPP_JIT_THRESHOLD=0``)."""
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got {path!r}")
    with jit.settings(check=True) if path == "checked" else jit.settings(threshold=0):
        yield
