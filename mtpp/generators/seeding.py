"""Seeds for the generators: every graph is a function of its seed, on any machine."""

from __future__ import annotations

from numbers import Integral

import numpy as np

from mtpp.core.errors import InvalidParameterError


def as_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A numpy Generator from a non-negative integer seed (or a Generator, used as
    given, or None for fresh entropy); never the global random state."""
    if isinstance(seed, np.random.Generator) or seed is None:
        return np.random.default_rng(seed)
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise InvalidParameterError(f"seed must be a non-negative integer, a numpy Generator or None, got {seed!r}")
    return np.random.default_rng(int(seed))
