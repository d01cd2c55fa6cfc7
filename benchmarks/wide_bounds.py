"""Certified LB / UB on graphs too wide for the ideal DP (issue 23): one
``mtpp.certify(G, k=[2, 4, 8, 16, 32, 64], budget=B)`` per graph, the geometric mean of
LB / UB per k (and each graph's LB and UB), how many ks are proven optimal, and which method
gave each bound.

    python -m benchmarks.wide_bounds                               # 4 layered graphs, 60 s each
    python -m benchmarks.wide_bounds --kind regal --graphs 12 --budget 120
    PYTHONPATH=/path/to/old/checkout python -m benchmarks.wide_bounds   # the same on another commit

Graphs on seeds 8001.. (``--first-seed``; never used by the tests): ``layered`` (``layered_graph(n, seed)``,
n alternating 250 and 500), ``regal`` (the faithful App. C.2 generator) or
``regal-connected`` (the earlier generator; on a commit without it, ``regal_graph``,
which it was).  The script uses only the public API, so it runs unchanged on older
commits for a before / after comparison.

Before the first graph, ``--warm-up`` seconds (default 20) of one untimed ``certify`` on a
dev graph of the same kind (seed :data:`WARM_UP_SEED`) compile the kernels: on a checkout
whose numba cache is cold, compiling counts against the first graph's budget, and a phase
whose share it uses up proves nothing (layered 9101 at k = 4, 120 s: LB / UB 0.867 cold,
1.000 warm, where the reach sweeps' step compiled for 5.3 s in a share that needs 0.5 s).
"""

from __future__ import annotations

import argparse
import inspect
import math
import time
from collections import Counter, defaultdict

import mtpp
from benchmarks._common import git_commit
from mtpp import generators

KS = [2, 4, 8, 16, 32, 64]
WARM_UP_SEED = 9201
"""A dev seed: the warm-up's graph is never one the table reports."""


def graph(kind: str, i: int, first_seed: int = 8001) -> mtpp.Graph:
    seed = first_seed + i
    if kind == "layered":
        return mtpp.layered_graph(250 if i % 2 == 0 else 500, seed=seed)
    if kind == "regal":
        return mtpp.regal_graph(None, seed=seed)
    old = getattr(generators, "regal_connected_graph", None) or mtpp.regal_graph
    return old(None, seed=seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=["layered", "regal", "regal-connected"], default="layered")
    ap.add_argument("--graphs", type=int, default=4)
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--ks", type=int, nargs="+", default=KS)
    ap.add_argument("--first-seed", type=int, default=8001, help="graph i uses seed FIRST_SEED + i")
    ap.add_argument("--warm-up", type=float, default=20.0, help="seconds of an untimed certify first (0: none)")
    ap.add_argument("--without", nargs="+", default=[], metavar="METHOD", help="leave these bound methods out")
    args = ap.parse_args()
    bounds = [m for m in inspect.signature(mtpp.certify).parameters["bounds"].default if m not in args.without]
    if args.warm_up > 0:
        mtpp.certify(graph(args.kind, 0, WARM_UP_SEED), k=[4, 8, 16], budget=args.warm_up, bounds=bounds)
    ratios: dict[int, list[float]] = defaultdict(list)
    proven: Counter[int] = Counter()
    by: dict[int, Counter[str]] = defaultdict(Counter)
    spent: dict[int, Counter[str]] = defaultdict(Counter)  # seconds per k and method, over the graphs
    for i in range(args.graphs):
        g = graph(args.kind, i, args.first_seed)
        t0 = time.perf_counter()
        certs = mtpp.certify(g, k=args.ks, budget=args.budget, bounds=bounds)
        wall = time.perf_counter() - t0
        row = []
        for c in certs:
            r = 1.0 if c.upper_bound == 0 else c.lower_bound / c.upper_bound
            ratios[c.k].append(r)
            proven[c.k] += c.optimal
            by[c.k][c.lower_bound_method.split(" (")[0]] += 1
            for rec in c.bounds:
                if rec.from_k is None:
                    spent[c.k][rec.method] += rec.wall_time
            row.append(f"k={c.k}: {r:.3f}")
        print(f"{args.kind} #{i} n={g.n}: {wall:.1f} s  " + "  ".join(row), flush=True)
        values = [f"k={c.k}: {c.lower_bound:.6g} / {c.upper_bound:.6g}" for c in certs]
        print("    LB / UB  " + "  ".join(values), flush=True)
    seeds = f"seeds {args.first_seed}.." + (f", without {' '.join(args.without)}" if args.without else "")
    print(f"\nbenchmark at commit {git_commit()}; mtpp {mtpp.__version__} at {mtpp.__file__}")
    print(f"budget {args.budget:g} s per graph, {seeds}")
    print(f"{'k':>4} {'LB/UB (geomean)':>16} {'proven':>7}  bound by")
    for k in sorted(ratios):
        mean = math.exp(sum(math.log(max(r, 1e-12)) for r in ratios[k]) / len(ratios[k]))
        methods = ", ".join(f"{m} {n}" for m, n in by[k].most_common())
        print(f"{k:>4} {mean:>16.3f} {proven[k]:>4}/{len(ratios[k]):<2}  {methods}")
    print("\nseconds per graph by method (the clique and cut bounds, the ideal DP: one run for all ks, shown at each)")
    for k in sorted(spent):
        line = ", ".join(f"{m} {t / len(ratios[k]):.1f}" for m, t in spent[k].most_common() if t >= 0.05)
        print(f"{k:>4}  {line}")


if __name__ == "__main__":
    main()
