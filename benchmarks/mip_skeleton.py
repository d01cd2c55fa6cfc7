"""The block skeleton's MIPs alone (``formulations/blocks.py``): bound, status and seconds.

    python benchmarks/mip_skeleton.py                                    # bottleneck MIP, HiGHS, 30 s
    python benchmarks/mip_skeleton.py --method exact --solver gurobi --small
    PYTHONPATH=/path/to/old/checkout python benchmarks/mip_skeleton.py  # the same graphs, older rows

Each graph's MIP is solved once with ``formulations.bounds.solve_bound`` (the bottleneck MIP
of Section 3.2 or the exact MIP of Figure 3) for ``--time-limit`` seconds; the script
prints the proven bound, the solver's status and the seconds.  Default graphs:
REGAL-style graphs of 50-200 ops at k = 4 / 8 and layered graphs of 150-300 ops at
k = 4 / 8; ``--small``: REGAL-style graphs of 24-45 ops (where the exact MIP can finish).
Seeds from 8401 on (``--first-seed``), which the tests never use.  The skeleton's
tensor-cut rows took the form ``c_ub >= |x_ub - x_vb|`` in f66531d; run this beside a
checkout from before it (``PYTHONPATH``) to compare the two.
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

import numpy as np

import mtpp
from formulations.bounds import solve_bound
from mtpp.core.problem import Problem


def cases(small: bool, count: int, first_seed: int) -> list[tuple[str, mtpp.Graph, int]]:
    """``(name, graph, k)`` per case, drawn from seeds ``first_seed + i``."""
    out = []
    for i in range(count):
        seed = first_seed + i
        rng = np.random.default_rng(seed)
        k = 8 if i % 2 else 4
        if small:
            out.append((f"regal-{seed}", mtpp.regal_graph(int(rng.integers(24, 46)), seed=seed), k))
            continue
        out.append((f"regal-{seed}", mtpp.regal_graph(int(rng.integers(50, 201)), seed=seed), k))
        out.append((f"layered-{seed}", mtpp.layered_graph(int(rng.integers(150, 301)), seed=seed), k))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", choices=["bottleneck", "exact"], default="bottleneck")
    ap.add_argument("--solver", default="highs")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--graphs", type=int, default=6, help="seeds (two graphs each unless --small)")
    ap.add_argument("--small", action="store_true", help="REGAL-style graphs of 24-45 ops")
    ap.add_argument("--first-seed", type=int, default=8401)
    args = ap.parse_args()
    print(f"mtpp at {Path(mtpp.__file__).parent}; {args.method} MIP, {args.solver}, {args.time_limit:g} s per MIP")
    print(f"{'graph':>14} {'ops':>4} {'k':>3} {'bound':>12} {'status':>11} {'seconds':>8}")
    proven, seconds = 0, 0.0
    for name, g, k in cases(args.small, args.graphs, args.first_seed):
        t0 = time.perf_counter()
        res = solve_bound(Problem(g, k), args.method, solver=args.solver, time_limit=args.time_limit)
        wall = time.perf_counter() - t0
        proven += bool(res.proven_optimal)
        seconds += wall
        print(f"{name:>14} {g.n:>4} {k:>3} {res.bound:>12.6g} {res.status.value:>11} {wall:>8.2f}", flush=True)
    print(f"proven {proven}, seconds in all {seconds:.1f}")


if __name__ == "__main__":
    main()
