"""Training data from proofs (issue 25): the exact teacher's data sets, their file
format, resuming, and imitation of the proven orders by likelihood."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from heuristics.neural.decoding import greedy_order
from heuristics.neural.objectives import Bottleneck
from heuristics.neural.proof_data import (
    MANIFEST,
    DataSpec,
    load_examples,
    read_spec,
    shard_path,
    teacher_examples,
)
from heuristics.neural.regal_training import RegalTrainConfig, train_regal
from heuristics.neural.topoformer import Topoformer
from heuristics.neural.training import Encoded, TrainConfig, imitation_loss, size_batches, teacher_target, train
from mtpp import Graph
from mtpp.core.errors import InvalidParameterError
from mtpp.core.evaluate import evaluate
from mtpp.core.memory import peak_memory
from mtpp.core.problem import Problem
from mtpp.generators.regal import regal_graph
from mtpp.generators.training import epoch_graphs
from mtpp.partitioner import partition
from mtpp.teacher_data import build_teacher_data, example_graph, partition_order
from tests.oracle import brute_force_peak, down_set_optimum, is_topological

SPEC = DataSpec(count=5, nodes=(7, 9), seed=3, time_limit=120.0, shard_size=2)  # proofs are instant; JIT is not
MTPP_SPEC = DataSpec(objective="mtpp", family="regal", nodes=(8, 10), count=3, seed=5, time_limit=60.0, ks=(3, 2))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("proofs")
    build_teacher_data(root, SPEC)
    return root


@pytest.fixture(scope="module")
def mtpp_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("partitions")
    build_teacher_data(root, MTPP_SPEC)
    return root


def test_teacher_orders_are_proven_minimum_peak_orders(data: Path) -> None:
    examples = load_examples(data)
    assert [e.index for e in examples] == list(range(SPEC.count))  # all proven on graphs this small
    for e in examples:
        assert e.graph == example_graph(SPEC, e.index)  # the stored graph is example i's
        assert is_topological(e.graph, e.order)
        assert e.value == pytest.approx(peak_memory(e.graph, e.order), rel=1e-12)
        assert e.optimal and e.lower_bound == pytest.approx(e.value, rel=1e-12)
        assert e.value == pytest.approx(brute_force_peak(e.graph), rel=1e-12)


def test_building_again_resumes_at_the_missing_shard(data: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in data.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    shard_path(copy, 1).unlink()
    kept = shard_path(copy, 0).stat().st_mtime_ns
    with pytest.raises(InvalidParameterError, match="incomplete: 1 of 3 shards missing"):
        load_examples(copy)
    seen: list[tuple[int, int]] = []
    build_teacher_data(copy, SPEC, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(2, 3), (3, 3)]
    assert shard_path(copy, 0).stat().st_mtime_ns == kept
    for a, b in zip(load_examples(copy), load_examples(data)):
        assert a.graph == b.graph and np.array_equal(a.order, b.order)


def test_two_processes_write_the_shards_one_process_would(data: Path, tmp_path: Path) -> None:
    # one shard of all five graphs: the two processes share its graphs, not shards
    one_shard = replace(SPEC, shard_size=SPEC.count)
    seen: list[tuple[int, int]] = []
    build_teacher_data(tmp_path, one_shard, jobs=2, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 1), (1, 1)]
    for a, b in zip(load_examples(tmp_path), load_examples(data), strict=True):
        assert a.index == b.index and a.graph == b.graph and a.value == b.value


def test_a_directory_of_other_options_or_format_is_refused(data: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="other options"):
        build_teacher_data(data, replace(SPEC, seed=4))
    assert read_spec(data) == SPEC
    with pytest.raises(InvalidParameterError, match="not a teacher data set"):
        read_spec(tmp_path)
    (tmp_path / MANIFEST).write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(InvalidParameterError, match="not an mtpp-teacher-data manifest"):
        read_spec(tmp_path)
    with pytest.raises(InvalidParameterError, match="needs ks"):
        DataSpec(objective="mtpp")
    with pytest.raises(InvalidParameterError, match="ks are for objective 'mtpp'"):
        DataSpec(ks=(8,))
    with pytest.raises(InvalidParameterError, match="ks must be integers >= 1"):
        DataSpec(objective="mtpp", ks=(8, 0))
    with pytest.raises(InvalidParameterError, match="objective must be one of"):
        DataSpec(objective="runtime")
    with pytest.raises(InvalidParameterError, match="count"):
        DataSpec(count=0)


def test_imitation_by_likelihood_reproduces_the_teacher(data: Path) -> None:
    example = load_examples(data)[0]
    torch.manual_seed(0)
    config = TrainConfig(dim=16, layers=2, head_dim=4)
    model = Topoformer(config.model_config())
    e = Encoded.of(example.graph)
    batch = [(e, teacher_target(example.graph, example.order, "cpu"))]
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = float(imitation_loss(model, batch).detach())
    for _ in range(150):
        optimiser.zero_grad()
        loss = imitation_loss(model, batch)
        loss.backward()
        optimiser.step()
    assert float(loss.detach()) < first / 2
    y = model(e.x, e.relation).detach().double().numpy()
    assert np.array_equal(greedy_order(example.graph, y), example.order)


def test_training_on_the_exact_teacher(data: Path, tmp_path: Path) -> None:
    config = TrainConfig(
        teacher="exact",
        teacher_data=(str(data),),
        imitation_epochs=2,
        epochs=2,
        graphs_per_epoch=3,
        batch=2,
        nodes=(7, 9),
        validation=2,
        dim=8,
        layers=1,
        head_dim=4,
    )
    result = train(config, tmp_path / "run", epoch_graphs)
    assert [row["phase"] for row in result.history] == [1.0, 1.0]
    assert all(0 < row["loss"] < 10 for row in result.history)
    meta = torch.load(result.weights, weights_only=True)["meta"]
    assert meta["teacher"] == "exact" and meta["teacher_examples"] == SPEC.count
    assert "CPU" in meta["hardware"] and meta["epochs"] == 2


def test_bad_exact_teacher_options(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="needs teacher_data"):
        TrainConfig(teacher="exact", imitation_epochs=1)
    with pytest.raises(InvalidParameterError, match="teacher must be one of"):
        TrainConfig(teacher="oracle")
    with pytest.raises(InvalidParameterError, match="needs teacher_data"):
        RegalTrainConfig(objective="peak", teacher="exact", imitation_epochs=1)
    with pytest.raises(InvalidParameterError, match="max_gap"):
        RegalTrainConfig(max_gap=-1.0)
    with pytest.raises(InvalidParameterError, match="sequence of directories"):
        TrainConfig(teacher="exact", teacher_data="data/peak", imitation_epochs=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="device"):
        TrainConfig(device="gpu0")
    with pytest.raises(InvalidParameterError, match="not a teacher data set"):
        train(
            TrainConfig(teacher="exact", teacher_data=(str(tmp_path),), imitation_epochs=1, epochs=1),
            tmp_path / "r",
            epoch_graphs,
        )


def test_partition_teachers_are_proven_optimal_partitions_as_orders(mtpp_data: Path) -> None:
    assert read_spec(mtpp_data).ks == (2, 3)  # sorted
    examples = load_examples(mtpp_data)
    assert [(e.index, e.k) for e in examples] == [(i, k) for i in range(3) for k in (2, 3)]
    for e in examples:
        assert e.graph == example_graph(MTPP_SPEC, e.index)
        assert is_topological(e.graph, e.order)
        assert e.value == pytest.approx(float(Bottleneck(e.k).order_costs(e.graph, e.order)[0]), rel=1e-12)
        opt = down_set_optimum(Problem(e.graph, e.k))
        assert e.optimal and e.value == pytest.approx(opt, rel=1e-9)
        assert e.lower_bound <= opt * (1 + 1e-9)


def test_imitating_a_partition_lists_its_blocks(mtpp_data: Path) -> None:
    """The bottleneck's imitation target is the teacher's blocks, not its order inside
    them: after fitting, greedy decoding slices to the teacher's (optimal) bottleneck."""
    example = next(e for e in load_examples(mtpp_data) if e.k == 3)
    objective = Bottleneck(3)
    torch.manual_seed(0)
    model = Topoformer(TrainConfig(dim=16, layers=2, head_dim=4).model_config())
    e = Encoded.of(example.graph)
    target = teacher_target(example.graph, example.order, "cpu", objective.blocks(example.graph, example.order))
    assert int(target[2].sum()) > example.graph.n  # some step offers more than the teacher's op
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        optimiser.zero_grad()
        loss = imitation_loss(model, [(e, target)])
        loss.backward()
        optimiser.step()
    assert float(loss.detach()) < 0.05
    greedy = greedy_order(example.graph, model(e.x, e.relation).detach().double().numpy())
    assert float(objective.order_costs(example.graph, greedy)[0]) == pytest.approx(example.value, rel=1e-12)


def test_a_partition_becomes_an_order_of_contiguous_blocks() -> None:
    for seed in range(6):
        graph = regal_graph(40, seed=seed)
        problem = Problem(graph, 5)
        found = partition(graph, 5, orderer="random-20", seed=seed)
        tie = np.random.default_rng(seed).permutation(graph.n)  # not even topological
        order = partition_order(problem, found.assignment, tie)
        assert is_topological(graph, order)
        blocks = found.assignment[order]
        assert np.count_nonzero(np.diff(blocks)) == len(np.unique(blocks)) - 1  # each block in one run
        sliced = float(Bottleneck(5).order_costs(graph, order)[0])
        assert sliced <= evaluate(problem, found.assignment).bottleneck * (1 + 1e-12)


def test_teacher_examples_match_the_run_objective_and_k(data: Path, mtpp_data: Path) -> None:
    assert {e.k for e in teacher_examples((str(mtpp_data),), 0.0, "mtpp", 3)} == {3}
    assert len(teacher_examples((str(mtpp_data), str(mtpp_data)), 0.0, "mtpp", 2)) == 6
    with pytest.raises(InvalidParameterError, match="holds 'peak' labels; this run trains 'mtpp'"):
        teacher_examples((str(data),), 0.0, "mtpp", 2)
    with pytest.raises(InvalidParameterError, match=r"partitions for k in \[2, 3\]; this run trains k = 8"):
        teacher_examples((str(mtpp_data),), 0.0, "mtpp", 8)
    with pytest.raises(InvalidParameterError, match="holds 'mtpp' labels"):
        teacher_examples((str(mtpp_data),), 0.0, "peak")


def test_a_version_1_data_set_is_still_read(data: Path, tmp_path: Path) -> None:
    old = tmp_path / "v1"
    old.mkdir()
    doc = json.loads((data / MANIFEST).read_text())
    doc["version"] = 1
    del doc["spec"]["ks"]
    (old / MANIFEST).write_text(json.dumps(doc))
    for shard in range(SPEC.shards):
        with np.load(shard_path(data, shard)) as z:
            np.savez(shard_path(old, shard), **{k: z[k] for k in z.files if k != "k"})
    assert read_spec(old) == SPEC
    for a, b in zip(load_examples(old), load_examples(data)):
        assert a.k == b.k == 0 and a.graph == b.graph and np.array_equal(a.order, b.order)
    doc["version"] = 3
    (old / MANIFEST).write_text(json.dumps(doc))
    with pytest.raises(InvalidParameterError, match="version 3; this mtpp reads versions 1, 2"):
        read_spec(old)


def test_training_on_proven_partitions(mtpp_data: Path, tmp_path: Path) -> None:
    tiny = dict(imitation_epochs=2, epochs=2, graphs_per_epoch=3, batch=2, nodes=(8, 10), validation=2)
    config = TrainConfig(
        objective="mtpp", k=3, teacher="exact", teacher_data=(str(mtpp_data),), dim=8, layers=1, head_dim=4, **tiny
    )
    result = train(config, tmp_path / "run", epoch_graphs)
    assert [row["phase"] for row in result.history] == [1.0, 1.0]
    meta = torch.load(result.weights, weights_only=True)["meta"]
    assert meta["objective"] == "mtpp" and meta["teacher_examples"] == MTPP_SPEC.count
    regal = RegalTrainConfig(
        objective="mtpp", k=2, teacher="exact", teacher_data=(str(mtpp_data),), evaluations=20, **tiny
    )
    assert [row["phase"] for row in train_regal(regal, tmp_path / "regal", epoch_graphs).history] == [1.0, 1.0]


def test_imitation_batches_group_graphs_of_similar_size() -> None:
    sizes = np.random.default_rng(4).integers(100, 900, size=50).tolist()
    groups = size_batches(sizes, 8, seed=1, epoch=3)
    assert sorted(i for g in groups for i in g) == list(range(50))
    assert sorted(len(g) for g in groups) == [2, 8, 8, 8, 8, 8, 8]
    spans = sorted((min(sizes[i] for i in g), max(sizes[i] for i in g)) for g in groups)
    assert all(hi <= lo for (_, hi), (lo, _) in itertools.pairwise(spans))  # the batches do not interleave
    assert groups == size_batches(sizes, 8, seed=1, epoch=3)
    assert groups != size_batches(sizes, 8, seed=1, epoch=4)  # a fresh batch order every epoch


def test_real_model_like_graphs_are_labelled_like_the_generated_ones(tmp_path: Path) -> None:
    spec = DataSpec(family="models", nodes=(60, 120), count=2, seed=4, time_limit=60.0, shard_size=2)
    build_teacher_data(tmp_path, spec)
    examples = load_examples(tmp_path)
    assert [e.index for e in examples] == [0, 1]
    for e in examples:
        model = example_graph(spec, e.index)  # rebuilt from the seed: the same model and costs
        assert model.name.split("-")[0] in ("transformer", "resnet")
        edges = np.stack([model.edge_src, model.edge_dst], axis=1)
        assert e.graph == Graph.from_arrays(model.work, model.size_param, model.size_out, edges)  # shards keep no ids
        assert is_topological(e.graph, e.order)
        assert e.value == pytest.approx(peak_memory(e.graph, e.order), rel=1e-12)
        assert e.lower_bound <= e.value * (1 + 1e-12)


def test_random_models_land_near_their_target_size() -> None:
    from mtpp.io.random_models import KINDS, random_model_graph

    kinds = set()
    for i in range(4):
        rng = np.random.default_rng([9, i])
        target = int(rng.integers(150, 251))
        g = random_model_graph(target, rng)
        kinds.add(g.name.split("-")[0])
        assert abs(g.n - target) <= target / 2  # within one block: 40-90 ops a block at these widths
        assert g.work.sum() > 0 and g.size_out.sum() > 0
    assert kinds <= set(KINDS) and len(kinds) == 2
