"""The weighted pigeonhole bound (formulations/pigeonhole.py): its MIP is the cheapest
convex block carrying a 1/k share of the weights (brute force), the bound never exceeds
the exact optimum at any k, scale, bandwidth or memory, on every backend; what it adds
over the bottleneck MIP; its time limit and target."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import mtpp
from formulations.bounds import solve_bound
from formulations.pigeonhole import build_pigeonhole, pigeonhole_bound, second_wind, singleton_costs, weighted_bound
from mtpp import Problem
from solvers.registry import available_backends
from tests.mtpp.bounds.test_cut import random_problem
from tests.oracle import cheapest_share, convex, exact_optimum, mixed_scale_problem, naive_block_cost, rational_optimum

BACKENDS = available_backends()

DATA = Path(__file__).parents[1] / "data" / "soundness"  # the fuzz's reproducers


@pytest.mark.parametrize("solver", BACKENDS)
def test_the_mip_is_the_cheapest_convex_block_with_a_share_of_the_weights(solver: str) -> None:
    rng = np.random.default_rng(4101)
    for trial in range(40 if solver in ("highs", "gurobi") else 12):
        problem = random_problem(rng, 6)
        problem = replace(problem, k=int(rng.integers(1, problem.graph.n + 1)))
        weights = [problem.graph.work.astype(float), singleton_costs(problem), rng.random(problem.graph.n)][trial % 3]
        if not weights.sum() > 0:
            continue
        mip = build_pigeonhole(problem)
        bound, res, block = weighted_bound(mip, weights, solver, None)
        truth = cheapest_share(problem, weights)
        assert bound <= truth * (1 + 1e-9) + 1e-9, (trial, bound, truth)
        # solved, up to the margin (CP-SAT proves a rounded relaxation: its gap may keep "optimal" off)
        assert res.status.value in ("optimal", "relaxed_optimal", "interrupted"), res
        assert bound >= truth * (1 - 1e-5) - 1e-6, (trial, bound, truth)
        if block is not None and not problem.peak_aware:
            assert convex(problem.graph, set(np.flatnonzero(block).tolist()))
            assert weights[block].sum() >= weights.sum() / problem.k * (1 - 1e-6)


@pytest.mark.parametrize("solver", BACKENDS)
def test_the_bound_never_exceeds_the_exact_optimum_at_any_k(solver: str) -> None:
    rng = np.random.default_rng(4102)
    lifted = 0
    for trial in range(60 if solver in ("highs", "gurobi") else 15):
        problem = random_problem(rng, 5 if trial % 3 == 0 else 6, peak_aware=trial % 3 == 0)
        for k in range(1, problem.graph.n + 1):
            at_k = replace(problem, k=k)
            opt = rational_optimum(at_k)
            res = pigeonhole_bound(at_k, solver=solver, max_mips=6)
            if res.bound is None:  # weights all zero (no work, no tensors): nothing to share
                assert res.mips == 0 and not singleton_costs(at_k).any()
                continue
            assert Fraction(res.bound) <= opt, (trial, k, res.bound, float(opt))
            lifted += res.bound > mtpp.simple_lower_bound(at_k) * (1 + 1e-9)
    assert lifted >= 10  # it adds to the simple bound on these tiny cases


@pytest.mark.parametrize("solver", BACKENDS)
def test_mixed_scales_and_non_unit_bandwidth(solver: str) -> None:
    """Weights from 1e-3 to 1e12, B != 1, finite memory: the bound, and the bound after a second
    wind (formulations.pigeonhole.second_wind), never exceed the brute-force optimum."""
    rng = np.random.default_rng(4103)
    for trial in range(40 if solver in ("highs", "gurobi") else 12):
        problem = mixed_scale_problem(rng, trial)
        for k in (1, 2, problem.graph.n):
            at_k = replace(problem, k=k)
            res = pigeonhole_bound(at_k, solver=solver, max_mips=4)
            if res.bound is not None:
                assert Fraction(res.bound) <= exact_optimum(at_k), (trial, k, res.bound)
            if res.updates is not None and second_wind(res.updates):  # out of MIPs: a second wind
                wind = pigeonhole_bound(at_k, solver=solver, max_mips=res.mips + 3, resume=res.updates)
                assert wind.bound is not None and Fraction(wind.bound) <= exact_optimum(at_k), (trial, k, wind.bound)


def test_more_weightings_lift_the_bottleneck_mip_on_a_regal_style_graph() -> None:
    g = mtpp.regal_graph(50, seed=5)
    problem = Problem(g, 8)
    bottleneck = solve_bound(problem, "bottleneck", solver="auto")
    one = pigeonhole_bound(problem, solver="auto", max_mips=2)  # work (the bottleneck MIP's block), then f({v})
    more = pigeonhole_bound(problem, solver="auto", max_mips=12)
    assert bottleneck.proven_optimal and one.optimal == 2 and one.work_solved
    assert one.bound is not None and more.bound is not None
    assert one.bound >= bottleneck.bound * (1 - 1e-6)  # work weights: the bottleneck block's MIP (W / k >= max work)
    assert more.bound > one.bound * 1.01  # the updated weights lift it
    ub = mtpp.partition(problem, orderer="brkga-2000").bottleneck
    assert more.bound <= ub


def test_time_limit_and_target() -> None:
    g = mtpp.regal_graph(120, seed=3)
    problem = Problem(g, 8)
    t = time.perf_counter()
    res = pigeonhole_bound(problem, solver="highs", time_limit=2.0)
    assert time.perf_counter() - t < 4.0 and res.status.value == "time_limit"
    first = pigeonhole_bound(problem, solver="highs", max_mips=1)
    assert first.bound is not None
    reached = pigeonhole_bound(problem, solver="highs", target=first.bound * 0.5)
    assert reached.mips == 1 and reached.status.value == "optimal"  # a bound at the target proves the partition


def test_singleton_costs_are_the_cost_of_each_op_alone() -> None:
    rng = np.random.default_rng(4104)
    for _ in range(30):
        problem = random_problem(rng, 6)
        free = replace(problem, peak_aware=False, reserve=0.0) if problem.peak_aware else problem
        costs = singleton_costs(problem)
        for v in range(problem.graph.n):
            assert math.isclose(costs[v], naive_block_cost(free, {v}), rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("solver", BACKENDS)
def test_tiny_coefficients_do_not_mislead_a_presolve(solver: str) -> None:
    """Found by the mixed-scale fuzz above: with a scaled cost of 3e-15 and an overflow
    coefficient of 3e-10 in the model, HiGHS 1.16 (dominated columns with probing) called
    the block of every op "optimal" at 2.8e12 (above OPT, 1.9e12) where {3} costs 9.0e11; such
    coefficients are now dropped on the safe side (formulations.pigeonhole.TINY)."""
    g = mtpp.load_graph(DATA / "highs_pigeonhole_presolve.json")
    problem = Problem(g, 4, bandwidth=7.0, memory=311201891612.93384)
    weights = singleton_costs(problem)
    truth = cheapest_share(problem, weights)
    bound, _, _ = weighted_bound(build_pigeonhole(problem), weights, solver, None)
    assert Fraction(bound) <= exact_optimum(problem)
    assert truth * (1 - 1e-5) <= bound <= truth * (1 + 1e-9), (bound, truth)  # the margin of robust tolerances


@pytest.mark.parametrize("solver", BACKENDS)
def test_tiny_weights_do_not_mislead_a_solver(solver: str) -> None:
    """Found by the soundness fuzz (needle family): at k = 1 the op with a huge output
    weighs 1e8 times the others as a block of its own, and with weights of 1e-8 in the row
    SCIP 10 proved 0.0366 > OPT = f(V) = 0.0342; such weights are now 0
    (formulations.pigeonhole.TINY_WEIGHT)."""
    g = mtpp.load_graph(DATA / "scip_pigeonhole_tiny_weight.json")
    problem = Problem(g, 1, bandwidth=3.0, memory=0.021412272)
    res = pigeonhole_bound(problem, solver=solver, max_mips=6)
    assert res.bound is not None and Fraction(res.bound) <= exact_optimum(problem)


def test_an_answer_above_a_block_that_carries_the_share_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A solver that proves more than a feasible block one op away from its own costs has
    failed: the weighting's bound is dropped and the message says so (a solver made to triple
    its dual bounds here)."""
    from dataclasses import replace as replace_result

    import formulations.pigeonhole as module
    from solvers.registry import get_backend

    class Inflating:
        integral_data = False

        def solve(self, model, options):
            res = get_backend("highs").solve(model, options)
            return replace_result(res, dual_bound=res.dual_bound * 3)

    monkeypatch.setattr(module, "get_backend", lambda name: Inflating())
    problem = Problem(mtpp.layered_graph(12, seed=1), 3)
    res = pigeonhole_bound(problem, solver="highs", max_mips=4)
    assert res.bound is None and res.mips == 2 and res.message.count("; dropped: ") == 2  # both fixed weightings
    assert "a solver failure" in res.message


def _scripted(n: int, script: list[tuple[int, float]]):
    """A stand-in for ``weighted_bound`` that answers each call with the next ``(op, bound)``
    of ``script``: that bound, the block of that one op, and a real HiGHS result on the
    weighting's model, called optimal."""
    import formulations.pigeonhole as module

    calls = iter(script)

    def weighted(mip, weights, solver, time_limit, target=None, threads=1):
        op, bound = next(calls)
        block = np.zeros(n, dtype=bool)
        block[op] = True
        res = module.get_backend("highs").solve(mip.model_for(weights), module.SolveOptions(time_limit=1))
        return bound, replace(res, status=module.Status.OPTIMAL), block

    return weighted


def test_updates_go_on_while_they_find_new_blocks_and_stop_when_blocks_repeat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stopping rule (formulations.pigeonhole.PATIENCE): MIPs that find blocks not seen
    before are progress even where the bound stays flat (on REGAL-style graphs the bound
    first rose after 24 such MIPs), while MIPs that only find blocks already seen, without a
    higher bound, stop the updates after PATIENCE of them.  The MIPs are scripted here."""
    import formulations.pigeonhole as module

    problem = Problem(mtpp.layered_graph(40, seed=2), 4)
    n = problem.graph.n

    flat = module.PATIENCE + 4  # new blocks, a flat bound, then a higher one
    monkeypatch.setattr(module, "weighted_bound", _scripted(n, [(op, 1.0) for op in range(flat)] + [(flat, 2.0)]))
    res = pigeonhole_bound(problem, solver="highs", max_mips=flat + 1)
    assert res.mips == flat + 1 and res.bound == 2.0

    same = [0, 1] + [0] * (module.PATIENCE + 5)  # after two blocks, only the first again
    monkeypatch.setattr(module, "weighted_bound", _scripted(n, [(op, 1.0) for op in same]))
    res = pigeonhole_bound(problem, solver="highs", max_mips=len(same))
    assert res.mips == 2 + module.PATIENCE and res.bound == 1.0


def test_a_second_wind_takes_on_stalled_updates_with_a_fresh_slower_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """formulations.pigeonhole.second_wind: updates that stopped for want of progress (or of
    MIPs) go on, on resume, with the step restarted at WIND_ETA and decaying by WIND_DECAY,
    and keep what the first run proved; updates the clock stopped are left to a plain resume.
    The MIPs are scripted."""
    import formulations.pigeonhole as module

    problem = Problem(mtpp.layered_graph(40, seed=2), 4)
    n = problem.graph.n
    stall = [0, 1] + [0] * module.PATIENCE  # two blocks, then the first one again: stalls
    script = [(op, 1.0) for op in stall] + [(5, 2.0), (6, 1.5), (7, 1.5)]
    monkeypatch.setattr(module, "weighted_bound", _scripted(n, script))
    first = pigeonhole_bound(problem, solver="highs")
    state = first.updates
    assert first.mips == len(stall) and state is not None and state.stalled and not first.resumable
    assert module.second_wind(state) and not state.finished
    assert (state.eta, state.decay, state.patience) == (module.WIND_ETA, module.WIND_DECAY, module.WIND_PATIENCE)
    weights = state.weights.copy()
    wind = pigeonhole_bound(problem, solver="highs", max_mips=first.mips + 3, resume=state)
    assert wind.mips == first.mips + 3 and wind.bound == 2.0  # the wind's best, over both runs
    assert state.eta == pytest.approx(module.WIND_ETA * module.WIND_DECAY**3)
    assert state.weights[5] == pytest.approx(weights[5] * (1 - module.WIND_ETA))  # its first step
    assert state.stalled and module.second_wind(state)  # out of MIPs: it may go on again

    clocked = pigeonhole_bound(problem, solver="highs", time_limit=0.0)
    assert clocked.updates is not None and not clocked.updates.stalled
    assert not module.second_wind(clocked.updates)  # the clock stopped it: a plain resume


def test_a_resumed_call_goes_on_as_an_uninterrupted_one() -> None:
    """``resume=`` (certify's pigeonhole_resume_phase): the updates go on from where a call
    stopped, and the two calls together solve the same weightings as one call."""
    problem = Problem(mtpp.regal_graph(40, seed=11), 4)
    whole = pigeonhole_bound(problem, solver="highs", max_mips=7)
    first = pigeonhole_bound(problem, solver="highs", max_mips=3)
    assert first.mips == 3 and first.updates is not None and not first.resumable  # max_mips: its course
    rest = pigeonhole_bound(problem, solver="highs", max_mips=7, resume=first.updates)
    assert rest.mips == whole.mips == 7
    assert rest.bound == whole.bound and rest.updates.seen == whole.updates.seen
    assert rest.wall_time >= first.wall_time
    with pytest.raises(ValueError, match="another problem"):
        pigeonhole_bound(Problem(problem.graph, 8), solver="highs", resume=first.updates)


def test_a_mip_the_clock_stopped_is_solved_again_on_resume(monkeypatch: pytest.MonkeyPatch) -> None:
    """A MIP stopped by the clock leaves its weighting to the resumed call (its partial bound
    counts already); the updates are resumable until they run their course.  Scripted MIPs."""
    import formulations.pigeonhole as module

    problem = Problem(mtpp.layered_graph(40, seed=2), 4)
    n = problem.graph.n
    solved: list[np.ndarray] = []
    script = iter([(0, 1.0, True), (1, 1.5, True), (2, 1.7, False), (2, 2.0, True), (3, 2.1, True)])

    def weighted(mip, weights, solver, time_limit, target=None, threads=1):
        op, bound, finished = next(script)
        solved.append(weights.copy())
        block = np.zeros(n, dtype=bool)
        block[op] = True
        res = module.get_backend("highs").solve(mip.model_for(weights), module.SolveOptions(time_limit=1))
        return bound, replace(res, status=module.Status.OPTIMAL if finished else module.Status.TIME_LIMIT), block

    monkeypatch.setattr(module, "weighted_bound", weighted)
    first = pigeonhole_bound(problem, solver="highs", max_mips=4)
    assert first.status is module.Status.TIME_LIMIT and first.resumable
    assert first.bound == 1.7 and first.mips == 3 and first.optimal == 2
    rest = pigeonhole_bound(problem, solver="highs", max_mips=5, resume=first.updates)
    assert np.array_equal(solved[3], solved[2])  # the unfinished weighting again
    assert not np.array_equal(solved[4], solved[3])
    assert rest.bound == 2.1 and rest.mips == 5 and rest.optimal == 4 and not rest.resumable


def test_sources_and_sinks_carry_no_closure_variables() -> None:
    """At a source ``d_v = x_v`` and ``a_v = 1``, at a sink the mirror image (formulations/
    pigeonhole.py: _closures): only ops with both predecessors and successors get ``a`` and
    ``d``, and the rows they would have had are gone (the optimum is the brute-force one:
    test_the_mip_is_the_cheapest_convex_block_with_a_share_of_the_weights)."""
    g = mtpp.regal_graph(60, seed=3)
    inner = int(((np.diff(g.pred_ptr) > 0) & (np.diff(g.succ_ptr) > 0)).sum())
    assert 0 < inner < g.n
    model = build_pigeonhole(Problem(g, 4)).model_for(g.work.astype(float))
    assert model.blocks["a"].indices.size == model.blocks["d"].indices.size == inner
    # three rows per inner op (a >= x, d >= x, convexity), one per edge whose tail is not a
    # source (ideal) and per edge whose head is not a sink (filter), two per producer's edge (IO)
    src, dst = g.edge_src, g.edge_dst
    tails = int((np.diff(g.pred_ptr)[src] > 0).sum())
    heads = int((np.diff(g.succ_ptr)[dst] > 0).sum())
    io_edges = int((g.size_out[src] > 0).sum())
    assert model.num_rows == 3 * inner + tails + heads + 2 * io_edges + 1  # + the share row


def test_a_seed_is_followed_only_where_it_lifts_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """``seed=`` (certify passes the best weighting of a smaller k): solved right after the two
    starts; where its bound is the highest the updates go on from its block, else from where
    ``f({v})`` left them, with the step they had.  Scripted MIPs."""
    import formulations.pigeonhole as module

    problem = Problem(mtpp.layered_graph(40, seed=2), 4)
    n = problem.graph.n
    seed = np.linspace(1.0, 2.0, n)
    f_v = singleton_costs(problem)
    for seed_bound, followed in ((2.0, True), (1.2, False)):
        solved: list[np.ndarray] = []
        scripted = _scripted(n, [(0, 1.0), (1, 1.5), (2, seed_bound), (3, 1.0)])

        def weighted(mip, weights, solver, time_limit, target=None, threads=1, scripted=scripted, solved=solved):
            solved.append(weights.copy())
            return scripted(mip, weights, solver, time_limit, target, threads)

        monkeypatch.setattr(module, "weighted_bound", weighted)
        res = pigeonhole_bound(problem, solver="highs", max_mips=4, seed=seed)
        assert np.array_equal(solved[1], f_v) and np.array_equal(solved[2], seed)
        after_f = f_v * np.where(np.arange(n) == 1, 1 - module.ETA, 1.0)
        after_seed = seed * np.where(np.arange(n) == 2, 1 - module.ETA * module.DECAY, 1.0)
        assert np.allclose(solved[3], after_seed if followed else after_f)
        assert res.bound == max(1.5, seed_bound) and res.mips == 4
        assert np.array_equal(res.updates.best_weights, seed if followed else f_v)
        assert res.updates.eta == pytest.approx(module.ETA * module.DECAY ** (3 if followed else 2))


@pytest.mark.parametrize(
    ("seed", "message"),
    [(np.ones(3), "shape"), (-np.ones(12), "non-negative"), (np.full(12, np.nan), "finite"), (np.zeros(12), "zero")],
)
def test_a_bad_seed_is_refused(seed: np.ndarray, message: str) -> None:
    problem = Problem(mtpp.layered_graph(12, seed=1), 3)
    with pytest.raises(ValueError, match=message):
        pigeonhole_bound(problem, solver="highs", seed=seed)


@pytest.mark.parametrize("solver", BACKENDS)
def test_a_seeded_bound_never_exceeds_the_exact_optimum(solver: str) -> None:
    """Seeded with the best weighting of a smaller k (as certify does) or with random weights
    over twelve orders of magnitude, at every k of tiny random graphs (brute force)."""
    rng = np.random.default_rng(4103)
    for trial in range(20 if solver in ("highs", "gurobi") else 6):
        problem = random_problem(rng, 5 if trial % 3 == 0 else 6, peak_aware=trial % 3 == 0)
        previous = None
        for k in range(1, problem.graph.n + 1):
            at_k = replace(problem, k=k)
            opt = rational_optimum(at_k)
            seed = previous if trial % 2 == 0 and previous is not None else 10.0 ** rng.uniform(-3, 9, problem.graph.n)
            res = pigeonhole_bound(at_k, solver=solver, max_mips=5, seed=seed)
            if res.bound is not None:
                assert Fraction(res.bound) <= opt, (trial, k, res.bound, float(opt))
            if res.updates is not None and res.updates.best_weights is not None:
                previous = res.updates.best_weights
