"""Synthetic generators (REGAL-style, layered) and the bundled example graph."""

from __future__ import annotations

import collections
import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from mtpp import Graph, InvalidParameterError, load_graph
from mtpp.examples import available_examples, example_path, load_example
from mtpp.generators import layered_graph, regal_connected_graph, regal_graph
from mtpp.generators.hardness import DEFAULT_MIN_GAIN, is_hard_for_peak_memory, peak_memory_room
from mtpp.generators.layered import cone_targets, edge_budget, target_layer_count
from mtpp.generators.regal import (
    MODELS,
    regal_connected_sample,
    regal_connected_work,
    regal_sample,
    regal_work,
)
from tests.oracle import SHARED_LAYERED


def depths(g: Graph) -> np.ndarray:
    """Longest-path depth of every node; in a layered graph this is its layer, since
    every node but the source has a predecessor in the layer just above."""
    d = np.zeros(g.n, dtype=np.int64)
    for v in g.topological_order.tolist():
        p = g.predecessors(v)
        if p.size:
            d[v] = d[p].max() + 1
    return d


def check_weights(g: Graph) -> None:
    for field in ("work", "size_param", "size_out"):
        a = getattr(g, field)
        assert a.shape == (g.n,)
        assert np.all(np.isfinite(a)) and np.all(a >= 0), field


def is_weakly_connected(g: Graph) -> bool:
    parent = list(range(g.n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v in zip(g.edge_src.tolist(), g.edge_dst.tolist()):
        parent[find(u)] = find(v)
    return len({find(x) for x in range(g.n)}) == 1


# ----------------------------------------------------------------------------- REGAL (faithful)
def in_sizes(g: Graph) -> np.ndarray:
    return np.bincount(g.edge_dst, weights=g.size_out[g.edge_src], minlength=g.n)


def test_regal_valid_dags_in_paper_range_and_deterministic():
    seen_models = set()
    for seed in range(4):
        s = regal_sample(seed=seed)
        g = s.to_graph()
        assert g == regal_graph(seed=seed) == regal_sample(seed=seed).to_graph()
        assert 50 <= g.n <= 200 and len(g.topological_order) == g.n
        check_weights(g)
        assert np.all(g.size_param == 0) and s.hard and s.gain >= DEFAULT_MIN_GAIN and s.tries >= 1
        seen_models.add(s.model)
    assert len(seen_models) >= 2
    assert regal_graph(seed=3) != regal_graph(seed=4)
    assert regal_graph(seed=np.random.default_rng(9)) == regal_graph(seed=np.random.default_rng(9))
    for n in (2, 7, 60):
        assert regal_graph(n=n, seed=0).n == n


def test_regal_cost_rule_and_unclipped_r():
    """work = (inputs + own output) (1 + r), r ~ N(0, 0.1) not clipped (App. C.2, read
    per node): sources with r < 0 cost less than their output, as in REGAL's files."""
    rs, below = [], 0
    for seed in range(6):
        s = regal_sample(seed=seed)
        g = s.to_graph()
        expected = np.maximum((in_sizes(g) + g.size_out) * (1 + s.r), 0)
        np.testing.assert_allclose(g.work, expected, rtol=1e-12)
        np.testing.assert_allclose(regal_work(s.size_out, s.edges, s.r), g.work)
        rs.append(s.r)
        below += int(np.sum(g.work < g.size_out))
    r = np.concatenate(rs)
    assert np.any(r < 0) and abs(r.mean()) < 0.02 and abs(r.std() - 0.1) < 0.02
    assert below > 0
    sizes = np.concatenate([regal_graph(seed=s).size_out for s in range(6)])
    assert abs(sizes.mean() - 50) < 2 and abs(sizes.std() - 10) < 2 and np.all(sizes == np.rint(sizes))


def test_regal_other_cost_readings():
    s = regal_sample(n=60, model="erdos_renyi", seed=1, min_gain=0)
    g = s.to_graph()
    graph_rule = regal_work(s.size_out, s.edges, s.r, "graph")
    np.testing.assert_allclose(graph_rule, np.maximum(in_sizes(g) + g.size_out + s.r * g.size_out.sum(), 0))
    np.testing.assert_allclose(regal_work(s.size_out, s.edges, s.r, "output"), g.size_out * (1 + s.r))
    other = regal_sample(n=60, model="erdos_renyi", seed=1, min_gain=0, cost="output")
    assert np.array_equal(other.edges, s.edges) and np.array_equal(other.r, s.r)
    with pytest.raises(InvalidParameterError, match="cost"):
        regal_work(s.size_out, s.edges, s.r, "total")


def test_regal_adds_no_edges():
    """Unlike the connected generator, every edge is an oriented base-graph edge, so
    some graphs have several components (isolated nodes of sparse models included)."""
    disconnected = 0
    for seed in range(8):
        s = regal_sample(seed=seed, min_gain=0)
        c = regal_connected_sample(seed=seed)
        disconnected += not is_weakly_connected(s.to_graph())
        assert len(s.edges) <= len(c.edges)
    assert disconnected > 0


def chain(n: int) -> Graph:
    """A path: every topological order is the same, so there is no room at all."""
    e = np.array([[i, i + 1] for i in range(n - 1)])
    return Graph.from_arrays(np.ones(n), np.zeros(n), np.full(n, 10.0), e)


def fan(width: int) -> Graph:
    """``width`` branches of a big tensor reduced to a tiny one each, joined at a sink:
    depth-first order keeps one big tensor live, breadth-first all of them; the filter
    starts from the best of dfs, bfs and greedy, so it must find no room either."""
    n = 2 * width + 2
    e = [(0, 1 + i) for i in range(width)] + [(1 + i, 1 + width + i) for i in range(width)]
    e += [(1 + width + i, n - 1) for i in range(width)]
    size = np.array([1.0] + [100.0] * width + [1.0] * width + [1.0])
    return Graph.from_arrays(np.ones(n), np.zeros(n), size, np.array(e))


def test_filter_rejects_easy_graphs_and_keeps_hard_ones():
    for easy in (chain(30), fan(8)):
        room = peak_memory_room(easy)
        assert room.gain == pytest.approx(0.0, abs=1e-12) and room.high <= room.low
        assert not is_hard_for_peak_memory(easy)
    # a hard one: a random graph where BRKGA beats its starting orders by >= 20%
    hard = regal_sample(n=120, model="erdos_renyi", seed=5)
    assert hard.hard and hard.gain >= 0.2
    assert is_hard_for_peak_memory(hard.to_graph())
    assert is_hard_for_peak_memory(hard.to_graph(), min_gain=0)
    assert not is_hard_for_peak_memory(hard.to_graph(), min_gain=min(0.99, hard.gain + 0.01))
    # the generator redraws easy graphs: with an impossible threshold every try fails
    # and the hardest draw comes back, marked
    s = regal_sample(n=20, seed=2, min_gain=0.99, max_tries=3)
    assert not s.hard and s.tries == 3 and s.gain < 0.99
    filtered = [regal_sample(n=60, seed=seed) for seed in range(10)]
    assert any(x.tries > 1 for x in filtered)  # some first draws were rejected
    assert all(x.hard for x in filtered)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"n": 1}, "n"),
        ({"n": 5.0}, "n"),
        ({"n": True}, "n"),
        ({"model": "gnp"}, "model"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"param_mean": -1.0}, "param_mean"),
        ({"cost": "total"}, "cost"),
        ({"min_gain": 1.0}, "min_gain"),
        ({"min_gain": -0.1}, "min_gain"),
        ({"max_tries": 0}, "max_tries"),
    ],
)
def test_regal_rejects_bad_arguments(kwargs, word):
    with pytest.raises(InvalidParameterError, match=word):
        regal_graph(**kwargs)


def test_filter_rejects_bad_arguments():
    with pytest.raises(InvalidParameterError, match="graph"):
        peak_memory_room("g")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="min_gain"):
        is_hard_for_peak_memory(chain(3), min_gain=2)


# ----------------------------------------------------------------------------- REGAL, connected (before issue 23)
@pytest.mark.parametrize("model", MODELS)
def test_regal_connected_models_give_valid_connected_dags(model):
    for seed in range(3):
        g = regal_connected_graph(model=model, seed=seed)
        assert 50 <= g.n <= 200
        assert g.m >= g.n - 1  # weakly connected
        assert is_weakly_connected(g)
        assert len(g.topological_order) == g.n  # acyclic (Graph checks it too)
        check_weights(g)
        assert np.all(g.size_param == 0)


def test_regal_connected_deterministic_and_seed_sensitive():
    assert regal_connected_graph(seed=3) == regal_connected_graph(seed=3)
    assert regal_connected_graph(n=80, model="barabasi_albert", seed=1) == regal_connected_graph(
        n=80, model="barabasi_albert", seed=1
    )
    assert regal_connected_graph(seed=3) != regal_connected_graph(seed=4)
    a = regal_connected_graph(n=100, model="erdos_renyi", seed=0)
    b = regal_connected_graph(n=100, model="erdos_renyi", seed=1)
    assert a != b
    # a Generator is used as given: two equal generators give equal graphs
    assert regal_connected_graph(seed=np.random.default_rng(9)) == regal_connected_graph(seed=np.random.default_rng(9))


def test_regal_connected_respects_n_and_draws_n_in_paper_range():
    for n in (2, 7, 50, 123, 200):
        assert regal_connected_graph(n=n, seed=0).n == n
    drawn = {regal_connected_graph(seed=s).n for s in range(20)}
    assert all(50 <= n <= 200 for n in drawn) and len(drawn) > 5
    assert len({regal_connected_sample(seed=s).model for s in range(30)}) == len(MODELS)


def test_regal_connected_cost_rule_holds_exactly():
    """work(v) = sum of input tensor sizes + own size + r_v * total size (App. C.2)."""
    for seed in range(5):
        s = regal_connected_sample(seed=seed)
        g = s.to_graph()
        assert g == regal_connected_graph(seed=seed)
        total = g.size_out.sum()
        for v in range(g.n):
            inputs = sum(float(g.size_out[u]) for u in g.predecessors(v))
            expected = inputs + float(g.size_out[v]) + float(s.r[v]) * total
            assert g.work[v] == pytest.approx(expected, rel=1e-12, abs=1e-9)
        assert np.all(s.r >= 0) and np.any(s.r > 0) and np.any(s.r == 0)  # N(0, 0.1) clipped at 0
        in_out = np.bincount(g.edge_dst, weights=g.size_out[g.edge_src], minlength=g.n) + g.size_out
        assert np.all(g.work >= in_out - 1e-9)
        np.testing.assert_allclose(regal_connected_work(s.size_out, s.edges, s.r), g.work)


def test_regal_connected_tensor_sizes_follow_n_50_10():
    sizes = np.concatenate([regal_connected_graph(seed=s).size_out for s in range(10)])
    assert abs(sizes.mean() - 50) < 1.5 and abs(sizes.std() - 10) < 1.5
    assert np.all(sizes == np.rint(sizes))


def test_regal_connected_param_option_leaves_the_rest_unchanged():
    plain = regal_connected_graph(n=60, model="watts_strogatz", seed=2)
    with_params = regal_connected_graph(n=60, model="watts_strogatz", seed=2, param_mean=10.0)
    assert np.array_equal(plain.work, with_params.work) and np.array_equal(plain.edge_src, with_params.edge_src)
    assert with_params.size_param.mean() == pytest.approx(10.0, rel=0.2)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"n": 1}, "n"),
        ({"n": 5.0}, "n"),
        ({"n": True}, "n"),
        ({"model": "gnp"}, "model"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"param_mean": -1.0}, "param_mean"),
    ],
)
def test_regal_connected_rejects_bad_arguments(kwargs, word):
    with pytest.raises(InvalidParameterError, match=word):
        regal_connected_graph(**kwargs)


# ----------------------------------------------------------------------------- layered
def test_layered_deterministic_valid_and_sized():
    for n in (3, 10, 100, 257):
        g = layered_graph(n, seed=1)
        assert g.n == n
        assert g == layered_graph(n, seed=1)
        check_weights(g)
        indeg, outdeg = np.diff(g.pred_ptr), np.diff(g.succ_ptr)
        assert np.flatnonzero(indeg == 0).tolist() == [0] and np.flatnonzero(outdeg == 0).tolist() == [n - 1]
        assert g.work[0] == g.work[-1] == 0 and np.all(g.size_param == 0)
    assert layered_graph(100, seed=1) != layered_graph(100, seed=2)
    assert layered_graph(100, seed=1, width=0.3) != layered_graph(100, seed=1, width=0.4)


def test_layered_without_source_sink_and_options():
    g = layered_graph(60, seed=0, source_sink=False)
    assert g.n == 60
    check_weights(g)
    base = layered_graph(80, seed=4)
    p = layered_graph(80, seed=4, param_costs=True)
    assert base.edges() == p.edges() and np.array_equal(base.size_out, p.size_out)
    assert np.all(p.size_param[1:-1] > 0) and p.size_param[0] == p.size_param[-1] == 0
    per_layer = layered_graph(200, seed=4, per_layer_costs=True)
    d = depths(per_layer)
    for layer in np.unique(d):
        assert len(np.unique(per_layer.size_out[d == layer])) == 1
    dense = layered_graph(50, seed=0, edge_density=1.0, skip_density=0.0)  # adjacent layers fully connected
    d, layers = _layers(dense)
    assert structure_errors(dense, 1.0) == 0 and np.all(d[dense.edge_dst] - d[dense.edge_src] == 1)
    assert dense.m == sum(len(a) * len(b) for a, b in itertools.pairwise(layers))


def test_layer_count_eq_11():
    assert target_layer_count(100, 0.5) == 10
    assert target_layer_count(100, 0.27) == 17  # ceil(sqrt(100 * (1/0.27 - 1))) = ceil(16.44)
    assert edge_budget(7, 8, 0.2) == 18  # 0.2 * 56 + 0.8 * 8 = 17.6


def _layers(g: Graph) -> tuple[np.ndarray, list[list[int]]]:
    d = depths(g)
    by = collections.defaultdict(list)
    for i in range(g.n):
        by[int(d[i])].append(i)
    # in both our graphs and the data sets, ids within a layer are in left-to-right order
    return d, [sorted(by[layer], key=lambda i: g.ids[i]) for layer in range(len(by))]


def structure_errors(g: Graph, edge_density: float) -> int:
    """Mismatches with Eq. (13) (edge count per adjacent pair) and the cone of Algorithm 2
    (each node of the larger layer reaches a contiguous run centred under it)."""
    d, layers = _layers(g)
    pos = {v: k for layer in layers for k, v in enumerate(layer)}
    adjacent = collections.defaultdict(set)
    for u, v in zip(g.edge_src.tolist(), g.edge_dst.tolist()):
        if d[v] == d[u] + 1:
            adjacent[int(d[u])].add((u, v))
    errors = 0
    for layer in range(len(layers) - 1):
        n1, n2 = len(layers[layer]), len(layers[layer + 1])
        errors += len(adjacent[layer]) != edge_budget(n1, n2, edge_density)
        forward = n1 > n2  # the larger layer spreads the edges; ties: the later one
        ns, nt = (n1, n2) if forward else (n2, n1)
        reach = collections.defaultdict(set)
        for u, v in adjacent[layer]:
            s, t = (u, v) if forward else (v, u)
            reach[pos[s]].add(pos[t])
        errors += sum(set(cone_targets(i, len(reach[i]), ns, nt)) != reach[i] for i in range(ns))
    return errors


def test_layered_structure_follows_algorithms_1_to_3():
    for seed in range(3):
        g = layered_graph(300, seed=seed)
        assert structure_errors(g, 0.2) == 0
        d = depths(g)
        span = d[g.edge_dst] - d[g.edge_src]
        assert np.all(span >= 1)
        skips = span > 1
        assert not np.any(g.edge_src[skips] == 0) and not np.any(g.edge_dst[skips] == g.n - 1)
        # Eq. (14): ceil(|E| rho/(1-rho)) skips before merging the rare duplicates
        expected = np.ceil((~skips).sum() * 0.14 / 0.86)
        assert 0.9 * expected <= skips.sum() <= expected


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"n": 2}, "n"),
        ({"n": 10.0}, "n"),
        ({"n": 10, "width": 1.0}, "width"),
        ({"n": 10, "width": 0}, "width"),
        ({"n": 10, "node_variability": 1.0}, "node_variability"),
        ({"n": 10, "edge_density": 1.5}, "edge_density"),
        ({"n": 10, "skip_density": 1.0}, "skip_density"),
        ({"n": 10, "seed": "x"}, "seed"),
        ({"n": 10, "width_range": (0.5, 0.25)}, "width_range"),
        ({"n": 10, "memory_scale": 0}, "memory_scale"),
        ({"n": 10, "max_duration": 0}, "max_duration"),
    ],
)
def test_layered_rejects_bad_arguments(kwargs, word):
    with pytest.raises(InvalidParameterError, match=word):
        layered_graph(**kwargs)


def _shared_graphs() -> list[tuple[int, float, Path]]:
    if not SHARED_LAYERED.is_dir():
        pytest.skip(f"shared layered graphs not found at {SHARED_LAYERED} (they live beside the repository)")
    out = []
    for path in SHARED_LAYERED.glob("random_layered_*.json"):
        m = re.search(r"_n(\d+)_w([\d.]+)_", path.name)
        out.append((int(m.group(1)), float(m.group(2)), path))
    assert out, f"no random_layered_*.json in {SHARED_LAYERED}"
    return sorted(out)


def family_stats(g: Graph) -> dict[str, float]:
    d = depths(g)
    indeg, outdeg = np.diff(g.pred_ptr), np.diff(g.succ_ptr)
    return {
        "edges_per_node": g.m / g.n,
        "layers": float(d.max() + 1),
        "max_out_degree": float(outdeg.max()),
        "skip_fraction": float(np.mean(d[g.edge_dst] - d[g.edge_src] > 1)),
        "sources": float(np.sum(indeg == 0)),
        "sinks": float(np.sum(outdeg == 0)),
    }


def test_layered_family_matches_the_shared_data_sets():
    """The four third-party graphs (Moccasin's release of the Topoformer generator) against
    ours at the same n and width: exact Eq. 13 / cone structure, and family statistics."""
    pooled_ref, pooled_gen = [], []
    for n, width, path in _shared_graphs():
        ref = load_graph(path)
        assert ref.n == n
        assert structure_errors(ref, 0.2) == 0  # their adjacent-layer edges are exactly ours
        gens = [layered_graph(n, seed=s, width=width) for s in range(5)]
        r = family_stats(ref)
        gen = {k: np.array([family_stats(g)[k] for g in gens]) for k in r}
        assert r["sources"] == r["sinks"] == 1 and np.all(gen["sources"] == 1) and np.all(gen["sinks"] == 1)
        assert r["edges_per_node"] == pytest.approx(gen["edges_per_node"].mean(), rel=0.2), path.name
        assert r["layers"] == pytest.approx(gen["layers"].mean(), rel=0.25), path.name
        assert r["max_out_degree"] == pytest.approx(gen["max_out_degree"].mean(), rel=0.5), path.name
        assert r["skip_fraction"] == pytest.approx(gen["skip_fraction"].mean(), abs=0.015), path.name
        assert 0.12 <= r["skip_fraction"] <= 0.14  # rho_S = 0.14 less merged duplicates
        for g in (ref, *gens):
            inner = g.work[1:-1] if g is not ref else np.delete(g.work, [g.index(0), g.index(1)])
            assert np.all((inner >= 0) & (inner < 1000)) and abs(inner.mean() - 500) < 60
            assert np.all(g.size_param == 0)
        pooled_ref.append(ref.size_out)
        pooled_gen.extend(g.size_out for g in gens)
    ref_out, gen_out = np.concatenate(pooled_ref), np.concatenate(pooled_gen)
    assert ref_out.min() > 0 and gen_out.min() > 0
    assert ref_out.mean() == pytest.approx(gen_out.mean(), rel=0.1)  # about 2000 = 1000 * mixture mean
    assert np.median(ref_out) == pytest.approx(np.median(gen_out), rel=0.15)
    assert ref_out.max() < 12_000 and gen_out.max() < 12_000


# ----------------------------------------------------------------------------- examples
def test_example_loads_and_round_trips(tmp_path):
    assert "transformer_block" in available_examples()
    g = load_example()
    assert g == load_example("transformer_block")
    assert 30 <= g.n <= 40 and g.name and g.units == {"time": "us", "size": "bytes"}
    check_weights(g)
    assert {"MatMul", "Softmax", "LayerNorm", "Add", "Gelu"} <= set(g.ops)
    assert all(g.names) and all(g.ops)
    path = tmp_path / "tb.json"
    g.to_json(str(path), indent=2)
    back = load_graph(path)
    assert back == g and back.names == g.names and back.ops == g.ops and back.name == g.name and back.units == g.units
    assert example_path("transformer_block").is_file()


def test_unknown_example_lists_the_names():
    with pytest.raises(InvalidParameterError, match="transformer_block"):
        load_example("resnet")
    with pytest.raises(InvalidParameterError, match="unknown example"):
        example_path("nope")
