"""MIP size estimates against the memory a solve really takes (run by hand).

For random DAGs of growing density, each row builds and solves the ``exact`` MIP with
HiGHS for a few seconds in a fresh process and prints the estimated non-zeros of
:func:`formulations.size.estimate_model_size`, the process's peak resident memory and
the bytes per non-zero (the constant :data:`formulations.size.BYTES_PER_NONZERO`
comes from this table).  The last row only estimates the dense 5,000-op, 10^6-edge
graph of issue 14, which certify now refuses instead of taking ~20 GB.

    python benchmarks/model_size.py
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.peak_memory import git_commit  # noqa: E402

CASES = ((300, 0.2, 8), (600, 0.15, 8), (1000, 0.1, 8))


def dense_dag(n: int, p: float, seed: int = 0) -> object:
    """A random DAG on ``n`` ops: each pair ``i < j`` is an edge with probability ``p``."""
    from mtpp import Graph

    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    w = rng.uniform(1, 10, size=(3, n))
    return Graph.from_arrays(w[0], w[1], w[2], np.stack([iu[keep], ju[keep]], axis=1))


def measure(n: int, p: float, k: int) -> None:
    """In a child process: build and solve exact for 5 s, print one row."""
    import mtpp
    from formulations.bounds import solve_bound
    from formulations.size import estimate_model_size

    g = dense_dag(n, p)
    problem = mtpp.Problem(g, k)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    est = estimate_model_size(problem, "exact")
    t0 = time.perf_counter()
    solve_bound(problem, "exact", solver="highs", time_limit=5)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        f"| {n} | {g.m} | {k} | {est.nonzeros:,} | {peak / 1e9:.2f} | {(peak - base) / est.nonzeros:.0f} "
        f"| {time.perf_counter() - t0:.1f} |",
        flush=True,
    )


def main() -> None:
    if len(sys.argv) == 4:
        measure(int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]))
        return
    import mtpp
    from formulations.size import estimate_model_size

    print(f"mtpp exact-MIP size benchmark at commit {git_commit()}; HiGHS, 5 s per solve")
    print("| n | m | k | est. non-zeros | peak RSS GB | bytes / non-zero | s |")
    print("|---|---|---|---|---|---|---|")
    for n, p, k in CASES:
        subprocess.run([sys.executable, __file__, str(n), str(p), str(k)], check=True)
    g = dense_dag(5000, 1e6 / (5000 * 4999 / 2))
    size = estimate_model_size(mtpp.Problem(g, 8), "exact")
    print(f"\nn=5000, m={g.m:,}, k=8 (not solved): {size}")


if __name__ == "__main__":
    main()
