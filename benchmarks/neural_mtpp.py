"""Learned orderers for the partitioner: quality of SliceGraph partitions at equal wall time.

    python -m benchmarks.neural_mtpp                 # 30 graphs x k in {4, 8, 16} (~15 min on 2 cores)
    python -m benchmarks.neural_mtpp --graphs 5      # quick look
    python -m benchmarks.neural_mtpp --graphs 4 --nodes 500 1000 2000 -k 8 16   # the issue's sizes

Unseen REGAL-style graphs (MTPP paper App. C.2, 50-200 nodes, or ``--nodes`` each; seeds
from 10^6 on (``--first-seed``), which training never draws).  ``--weights`` names the ``topoformer-mtpp``
file the topoformer orderers use.  Every method is ``mtpp.partition`` with an orderer, so
every bottleneck is a partition re-checked by the evaluator.  Cells: the geometric
mean over graphs of bottleneck / simple lower bound (Lemma 3.3; the form of the MTPP
paper's Table 2, lower is better) and the mean wall time.

Orderers: ``topoformer`` (greedy), ``topoformer-sample-16`` and ``-100``, ``regal-brkga-N`` (the
learned BRKGA), against ``random-100``, ``brkga-100`` and ``brkga-10000``; and, for
the equal-time question, ``random`` and ``brkga-10000`` stopped at the wall time the
learned ``topoformer-sample-16`` took on the same graph (``@t(sample)``);
``--equal-time-only`` leaves out the two slow rows.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np
import torch

from benchmarks._common import git_commit
from mtpp.generators.regal import regal_graph
from mtpp.partitioner import partition

TEST_SEED = 1_000_000
FIXED = ("topoformer", "topoformer-sample-16", "topoformer-sample-100", "random-100", "brkga-100", "brkga-10000")
SLOW = ("topoformer-sample-100", "brkga-10000")  # left out by --equal-time-only
TIMED = ("random@t(sample)", "brkga-10000@t(sample)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=30)
    ap.add_argument("-k", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--regal-evaluations", type=int, default=10000, help="budget of regal-brkga (0: leave out)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nodes", type=int, nargs="+", default=None, help="ops per graph (default: 50-200)")
    ap.add_argument("--weights", default=None, help="Topoformer weights (default: the shipped topoformer-mtpp)")
    ap.add_argument("--first-seed", type=int, default=TEST_SEED, help="first test graph seed (default 10^6)")
    ap.add_argument("--equal-time-only", action="store_true", help="leave out the slow rows (sample-100, brkga-10000)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    fixed = [m for m in FIXED if not (args.equal_time_only and m in SLOW)]
    methods = [*fixed, *([f"regal-brkga-{args.regal_evaluations}"] if args.regal_evaluations else []), *TIMED]

    t_start = time.perf_counter()
    print(
        f"mtpp neural MTPP benchmark at commit {git_commit()}; one CPU thread; {args.graphs} graphs "
        f"per size {args.nodes or '50-200'}; weights {args.weights or 'topoformer-mtpp'}"
    )
    warm = regal_graph(40, seed=0)
    for name in (*FIXED, "regal-brkga-100"):
        partition(warm, 4, orderer=name, weights=args.weights if name.startswith("topoformer") else None)  # JIT, loads
    ratio: dict[int, dict[str, list[float]]] = {k: defaultdict(list) for k in args.k}
    times: dict[int, dict[str, list[float]]] = {k: defaultdict(list) for k in args.k}
    graphs = [
        (f"graph {i:3d}", regal_graph(n, seed=args.first_seed + i))
        for n in (args.nodes or [None])
        for i in range(args.graphs)
    ]
    for label, g in graphs:
        for k in args.k:
            sols = {}
            for name in methods:
                if name in TIMED:
                    budget = max(sols["topoformer-sample-16"].wall_time, 1e-3)
                    orderer = "random-1000000" if name.startswith("random") else "brkga-10000"
                    sols[name] = partition(g, k, orderer=orderer, seed=args.seed, time_limit=budget)
                else:
                    weights = args.weights if name.startswith("topoformer") else None
                    sols[name] = partition(g, k, orderer=name, seed=args.seed, weights=weights)
            for name, sol in sols.items():
                ratio[k][name].append(sol.bottleneck / sol.lower_bound)
                times[k][name].append(sol.wall_time)
            cells = " ".join(f"{m}={sols[m].bottleneck / sols[m].lower_bound:.4f}" for m in methods)
            print(f"  {label} n={g.n:4d} k={k:2d} {cells}", flush=True)

    print()
    print("Geometric mean of UB / simple LB (lower is better) | mean wall time [s]")
    print(f"{'orderer':24s}" + "".join(f" | {f'k={k}':^18s}" for k in args.k))
    for m in methods:
        cells = "".join(f" | {np.exp(np.mean(np.log(ratio[k][m]))):8.4f} {np.mean(times[k][m]):8.3f}" for k in args.k)
        print(f"{m:24s}{cells}")
    print()
    print("Share of (graph, k) where the orderer is at least as good as topoformer-sample-16:")
    for m in methods:
        share = np.mean(
            [r <= s * (1 + 1e-12) for k in args.k for r, s in zip(ratio[k][m], ratio[k]["topoformer-sample-16"])]
        )
        print(f"{m:24s} {100 * share:6.1f}%")
    print(f"total wall time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
