"""SliceGraph speed and memory, measured and printed (run by hand: ``make bench``, or
``python -m benchmarks.slicegraph_speed``).

1. One SliceGraph evaluation (order given) at n = 2000, k = 64, against the
   straightforward reference of :mod:`benchmarks.reference` in the same process;
   target <= 0.5 s on a 2-core machine; and the same with peak-aware overflow.
2. brkga-10000 at n = 200, k = 16 on one core; target <= 10 s.
3. n = 10,000, k = 16: completes; peak resident memory of the process; target <= 2 GiB.

Graphs are seeded layered graphs (Topoformer App. A), the same on every machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import numpy as np

from benchmarks._common import ROOT, best_of, git_commit, print_table, timed
from benchmarks.reference import reference_slice_value
from heuristics.kahn import kahn_order
from heuristics.partition.slicegraph import slice_order
from mtpp import Problem, partition
from mtpp.generators import layered_graph


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    print(f"mtpp SliceGraph benchmark at commit {git_commit()}; {os.cpu_count()} cores")
    rows = []

    g = layered_graph(2000, seed=0)
    problem = Problem(g, 64)
    order = kahn_order(g, np.random.default_rng(0).random(g.n))
    slice_order(problem, order)  # JIT warm-up (cached on disk after the first run)
    ours = best_of(lambda: slice_order(problem, order))
    ref, ref_value = timed(lambda: reference_slice_value(problem, order))
    value = slice_order(problem, order).bottleneck
    assert abs(value - ref_value) <= 1e-9 * max(1.0, ref_value), (value, ref_value)
    note = f"reference {ref:.2f} s, x{ref / ours:.0f}"
    rows.append((f"SliceGraph, order given, n=2000 m={g.m} k=64", ours, 0.5, note))

    peaky = Problem(g, 64, memory=float(np.median(g.size_out)) * 20, peak_aware=True)
    slice_order(peaky, order)
    peak_time = best_of(lambda: slice_order(peaky, order))
    rows.append(
        (
            f"SliceGraph peak-aware (Eq. 2), n=2000 m={g.m} k=64",
            peak_time,
            None,
            f"x{peak_time / ours:.1f} the time of the reserve model",
        )
    )

    g200 = layered_graph(200, seed=1)
    partition(g200, 16, orderer="brkga-100")  # warm-up
    brkga_time, sol = timed(lambda: partition(g200, 16, orderer="brkga-10000", seed=0))
    rows.append(
        (
            f"brkga-10000, n=200 m={g200.m} k=16",
            brkga_time,
            10.0,
            f"{sol.evaluations} decodes, UB {sol.bottleneck:.6g}, LB/UB {sol.ratio:.3f}",
        )
    )

    for orderer in ("bfs", "random-10"):
        # a fresh process, so its peak resident memory is this run's alone
        child = subprocess.run(
            [sys.executable, "-m", "benchmarks.slicegraph_speed", "--big", orderer],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        secs, rss, m, ub, ratio = child.stdout.split()
        rows.append(
            (
                f"{orderer}, n=10000 m={m} k=16",
                float(secs),
                None,
                f"peak RSS of the process {float(rss):.0f} MiB (target 2048), UB {float(ub):.6g}, "
                f"LB/UB {float(ratio):.3f}",
            )
        )

    table = [(name, f"{secs:.3f}", f"{target:.1f}" if target else "-", note) for name, secs, target, note in rows]
    print_table(("case", "seconds", "target", "notes"), table, align="<>><")


def big(orderer: str) -> None:
    g = layered_graph(10_000, seed=2)
    partition(layered_graph(50, seed=0), 2, orderer=orderer)  # JIT warm-up
    secs, sol = timed(lambda: partition(g, 16, orderer=orderer, seed=0))
    print(secs, peak_rss_mib(), g.m, sol.bottleneck, sol.ratio)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--big"]:
        big(sys.argv[2])
    else:
        main()
