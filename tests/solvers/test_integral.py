"""The CP-SAT rounding is a relaxation: its bound never exceeds the true optimum."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.integral import integer_relaxation
from solvers.model import Model
from solvers.registry import backend_class
from tests.oracle import brute_min


@pytest.mark.parametrize("seed", range(12))
def test_rounded_bound_is_sound_and_tight(seed: int) -> None:
    if not backend_class("cpsat").available():
        pytest.skip("ortools missing")
    rng = np.random.default_rng(seed)
    m = Model()
    x = m.add_variables(6, "binary")
    t = int(m.add_variables(1, upper=100.0)[0])
    for _ in range(3):  # t >= w . x / d: real weights and divisors 1..4, or integers and divisors 1, 2, 4
        w = rng.random(6) * 10 if seed % 2 else rng.integers(0, 10, 6).astype(float)
        d = rng.integers(1, 5) if seed % 2 else rng.choice([1, 2, 4])
        m.add_rows(np.r_[t, x][None, :], np.r_[1.0, -w / d][None, :], lower=0.0)
    m.add_rows(x[None, :], 1.0, lower=3.0)
    m.set_objective(np.array([t]), 1.0)
    opt = brute_min(m, x, t)
    relax = integer_relaxation(m)
    assert np.all(relax.matrix.data == np.round(relax.matrix.data))
    r = backend_class("cpsat")().solve(m)
    assert r.dual_bound <= opt * (1 + 1e-9) + 1e-9
    assert r.dual_bound == pytest.approx(opt, rel=1e-6)  # rows rounded at 2**-30 of their activity
    if seed % 2 == 0:  # dyadic data (floats are read exactly): no rounding loss
        assert r.dual_bound == pytest.approx(opt, rel=1e-12)


def test_cpsat_refuses_unbounded_variables() -> None:
    from solvers.errors import UnsupportedModelError

    m = Model()
    t = m.add_variables(1, "continuous", lower=0.0)  # no upper bound
    m.set_objective(t, 1.0)
    with pytest.raises(UnsupportedModelError, match="finite bounds"):
        integer_relaxation(m)
