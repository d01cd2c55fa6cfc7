"""Silencing solver output at the file-descriptor level.

Solvers written in C or C++ print straight to file descriptor 1 (HiGHS prints a
banner when a ``Highs`` object is made, and some versions debug lines during MIP
solves), bypassing ``sys.stdout``; redirecting ``sys.stdout`` does not catch them.
:func:`silenced_stdout` points descriptor 1 at ``/dev/null`` for the duration of a
solve and restores it afterwards, so ``mtpp ... --json`` output always parses.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

_lock = threading.RLock()
_depth = 0


@contextlib.contextmanager
def silenced_stdout() -> Iterator[None]:
    """Redirect file descriptor 1 to ``/dev/null`` inside the block (re-entrant;
    threads share one redirection, which ends when the outermost block exits)."""
    global _depth
    with _lock:
        if _depth == 0:
            sys.stdout.flush()
            saved = os.dup(1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
            _silenced.append(saved)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                saved = _silenced.pop()
                os.dup2(saved, 1)
                os.close(saved)


_silenced: list[int] = []
