import itertools
import json
import math
import time
import types

import numpy as np

import mtpp
import mtpp.engine.background
import mtpp.engine.partitions
import mtpp.engine.solver_bounds
from heuristics.partition.band_dp import band_dp
from heuristics.partition.ideal_dp import IdealDpResult, ideal_dp, ideal_dp_all
from mtpp import Problem
from mtpp.cli.main import main
from mtpp.engine.certify import certify
from tests.oracle import brute_force_optimum, random_dag

FAST = "simple,cut,ideal-dp"


def random_graph(rng, n_max=6):
    n = int(rng.integers(2, n_max + 1))
    return random_dag(rng, n, p=float(rng.random()), integral=bool(rng.integers(2)))


def test_several_k_are_proven_optimal_and_match_brute_force():
    rng = np.random.default_rng(40)
    for trial in range(25):
        g = random_graph(rng)
        memory = math.inf if trial % 2 else float(rng.integers(3, 20))
        peak_aware = trial % 5 == 0 and not math.isinf(memory)
        options = {"bandwidth": float(rng.choice([0.5, 1.0, 3.0])), "memory": memory, "peak_aware": peak_aware}
        certs = certify(g, k=[3, 1, 2], bounds=FAST, orderer="kahn", **options)
        assert [c.k for c in certs] == sorted({min(kk, g.n) for kk in (1, 2, 3)})  # k > n is clamped to n
        for c in certs:
            opt, _ = brute_force_optimum(Problem(g, c.k, **options))
            assert c.lower_bound <= opt * (1 + 1e-12) + 1e-12
            assert c.upper_bound >= opt * (1 - 1e-12) - 1e-12
            if not peak_aware:
                assert c.optimal and math.isclose(c.upper_bound, opt, rel_tol=1e-9, abs_tol=1e-9)


def test_bounds_shared_across_k_never_exceed_the_optimum(monkeypatch):
    import mtpp.engine.combinatorial

    def dp_only_at_k3(problem, ks, **options):  # the DP runs out of time below k = 3
        results = ideal_dp_all(problem, ks, **options)
        simulated = IdealDpResult("time_limit", None, None, None, 0.0, "simulated")
        return [r if k >= 3 else simulated for k, r in zip(ks, results)]

    monkeypatch.setattr(mtpp.engine.combinatorial, "ideal_dp_all", dp_only_at_k3)
    rng = np.random.default_rng(41)
    shared = 0
    for _ in range(25):
        g = random_graph(rng)
        certs = certify(g, k=[1, 2, 3], bounds=FAST, orderer="kahn", bandwidth=2.0)
        for c in certs:
            opt, _ = brute_force_optimum(Problem(g, c.k, bandwidth=2.0))
            assert c.lower_bound <= opt * (1 + 1e-12) + 1e-12
            for r in c.bounds:
                if r.from_k is not None:
                    shared += 1
                    assert r.from_k > c.k and r.bound <= opt * (1 + 1e-12) + 1e-12
        # a partition for fewer blocks is one for more: upper bounds never increase with k
        assert all(a.upper_bound >= b.upper_bound for a, b in itertools.pairwise(certs))
    assert shared > 0


def test_ideal_dp_agrees_with_the_exact_mip():
    rng = np.random.default_rng(42)
    for _ in range(4):
        g = random_dag(rng, 10, p=0.3)
        problem = Problem(g, 3, bandwidth=2.0, memory=30.0, reserve=4.0)
        cert = certify(problem, bounds="simple,exact", solver="highs", orderer="kahn", time_limit=30)
        if cert.bound("exact").status != "optimal":
            continue
        assert math.isclose(ideal_dp(problem).value, cert.upper_bound, rel_tol=1e-6)


def test_budget_is_honoured():
    g = mtpp.layered_graph(250, seed=3)  # wide: far too many ideals, and MIPs that would run for minutes
    t0 = time.perf_counter()
    certs = certify(g, k=[4, 8], solver="highs", budget=4.0, time_limit=600)
    wall = time.perf_counter() - t0
    assert wall <= 4.0 + 5.0
    assert all(c.lower_bound <= c.upper_bound for c in certs)
    assert any(r.status in ("too_wide", "skipped", "time_limit") for r in certs[0].bounds if r.method == "ideal-dp")


def test_a_call_that_proves_nothing_uses_its_budget_when_the_time_limit_caps_each_search():
    """``time_limit`` caps each k's annealing and search; the fill goes on in rounds until the
    budget is spent (with one round the call returned after 1.6 s of these 8)."""
    g = mtpp.layered_graph(120, seed=5)  # tensors dominate: the simple bound proves nothing
    t0 = time.perf_counter()
    cert = certify(g, k=8, bounds="simple", budget=8.0, time_limit=0.5)
    wall = time.perf_counter() - t0
    assert not cert.optimal
    assert 0.75 * 8.0 <= wall <= 8.0 + 2.0


def test_cli_certifies_several_k(tmp_path, capsys):
    g = random_dag(np.random.default_rng(43), 6, p=0.4)
    path = tmp_path / "g.json"
    g.to_json(path)
    assert main(["certify", str(path), "-k", "2", "3", "--bounds", FAST, "--orderer", "kahn", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    certs = doc["certificates"]
    assert doc["format"] == "mtpp-certificates" and [c["k"] for c in certs] == [2, 3]
    assert all(c["optimal"] for c in certs)
    assert main(["certify", str(path), "-k", "2", "--bounds", FAST, "--orderer", "kahn", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["k"] == 2


def test_cli_fill_flag_reaches_certify(tmp_path, capsys, monkeypatch):
    import mtpp.engine.certify

    given = []
    real = mtpp.engine.certify.certify

    def recording(*args, **kwargs):
        given.append(kwargs["fill_budget"])
        return real(*args, **kwargs)

    monkeypatch.setattr(mtpp.engine.certify, "certify", recording)
    path = tmp_path / "g.json"
    random_dag(np.random.default_rng(44), 6, p=0.4).to_json(path)
    for flag in ([], ["--no-fill"], ["--fill"]):
        assert main(["certify", str(path), "-k", "2", "--bounds", FAST, "--json", *flag]) == 0
    capsys.readouterr()
    assert given == [True, False, True]


def test_a_mip_that_did_not_lift_the_bound_is_skipped_at_larger_k(monkeypatch):
    calls = []

    def stalled(problem, method, solver, time_limit, *args):
        calls.append((problem.k, time_limit))
        record = mtpp.core.records.BoundRecord(
            method=method, bound=0.0, status="time_limit", proven_optimal=False, wall_time=1.5
        )
        return record, None

    monkeypatch.setattr(mtpp.engine.solver_bounds, "bound_record", stalled)
    monkeypatch.setattr(mtpp.engine.solver_bounds.ExactFirst, "SHARE", 0.0)  # the MIP phase's rule alone
    monkeypatch.setattr(mtpp.engine.partitions.Band, "SHARE", 0.0)  # and the whole fill for the last search
    searches = []
    real_partition = mtpp.engine.partitions.partition

    def counted(problem, *args, **kwargs):
        if kwargs.get("orderer") != "kahn":  # the searches, not the first partitions
            searches.append((problem.k, kwargs["seed"], kwargs["orderer"]))
        return real_partition(problem, *args, **kwargs)

    monkeypatch.setattr(mtpp.engine.partitions, "partition", counted)
    g = mtpp.layered_graph(60, seed=7)
    certs = certify(g, k=[2, 4, 8], bounds="simple,exact", budget=8)
    assert [k for k, _ in calls] == [2]  # ran at k = 2 only
    for cert in certs[1:]:
        rec = cert.bound("exact")
        assert rec.status == "skipped" and "did not lift the bound" in rec.message and "k=2" in rec.message
    # the time it did not take went to a last, larger search on another seed at each open k
    last = [(k, orderer) for k, seed, orderer in searches if seed == 1]
    assert last and [k for k, _ in last] == [c.k for c in certs if not c.optimal]
    assert all(int(orderer.removeprefix("brkga-")) >= 10_000 for _, orderer in last)
    searches.clear()
    certify(g, k=[2, 4, 8], bounds="simple,exact", budget=8, fill_budget=False)
    assert searches and all(seed == 0 for _, seed, _ in searches)  # no last search
    # the bottleneck MIP (its model does not grow with k) only after two stalls; nothing without a budget
    calls.clear()
    certs = certify(g, k=[2, 4, 8, 16], bounds="simple,bottleneck", budget=8)
    assert [k for k, _ in calls] == [2, 4]
    assert [c.bound("bottleneck").status for c in certs] == ["time_limit", "time_limit", "skipped", "skipped"]
    assert "k=2" in certs[2].bound("bottleneck").message and "k=4" in certs[2].bound("bottleneck").message
    calls.clear()
    certify(g, k=[2, 4], bounds="simple,exact", time_limit=5, orderer="kahn")
    assert [k for k, _ in calls] == [2, 4]


def test_a_growing_mip_below_the_bottleneck_bound_is_skipped_at_larger_k(monkeypatch):
    """Above the simple bound but not above what the methods before it proved (the
    bottleneck MIP here) is no progress either; a growing MIP that lifts the bound at
    k = 2 runs again at k = 4."""
    calls = []
    g = mtpp.layered_graph(60, seed=7)
    monkeypatch.setattr(mtpp.engine.solver_bounds.ExactFirst, "SHARE", 0.0)  # exact in the MIP phase, after bottleneck
    for lift, runs_at_4 in ((1.1, False), (1.3, True)):

        def fake(problem, method, solver, time_limit, *args, lift=lift):
            calls.append((problem.k, method))
            bound = {"bottleneck": 1.2, "exact": lift}[method] * mtpp.bounds.simple.simple_lower_bound(problem)
            record = mtpp.core.records.BoundRecord(
                method=method, bound=bound, status="time_limit", proven_optimal=False, wall_time=1.0
            )
            return record, None

        monkeypatch.setattr(mtpp.engine.solver_bounds, "bound_record", fake)
        calls.clear()
        certs = certify(g, k=[2, 4], bounds="simple,bottleneck,exact", budget=30, orderer="kahn")
        assert ((4, "exact") in calls) == runs_at_4
        assert (certs[1].bound("exact").status == "skipped") != runs_at_4


def test_the_ideal_dp_leaves_half_of_the_budget_to_the_other_bounds(monkeypatch):
    given = []

    def recording(problem, ks, **options):
        given.append(options["time_limit"])
        return ideal_dp_all(problem, ks, **options)

    monkeypatch.setattr(mtpp.engine.combinatorial, "ideal_dp_all", recording)
    g = mtpp.layered_graph(40, seed=3)
    certify(g, k=[2, 4], bounds="simple,ideal-dp", orderer="kahn", budget=20)
    assert len(given) == 1 and 0 < given[0] <= 0.5 * 20
    certify(g, k=[2, 4], bounds="simple,ideal-dp", orderer="kahn")
    assert given[1] is None  # no budget: no cap


def test_the_multi_order_dp_cuts_partitions_from_the_orders_of_every_k(monkeypatch):
    merged = []
    real_merge = mtpp.engine.partitions.merge_orders

    def spied(problem, orders, upper_bound, *args, **kwargs):
        seg = real_merge(problem, orders, upper_bound, *args, **kwargs)
        distinct = {tuple(o.tolist()) for o in orders}
        merged.append((problem.k, len(distinct), upper_bound, None if seg is None else seg.assignment))
        return seg

    monkeypatch.setattr(mtpp.engine.partitions, "merge_orders", spied)
    monkeypatch.setattr(mtpp.engine.partitions.Anneal, "run", lambda *args, **kwargs: None)  # the merge alone
    g = mtpp.layered_graph(150, seed=9910)
    certs = certify(g, k=[4, 8, 16, 32], bounds="simple,cut", orderer="random-20")
    open_ks = [c.k for c in certs if not c.optimal]
    assert [k for k, *_ in merged] == open_ks
    assert all(count >= 1 + len(open_ks) for _, count, *_ in merged)  # Kahn's order and a search at every open k
    sources = {c.k: c.partition_source for c in certs}
    improved = [(k, ub, a) for k, _, ub, a in merged if a is not None]
    assert improved  # random orders from four ks: blocks from several of them cut better partitions
    for k, ub, assignment in improved:
        cert = next(c for c in certs if c.k == k)
        found = mtpp.evaluate(Problem(g, k), assignment).bottleneck
        assert found < ub and cert.upper_bound <= found
        assert sources[k].startswith("multi-order DP") or cert.upper_bound < found
    merged.clear()
    certify(g, k=[4, 8], bounds="simple,cut", orderer="random-20", budget=20, fill_budget=False)
    assert merged == []  # a batch row measures its method: no fill, no merge


def test_the_fill_stops_where_a_later_round_could_not_search_every_open_k(monkeypatch):
    """Rounds go on while their search fits at every open k: here a search needs 2 s (two
    SliceGraph DPs of 1 s) and each round's is capped at 1 s, so of the 4.7 s the fill
    has, three rounds search and the 1.7 s left go to annealing alone."""
    from mtpp.core.budget import Budget
    from mtpp.engine.call import Call, Options
    from mtpp.engine.partitions import Anneal, Fill, Search

    seeds = []

    def search(self, call, seed, total=None, fill=False):
        seeds.append(seed)
        time.sleep(call.options.time_limit)

    monkeypatch.setattr(Anneal, "anneal", lambda *args, **kwargs: None)
    monkeypatch.setattr(Search, "search", search)
    options = Options((), "auto", 1.0, 1, 1, "brkga", 0, 1, True, False)
    call = Call(options, Budget(6.0), None, [])  # type: ignore[arg-type]  # the fill's end: 95% of it less a second
    call.runs.append(types.SimpleNamespace(closed=False, decode_seconds=1.0))  # type: ignore[arg-type]
    Fill().run(call)
    assert seeds == [1, 2, 3]


def test_the_band_dp_reshapes_the_best_partition_of_every_open_k(monkeypatch):
    """After the bounds, the ideal DP on bands of each open k's best partition: a better
    partition it finds is re-checked and adopted; a batch row (no fill) never runs it."""
    import mtpp.engine.partitions as partitions

    calls = []

    def spied(problem, assignment, band, upper_bound, max_ideals, time_limit):
        res = band_dp(problem, assignment, band, upper_bound, max_ideals, time_limit)
        calls.append((problem.k, band, upper_bound, None if res is None else res[1]))
        return res

    monkeypatch.setattr(partitions, "band_dp", spied)
    monkeypatch.setattr(partitions.Fill, "run", lambda *args, **kwargs: None)  # the band DP alone
    monkeypatch.setattr(partitions.Anneal, "run", lambda *args, **kwargs: None)
    monkeypatch.setattr(mtpp.engine.background.BackgroundStart, "run", lambda *args, **kwargs: None)
    g = mtpp.layered_graph(110, seed=8131)
    cert = certify(g, k=[16], bounds="simple,cut", orderer="random-2", budget=8, max_ideals=1)[0]
    assert calls and {k for k, *_ in calls} == {16} and calls[0][1] == partitions.Band.BANDS[0]
    improved = [(ub, a) for _, _, ub, a in calls if a is not None]
    assert improved  # two random orders sliced: the band DP moves their boundaries
    for ub, assignment in improved:
        found = mtpp.evaluate(Problem(g, 16), assignment).bottleneck
        assert found < ub and cert.upper_bound <= found
    calls.clear()
    certify(g, k=[16], bounds="simple,cut", orderer="random-2", budget=8, max_ideals=1, fill_budget=False)
    assert calls == []
