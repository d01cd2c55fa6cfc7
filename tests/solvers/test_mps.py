"""MPS export: files read back by HiGHS and SCIP hold exactly the neutral model."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from solvers.model import Model, ObjSense
from solvers.mps import column_names, mps_lines, write_mps
from solvers.registry import backend_class, get_backend

INF = math.inf


def mixed_model() -> Model:
    """A maximisation with an objective offset, two-sided, equality, one-sided and free
    rows, and every kind of bound: integer with finite, infinite and negative bounds,
    binaries, free, fixed and negative-upper continuous variables, an empty column."""
    m = Model("mixed max model")
    x = m.add_variables((2, 3), "integer", lower=-2.0, upper=np.array([[3, 4, INF], [5, 6, 7]]), name="x")
    b = m.add_variables(3, "binary", name="b")
    z = m.add_variables(2, "continuous", lower=-INF, upper=np.array([4.5, INF]), name="z")
    f = m.add_variables(1, "continuous", lower=1.5, upper=1.5, name="f")
    m.add_variables(1, "continuous", lower=-3.0, upper=-1.0, name="unused")
    w = m.add_variables(1, "integer", lower=-INF, upper=INF, name="w")
    allv = np.r_[x.reshape(-1), b, z, f, w]
    m.add_rows(allv[None, :], 0.3 * np.arange(1, allv.size + 1)[None, :], lower=-5.0, upper=20.25)  # two-sided
    m.add_rows(np.c_[z[0], z[1], b[0]], np.array([1.0, 1.0, -2.0]), lower=-1.0, upper=3.0)  # two-sided
    m.add_rows(np.c_[w, x[0, 2]], np.array([1.0, 1.0]), upper=10.0)
    m.add_rows(np.c_[w, x[0, 2]], np.array([1.0, -1.0]), lower=-10.0)
    m.add_rows(np.c_[b[1], b[2]], 1.0, lower=1.0, upper=1.0)  # equality
    m.add_rows(np.c_[z[1], z[0]], np.array([1.0, -1.0]), upper=2.5)
    m.add_rows(np.c_[x[1, 0], x[1, 1]], np.array([2.0, 1.0 / 3.0]), lower=-0.1)
    coef = np.r_[0.5 * np.arange(6), 1.0, 2.0, 3.0, 0.7, 0.9, 2.0, 0.1]
    m.set_objective(allv, coef, ObjSense.MAXIMIZE, offset=3.25)
    return m


def read_highs(path: Path) -> Any:
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    return h


def solve_scip(path: Path) -> float:
    import pyscipopt

    s = pyscipopt.Model()
    s.hideOutput()
    s.readProblem(str(path))
    s.optimize()
    assert s.getStatus() == "optimal"
    return float(s.getObjVal())


def assert_same_model(h: Any, m: Model) -> None:
    """The LP HiGHS read holds the model's data bit for bit."""
    lp = h.getLp()
    assert (lp.num_col_, lp.num_row_) == (m.num_vars, m.num_rows)
    np.testing.assert_array_equal(np.asarray(lp.col_lower_), m.lower)
    np.testing.assert_array_equal(np.asarray(lp.col_upper_), m.upper)
    np.testing.assert_array_equal(np.asarray(lp.col_cost_), m.objective)
    np.testing.assert_array_equal(np.asarray(lp.row_lower_), m.row_lower)
    np.testing.assert_array_equal(np.asarray(lp.row_upper_), m.row_upper)
    np.testing.assert_array_equal(np.array([int(t) for t in lp.integrality_]) != 0, m.is_integer)
    assert lp.offset_ == m.obj_offset
    a = lp.a_matrix_
    arrays = (np.asarray(a.value_), np.asarray(a.index_), np.asarray(a.start_))
    read = sp.csc_matrix(arrays, shape=(m.num_rows, m.num_vars))
    assert (read != m.matrix("csc")).nnz == 0


def test_mixed_maximisation_reads_back_in_highs_and_scip(tmp_path: Path) -> None:
    m = mixed_model()
    direct = get_backend("highs").solve(m)
    assert direct.proven_optimal
    path = write_mps(m, tmp_path / "mixed.mps")
    text = path.read_text()
    assert "OBJSENSE\n    MAX" in text and "RANGES" in text and f"RHS obj {-3.25!r}" in text
    for kind in (" BV ", " UI ", " LI ", " PL ", " MI ", " FR ", " FX ", " UP ", " LO "):
        assert kind in text, kind
    h = read_highs(path)
    # HiGHS drops free (N) rows other than the objective; this model has none
    assert_same_model(h, m)
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(direct.objective, rel=1e-9)
    if backend_class("scip").available():
        assert solve_scip(path) == pytest.approx(direct.objective, rel=1e-9)


def test_minimisation_with_negative_offset_and_free_row(tmp_path: Path) -> None:
    m = Model("min")
    x = m.add_variables(3, "integer", upper=4.0, name="x")
    t = m.add_variables(1, lower=-INF, name="t")
    m.add_rows(np.r_[t, x][None, :], np.array([[1.0, -1.0, -2.0, -3.0]]), lower=-2.5)
    m.add_rows(x[None, :], 1.0, lower=2.0, upper=5.0)
    m.add_rows(x[None, :2], 1.0)  # free row: written as N
    m.set_objective(np.r_[t, x], np.array([1.0, 0.5, 0.25, 0.125]), offset=-7.0)
    text = "\n".join(mps_lines(m))
    assert "OBJSENSE" not in text and " N R2" in text and "RHS obj 7.0" in text
    direct = get_backend("highs").solve(m)
    h = read_highs(write_mps(m, tmp_path / "min.mps"))
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(direct.objective, rel=1e-9)
    if backend_class("scip").available():
        assert solve_scip(tmp_path / "min.mps") == pytest.approx(direct.objective, rel=1e-9)


def test_names_and_errors(tmp_path: Path) -> None:
    m = Model("names")
    m.add_variables((2, 2), "binary", name="y")
    m.add_variables(1, name="bottle neck")
    m.add_variables(2, name="x")
    assert column_names(m) == ["y_0_0", "y_0_1", "y_1_0", "y_1_1", "bottle_neck", "x_0", "x_1"]
    m.add_variables(1, name="x_1")  # clashes with entry 1 of block x: fall back to C<j>
    assert column_names(m) == [f"C{j}" for j in range(8)]
    bad = Model()
    v = bad.add_variables(2)
    bad.add_rows(v[None, :], 1.0, lower=3.0, upper=2.0)
    with pytest.raises(ValueError, match="row 0"):
        write_mps(bad, tmp_path / "bad.mps")


def test_writes_1e5_rows(tmp_path: Path) -> None:
    """A large model writes every row (its speed is measured in benchmarks, not asserted here)."""
    rng = np.random.default_rng(0)
    m = Model("big")
    m.add_variables((20_000, 3), "binary", name="y")
    m.add_variables(1000, "integer", upper=50.0, name="t")
    m.add_variables(10_000, lower=-1.0, upper=10.0 * rng.random(10_000), name="z")
    rows = 100_000
    lower = np.where(rng.random(rows) < 0.5, -1.0, -INF)
    m.add_rows(rng.integers(0, m.num_vars, (rows, 4)), rng.random((rows, 4)), lower=lower, upper=5.0)
    m.set_objective(np.arange(m.num_vars), rng.random(m.num_vars))
    m.matrix("csc")
    path = write_mps(m, tmp_path / "big.mps")
    text = path.read_text()
    assert text.count("\n G R") + text.count("\n L R") == rows
