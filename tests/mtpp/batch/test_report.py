"""Tables recomputed independently from the stored rows, and the plots."""

from __future__ import annotations

import csv
import io
import math
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from mtpp.batch.plots import plot
from mtpp.batch.report import bound_table, counts_table, orderer_table, render, tables
from mtpp.batch.store import ResultStore
from mtpp.batch.tasks import GraphSource, Settings, make_tasks
from mtpp.cli import main
from mtpp.generators import regal_graph


def by_hand(path: Path) -> tuple[dict, dict]:
    """Tables 1/3 and 2 straight from SQL rows, sharing no code with mtpp.batch.report."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT graph_hash, k, method, status, bound, ub FROM results").fetchall()
    best: dict = {}
    for g, k, _, status, _, ub in rows:
        if status in ("ok", "time_limit") and ub is not None:
            best[(g, k)] = min(best.get((g, k), math.inf), ub)
    ratios: dict = defaultdict(list)
    orderers: dict = defaultdict(list)
    for g, k, method, status, bound, ub in rows:
        if status not in ("ok", "time_limit"):
            continue
        if method.startswith("slicegraph:"):
            orderers[(method.split(":")[1], k)].append(ub / bound)
        else:
            ratios[(method, k)].append(bound / best[(g, k)])
    gm = {key: math.prod(v) ** (1 / len(v)) for key, v in ratios.items()}
    go = {key: math.prod(v) ** (1 / len(v)) for key, v in orderers.items()}
    return gm, go


def test_tables_match_a_recomputation_from_the_rows(reference: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected, expected_orderers = by_hand(reference)
    with ResultStore(reference) as store:
        records = store.records()
    t1, t2 = bound_table(records), orderer_table(records)
    for (method, k), value in expected.items():
        assert t1.cell(method, f"k={k}") == pytest.approx(value, rel=1e-12)
    for (name, k), value in expected_orderers.items():
        assert t2.cell(name, f"k={k}") == pytest.approx(value, rel=1e-12)
    assert expected[("bottleneck", 2)] >= expected[("simple", 2)]
    # the CSV of 'mtpp table' carries the same numbers
    assert main(["table", str(reference), "--format", "csv"]) == 0
    blocks = capsys.readouterr().out.strip().split("\n\n")
    first = list(csv.reader(io.StringIO(blocks[0].split("\n", 1)[1])))
    header = first[0]
    for row in first[1:]:
        for col, text in zip(header[1:], row[1:]):
            assert float(text) == pytest.approx(expected[(row[0], int(col[2:]))], rel=1e-12)


def fake_store(path: Path) -> None:
    """Two graphs, k=2; numbers chosen so every table cell is known in closed form."""
    srcs = [GraphSource.from_graph(regal_graph(10, seed=s)) for s in (1, 2)]
    put = []
    for solver in ("highs", "scip"):
        put += make_tasks(srcs, [2], ["simple", "bottleneck", "slicegraph:kahn"], solver, Settings())
    values = {  # (graph index, method, solver) -> (status, bound, ub)
        (0, "simple", "-"): ("ok", 5.0, 10.0),
        (1, "simple", "-"): ("ok", 4.0, 10.0),
        (0, "bottleneck", "highs"): ("time_limit", 6.0, 10.0),
        (1, "bottleneck", "highs"): ("ok", 8.0, 8.0),
        (0, "bottleneck", "scip"): ("timeout", None, None),
        (1, "bottleneck", "scip"): ("error", None, None),
        (0, "slicegraph:kahn", "-"): ("ok", 5.0, 12.5),
        (1, "slicegraph:kahn", "-"): ("ok", 4.0, 10.0),
    }
    with ResultStore(path) as store:
        for t in put:
            status, bound, ub = values[
                (srcs.index(next(s for s in srcs if s.graph_hash == t.graph_hash)), t.method, t.solver)
            ]
            store.put(t, {"status": status, "bound": bound, "ub": ub, "method_time": 1.0 if bound else None})


def test_tables_with_known_numbers(tmp_path: Path) -> None:
    path = tmp_path / "fake.db"
    fake_store(path)
    with ResultStore(path) as store:
        records = store.records()
    t1 = bound_table(records)
    # best UB: graph 0 -> 10, graph 1 -> 8 (the bottleneck task's partition)
    assert t1.cell("simple", "k=2") == pytest.approx(math.sqrt(0.5 * 0.5))
    assert t1.cell("bottleneck [highs]", "k=2") == pytest.approx(math.sqrt(0.6 * 1.0))
    assert [r[0] for r in t1.rows] == ["simple", "bottleneck [highs]"]  # scip has no result at all
    assert orderer_table(records).cell("kahn", "k=2") == pytest.approx(2.5)
    counts = {(r[0], r[1]): r[2:] for r in counts_table(records).rows}
    # instances, ok, time_limit, error, crashed, timeout, mean s, max s
    assert counts[("bottleneck [highs]", 2)] == [2, 1, 1, 0, 0, 0, 1.0, 1.0]
    assert counts[("bottleneck [scip]", 2)] == [2, 0, 0, 1, 0, 1, None, None]
    md = render(tables(records), "markdown")
    assert "| bottleneck [highs] | 0.7746 |" in md
    tex = render(tables(records), "latex")
    assert r"\begin{tabular}{lr}" in tex and r"time\_limit" in tex and "0.7746" in tex


def test_plots(reference: Path, tmp_path: Path) -> None:
    with ResultStore(reference) as store:
        paths = plot(store.records(), tmp_path / "plots")
    assert sorted(p.name for p in paths) == ["lb_ub.png", "lb_ub.svg", "runtime.png", "runtime.svg"]
    for p in paths:
        data = p.read_bytes()
        assert data.startswith(b"\x89PNG") if p.suffix == ".png" else b"<svg" in data[:2000]
        assert len(data) > 10_000
    svg = (tmp_path / "plots" / "runtime.svg").read_text()
    assert "SliceGraph (random-20)" in svg and "bottleneck" in svg and "k = 4" in svg


def test_a_bound_proven_at_a_larger_k_counts_at_a_smaller_one(tmp_path: Path) -> None:
    """OPT(k) does not increase with k, so the bound table shares a method's bound from
    k = 4 down to k = 2 where that is stronger than its own (and never the other way)."""
    src = GraphSource.from_graph(regal_graph(10, seed=3), "g.json")
    tasks = make_tasks([src], [2, 4], ["bottleneck", "slicegraph:kahn"], "highs", Settings())
    values = {("bottleneck", 2): (3.0, None), ("bottleneck", 4): (5.0, None)}
    values |= {("slicegraph:kahn", 2): (1.0, 10.0), ("slicegraph:kahn", 4): (1.0, 8.0)}
    with ResultStore(tmp_path / "r.db") as store:
        for t in tasks:
            bound, ub = values[(t.method, t.k)]
            store.put(t, {"status": "ok", "bound": bound, "ub": ub})
        table = bound_table(store.records())
    assert table.cell("bottleneck", "k=2") == pytest.approx(5.0 / 10.0)  # shared from k = 4
    assert table.cell("bottleneck", "k=4") == pytest.approx(5.0 / 8.0)
    assert "cells with a bound from a larger k (from_k): bottleneck 1 of 2" in table.notes
