"""The ideal DP on a band of a partition's order (:mod:`heuristics.partition.band_dp`), alone:
how far it takes certify's partition, and how far that is from the optimum.

Each graph gets one ``mtpp.certify(G, k=[k], budget=B)``; then the band DP runs from its
partition at each width of ``--widths`` in turn, again from every better partition, each
run at most ``--limit`` seconds.  With ``--prove`` the ideal DP over every ideal proves the
optimum below certify's partition (graphs of up to about 130 layered ops).

    python benchmarks/band_dp.py     # layered 8131 (110 ops), 8132 (130), 8141 (160), 8142 (200), k = 16
    python benchmarks/band_dp.py --specs 8131:110 8132:130 --prove

Seeds 8131.. are never used by the tests.  Only the public API and the band DP's module are
used, so it runs on any commit that has that module (``PYTHONPATH``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np

import mtpp
from heuristics.partition.band_dp import band_dp
from heuristics.partition.ideal_dp import ideal_dp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--specs", nargs="+", default=["8131:110", "8132:130", "8141:160", "8142:200"], help="SEED:OPS")
    ap.add_argument("-k", type=int, default=16)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of the certify call")
    ap.add_argument("--widths", type=int, nargs="+", default=[8, 12, 16])
    ap.add_argument("--limit", type=float, default=120.0, help="seconds per band DP run, at most")
    ap.add_argument("--max-ideals", type=int, default=3_000_000)
    ap.add_argument("--prove", action="store_true", help="also the optimum, by the ideal DP over every ideal")
    args = ap.parse_args()
    print(
        f"{'graph':>10} {'certify':>10} {'band DP':>10} {'change':>8} {'seconds':>8}  widths that improved"
        + (f"  {'optimum':>10}" if args.prove else "")
    )
    for spec in args.specs:
        seed, n = (int(x) for x in spec.split(":"))
        g = mtpp.layered_graph(n, seed=seed)
        problem = mtpp.Problem(g, args.k)
        cert = mtpp.certify(g, k=[args.k], budget=args.budget)[0]
        assignment = np.array([cert.assignment[str(v)] for v in g.ids], dtype=np.int64)
        best, start, used = cert.upper_bound, time.perf_counter(), []
        for width in args.widths:
            while (res := band_dp(problem, assignment, width, best, args.max_ideals, args.limit)) is not None:
                checked = mtpp.evaluate(problem, res[1]).bottleneck
                if not checked < best:
                    break
                best, assignment = checked, res[1]
                used.append(width)
        line = f"{spec:>10} {cert.upper_bound:>10.6g} {best:>10.6g} {best / cert.upper_bound - 1:>+8.2%}"
        line += f" {time.perf_counter() - start:>8.1f}  {sorted(set(used)) or '-'}"
        if args.prove:
            opt = ideal_dp(problem, upper_bound=cert.upper_bound)
            line += f"  {opt.value if opt.status == 'optimal' else opt.status!s:>10}"
        print(line, flush=True)
    print(f"\nmtpp {mtpp.__version__} at {mtpp.__file__}; k = {args.k}, certify {args.budget:g} s per graph")


if __name__ == "__main__":
    main()
