"""The exact MIP of Figure 3 against the brute-force oracle, with every backend."""

from __future__ import annotations

import numpy as np
import pytest

import mtpp
from formulations.bounds import solve_bound
from formulations.errors import InfeasibleFormulationError
from formulations.exact import build_exact
from mtpp.bounds.simple import simple_lower_bound
from mtpp.core.evaluate import evaluate
from mtpp.core.problem import Problem
from solvers.registry import BACKENDS, backend_class
from solvers.result import Status
from tests.formulations.conftest import at_most, close, optimum, random_problem
from tests.oracle import random_dag

BACKEND_SEEDS = {"highs": range(100), "scip": range(40), "cpsat": range(100), "gurobi": range(60)}


@pytest.mark.parametrize("solver", [s for s in BACKENDS if backend_class(s).available()])
def test_exact_equals_brute_force_optimum(solver: str) -> None:
    for seed in BACKEND_SEEDS[solver]:
        p = random_problem(seed)
        opt, _ = optimum(seed)
        res = solve_bound(p, "exact", solver=solver)
        assert res.proven_optimal, (seed, res)
        assert at_most(res.bound, opt) and close(res.bound, opt), (seed, solver, res.bound, opt)
        ev = evaluate(p, res.assignment)
        assert close(ev.bottleneck, res.objective), (seed, solver, ev.bottleneck, res.objective)
        assert close(ev.bottleneck, opt)


def test_model_size_is_o_nk_and_o_mk() -> None:
    g = random_dag(np.random.default_rng(3), 40, 0.1)
    for k in (2, 4, 8):
        mip = build_exact(Problem(g, k))
        assert mip.model.num_vars <= 2 * g.n * k + 1
        assert mip.model.num_rows <= g.n * k + 3 * g.m * k + k


@pytest.mark.parametrize("seed", range(0, 30, 3))
def test_upper_bound_fixing_is_sound(seed: int) -> None:
    p = random_problem(seed)
    opt, _ = optimum(seed)
    for ub in (opt, 1.5 * opt + 1, 0.7 * opt):  # a true UB, a loose one and a wrong (too small) one
        try:
            res = solve_bound(p, "exact", upper_bound=ub)
        except InfeasibleFormulationError:  # no partition of value <= ub: never a bound above OPT
            assert ub < opt
            continue
        assert at_most(res.bound, opt), (seed, ub, res)
        if ub >= opt:
            assert close(res.bound, opt), (seed, ub, res)
        else:
            assert res.bound <= ub


def test_fixing_fixes_something_and_keeps_the_optimum() -> None:
    fixed = 0
    for seed in range(30):
        p = random_problem(seed)
        opt, best = optimum(seed)
        mip = build_exact(p, upper_bound=opt)
        fixed += mip.num_fixed
        start = mip.start(np.array(best))  # the optimum satisfies every fixing
        assert mip.model.is_feasible(start, tol=1e-7), seed
    assert fixed > 0


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_warm_start_from_a_relabelled_partition(solver: str) -> None:
    for seed in range(1, 12, 2):
        p = random_problem(seed)
        opt, best = optimum(seed)
        perm = np.random.default_rng(seed).permutation(p.k)  # any numbering: the start renumbers in DAG order
        res = solve_bound(p, "exact", solver=solver, warm_start=perm[np.array(best)])
        assert close(res.bound, opt) and close(res.objective, opt)


def test_time_limit_returns_a_proven_bound() -> None:
    g = random_dag(np.random.default_rng(11), 45, 0.1)
    p = Problem(g, 4)
    res = solve_bound(p, "exact", time_limit=0.3)
    assert res.status in (Status.TIME_LIMIT, Status.OPTIMAL)
    assert res.bound >= simple_lower_bound(p) - 1e-9
    if res.assignment is not None:
        assert at_most(res.bound, evaluate(p, res.assignment).bottleneck)


def test_tiny_time_limit_on_a_hard_instance_gives_a_bound_between_l_and_a_partition() -> None:
    p = Problem(random_dag(np.random.default_rng(1), 60, 0.1), 6)
    res = solve_bound(p, "exact", solver="highs", time_limit=0.5)
    assert res.status is Status.TIME_LIMIT and not res.proven_optimal
    assert res.wall_time < 5.0
    upper = mtpp.partition(p, orderer="brkga-400").bottleneck  # value of a known feasible partition
    assert simple_lower_bound(p) - 1e-9 <= res.bound <= upper + 1e-9


def test_cut_rows_bind_at_fractional_points_where_the_papers_rows_do_not() -> None:
    """The middle block of three, edge u -> v with u half in block 0, half in block 2
    and v half in blocks 1 and 2: v's half in block 1 reads u's tensor from outside
    (x_v1 - x_u1 = 0.5), where the paper's row (9) gives y_u0 + x_v1 - 1 = 0."""
    from scipy.optimize import linprog

    from formulations.blocks import build_blocks
    from mtpp.core.graph import Graph

    g = Graph.from_arrays(np.ones(2), np.zeros(2), np.array([5.0, 0.0]), np.array([[0, 1]]))
    bm = build_blocks(Problem(g, 3), 3)
    m = bm.model
    lower, upper = m.lower.copy(), m.upper.copy()
    fixed = {bm.y[0, 0]: 0.5, bm.y[0, 1]: 0.5, bm.y[1, 0]: 0.0, bm.y[1, 1]: 0.5}
    for var, value in fixed.items():
        lower[var] = upper[var] = value
    cost = np.zeros(m.num_vars)
    cost[bm.c[0, 1]] = 1.0  # the least c_u1 the rows allow
    a = m.matrix("csr")
    rows_lo, rows_hi = m.row_lower, m.row_upper
    lo_rows, hi_rows = np.isfinite(rows_lo), np.isfinite(rows_hi)
    res = linprog(
        cost,
        A_ub=np.vstack([-a[lo_rows].toarray(), a[hi_rows].toarray()]),
        b_ub=np.concatenate([-rows_lo[lo_rows], rows_hi[hi_rows]]),
        bounds=np.stack([lower, upper], axis=1),
    )
    assert res.status == 0 and res.fun == pytest.approx(0.5)
