"""The memory cap every layer honours: how many bytes one model, forward pass or
live-memory table may take before mtpp refuses it with a message.

A core module so that formulations (:mod:`formulations.size`), heuristics
(:mod:`heuristics.neural.forward_budget`) and the API (:mod:`mtpp.scheduling`) read
the same number.
"""

from __future__ import annotations

import os

LIMIT_ENV = "MTPP_MAX_MODEL_GB"  # overrides the default cap (memory_limit)
MACHINE_SHARE = 0.25  # the default cap: a quarter of the machine
GB = 1e9


def memory_limit() -> float:
    """Bytes a model may take: ``MTPP_MAX_MODEL_GB`` if set, else a quarter of the
    machine's memory (``MemTotal``), and never more than is available now
    (``MemAvailable``); all of physical memory stands in where ``/proc`` is missing."""
    if os.environ.get(LIMIT_ENV):
        return float(os.environ[LIMIT_ENV]) * GB
    info: dict[str, float] = {}
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                name, _, rest = line.partition(":")
                if name in ("MemTotal", "MemAvailable"):
                    info[name] = float(rest.split()[0]) * 1024
    except OSError:
        pass
    total = info.get("MemTotal", float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")))
    return min(MACHINE_SHARE * total, info.get("MemAvailable", total))
