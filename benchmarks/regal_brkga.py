"""REGAL-style learned BRKGA against uniform BRKGA at the same evaluation budget (REGAL Table 1 form).

    python benchmarks/regal_brkga.py                  # 40 graphs per objective (~15 min on 2 cores)
    python benchmarks/regal_brkga.py --graphs 5       # quick look

For each unseen graph (seeds from 10^6 on, which training never draws): BRKGA with
uniform mutants and BRKGA with the mutant distributions of the shipped REGAL GNN
(``regal-peak`` / ``regal-mtpp``, or ``--weights-peak`` / ``--weights-mtpp``), both
with ``--evaluations`` decodes (5000 as in the REGAL paper) and the same BRKGA seed and
kahn/dfs/bfs seeding; and a reference run with ten times the budget to define the best
known solution; and uniform BRKGA (same population) run for the wall time the learned
run took, GNN forward pass included (``uniform @ t(REGAL)``, the equal-time rival).
Peak memory on layered graphs of 100-200 nodes (half with parameter costs), the MTPP
bottleneck (k = 8) on REGAL-style graphs.

Reported per objective: the geometric mean % gap from the best known cost (REGAL
Table 1 reports peak memory: BRKGA 5K 7.98%, REGAL 4.44%), win / tie / loss of the
learned run against the uniform one, and mean run times.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from benchmarks.peak_memory import git_commit  # noqa: E402
from heuristics.brkga import BrkgaParams, brkga  # noqa: E402
from heuristics.neural.objectives import OrderObjective, make_objective  # noqa: E402
from heuristics.neural.regal import load_regal, regal_brkga, uniform_brkga  # noqa: E402
from heuristics.traversal import classic_priorities  # noqa: E402
from mtpp.generators.layered import layered_graph  # noqa: E402
from mtpp.generators.regal import regal_graph  # noqa: E402
from mtpp.graph import Graph  # noqa: E402

TEST_SEED = 1_000_000


def test_graph(objective: str, i: int) -> Graph:
    rng = np.random.default_rng(TEST_SEED + i)
    n = int(rng.integers(100, 200, endpoint=True))
    if objective == "peak":
        return layered_graph(n, seed=TEST_SEED + i, param_costs=i % 2 == 0)
    return regal_graph(n, seed=TEST_SEED + i)


def uniform_for(g: Graph, objective: OrderObjective, evaluations: int, seed: int, seconds: float) -> float:
    """Uniform BRKGA with the population of an ``evaluations`` budget, run for ``seconds``
    (generation by generation, the last one finishing past the limit): the equal-time rival."""
    side = BrkgaParams.for_budget(evaluations).population
    res = brkga(
        lambda keys, ub: objective.key_costs(g, keys, ub),
        g.n,
        BrkgaParams(side, 10**7),
        seed=seed,
        initial=classic_priorities(g),
        time_limit=seconds,
    )
    return res.fitness


def geo_gap(costs: np.ndarray, best: np.ndarray) -> float:
    """Geometric mean of 1 + gap, minus 1, in percent (REGAL reports geometric averages)."""
    return 100 * (float(np.exp(np.mean(np.log(costs / best)))) - 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=40)
    ap.add_argument("--evaluations", type=int, default=5000)
    ap.add_argument("--objectives", nargs="+", default=["peak", "mtpp"])
    ap.add_argument("--weights-peak", default="regal-peak")
    ap.add_argument("--weights-mtpp", default="regal-mtpp")
    ap.add_argument("-k", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)

    t_start = time.perf_counter()
    print(f"mtpp REGAL benchmark at commit {git_commit()}; {args.evaluations} evaluations; one CPU thread")
    summary = []
    for name in args.objectives:
        objective = make_objective(name, args.k)
        model = load_regal(args.weights_peak if name == "peak" else args.weights_mtpp)
        rows = []
        for i in range(args.graphs):
            g = test_graph(name, i)
            t = time.perf_counter()
            uni = uniform_brkga(g, objective, args.evaluations, seed=args.seed)
            t_uni = time.perf_counter() - t
            t = time.perf_counter()
            learned = regal_brkga(g, objective, model, args.evaluations, seed=args.seed)
            t_learned = time.perf_counter() - t
            same_time = uniform_for(g, objective, args.evaluations, args.seed, t_learned)
            ref = uniform_brkga(g, objective, 10 * args.evaluations, seed=args.seed + 1)
            best = min(uni.cost, learned.cost, ref.cost, same_time)
            rows.append((uni.cost, learned.cost, best, t_uni, t_learned, same_time))
            print(
                f"  {name:4s} graph {i:3d} n={g.n:3d} uniform {uni.cost:12.6g}  regal {learned.cost:12.6g}  "
                f"best {best:12.6g}",
                flush=True,
            )
        a = np.array(rows)
        wins = int(np.sum(a[:, 1] < a[:, 0] * (1 - 1e-12)))
        losses = int(np.sum(a[:, 1] > a[:, 0] * (1 + 1e-12)))
        summary.append(
            (
                name,
                geo_gap(a[:, 0], a[:, 2]),
                geo_gap(a[:, 1], a[:, 2]),
                wins,
                len(a) - wins - losses,
                losses,
                a[:, 3].mean(),
                a[:, 4].mean(),
                geo_gap(a[:, 5], a[:, 2]),
            )
        )

    print()
    print(f"% gap from the best known (geometric mean over {args.graphs} graphs), win/tie/loss of REGAL vs uniform")
    head = ("objective", "BRKGA uniform", "REGAL BRKGA", "W/T/L", "t uniform", "t REGAL", "uniform @ t(REGAL)")
    print(f"{head[0]:10s} {head[1]:>14s} {head[2]:>12s} {head[3]:>10s} {head[4]:>10s} {head[5]:>9s} {head[6]:>19s}")
    for name, gu, gl, w, t_, l_, tu, tl, gs in summary:
        print(f"{name:10s} {gu:13.2f}% {gl:11.2f}% {f'{w}/{t_}/{l_}':>10s} {tu:9.3f}s {tl:8.3f}s {gs:18.2f}%")
    print(f"total wall time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
