"""highspy and ortools both ship a libhighs.so.1: they must load into one process in
either order (highspy 1.15 could not beside ortools 9.15; 1.16, pinned, can)."""

from __future__ import annotations

import subprocess
import sys

import pytest

SOLVE_HIGHS = """
import highspy, numpy as np
h = highspy.Highs(); h.setOptionValue("output_flag", False)
h.passModel(1, 1, 1, 1, 1, 0.0, np.array([1.0]), np.array([0.0]), np.array([5.0]), np.array([2.0]),
            np.array([np.inf]), np.array([0, 1], dtype=np.int32), np.array([0], dtype=np.int32), np.array([1.0]),
            np.array([1], dtype=np.int32))
h.run(); assert abs(h.getInfo().objective_function_value - 2.0) < 1e-9
"""
SOLVE_CPSAT = """
from ortools.sat.python import cp_model
m = cp_model.CpModel(); x = m.new_int_var(0, 5, "x"); m.add(x >= 2); m.minimize(x)
s = cp_model.CpSolver(); assert s.solve(m) == cp_model.OPTIMAL and s.objective_value == 2
from ortools.linear_solver import pywraplp
lp = pywraplp.Solver.CreateSolver("HIGHS")
if lp is not None:
    y = lp.NumVar(0, 5, "y"); lp.Add(y >= 2); lp.Minimize(y); assert lp.Solve() == pywraplp.Solver.OPTIMAL
"""


@pytest.mark.parametrize("first", ["highspy", "ortools"])
def test_highspy_and_ortools_share_a_process(first: str) -> None:
    blocks = [SOLVE_HIGHS, SOLVE_CPSAT] if first == "highspy" else [SOLVE_CPSAT, SOLVE_HIGHS]
    code = "\n".join(blocks) + "\nprint('ok')\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")


@pytest.mark.parametrize("first", ["highs", "cpsat"])
def test_backends_share_a_process(first: str) -> None:
    order = [first, "cpsat" if first == "highs" else "highs"]
    code = f"""
import numpy as np
from solvers.model import Model
from solvers.registry import get_backend
m = Model(); x = m.add_variables(3, "binary")
m.add_rows(x[None, :], 1.0, lower=2.0); m.set_objective(x, [3.0, 1.0, 2.0])
for name in {order!r}:
    r = get_backend(name).solve(m)
    assert r.status.value == "optimal" and abs(r.dual_bound - 3.0) < 1e-9, r
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
