"""Seeded testbeds of REGAL-style and layered graphs, and the full bound hierarchy on them.

A testbed is a list of ``(kind, n, seed)``; :func:`generate` writes each graph with
mtpp's seeded generators (``regal_graph(n, seed=seed)``: MTPP paper App. C.2;
``layered_graph(n, seed=seed)``: Topoformer App. A) into ``DIR/graphs/`` and a
manifest ``DIR/testbed.json`` with the sha256 of every graph's canonical JSON, so
anyone can regenerate the testbed and check it is the same (:func:`verify`).

    python -m benchmarks.testbed generate DIR [--preset mixed-50]
    python -m benchmarks.testbed verify DIR
    python -m benchmarks.testbed run DIR [--preset mixed-50] -k 2 4 8 16 32 64 --jobs 2 --time-limit 60

The paper's Table 3 experiment (issue: 50 REGAL-style graphs, 60 s per method, HiGHS
and SCIP) is::

    python -m benchmarks.testbed run DIR --preset regal-50 --methods all --time-limit 60 --solvers highs scip

``run`` generates the testbed if needed, runs every task (:func:`mtpp.batch.run`,
methods ``all``: SliceGraph with BRKGA and the four lower bounds) into
``DIR/results.db``, writes ``DIR/report/tables.{md,csv,tex}`` and
``DIR/report/{runtime,lb_ub}.{png,svg}``, and prints the tables and the commit it ran
on.  Killed, it loses only the tasks in flight: run it again to finish.  The same
steps by hand::

    mtpp batch DIR/graphs -k 2 4 8 --methods all --jobs 2 --store DIR/results.db
    mtpp table DIR/results.db
    mtpp plot DIR/results.db --out DIR/report
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks._common import git_commit
from mtpp.core.graph import Graph

KS = (2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class GraphSpec:
    """One graph of a testbed: ``kind`` is ``regal`` or ``layered``; ``n=None`` lets
    ``regal_graph`` draw its size (50..200) from the seed, as the paper's data set."""

    kind: str
    n: int | None
    seed: int

    @property
    def filename(self) -> str:
        size = "" if self.n is None else f"-n{self.n:04d}"
        return f"{self.kind}{size}-s{self.seed:04d}.json"

    def make(self) -> Graph:
        from mtpp.generators import layered_graph, regal_graph

        if self.kind == "regal":
            return regal_graph(self.n, seed=self.seed)
        if self.kind == "layered":
            if self.n is None:
                raise ValueError("layered graphs need n")
            return layered_graph(self.n, seed=self.seed)
        raise ValueError(f"unknown graph kind {self.kind!r}")


def _regal(count: int, n: int | None = None, first: int = 0) -> list[GraphSpec]:
    return [GraphSpec("regal", n, s) for s in range(first, first + count)]


def _layered(sizes: tuple[int, ...], seeds: int) -> list[GraphSpec]:
    return [GraphSpec("layered", n, s) for n in sizes for s in range(seeds)]


PRESETS: dict[str, list[GraphSpec]] = {
    # a minute on two cores with --time-limit 5: to try the pipeline
    "smoke": [*(GraphSpec("regal", n, s) for s, n in enumerate((16, 24, 32, 48))), *_layered((20, 40), 1)],
    # REGAL-style graphs as in the paper (n drawn from 50..200) and layered graphs of growing size
    "mixed-50": [*_regal(30), *_layered((50, 100, 200, 400), 5)],
    "regal-10": _regal(10),
    "regal-50": _regal(50),
    # the size of the paper's REGAL set (App. C.2)
    "regal-1000": _regal(1000),
    "layered-sizes": _layered((25, 50, 100, 200, 400, 800), 3),
}


def generate(directory: str | Path, preset: str = "mixed-50") -> list[Path]:
    """Write the graphs of ``preset`` into ``directory/graphs`` and the manifest; the paths."""
    from mtpp.batch.tasks import graph_hash

    if preset not in PRESETS:
        raise SystemExit(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    out = Path(directory)
    graphs = out / "graphs"
    graphs.mkdir(parents=True, exist_ok=True)
    manifest = []
    paths = []
    for spec in PRESETS[preset]:
        g = spec.make()
        path = graphs / spec.filename
        g.to_json(str(path))
        paths.append(path)
        manifest.append(
            {
                **asdict(spec),
                "file": f"graphs/{spec.filename}",
                "name": g.name,
                "n_nodes": g.n,
                "m_edges": g.m,
                "sha256": graph_hash(g),
            }
        )
    (out / "testbed.json").write_text(json.dumps({"preset": preset, "graphs": manifest}, indent=1) + "\n")
    return paths


def verify(directory: str | Path) -> list[str]:
    """Regenerate every graph of the manifest in ``directory``; the mismatches (none: identical)."""
    from mtpp.batch.tasks import graph_hash
    from mtpp.io.graph_file import load_graph

    out = Path(directory)
    manifest = json.loads((out / "testbed.json").read_text())
    problems = []
    for entry in manifest["graphs"]:
        spec = GraphSpec(entry["kind"], entry["n"], entry["seed"])
        if graph_hash(spec.make()) != entry["sha256"]:
            problems.append(f"{entry['file']}: the generator now makes another graph")
        path = out / entry["file"]
        if not path.is_file() or graph_hash(load_graph(path)) != entry["sha256"]:
            problems.append(f"{entry['file']}: the file differs from the manifest")
    return problems


def run_hierarchy(
    directory: str | Path,
    preset: str = "mixed-50",
    ks: tuple[int, ...] = KS,
    methods: str = "all",
    jobs: int = 1,
    time_limit: float = 60.0,
    solvers: Sequence[str] = ("auto",),
    backend: str = "loky",
    scheduler: str | None = None,
    progress: bool | None = None,
) -> str:
    """Generate the testbed if needed, run everything with each solver into one store,
    write tables and plots; the tables (with the paper's Table 3 beside REGAL presets)."""
    from mtpp.batch import open_store, run
    from mtpp.batch.plots import plot
    from mtpp.batch.report import render, tables

    out = Path(directory)
    if not (out / "testbed.json").is_file():
        generate(out, preset)
    store = out / "results.db"
    for solver in solvers:
        summary = run(
            out / "graphs",
            ks,
            methods,
            solver=solver,
            time_limit=time_limit,
            n_jobs=jobs,
            store=store,
            backend=backend,
            scheduler=scheduler,
            progress=progress,
        )
        print(summary, file=sys.stderr)
    with open_store(store) as db:
        records = db.records()
    report = out / "report"
    report.mkdir(exist_ok=True)
    tabs = tables(records)
    for fmt, ext in (("markdown", "md"), ("csv", "csv"), ("latex", "tex")):
        (report / f"tables.{ext}").write_text(render(tabs, fmt))
    for path in plot(records, report):
        print(f"wrote {path}", file=sys.stderr)
    head = (
        f"MTPP bound hierarchy on testbed {out} at commit {git_commit()}: {len(records)} stored tasks, "
        f"k = {' '.join(map(str, ks))}, solver(s) {', '.join(solvers)}, {time_limit:g} s per method, "
        f"{jobs} job(s)\n\n"
    )
    text = head + render(tabs, "markdown")
    if preset.startswith("regal"):
        text += "\n\n" + PAPER_TABLE3
    return text


PAPER_TABLE3 = """The paper's Table 3 (REGAL, 1000 graphs, up to 60 min of Gurobi/SCIP per instance), for comparison:

| method | k=2 | k=4 | k=8 | k=16 | k=32 | k=64 |
|---|---:|---:|---:|---:|---:|---:|
| simple | 0.9579 | 0.8795 | 0.7911 | 0.5821 | 0.4087 | 0.3336 |
| bottleneck | 0.9794 | 0.8818 | 0.7918 | 0.5824 | 0.4090 | 0.3338 |
| guess | 0.9804 | 0.8826 | 0.7918 | 0.5824 | 0.4090 | 0.3338 |
| exact | 0.9804 | 0.9579 | 0.9407 | 0.8929 | 0.5910 | 0.3810 |"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write the graphs and the manifest")
    gen.add_argument("dir")
    gen.add_argument("--preset", default="mixed-50", choices=PRESETS)
    ver = sub.add_parser("verify", help="regenerate and compare with the manifest")
    ver.add_argument("dir")
    r = sub.add_parser("run", help="generate if needed, run the hierarchy, write tables and plots")
    r.add_argument("dir")
    r.add_argument("--preset", default="mixed-50", choices=PRESETS)
    r.add_argument("-k", type=int, nargs="+", default=list(KS))
    r.add_argument("--methods", default="all")
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--time-limit", type=float, default=60.0)
    r.add_argument("--solvers", nargs="+", default=["auto"], help="one run per solver, into the same store")
    r.add_argument("--backend", default="loky", choices=("loky", "dask"))
    r.add_argument("--scheduler")
    args = ap.parse_args(argv)
    if args.command == "generate":
        paths = generate(args.dir, args.preset)
        print(f"wrote {len(paths)} graphs to {Path(args.dir) / 'graphs'} and {Path(args.dir) / 'testbed.json'}")
        return 0
    if args.command == "verify":
        problems = verify(args.dir)
        print("\n".join(problems) if problems else "testbed verified: every graph regenerates identically")
        return 1 if problems else 0
    print(
        run_hierarchy(
            args.dir,
            args.preset,
            tuple(args.k),
            args.methods,
            args.jobs,
            args.time_limit,
            args.solvers,
            args.backend,
            args.scheduler,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
