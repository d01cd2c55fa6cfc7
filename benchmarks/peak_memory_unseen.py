"""Certified peak-memory gaps of ``mtpp.schedule`` on unseen layered graphs (issue 26; run by hand).

    python -m benchmarks.peak_memory_unseen                       # 10 seeds x 250, 500, 1000 ops, 60 s each: ~30 min
    python -m benchmarks.peak_memory_unseen --seconds 30 --sizes 250 500 --count 5   # a shorter look

Runs ``mtpp.schedule(mtpp.layered_graph(n, seed=s), time_limit=--seconds)`` (method
``auto``, one thread) for the seeds ``7001, 7002, ...`` (``--count`` of them, kept
out of the tests and of ``benchmarks/peak_memory.py``) and prints per graph the
peak of the best order, the proven bound, the certified gap ``(peak - bound) /
peak``, the method that proved the bound and the wall time, then per size the
mean / max gap and the count proven optimal.  Goals (issue 26): <= 1% at 250 ops
with at least half proven, <= 3% at 500, <= 5% at 1,000.  To compare commits on one
machine, run the same command from a worktree of the other commit
(``git worktree add /tmp/before COMMIT``) back to back, or this script with the other
commit's library (``PYTHONPATH=/tmp/before python -m benchmarks.peak_memory_unseen``).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import mtpp
from benchmarks._common import git_commit

FIRST_SEED = 7001


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="time_limit of each schedule call")
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000], help="layered graph sizes")
    ap.add_argument("--count", type=int, default=10, help="seeds per size (7001, 7002, ...)")
    ap.add_argument("--seed", type=int, default=0, help="the schedule's own seed")
    args = ap.parse_args()
    print(
        f"mtpp unseen peak-memory gaps at commit {git_commit()} ({mtpp.__file__}); {os.cpu_count()} cores; "
        f"mtpp.schedule(layered_graph(n, seed=s), time_limit={args.seconds:g}), s = {FIRST_SEED}.."
        f"{FIRST_SEED + args.count - 1}"
    )
    mtpp.schedule(mtpp.layered_graph(30, seed=0), time_limit=5)  # JIT warm-up (cached on disk after the first run)
    head = f"{'graph':26s} {'peak':>10s} {'bound':>10s} {'gap %':>7s} {'bound by':>11s} {'time':>6s}"
    summary = []
    for n in args.sizes:
        print(f"\n{n} ops\n{head}")
        gaps, proven, times = [], 0, []
        for s in range(FIRST_SEED, FIRST_SEED + args.count):
            g = mtpp.layered_graph(n, seed=s)
            r = mtpp.schedule(g, time_limit=args.seconds)
            assert r.peak == mtpp.peak_memory(g, r.index_order) and r.lower_bound <= r.peak
            gaps.append(100 * r.gap)
            proven += r.status == "optimal"
            times.append(r.wall_time)
            print(
                f"layered({n}, seed={s}) {r.peak:10.0f} {r.lower_bound:10.0f} {100 * r.gap:7.2f} "
                f"{r.bound_method:>11s} {r.wall_time:6.1f}",
                flush=True,
            )
        summary.append((n, len(gaps), float(np.mean(gaps)), float(np.max(gaps)), proven, float(np.mean(times))))
    print(f"\n{'n':>5s} {'graphs':>6s} {'mean gap %':>10s} {'max gap %':>9s} {'optimal':>7s} {'mean s':>7s}")
    for n, c, mean, worst, p, t in summary:
        print(f"{n:5d} {c:6d} {mean:10.2f} {worst:9.2f} {p:4d}/{c:<2d} {t:7.1f}")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"total wall time {time.perf_counter() - start:.0f} s")
