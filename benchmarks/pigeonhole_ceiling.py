"""How far the pigeonhole family could go (issue 23): its weights or its relaxation?

The weighted pigeonhole bound (:mod:`formulations.pigeonhole`) proves
``OPT(k) >= c(pi)`` for every weighting ``pi``; the best weighting at a threshold ``T``
is the optimal dual of the set-partitioning LP over convex blocks of cost at most
``T`` (``min sum_S lambda_S`` s.t. every op is covered once, ``f(S) <= T``), so the
family's ceiling is the LP bound ``T_LP``: the least ``T`` at which that LP needs at most
``k`` blocks.  certify finds its weights by multiplicative updates; this script puts
the two side by side on graphs small enough for the ideal DP to prove ``OPT(k)``:

* ``MWU``: :func:`formulations.pigeonhole.pigeonhole_bound` with ``--seconds``;
* ``LP``: ``T_LP`` bracketed by column generation (bisection on ``T``; the master LP is
  solved by SciPy's HiGHS, each pricing is the pigeonhole MIP at the master's duals,
  whose value ``c(pi)`` is itself a proven bound): ``[lo, hi]`` with ``lo`` the best
  ``c(pi)`` (a lower bound on ``OPT``) and ``hi`` a threshold at which the columns found
  already cover the ops with ``k`` blocks fractionally (so ``T_LP <= hi``).  It runs
  until the bracket closes to ``1e-4`` or ``--cg-seconds`` pass.

If ``LP`` sits near ``OPT`` and ``MWU`` well below, the weights are what is loose, not
the relaxation.  Seeds 8301.. (never used by the tests); REGAL-style graphs of 40 ops
and more outgrow the ideal DP.

    python benchmarks/pigeonhole_ceiling.py                       # 6 REGAL-style graphs of 30 / 36 ops, k = 8
    python benchmarks/pigeonhole_ceiling.py --ks 4 8 16 --cg-seconds 300
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np
from scipy.optimize import linprog

import mtpp
from formulations.pigeonhole import PigeonholeMip, build_pigeonhole, pigeonhole_bound, singleton_costs, weighted_bound
from mtpp.core.problem import Problem


def cover_lp(columns: list[np.ndarray], costs: list[float], t: float, k: int) -> tuple[np.ndarray, float]:
    """The dual of the covering LP over the columns of cost at most ``t``: ``max sum pi``
    s.t. ``pi(S) <= 1`` per column, ``0 <= pi <= k + 1``; its value is the fewest blocks
    (fractionally), or more than ``k`` where the columns leave an op uncovered (the cap
    ``k + 1`` is the price of leaving one out)."""
    n = columns[0].size
    rows = np.array([c for c, f in zip(columns, costs, strict=True) if f <= t], dtype=np.float64).reshape(-1, n)
    lp = linprog(-np.ones(n), A_ub=rows, b_ub=np.ones(len(rows)), bounds=(0, k + 1), method="highs")
    return lp.x, -lp.fun


def lp_bracket(
    problem: Problem, mip: PigeonholeMip, partition: np.ndarray, upper: float, seconds: float
) -> tuple[float, float, int]:
    """``(lo, hi, pricings)`` around ``T_LP`` (module docstring), from the singletons and the
    blocks of ``partition`` (cost ``upper`` at most) as the first columns."""
    g, k = problem.graph, problem.k
    single = singleton_costs(problem)
    columns = [np.arange(g.n) == v for v in range(g.n)] + [partition == b for b in range(k) if (partition == b).any()]
    costs = [float(c) for c in single] + [mip.cost(c) * mip.scale for c in columns[g.n :]]
    lo, hi, pricings = max(float(g.work.sum()) / k, float(g.work.max())), upper, 0  # f(S) >= work(S)
    deadline = time.perf_counter() + seconds
    while hi - lo > 1e-4 * hi and time.perf_counter() < deadline:
        t = 0.5 * (lo + hi)
        while True:
            pi, blocks = cover_lp(columns, costs, t, k)
            if blocks <= k * (1 + 1e-9):
                hi = t
                break
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            bound, _, block = weighted_bound(mip, pi, "auto", left)
            pricings += 1
            lo = max(lo, bound)
            if block is None or lo >= t:
                break
            columns.append(block)
            costs.append(mip.cost(block) * mip.scale)
    return lo, hi, pricings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", type=int, default=6)
    ap.add_argument("--nodes", type=int, nargs="+", default=[30, 36], help="op counts, taken in turn")
    ap.add_argument("--ks", type=int, nargs="+", default=[8])
    ap.add_argument("--seconds", type=float, default=20.0, help="for the multiplicative updates")
    ap.add_argument("--cg-seconds", type=float, default=120.0, help="for the column generation")
    ap.add_argument("--first-seed", type=int, default=8301)
    args = ap.parse_args()
    ratios: dict[str, list[float]] = {"MWU": [], "LP lo": [], "LP hi": []}
    for i in range(args.graphs):
        seed = args.first_seed + i
        g = mtpp.regal_graph(args.nodes[i % len(args.nodes)], seed=seed)
        for k in args.ks:
            exact = mtpp.certify(g, k=k, budget=60)
            opt = exact.upper_bound
            if not exact.optimal or opt <= 0:
                print(f"seed {seed} n={g.n} k={k}: skipped, OPT not proven (LB/UB {exact.lower_bound / opt:.4f})")
                continue
            problem = Problem(g, k)
            t0 = time.perf_counter()
            mwu = pigeonhole_bound(problem, time_limit=args.seconds)
            mwu_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            partition = np.array([exact.assignment[str(v)] for v in g.ids])
            lo, hi, pricings = lp_bracket(problem, build_pigeonhole(problem), partition, opt, args.cg_seconds)
            cg_s = time.perf_counter() - t0
            mwu_bound = mwu.bound if mwu.bound is not None else 0.0
            for name, value in (("MWU", mwu_bound), ("LP lo", lo), ("LP hi", hi)):
                ratios[name].append(value / opt)
            flag = "  BOUND ABOVE OPT" if max(mwu_bound, lo) > opt * (1 + 1e-6) else ""
            print(
                f"seed {seed} n={g.n} k={k}: OPT {opt:.6g}  "
                f"MWU {mwu_bound / opt:.4f} ({mwu.mips} MIPs, {mwu_s:.1f} s)  "
                f"LP in [{lo / opt:.4f}, {hi / opt:.4f}] ({pricings} pricings, {cg_s:.1f} s){flag}",
                flush=True,
            )
    print(f"\nmtpp {mtpp.__version__}; geometric means over {len(ratios['MWU'])} cases, bound / OPT:")
    for name, xs in ratios.items():
        print(f"  {name:>6}: {math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float('nan'):.4f}")


if __name__ == "__main__":
    main()
