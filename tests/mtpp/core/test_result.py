"""One result contract (mtpp/core/result.py): partition, certify, schedule and place all
return a Result with the same fields, the domain aliases, node-id orders, and the
documented JSON document from to_json()."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import mtpp
from mtpp.core.result import Result, ResultStatus, relative_gap
from mtpp.core.status import SOLVER_STATUSES
from mtpp.results_schema import DOCUMENTS, CertificatesDocument
from solvers.result import Status
from tests.oracle import random_dag


@pytest.fixture(scope="module")
def graph() -> mtpp.Graph:
    return random_dag(np.random.default_rng(5), 9, p=0.35)


@pytest.fixture(scope="module")
def results(graph: mtpp.Graph) -> dict[str, Result]:
    return {
        "mtpp-solution": mtpp.partition(graph, 3, orderer="kahn"),
        "mtpp-certificate": mtpp.certify(graph, 3, bounds="simple,cut,ideal-dp", orderer="kahn"),
        "mtpp-schedule": mtpp.schedule(graph, method="auto", time_limit=10, threads=1),
        "mtpp-placement": mtpp.place(graph, "two-devices", method="heft", time_limit=2, threads=1),
    }


@pytest.mark.parametrize("fmt", ["mtpp-solution", "mtpp-certificate", "mtpp-schedule", "mtpp-placement"])
def test_every_result_speaks_the_same_contract(fmt: str, results: dict[str, Result], graph: mtpp.Graph) -> None:
    r = results[fmt]
    assert isinstance(r, Result)
    ub, lb = r.upper_bound, r.lower_bound  # type: ignore[attr-defined]
    assert math.isfinite(ub) and 0 <= lb <= ub * (1 + 1e-9)
    assert r.gap == relative_gap(ub, lb) and 0 <= r.gap <= 1
    status = r.status  # type: ignore[attr-defined]
    assert isinstance(status, ResultStatus) and (status == ResultStatus.OPTIMAL) == r.optimal  # type: ignore[attr-defined]
    assert r.wall_time >= 0  # type: ignore[attr-defined]
    steps = r.steps  # type: ignore[attr-defined]
    assert steps and all(isinstance(s.status, ResultStatus) for s in steps)
    assert max(s.lower_bound for s in steps if s.lower_bound is not None) == pytest.approx(lb)
    order = list(r.order)  # type: ignore[attr-defined]
    assert sorted(map(str, order)) == sorted(map(str, graph.ids))  # node ids, every op once
    doc = json.loads(r.to_json())
    assert doc["format"] == fmt and doc == r.to_dict()
    parsed = DOCUMENTS[fmt].model_validate(doc)
    assert parsed.upper_bound == pytest.approx(ub) and parsed.optimal == r.optimal  # type: ignore[attr-defined]
    assert parsed.gap == pytest.approx(r.gap)


def test_domain_names_are_aliases(results: dict[str, Result]) -> None:
    sol, cert = results["mtpp-solution"], results["mtpp-certificate"]
    sched, place = results["mtpp-schedule"], results["mtpp-placement"]
    assert sol.bottleneck == sol.upper_bound  # type: ignore[attr-defined]
    assert sched.peak == sched.upper_bound  # type: ignore[attr-defined]
    assert place.makespan == place.upper_bound  # type: ignore[attr-defined]  # objective "runtime"
    assert cert.gap_percent == pytest.approx(100 * cert.gap)  # type: ignore[attr-defined]


def test_one_status_vocabulary_for_solves_and_results() -> None:
    assert Status is ResultStatus and mtpp.ResultStatus is ResultStatus
    assert SOLVER_STATUSES < set(ResultStatus) and ResultStatus.FEASIBLE not in SOLVER_STATUSES
    assert ResultStatus.OPTIMAL == "optimal" and str(ResultStatus.TIME_LIMIT) == "time_limit"
    assert str(Status.OPTIMAL) == f"{Status.OPTIMAL}" == "optimal"


def test_results_equal_themselves_read_back(results: dict[str, Result]) -> None:
    cert, place = results["mtpp-certificate"], results["mtpp-placement"]
    assert type(cert).model_validate_json(cert.model_dump_json()) == cert  # type: ignore[attr-defined]
    assert type(place).model_validate_json(place.model_dump_json()) == place  # type: ignore[attr-defined]
    with pytest.raises(mtpp.MtppError, match=r"cert\.document"):
        type(cert).model_validate_json(cert.model_dump_json()).to_json()  # type: ignore[attr-defined]


def test_several_k_print_one_document(tmp_path, capsys, graph: mtpp.Graph) -> None:
    from mtpp.cli import main

    path = tmp_path / "g.json"
    graph.to_json(str(path))
    assert main(["certify", str(path), "-k", "2", "3", "--bounds", "simple,cut", "--json", "--orderer", "kahn"]) == 0
    doc = CertificatesDocument.model_validate_json(capsys.readouterr().out)
    assert [c.k for c in doc.certificates] == [2, 3] and doc.format == "mtpp-certificates"


def test_batch_stores_the_documented_document(tmp_path, graph: mtpp.Graph) -> None:
    from mtpp.batch import run
    from mtpp.batch.store import ResultStore

    path = tmp_path / "g.json"
    graph.to_json(str(path))
    run([str(path)], [2], ["simple", "slicegraph:kahn"], store=tmp_path / "r.db", progress=False, time_limit=5)
    formats = {r.method: (r.result_dict or {}).get("format") for r in ResultStore(tmp_path / "r.db").records()}
    assert formats == {"simple": "mtpp-certificate", "slicegraph:kahn": "mtpp-solution"}


def test_one_signature_shape() -> None:
    """The graph (and k / devices) by position, everything else by keyword, threads 1
    by default."""
    import inspect

    for fn, positional in (
        (mtpp.partition, ["graph_or_problem", "k"]),
        (mtpp.certify, ["graph_or_problem", "k"]),
        (mtpp.schedule, ["graph"]),
        (mtpp.place, ["graph", "devices"]),
    ):
        params = inspect.signature(fn).parameters
        named = [p for p, v in params.items() if v.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        assert named == positional, fn.__name__
        assert all(params[p].kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params if p not in named)
        if "threads" in params:
            assert params["threads"].default == 1, fn.__name__
        assert params["seed"].default == 0
