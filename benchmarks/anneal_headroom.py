"""How far the partition side of a certified gap still moves with more time (issue 23).

On graphs too wide for the ideal DP nobody knows the optimum, so a gap ``LB / UB`` of 0.70
could be a weak bound, a weak partition or both.  This script takes the partition of one
``mtpp.certify(G, k=[K], budget=B)`` per graph (the reference, in the same process) and
anneals it for ``--extra`` more seconds (:func:`heuristics.partition.anneal.anneal_partition`,
cycles of ``--cycle`` seconds from the best partition, every other one from a fresh
partition with ``--fresh``), printing when each better partition came and the final
``UB after / UB before``.  A partition that moves by a few percent in minutes leaves
that part of the gap on the partition side; one that does not move says nothing about
the optimum (the annealer may be stuck).

    python benchmarks/anneal_headroom.py                          # layered 9104 (500 ops), k = 16
    python benchmarks/anneal_headroom.py --seeds 9102 9104 --extra 600 --cycle 8

Graphs are ``layered_graph(--nodes, seed)`` (``--kind regal``: ``regal_graph(None, seed)``),
seeds never used by the tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import mtpp
from heuristics.partition.anneal import anneal_partition, spread_start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=["layered", "regal"], default="layered")
    ap.add_argument("--nodes", type=int, default=500, help="ops of a layered graph")
    ap.add_argument("--seeds", type=int, nargs="+", default=[9104])
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--budget", type=float, default=120.0, help="seconds of the reference certify call")
    ap.add_argument("--extra", type=float, default=300.0, help="seconds of annealing after it")
    ap.add_argument("--cycle", type=float, default=2.0, help="seconds per cooling cycle")
    ap.add_argument("--fresh", action="store_true", help="every other cycle from a fresh partition")
    args = ap.parse_args()
    for seed in args.seeds:
        g = mtpp.layered_graph(args.nodes, seed=seed) if args.kind == "layered" else mtpp.regal_graph(None, seed=seed)
        cert = mtpp.certify(g, k=args.k, budget=args.budget, seed=seed)
        problem = mtpp.Problem(g, args.k)
        best = mtpp.evaluate(problem, cert.assignment)
        before, found = best.bottleneck, []
        t0, cycles = time.perf_counter(), 0
        while (left := args.extra - (time.perf_counter() - t0)) > 0.1:
            fresh = args.fresh and cycles % 2 == 1
            start = spread_start(problem, cycles) if fresh else best.assignment
            res = anneal_partition(problem, start, time_limit=min(args.cycle, left), seed=1000 * seed + cycles)
            cycles += 1
            if res is None:
                break
            checked = mtpp.evaluate(problem, res.assignment)  # an upper bound only once re-checked
            if checked.bottleneck < best.bottleneck:
                best = checked
                found.append(f"{time.perf_counter() - t0:.0f} s: {best.bottleneck:.6g}")
        print(
            f"{args.kind} seed {seed} n={g.n} k={args.k}: certify {args.budget:g} s: LB {cert.lower_bound:.6g} "
            f"UB {before:.6g} (LB/UB {cert.lower_bound / before:.3f}); {args.extra:g} s more annealing "
            f"({cycles} cycles of {args.cycle:g} s{', fresh starts' if args.fresh else ''}): UB {best.bottleneck:.6g}, "
            f"{best.bottleneck / before:.4f} of before (LB/UB {cert.lower_bound / best.bottleneck:.3f})"
            + (f"; better at {', '.join(found)}" if found else "")
        )


if __name__ == "__main__":
    main()
