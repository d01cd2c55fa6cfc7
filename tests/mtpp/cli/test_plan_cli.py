"""``mtpp plan``: a PyTorch model from a factory to stages, certificate and baselines;
one-line errors with exit 2 for bad input and for a missing torch."""

from __future__ import annotations

import builtins
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mtpp.cli import main

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

SCRIPT = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(256, 512)
        self.fc1 = nn.Linear(512, 1024)
        self.fc2 = nn.Linear(1024, 512)
        self.fc3 = nn.Linear(512, 64)

    def forward(self, x):
        h = self.fc0(x)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(h))) + h))


def factory():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(64, 256),)


def bare():
    torch.manual_seed(0)
    return Net().eval()


not_callable = 3
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("plan") / "net.py"
    path.write_text(SCRIPT)
    return str(path)


def one_error_line(capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("mtpp: error: "), err
    for needle in needles:
        assert needle in err, err


def test_plan_prints_stages_certificate_and_baselines(script: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", f"{script}:factory", "-k", "3", "--time-limit", "5"]) == 0
    out = capsys.readouterr().out
    for needle in ("stages on a100", "split_spec", "upper bound", "lower bound", "LB / UB", "by rule"):
        assert needle in out, out
    for rule in ("mtpp", "deepspeed-uniform", "deepspeed-parameters", "torchgpipe-time"):
        assert rule in out


def test_plan_json_matches_the_api(script: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mtpp.pipelining import plan_pipeline

    saved = tmp_path / "plan.json"
    argv = ["plan", f"{script}:bare", "-k", "5", "--input-shape", "64,256", "--time-limit", "5", "--json"]
    assert main([*argv, "-o", str(saved), "--device", "a100"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == json.loads(saved.read_text())
    assert doc["kind"] == "mtpp-pipeline-plan" and doc["k"] == 5 and len(doc["stages"]) <= 5
    assert [b["rule"] for b in doc["baselines"]] == ["deepspeed-uniform", "deepspeed-parameters", "torchgpipe-time"]
    assert doc["stages"][0]["first_op"] == 0 and doc["stages"][-1]["last_op"] == doc["n"] - 1
    assert doc["ratio"] == pytest.approx(doc["lower_bound"] / doc["bottleneck"])
    assert any("not expressible" in note for note in doc["notes"])  # fc1 cannot be cut on both sides
    torch.manual_seed(0)
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location("net_for_test", script)
    assert spec is not None and spec.loader is not None
    net = module_from_spec(spec)
    spec.loader.exec_module(net)
    model, example = net.factory()
    plan = plan_pipeline(model, example, 5, time_limit=5)
    assert doc["bottleneck"] == pytest.approx(plan.bottleneck)
    assert doc["split_spec"] == {m: p.name for m, p in plan.split_spec.items()}


def test_a_module_in_the_current_directory_names_the_factory(
    script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plan_cli_netmod.py").write_text(Path(script).read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    argv = ["plan", "plan_cli_netmod:factory", "-k", "2", "--time-limit", "5", "--json", "--no-baselines"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == "plan_cli_netmod:factory" and doc["baselines"] == [] and len(doc["stages"]) == 2


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["plan", "nocolon", "-k", "2"], ["MODULE:FACTORY"]),
        (["plan", "missing/script.py:f", "-k", "2"], ["no such script"]),
        (["plan", "no_such_module_xyz:f", "-k", "2"], ["cannot import"]),
        (["plan", "{script}:absent", "-k", "2"], ["has no attribute 'absent'"]),
        (["plan", "{script}:not_callable", "-k", "2"], ["not callable"]),
        (["plan", "{script}:bare", "-k", "2"], ["give --input-shape"]),
        (["plan", "{script}:bare", "-k", "2", "--input-shape", "64,x"], ["--input-shape"]),
        (["plan", "{script}:factory", "-k", "0"], ["-k must be a positive integer"]),
        (["plan", "{script}:factory", "-k", "2", "--time-limit", "0"], ["--time-limit"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    script: str, argv: list[str], needles: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([a.replace("{script}", script) for a in argv]) == 2
    one_error_line(capsys, *needles)


def test_missing_torch_is_a_clear_error(
    script: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = builtins.__import__

    def no_torch(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    assert main(["plan", f"{script}:factory", "-k", "2"]) == 2
    one_error_line(capsys, "MissingDependencyError", "needs torch", "pip install")
