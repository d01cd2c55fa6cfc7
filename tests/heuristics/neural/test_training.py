"""Topoformer training (REINFORCE, Eq. 9-10), weights files and inference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from heuristics.neural.inference import load_topoformer, topoformer_order, topoformer_priorities, weights_meta
from heuristics.neural.objectives import Bottleneck, PeakMemory
from heuristics.neural.training import CHECKPOINT, HISTORY, PLOT, TrainConfig, train
from heuristics.neural.weights import SHIPPED, load_weights, save_weights
from mtpp.core.errors import InvalidParameterError, WeightsError
from mtpp.core.memory import peak_memory
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph
from mtpp.generators.training import epoch_graphs
from tests.oracle import is_topological

TINY = {
    "nodes": (12, 20),
    "graphs_per_epoch": 4,
    "batch": 2,
    "samples": 3,
    "validation": 3,
    "dim": 16,
    "layers": 1,
    "head_dim": 4,
    "imitation_epochs": 1,
    "teacher_effort": 8,
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("topo")
    train(TrainConfig(objective="peak", epochs=2, **TINY), out, epoch_graphs)
    return out


def test_training_writes_everything_and_the_weights_load(trained: Path) -> None:
    history = json.loads((trained / HISTORY).read_text())
    assert [row["epoch"] for row in history] == [1, 2]
    assert [row["phase"] for row in history] == [1.0, 0.0]  # imitation, then REINFORCE
    assert all(np.isfinite(row["loss"]) and row["val_ratio_vs_classic"] > 0 for row in history)
    assert (trained / CHECKPOINT).is_file() and (trained / PLOT).stat().st_size > 1000
    meta = weights_meta(trained / "weights.pt")
    assert meta["objective"] == "peak" and meta["epochs"] == 2
    g = layered_graph(40, seed=5)
    y1 = topoformer_priorities(g, trained / "weights.pt")
    y2 = topoformer_priorities(g, str(trained / "weights.pt"))
    assert np.array_equal(y1, y2) and np.isfinite(y1).all()


def test_resume_continues_the_same_run(trained: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    train(TrainConfig(objective="peak", epochs=3, **TINY), fresh, epoch_graphs)
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    for name in (CHECKPOINT,):
        (resumed / name).write_bytes((trained / name).read_bytes())
    result = train(TrainConfig(objective="peak", epochs=3, **TINY), resumed, epoch_graphs)
    a = json.loads((fresh / HISTORY).read_text())
    b = result.history
    assert len(b) == 3
    for ra, rb in zip(a, b):
        assert ra["loss"] == pytest.approx(rb["loss"], rel=1e-5, abs=1e-7)
        assert ra["val_ratio_vs_classic"] == pytest.approx(rb["val_ratio_vs_classic"], rel=1e-9)
    with pytest.raises(InvalidParameterError, match="other training options"):
        train(TrainConfig(objective="peak", epochs=4, **{**TINY, "samples": 2}), resumed, epoch_graphs)


class _FakeClock:
    """``time.monotonic`` advancing ``step`` seconds per reading."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_epoch_clock_stops_before_an_epoch_that_would_end_late(monkeypatch: pytest.MonkeyPatch) -> None:
    import heuristics.neural.runs as runs

    monkeypatch.setattr(runs.time, "monotonic", _FakeClock(10.0))
    clock = runs.EpochClock(45.0)  # started at 10, deadline 55: 10-s epochs start at 20 and 40, not at 60
    epochs = 0
    while clock.room():
        epochs += 1
        clock.lap()
    assert epochs == 2
    assert runs.EpochClock(None).room()
    with pytest.raises(InvalidParameterError, match="time_limit"):
        runs.EpochClock(0)


def test_a_time_limited_run_writes_its_weights_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import heuristics.neural.runs as runs

    monkeypatch.setattr(runs.time, "monotonic", _FakeClock(10.0))
    result = train(TrainConfig(objective="peak", epochs=3, **TINY), tmp_path, epoch_graphs, time_limit=45.0)
    assert len(result.history) == 2 and weights_meta(result.weights)["epochs"] == 2
    monkeypatch.undo()
    resumed = train(TrainConfig(objective="peak", epochs=3, **TINY), tmp_path, epoch_graphs)
    assert [row["epoch"] for row in resumed.history] == [1, 2, 3]


@pytest.mark.parametrize("mode", ["greedy", "sample", "beam"])
def test_decoded_orders_are_valid_and_priced_right(trained: Path, mode: str) -> None:
    g = layered_graph(60, seed=2)
    found = topoformer_order(g, PeakMemory(), trained / "weights.pt", mode, count=4, seed=1)
    assert is_topological(g, found.order)
    assert found.cost == pytest.approx(peak_memory(g, found.order))
    greedy = topoformer_order(g, PeakMemory(), trained / "weights.pt", "greedy")
    assert found.cost <= greedy.cost  # sampling and beam keep the greedy order as a candidate
    with pytest.raises(InvalidParameterError, match="mode"):
        topoformer_order(g, PeakMemory(), trained / "weights.pt", "nucleus")


@pytest.mark.parametrize("name", ["topoformer-peak", "topoformer-mtpp"])
def test_shipped_weights_load_offline_and_decode_deterministically(name: str) -> None:
    g = regal_graph(80, seed=11)
    objective = PeakMemory() if name.endswith("peak") else Bottleneck(4)
    a = topoformer_order(g, objective, name)
    b = topoformer_order(g, objective, name)
    assert np.array_equal(a.order, b.order) and is_topological(g, a.order)
    assert isinstance(load_topoformer(name), torch.nn.Module)
    assert weights_meta(name)["objective"] == name.split("-")[1]


def test_bad_weights_give_clear_errors(trained: Path, tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match="no weights file"):
        load_topoformer(tmp_path / "missing.pt")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a torch file at all")
    with pytest.raises(WeightsError, match="not a readable weights file"):
        load_topoformer(junk)
    foreign = tmp_path / "foreign.pt"
    torch.save({"hello": torch.zeros(2)}, foreign)
    with pytest.raises(WeightsError, match="not an mtpp weights file"):
        load_topoformer(foreign)
    good = load_weights(trained / "weights.pt", "topoformer")
    with pytest.raises(WeightsError, match="not 'regal'"):
        load_weights(trained / "weights.pt", "regal")
    broken = tmp_path / "broken.pt"
    state = dict(good.state_dict)
    state.pop(next(iter(state)))
    save_weights(broken, "topoformer", good.config, state, good.meta)
    with pytest.raises(WeightsError, match="does not fit"):
        load_topoformer(broken)
    assert set(SHIPPED) >= {"topoformer-peak", "topoformer-mtpp", "regal-peak", "regal-mtpp"}


def test_init_starts_from_trained_weights(trained: Path, tmp_path: Path) -> None:
    """``init``: the run starts from the given policy (stopped before its first epoch, it
    ships exactly those weights); a model of another shape is a WeightsError."""
    init = str(trained / "weights.pt")
    run = train(
        TrainConfig(objective="peak", epochs=1, init=init, **TINY), tmp_path / "a", epoch_graphs, time_limit=1e-9
    )
    assert run.history == []
    given, shipped = load_weights(init, "topoformer").state_dict, load_weights(run.weights, "topoformer").state_dict
    assert given.keys() == shipped.keys() and all(torch.equal(given[k], shipped[k]) for k in given)
    with pytest.raises(WeightsError, match="does not fit"):
        train(TrainConfig(objective="peak", epochs=1, init=init, **{**TINY, "dim": 32}), tmp_path, epoch_graphs)


def test_bad_training_options() -> None:
    with pytest.raises(InvalidParameterError, match="objective"):
        TrainConfig(objective="latency")
    with pytest.raises(InvalidParameterError, match="samples"):
        TrainConfig(samples=0)
    with pytest.raises(InvalidParameterError, match="nodes"):
        TrainConfig(nodes=(50, 10))
    with pytest.raises(InvalidParameterError, match="unknown TrainConfig options"):
        TrainConfig.from_dict({"epochz": 3})
    with pytest.raises(InvalidParameterError, match="dropout"):
        TrainConfig(dropout=1.0)
