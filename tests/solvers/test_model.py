from __future__ import annotations

import time

import numpy as np
import pytest

from solvers.model import Model, ObjSense


def test_bulk_rows_build_fast() -> None:
    m = Model()
    x = m.add_variables((50_000, 2), "binary")
    t0 = time.perf_counter()
    m.add_rows(x, np.array([1.0, -1.0]), lower=0.0)
    m.add_rows(np.c_[x[:, 0], x[:, 1], x[::-1, 0]], 1.0, upper=2.0)
    a = m.matrix("csc")
    assert time.perf_counter() - t0 < 1.0
    assert m.num_rows == 100_000 and a.shape == (100_000, 100_000) and a.nnz == 250_000


def test_absent_terms_duplicates_and_feasibility() -> None:
    m = Model()
    x = m.add_variables(3, "integer", lower=0, upper=5)
    m.add_rows(
        np.array([[0, 1, -1], [2, 2, 0]]),
        np.array([[1.0, 1.0, 9.0], [1.0, 1.0, -1.0]]),
        lower=[1, -np.inf],
        upper=[np.inf, 4],
    )
    m.set_objective(x, [1, 2, 3], ObjSense.MAXIMIZE, offset=1.5)
    a = m.matrix().toarray()
    np.testing.assert_array_equal(a, [[1, 1, 0], [-1, 0, 2]])
    assert m.is_feasible(np.array([1, 0, 2])) and not m.is_feasible(np.array([0, 0, 3]))
    assert m.objective_value(np.array([1, 0, 2])) == pytest.approx(8.5)
    assert not m.is_feasible(np.array([0.5, 0.5, 0]))  # integrality


def test_set_bounds_and_binary_bounds() -> None:
    m = Model()
    y = m.add_variables((2, 2), "binary", name="y")
    m.add_variables(1, "continuous", lower=-1, upper=2.5, name="t")
    m.set_bounds(y[:, 1], lower=1.0)
    np.testing.assert_array_equal(m.lower, [0, 1, 0, 1, -1])
    np.testing.assert_array_equal(m.upper, [1, 1, 1, 1, 2.5])
    assert m.is_integer.tolist() == [True] * 4 + [False]
    with pytest.raises(ValueError):
        m.add_variables(1, name="t")
    with pytest.raises(IndexError):
        m.add_rows(np.array([[7]]), 1.0)
