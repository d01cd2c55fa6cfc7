"""The learned orderers through the public entry points: CLI, partition, schedule."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from heuristics.partition.orderers import get_orderer
from mtpp import Problem, evaluate
from mtpp.cli import main
from mtpp.core.errors import InvalidParameterError
from mtpp.core.memory import peak_memory
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph
from mtpp.partitioner import partition
from mtpp.scheduling import schedule
from tests.oracle import is_topological

TINY = ["--epochs", "1", "--graphs-per-epoch", "2", "--nodes", "12", "16", "--validation", "2"]


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Weights of a one-epoch Topoformer and REGAL run for each objective, made by `mtpp train`."""
    out = {}
    root = tmp_path_factory.mktemp("train")
    for model in ("topoformer", "regal"):
        for objective in ("peak", "mtpp"):
            d = root / f"{model}-{objective}"
            extra = ["--dim", "16", "--layers", "1"] if model == "topoformer" else ["--evaluations", "40"]
            assert main(["train", model, "--objective", objective, "-k", "3", "--out", str(d), *TINY, *extra]) == 0
            assert (d / "weights.pt").is_file() and (d / "history.json").is_file()
            out[f"{model}-{objective}"] = d / "weights.pt"
    return out


@pytest.mark.parametrize(
    "orderer", ["topoformer", "topoformer-sample-4", "topoformer-beam-4", "topoformer-brkga-60", "regal-brkga-60"]
)
def test_partition_with_learned_orderers_is_rechecked(weights: dict[str, Path], orderer: str) -> None:
    g = regal_graph(40, seed=3)
    w = weights["regal-mtpp" if orderer.startswith("regal") else "topoformer-mtpp"]
    sol = partition(g, 4, orderer=orderer, weights=str(w), seed=1)
    assert sol.bottleneck == pytest.approx(evaluate(Problem(g, 4), sol.assignment, sol.order).bottleneck)
    assert sol.lower_bound <= sol.bottleneck * (1 + 1e-9)
    again = partition(g, 4, orderer=orderer, weights=str(w), seed=1)
    assert again.bottleneck == sol.bottleneck


@pytest.mark.parametrize(
    "method", ["topoformer", "topoformer-sample", "topoformer-beam", "topoformer-brkga", "regal-brkga"]
)
def test_schedule_with_learned_methods(weights: dict[str, Path], method: str) -> None:
    g = layered_graph(50, seed=2)
    w = weights["regal-peak" if method.startswith("regal") else "topoformer-peak"]
    s = schedule(g, method=method, weights=str(w), time_limit=30)
    order = np.asarray(s.index_order)
    assert is_topological(g, order) and s.peak == pytest.approx(peak_memory(g, order))
    assert s.lower_bound <= s.peak


def test_cli_solve_and_schedule_take_weights(weights: dict[str, Path], tmp_path: Path, capsys) -> None:
    path = tmp_path / "g.json"
    regal_graph(30, seed=5).to_json(str(path))
    assert (
        main(
            [
                "solve",
                str(path),
                "-k",
                "3",
                "--orderer",
                "topoformer",
                "--weights",
                str(weights["topoformer-mtpp"]),
                "--json",
            ]
        )
        == 0
    )
    sol = json.loads(capsys.readouterr().out)
    assert sol["orderer"] == "topoformer"
    assert main(["schedule", str(path), "--method", "topoformer", "--weights", str(weights["topoformer-peak"])]) == 0
    assert "best peak" in capsys.readouterr().out
    assert main(["solve", str(path), "-k", "3", "--orderer", "topoformer", "--weights", str(tmp_path / "nope.pt")]) == 2
    assert "WeightsError" in capsys.readouterr().err


def test_weights_only_for_learned_orderers() -> None:
    with pytest.raises(InvalidParameterError, match="has no weights"):
        get_orderer("brkga-100", weights="x.pt")
    with pytest.raises(InvalidParameterError, match="takes no weights"):
        schedule(layered_graph(20, seed=0), method="dfs", weights="x.pt")
    with pytest.raises(InvalidParameterError, match="unknown orderer"):
        get_orderer("topoformer-greedy")


def test_missing_torch_is_a_typed_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from mtpp.core.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    g = regal_graph(20, seed=1)
    for orderer in ("topoformer", "topoformer-brkga-50", "regal-brkga-50"):
        with pytest.raises(MissingDependencyError, match=r"mtpp\[neural\]"):
            partition(g, 3, orderer=orderer)
    for method in ("topoformer-brkga", "regal-brkga"):
        with pytest.raises(MissingDependencyError, match=r"mtpp\[neural\]"):
            schedule(g, method=method)


def test_cli_builds_teacher_data_and_trains_on_it(tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    build = [
        "train",
        "data",
        "--out",
        str(data),
        "--teacher-count",
        "3",
        "--teacher-nodes",
        "8",
        "10",
        "--teacher-time-limit",
        "120",
    ]
    assert main(build) == 0
    assert "teacher data set" in capsys.readouterr().out
    assert sorted(p.name for p in data.iterdir()) == ["manifest.json", "shard-00000.npz"]
    run = ["train", "topoformer", "--out", str(tmp_path / "run"), "--teacher", "exact", "--teacher-data", str(data)]
    assert main([*run, "--imitation-epochs", "1", "--dim", "8", "--layers", "1", *TINY]) == 0
    assert json.loads((tmp_path / "run" / "history.json").read_text())[0]["phase"] == 1.0
    regal = ["train", "regal", "--objective", "peak", "--out", str(tmp_path / "r"), "--teacher", "exact"]
    assert main([*regal, "--teacher-data", str(data), "--imitation-epochs", "1", "--evaluations", "20", *TINY]) == 0
    assert json.loads((tmp_path / "r" / "history.json").read_text())[0]["phase"] == 1.0
    assert main(["train", "regal", "--out", str(tmp_path / "r2"), "--device", "cuda"]) == 2
    assert "option of 'mtpp train topoformer'" in capsys.readouterr().err
    assert main(["train", "data", "--out", str(data), "--teacher-count", "4"]) == 0  # its own spec resumes


def test_cli_builds_partition_data_and_trains_on_it(tmp_path: Path, capsys) -> None:
    data = tmp_path / "parts"
    build = ["train", "data", "--objective", "mtpp", "--teacher-ks", "3", "2", "--out", str(data)]
    assert main([*build, "--teacher-count", "2", "--teacher-nodes", "8", "9", "--teacher-time-limit", "60"]) == 0
    spec = json.loads((data / "manifest.json").read_text())["spec"]
    assert (spec["objective"], spec["family"], spec["ks"], spec["count"]) == ("mtpp", "regal", [2, 3], 2)
    run = ["train", "topoformer", "--objective", "mtpp", "-k", "3", "--teacher", "exact", "--teacher-data", str(data)]
    small = ["--imitation-epochs", "1", "--dim", "8", "--layers", "1", *TINY]
    assert main([*run, "--out", str(tmp_path / "run"), *small]) == 0
    assert json.loads((tmp_path / "run" / "history.json").read_text())[0]["phase"] == 1.0
    capsys.readouterr()
    assert main([*run[:5], "8", *run[6:], "--out", str(tmp_path / "r8"), "--imitation-epochs", "1", *TINY]) == 2
    assert "this run trains k = 8" in capsys.readouterr().err
    assert main(["train", "data", "--out", str(tmp_path / "peak"), "--teacher-ks", "4"]) == 2
    assert "ks are for objective 'mtpp'" in capsys.readouterr().err


def test_a_learned_incumbent_seeds_the_search(weights: dict[str, Path]) -> None:
    g = layered_graph(40, seed=9)
    plain = schedule(g, method="search", time_limit=30)
    seeded = schedule(
        g, method="search", time_limit=30, incumbent="topoformer", weights=str(weights["topoformer-peak"])
    )
    stages = [st.method for st in seeded.stages]
    assert stages.index("topoformer") == stages.index("random") + 1  # right after the quick orders
    assert seeded.optimal and plain.optimal and seeded.peak == pytest.approx(plain.peak, rel=1e-12)
    assert is_topological(g, seeded.index_order)
    with pytest.raises(InvalidParameterError, match="takes no incumbent"):
        schedule(g, method="dfs", incumbent="topoformer")
    with pytest.raises(InvalidParameterError, match="incumbent must be one of"):
        schedule(g, method="search", incumbent="brkga")
