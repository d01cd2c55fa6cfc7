"""One JSON vocabulary across solve / certify / schedule / place / evaluate, checked
against the schema models and against the independent evaluators."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mtpp
from mtpp.cli import main
from mtpp.core.memory import peak_memory
from mtpp.generators import regal_graph
from mtpp.results_schema import DOCUMENTS
from tests.oracle import random_dag

COMMON = (
    "format",
    "version",
    "mtpp_version",
    "graph",
    "n",
    "m",
    "units",
    "objective",
    "upper_bound",
    "lower_bound",
    "lower_bound_method",
    "gap",
    "optimal",
    "wall_time",
)


def check_document(doc: dict, fmt: str) -> None:
    """The common vocabulary, the schema, and gap / optimal consistent with the bounds."""
    assert doc["format"] == fmt and doc["version"] == 1 and doc["mtpp_version"] == mtpp.__version__
    assert set(COMMON) <= doc.keys()
    DOCUMENTS[fmt].model_validate(doc)
    ub, lb = doc["upper_bound"], doc["lower_bound"]
    if lb is not None:
        assert lb <= ub * (1 + 1e-9) + 1e-12
        assert doc["gap"] == pytest.approx(0.0 if ub == 0 else (ub - lb) / ub)
    if doc["optimal"]:  # within the certificate's tolerance (relative 1e-5, absolute below 1)
        assert ub - lb <= 1e-5 * max(1.0, abs(ub))


def check_blocks(doc: dict, problem: mtpp.Problem) -> None:
    """Blocks and their cost terms are what the independent evaluator says."""
    g = problem.graph
    assignment = {next(v for v in g.ids if str(v) == key): b for key, b in doc["assignment"].items()}
    ev = mtpp.evaluate(problem, assignment, [g.index(v) for v in doc["order"]])
    assert doc["upper_bound"] == pytest.approx(ev.bottleneck)
    assert doc["bottleneck_block"] == ev.bottleneck_block
    assert [b["block"] for b in doc["blocks"]] == list(range(problem.k))
    for b, rec in enumerate(doc["blocks"]):
        assert rec["cost"] == pytest.approx(ev.costs.total[b])
        assert rec["cost"] == pytest.approx(rec["input_io"] + rec["work"] + rec["overflow"] + rec["output_io"])
        assert all(assignment[v] == b for v in rec["nodes"])
    assert sum(len(rec["nodes"]) for rec in doc["blocks"]) == g.n


def test_solve_certify_evaluate_share_one_vocabulary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = random_dag(np.random.default_rng(3), 14, p=0.3)
    path = str(tmp_path / "g.json")
    g.to_json(path)
    machine = ["--bandwidth", "2", "--memory", str(float(g.size_param.max()) * 2), "--reserve", "1"]
    problem = mtpp.Problem(g, 3, bandwidth=2.0, memory=float(g.size_param.max()) * 2, reserve=1.0)
    sol = tmp_path / "sol.json"
    assert main(["solve", path, "-k", "3", "--orderer", "random-10", *machine, "--json", "-o", str(sol)]) == 0
    solved = json.loads(capsys.readouterr().out)
    assert solved == json.loads(sol.read_text())
    check_document(solved, "mtpp-solution")
    check_blocks(solved, problem)
    cert_file = tmp_path / "cert.json"
    assert (
        main(
            [
                "certify",
                path,
                "-k",
                "3",
                "--bounds",
                "simple,bottleneck",
                "--solver",
                "highs",
                "--orderer",
                "kahn",
                "--time-limit",
                "20",
                *machine,
                "--json",
                "-o",
                str(cert_file),
            ]
        )
        == 0
    )
    cert = json.loads(capsys.readouterr().out)
    check_document(cert, "mtpp-certificate")
    check_blocks(cert, problem)
    assert [b["method"] for b in cert["bounds"]] == ["simple", "bottleneck"]
    # evaluate prices a solution file on the machine stored in it, not on the defaults
    assert main(["evaluate", path, str(sol), "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    check_document(checked, "mtpp-evaluation")
    assert (checked["k"], checked["bandwidth"], checked["reserve"]) == (3, 2.0, 1.0)
    assert checked["upper_bound"] == pytest.approx(solved["upper_bound"])
    assert main(["evaluate", path, str(cert_file), "--json"]) == 0  # a certificate file too
    assert json.loads(capsys.readouterr().out)["upper_bound"] == pytest.approx(cert["upper_bound"])
    # an option given on the command line wins over the file's value
    assert main(["evaluate", path, str(sol), "--bandwidth", "1", "--json"]) == 0
    repriced = json.loads(capsys.readouterr().out)
    ours = mtpp.Problem(g, 3, bandwidth=1.0, memory=problem.memory, reserve=1.0)
    check_blocks(repriced, ours)


def test_schedule_and_place_documents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = random_dag(np.random.default_rng(4), 9, p=0.4)
    path = str(tmp_path / "g.json")
    g.to_json(path)
    assert main(["schedule", path, "--method", "exact-dp", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    check_document(doc, "mtpp-schedule")
    assert doc["upper_bound"] == pytest.approx(peak_memory(g, [g.index(v) for v in doc["order"]]))
    assert main(["place", path, "--devices", "two-devices", "--method", "heft", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    check_document(doc, "mtpp-placement")
    assert doc["objective"] == "runtime" and set(doc["assignment"]) == {str(v) for v in g.ids}
    assert doc["upper_bound"] == pytest.approx(doc["makespan"])


def test_huge_k_solution_serialises_in_linear_time() -> None:
    """k = 10^9 blocks on 4 ops is the problem k = 4 (k is clamped to n; the old to_dict
    was O(k^2): hours at k = 10^6)."""
    g = mtpp.Graph.from_arrays(np.ones(4), np.zeros(4), np.ones(4), np.array([[0, 1], [1, 2], [2, 3]]))
    sol = mtpp.partition(g, 10**9, orderer="kahn")
    doc = json.loads(sol.to_json(indent=None))
    assert doc["k"] == 4 and sol.problem.requested_k == 10**9
    assert len(doc["blocks"]) == 4 and sum(len(b["nodes"]) for b in doc["blocks"]) == 4
    assert doc["upper_bound"] == pytest.approx(max(b["cost"] for b in doc["blocks"]))


def test_json_parses_when_highs_chatters(tmp_path: Path) -> None:
    """A real process: HiGHS 1.12 prints a debug line from C on this graph's guess sub-MIPs
    (seen on stderr now; the solver layer may silence it); stdout stays one document."""
    path = tmp_path / "regal.json"
    regal_graph(40, seed=1).to_json(str(path))
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mtpp",
            "certify",
            str(path),
            "-k",
            "4",
            "--solver",
            "highs",
            "--bounds",
            "simple,guess",
            "--time-limit",
            "3",
            "--no-fill",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    check_document(doc, "mtpp-certificate")
    assert all(math.isfinite(rec["cost"]) for rec in doc["blocks"])


def test_a_command_budget_counts_from_its_start() -> None:
    """--budget / --time-limit cap the command as a user waits for it: what it already
    took (reading the graph; from a shell also the interpreter and imports) is taken off;
    a command run in-process counts from its call."""
    import time

    from mtpp.cli.output import MIN_LEFT, OUTPUT_SECONDS_PER_OP, elapsed, process_age, remaining, start_clock

    start_clock(with_startup=False)
    assert elapsed() < 1.0
    time.sleep(0.05)
    assert elapsed() >= 0.04
    start_clock(with_startup=True)
    assert elapsed() >= process_age() - 0.01 > 0
    assert remaining(None) is None
    assert remaining(1e6) <= 1e6 - elapsed() + 0.01
    left = remaining(1e6, ops=10**6)  # writing a million-op result is kept back
    assert left is not None and left <= 1e6 - elapsed() - 10**6 * OUTPUT_SECONDS_PER_OP + 0.01
    assert remaining(elapsed() / 2) == MIN_LEFT  # already spent: the least, never a negative limit
    for bad in (0.0, -1.0, float("nan"), float("inf")):  # passed on for the API to accept or name
        assert remaining(bad) is bad
    start_clock(with_startup=False)
