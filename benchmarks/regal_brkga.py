"""REGAL-style learned BRKGA against uniform BRKGA at the same evaluation budget (REGAL Table 1 form).

    python -m benchmarks.regal_brkga                  # 40 graphs per objective (~15 min on 2 cores)
    python -m benchmarks.regal_brkga --graphs 5       # quick look

For each unseen graph (seeds from 10^6 on, which training never draws): BRKGA with
uniform mutants, BRKGA with the mutant distributions of the shipped REGAL GNN
(``regal-peak`` / ``regal-mtpp``, or ``--weights-peak`` / ``--weights-mtpp``) and BRKGA
with mutants drawn around the Topoformer priorities (:mod:`heuristics.neural.prior_mutants`,
``topoformer-peak`` / ``topoformer-mtpp``), all with ``--evaluations`` decodes (5000 as
in the REGAL paper) and the same BRKGA seed and kahn/dfs/bfs seeding; a reference run
with ten times the budget to define the best known solution; and uniform BRKGA (same
population) run for the wall time each learned run took, forward pass included
(``uniform @ t(learned)``, the equal-time rival). Peak memory on layered graphs of
100-200 nodes (half with parameter costs), the MTPP bottleneck (k = 8) on REGAL-style
graphs.

Reported per objective: the geometric mean % gap from the best known cost (REGAL
Table 1 reports peak memory: BRKGA 5K 7.98%, REGAL 4.44%), win / tie / loss of each
learned run against the uniform one, and mean run times.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch (OpenMP reads it once)

import numpy as np
import torch

from benchmarks._common import git_commit
from heuristics.brkga import BrkgaParams, brkga
from heuristics.neural.objectives import OrderObjective, make_objective
from heuristics.neural.prior_mutants import topoformer_brkga
from heuristics.neural.regal import load_regal, regal_brkga, uniform_brkga
from heuristics.traversal import classic_priorities
from mtpp.core.graph import Graph
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph

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
    ap.add_argument("--topoformer-peak", default="topoformer-peak", help="Topoformer weights of the prior (peak)")
    ap.add_argument("--topoformer-mtpp", default="topoformer-mtpp", help="Topoformer weights of the prior (mtpp)")
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
        topo = args.topoformer_peak if name == "peak" else args.topoformer_mtpp
        rows = []
        for i in range(args.graphs):
            g = test_graph(name, i)
            costs, seconds = [], []
            for search, extra in ((uniform_brkga, ()), (regal_brkga, (model,)), (topoformer_brkga, (topo,))):
                t = time.perf_counter()
                costs.append(search(g, objective, *extra, args.evaluations, seed=args.seed).cost)
                seconds.append(time.perf_counter() - t)
            same_time = [uniform_for(g, objective, args.evaluations, args.seed, t) for t in seconds[1:]]
            ref = uniform_brkga(g, objective, 10 * args.evaluations, seed=args.seed + 1)
            best = min(*costs, *same_time, ref.cost)
            rows.append((*costs, *seconds, *same_time, best))
            print(
                f"  {name:4s} graph {i:3d} n={g.n:3d} uniform {costs[0]:12.6g}  regal {costs[1]:12.6g}  "
                f"topoformer {costs[2]:12.6g}  best {best:12.6g}",
                flush=True,
            )
        a = np.array(rows)
        for j, learned in ((1, "REGAL GNN"), (2, "Topoformer prior")):
            wins = int(np.sum(a[:, j] < a[:, 0] * (1 - 1e-12)))
            losses = int(np.sum(a[:, j] > a[:, 0] * (1 + 1e-12)))
            summary.append(
                (
                    name,
                    learned,
                    geo_gap(a[:, 0], a[:, -1]),
                    geo_gap(a[:, j], a[:, -1]),
                    wins,
                    len(a) - wins - losses,
                    losses,
                    a[:, 3].mean(),
                    a[:, 3 + j].mean(),
                    geo_gap(a[:, 5 + j], a[:, -1]),
                )
            )

    print()
    print(
        f"% gap from the best known (geometric mean over {args.graphs} graphs), "
        "win/tie/loss of the learned mutants vs uniform"
    )
    head = ("objective", "mutants", "BRKGA uniform", "learned", "W/T/L")
    head += ("t uniform", "t learned", "uniform @ t(learned)")
    print(
        f"{head[0]:10s} {head[1]:17s} {head[2]:>14s} {head[3]:>9s} {head[4]:>10s} {head[5]:>10s} {head[6]:>10s} "
        f"{head[7]:>21s}"
    )
    for name, learned, gu, gl, w, t_, l_, tu, tl, gs in summary:
        print(
            f"{name:10s} {learned:17s} {gu:13.2f}% {gl:8.2f}% {f'{w}/{t_}/{l_}':>10s} {tu:9.3f}s {tl:9.3f}s {gs:20.2f}%"
        )
    print(f"total wall time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
