from __future__ import annotations

import functools

import numpy as np

from mtpp.core.problem import Problem
from tests.oracle import brute_force_optimum, random_dag


def random_problem(seed: int, max_n: int = 6, max_k: int = 3) -> Problem:
    """Tiny random instances: integral and real weights, bandwidth 1 or 2, and a third
    of them with finite memory (so the overflow term is active)."""
    rng = np.random.default_rng(seed)
    g = random_dag(rng, int(rng.integers(2, max_n + 1)), float(rng.choice([0.2, 0.4, 0.6])), integral=bool(seed % 2))
    k = int(rng.integers(1, max_k + 1))
    bw = 1.0 if seed % 4 else 2.0
    if seed % 3 == 0:
        memory = float(rng.integers(4, 20))
        return Problem(g, k, bandwidth=bw, memory=memory, reserve=float(rng.integers(0, 3)))
    return Problem(g, k, bandwidth=bw)


@functools.cache
def optimum(seed: int, max_n: int = 6, max_k: int = 3) -> tuple[float, tuple[int, ...]]:
    return brute_force_optimum(random_problem(seed, max_n, max_k))


def close(a: float, b: float, rel: float = 1e-6) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(b))


def at_most(a: float, b: float, rel: float = 1e-6) -> bool:
    return a <= b + rel * max(1.0, abs(b))
