"""Which backend proves the strongest bound on the MIPs Gurobi's pip licence refuses
(issue 23): the order ``solver="auto"`` falls back in (:data:`solvers.registry.AUTO_ORDER`).

    python benchmarks/fallback_order.py                   # 4 graphs x k 8, 16 x 2 methods, 30 s each
    python benchmarks/fallback_order.py --seconds 10 --graphs 2

Graphs: ``mtpp generate layered`` of 250 ops on seeds 9001.. (never used by the tests),
whose exact models at k = 8 and 16 (2,000-4,000 binaries) exceed the pip licence.  Each
of HiGHS, SCIP and CP-SAT solves the ``bottleneck`` and ``exact`` MIPs with the same time
limit, one thread, the same SliceGraph upper bound; printed: each proven bound / UB, and
per method the number of wins (the best bound, ties shared) and the geometric mean of
bound / best bound per backend.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from formulations.bounds import solve_bound  # noqa: E402
from mtpp import Problem, layered_graph, partition  # noqa: E402
from solvers.registry import backend_class  # noqa: E402

BACKENDS = ("highs", "scip", "cpsat")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", type=int, default=4)
    ap.add_argument("--n", type=int, default=250)
    ap.add_argument("--ks", type=int, nargs="+", default=[8, 16])
    ap.add_argument("--methods", nargs="+", default=["bottleneck", "exact"])
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()
    backends = [b for b in BACKENDS if backend_class(b).available()]
    ratios: dict[tuple[str, str], list[float]] = {(m, b): [] for m in args.methods for b in backends}
    wins: dict[tuple[str, str], float] = dict.fromkeys(ratios, 0.0)
    print(f"{'graph':>10} {'k':>3} {'method':>10} " + " ".join(f"{b:>9}" for b in backends) + "   (bound / UB)")
    for seed in range(9001, 9001 + args.graphs):
        g = layered_graph(args.n, seed=seed)
        for k in args.ks:
            problem = Problem(g, k)
            ub = partition(problem, orderer="brkga-1000", seed=0).bottleneck
            for method in args.methods:
                bounds = {
                    b: solve_bound(problem, method, solver=b, time_limit=args.seconds, upper_bound=ub).bound
                    for b in backends
                }
                best = max(bounds.values())
                top = [b for b in backends if bounds[b] >= best * (1 - 1e-9)]
                for b in backends:
                    ratios[(method, b)].append(bounds[b] / best if best > 0 else 1.0)
                    wins[(method, b)] += (b in top) / len(top)
                cells = " ".join(f"{bounds[b] / ub:9.4f}" for b in backends)
                print(f"{'l' + str(seed):>10} {k:>3} {method:>10} {cells}", flush=True)
    print("\nper method: wins (ties shared) and geometric mean of bound / best bound")
    for method in args.methods:
        cells = "  ".join(
            f"{b}: {wins[(method, b)]:.1f} wins, "
            f"{math.exp(sum(math.log(max(r, 1e-12)) for r in ratios[(method, b)]) / len(ratios[(method, b)])):.4f}"
            for b in backends
        )
        print(f"{method:>10}: {cells}")


if __name__ == "__main__":
    main()
