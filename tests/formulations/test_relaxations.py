"""Three-superblock and guess-the-bottleneck bounds (Sections 3.2, 3.3) are sound."""

from __future__ import annotations

import numpy as np
import pytest

from formulations.bounds import solve_bound, solve_guess
from formulations.fixing import ancestor_work, descendant_work
from mtpp.bounds.simple import simple_lower_bound
from mtpp.core.errors import InvalidParameterError
from mtpp.core.problem import Problem
from solvers.result import Status
from tests.formulations.conftest import at_most, close, optimum, random_problem
from tests.oracle import brute_force_optimum, random_dag


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_hierarchy_against_brute_force(solver: str) -> None:
    seeds = range(120) if solver == "highs" else range(0, 120, 3)
    for seed in seeds:
        p = random_problem(seed)
        opt, _ = optimum(seed)
        simple = simple_lower_bound(p)
        exact = solve_bound(p, "exact", solver=solver).bound
        bott = solve_bound(p, "bottleneck", solver=solver)
        guess = solve_bound(p, "guess", solver=solver)
        assert bott.proven_optimal and guess.proven_optimal
        assert at_most(simple, bott.bound), (seed, simple, bott.bound)
        assert at_most(bott.bound, opt) and at_most(guess.bound, opt), (seed, bott.bound, guess.bound, opt)
        assert at_most(bott.bound, exact) and at_most(guess.bound, exact)
        if p.k <= 2:  # the guess MIPs are equivalent to the exact one for k = 2 (and k = 1)
            assert close(guess.bound, exact), (seed, guess.bound, exact)


def test_guess_equals_exact_at_k2_with_overflow() -> None:
    for seed in range(40):
        p0 = random_problem(seed)
        p = Problem(p0.graph, 2, p0.bandwidth, memory=float(p0.graph.size_param.sum()) / 3 + 1)
        assert p.has_overflow
        exact = solve_bound(p, "exact").bound
        assert close(solve_bound(p, "guess").bound, exact), seed
        assert at_most(solve_bound(p, "bottleneck").bound, exact)


def test_guess_in_parallel_and_stopping_at_the_upper_bound() -> None:
    for seed in (4, 7, 10, 13):
        p = random_problem(seed, max_n=7)
        p = Problem(p.graph, 3, p.bandwidth, p.memory, p.reserve)
        opt, _ = brute_force_optimum(p)
        seq = solve_guess(p)
        par = solve_guess(p, n_jobs=2)
        assert close(seq.bound, par.bound) and len(par.parts) == 3
        capped = solve_guess(p, upper_bound=opt, n_jobs=2)
        assert at_most(capped.bound, opt)
        assert all(r.status in (Status.OPTIMAL, Status.BOUND_REACHED, Status.INFEASIBLE) for r in capped.parts)
        assert close(min(capped.bound, opt), min(seq.bound, opt))


def test_time_limited_relaxations_are_sound() -> None:
    g = random_dag(np.random.default_rng(5), 40, 0.12)
    p = Problem(g, 8)
    L = simple_lower_bound(p)
    for method in ("bottleneck", "guess"):
        res = solve_bound(p, method, time_limit=0.5)
        assert res.bound >= L - 1e-9


def test_closure_work_matches_networkx() -> None:
    import networkx as nx

    g = random_dag(np.random.default_rng(2), 25, 0.15)
    nxg = g.to_networkx()
    anc, desc = ancestor_work(g), descendant_work(g)
    for v in range(g.n):
        a = sum(g.work[g.index(u)] for u in nx.ancestors(nxg, g.ids[v])) + g.work[v]
        d = sum(g.work[g.index(u)] for u in nx.descendants(nxg, g.ids[v])) + g.work[v]
        assert anc[v] == pytest.approx(a) and desc[v] == pytest.approx(d)


def test_bad_arguments() -> None:
    p = random_problem(1)
    with pytest.raises(InvalidParameterError):
        solve_bound(p, "magic")
    from formulations.superblock import build_guess

    with pytest.raises(InvalidParameterError):
        build_guess(p, p.k + 1)


def test_guess_starts_no_sub_mip_past_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sub-MIPs with no time left are not started: their LB_j is the simple bound, so
    the method's bound falls back to it (valid) with status time_limit."""
    import formulations.bounds as fb

    problem = Problem(random_dag(np.random.default_rng(8), 9, p=0.3), 3)
    monkeypatch.setattr(fb, "GUESS_MIN_SECONDS", 1e9)  # never enough time left
    res = fb.solve_guess(problem, solver="highs", time_limit=5.0)
    assert res.bound == simple_lower_bound(problem) and res.status is Status.TIME_LIMIT
    assert all("not started" in p.message for p in res.parts)
    assert fb.solve_guess(problem, solver="highs").proven_optimal  # no limit: every sub-MIP runs
