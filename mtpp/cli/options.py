"""What several commands share: the ``--device`` option and how a warning is shown.

A warning (:class:`mtpp.core.machine.MachineWarning`: a graph in bytes priced at
``B = 1``) says a result is likely not what was meant, so the command line never
silences it: :func:`warn` prints ``mtpp: warning: ...`` on stderr once per command, even
with ``--quiet`` or ``--json`` (the document goes to stdout, so it stays clean), and
:func:`showing_warnings` routes the warnings the API issues while a command runs (a
batch, a pipeline plan) to it.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import Any


def device_option(p: argparse.ArgumentParser) -> None:
    """``--device PRESET``: the machine whose bandwidth and memory price the graph."""
    from mtpp.core.presets import DEVICES

    p.add_argument(
        "--device",
        choices=sorted(DEVICES),
        default=None,
        help="device preset whose link bandwidth (bytes/us) and memory (bytes) price the graph "
        "(default: the machine the graph records, as 'mtpp import' writes it)",
    )


_said: set[str] = set()


def warn(text: str) -> None:
    """Print ``mtpp: warning: TEXT`` on stderr, once per command (module docstring)."""
    if text not in _said:
        _said.add(text)
        print(f"mtpp: warning: {text}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def showing_warnings() -> Iterator[None]:
    """Within the block, every :class:`~mtpp.core.machine.MachineWarning` goes to
    :func:`warn` (each once); other warnings keep Python's handling."""
    from mtpp.core.machine import MachineWarning

    _said.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("always", MachineWarning)
        previous = warnings.showwarning

        def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            if issubclass(category, MachineWarning):
                warn(str(message))
            else:
                previous(message, category, *args, **kwargs)

        warnings.showwarning = show
        yield
