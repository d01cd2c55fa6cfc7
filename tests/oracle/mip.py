"""The MIP oracle: the minimum of a neutral model (:class:`solvers.model.Model`) over every
0/1 choice of its binaries."""

from __future__ import annotations

import itertools

import numpy as np

from solvers.model import Model


def brute_min(m: Model, binaries: np.ndarray, t: int) -> float:
    """min t subject to rows, over all 0/1 choices (t set to its smallest feasible value)."""
    best = np.inf
    a = m.matrix().toarray()
    for bits in itertools.product((0.0, 1.0), repeat=binaries.size):
        x = np.zeros(m.num_vars)
        x[binaries] = bits
        # t >= (lo - a_rest x) / a_t for rows with a_t > 0
        need = [(m.row_lower[r] - a[r] @ x) / a[r, t] for r in range(m.num_rows) if a[r, t] > 0]
        x[t] = max([0.0, *need])
        if m.is_feasible(x, tol=1e-9):
            best = min(best, x[t])
    return best
