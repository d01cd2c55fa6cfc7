"""Which side of the certified gap is loose (issue 23): certify without the ideal DP on
graphs whose optimum the ideal DP proves.

On the wide graphs of ``benchmarks/wide_bounds.py`` no one knows the optimum, so a gap
``LB / UB`` of 0.85 could be a weak bound, a weak partition or both.  Here each graph is
small enough for the ideal DP (Section 4 of the MTPP paper, ``heuristics/partition/ideal_dp.py``)
to prove ``OPT(k)`` first; a second ``mtpp.certify(G, k=KS, budget=B, max_ideals=1)``
then runs every other method (the ideal DP stops at once) and the script prints its
``LB / OPT`` and ``UB / OPT`` per k, geometric means over the graphs and how many reach
the optimum on each side.

    python benchmarks/known_optima.py                                # 4 layered graphs of 50-64 ops
    python benchmarks/known_optima.py --kind regal --nodes 24 30 --graphs 6 --ks 4 8   # 40+ ops outgrow the ideal DP

Graphs on seeds 8101.. (``--first-seed``; never used by the tests).  A graph whose
optimum the ideal DP does not prove within ``--exact-budget`` at every k is skipped and
said so.  Only the public API is used, so it runs unchanged on older commits
(``PYTHONPATH=/path/to/old/checkout``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import mtpp

KS = [4, 8, 16]


def graph(kind: str, nodes: int, seed: int) -> mtpp.Graph:
    if kind == "layered":
        return mtpp.layered_graph(nodes, seed=seed)
    return mtpp.regal_graph(nodes, seed=seed)


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=["layered", "regal"], default="layered")
    ap.add_argument("--graphs", type=int, default=4)
    ap.add_argument("--nodes", type=int, nargs="+", default=[50, 64], help="op counts, taken in turn")
    ap.add_argument("--ks", type=int, nargs="+", default=KS)
    ap.add_argument("--budget", type=float, default=30.0, help="seconds of the certify call without the ideal DP")
    ap.add_argument("--exact-budget", type=float, default=60.0, help="seconds for the ideal DP's proofs")
    ap.add_argument("--first-seed", type=int, default=8101, help="graph i uses seed FIRST_SEED + i")
    args = ap.parse_args()
    lb_ratio: dict[int, list[float]] = defaultdict(list)
    ub_ratio: dict[int, list[float]] = defaultdict(list)
    for i in range(args.graphs):
        seed = args.first_seed + i
        g = graph(args.kind, args.nodes[i % len(args.nodes)], seed)
        t0 = time.perf_counter()
        exact = mtpp.certify(g, k=args.ks, budget=args.exact_budget)
        exact_s = time.perf_counter() - t0
        if not all(c.optimal for c in exact):
            print(f"{args.kind} seed {seed} n={g.n}: skipped, the ideal DP did not prove every k in {exact_s:.1f} s")
            continue
        t0 = time.perf_counter()
        certs = mtpp.certify(g, k=args.ks, budget=args.budget, max_ideals=1)
        wall = time.perf_counter() - t0
        row = []
        for opt, c in zip(exact, certs, strict=True):
            best = opt.upper_bound
            lb, ub = (1.0, 1.0) if best == 0 else (c.lower_bound / best, c.upper_bound / best)
            lb_ratio[c.k].append(lb)
            ub_ratio[c.k].append(ub)
            row.append(f"k={c.k}: LB {lb:.3f} UB {ub:.3f} ({c.lower_bound_method.split(' (')[0]})")
        print(f"{args.kind} seed {seed} n={g.n}: OPT in {exact_s:.1f} s, {wall:.1f} s without  " + "  ".join(row))
    print(f"\nmtpp {mtpp.__version__} at {mtpp.__file__}; budget {args.budget:g} s per graph without the ideal DP")
    print(f"{'k':>4} {'LB/OPT':>8} {'at OPT':>7} {'UB/OPT':>8} {'at OPT':>7}  (geometric means)")
    for k in sorted(lb_ratio):
        lbs, ubs = lb_ratio[k], ub_ratio[k]
        at_lb = sum(x >= 1 - 1e-6 for x in lbs)
        at_ub = sum(x <= 1 + 1e-6 for x in ubs)
        print(f"{k:>4} {geomean(lbs):>8.4f} {at_lb:>3}/{len(lbs):<3} {geomean(ubs):>8.4f} {at_ub:>3}/{len(ubs):<3}")


if __name__ == "__main__":
    main()
