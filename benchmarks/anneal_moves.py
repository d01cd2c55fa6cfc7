"""The annealer's cone pushes and swaps, each against the moves without it (issue 23).

For each graph and k, ``--chains`` runs of :func:`heuristics.partition.anneal.anneal_partition`
of ``--seconds`` each, from the same fresh partitions (:func:`spread_start`, a random
topological order cut into equal-work segments) and the same seeds, once without the
``--move`` (``push=0`` for cones, ``swap=0`` for swaps: the reference, in the same process)
and once with it (``--share`` of the moves, else the default: :data:`heuristics.partition.anneal.PUSH`
for cones, :func:`heuristics.partition.anneal.swap_share` for swaps); the other kind of move
keeps its default in both.  It prints the median and best bottleneck of each, the ratio of
the medians (below 1: the move wins) and the moves per second.  Every partition is
re-checked with :func:`mtpp.evaluate`.

    python benchmarks/anneal_moves.py                 # cones, dev layered 9201, 500 ops, k = 8 / 16 / 32
    python benchmarks/anneal_moves.py --seeds 9211 --nodes 2000 --ks 32 --seconds 10 --chains 4
    python benchmarks/anneal_moves.py --move swap --kind regal --seeds 9311 9314 --ks 16 32 --seconds 5 --chains 5

Graphs are ``layered_graph(--nodes, seed)`` (``--kind regal``: ``regal_graph(None, seed)``);
the default seeds are dev seeds, never used by the tests or ``benchmarks/wide_bounds.py``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
from pathlib import Path

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import mtpp
from heuristics.partition.anneal import PUSH, anneal_partition, spread_start, swap_share


def chains(problem: mtpp.Problem, moves_kw: dict[str, float], count: int, seconds: float) -> tuple[list[float], float]:
    """The re-checked bottlenecks of ``count`` runs with ``moves_kw`` (``push`` or ``swap``),
    and their moves per second."""
    costs, moves, wall = [], 0, 0.0
    for c in range(count):
        start = spread_start(problem, 100 + c)
        res = anneal_partition(problem, start, time_limit=seconds, seed=c, **moves_kw)
        if res is None:
            raise SystemExit(f"the annealer cannot price this problem ({problem.graph.n} ops, k = {problem.k})")
        ev = mtpp.evaluate(problem, res.assignment)
        if not math.isclose(ev.bottleneck, res.bottleneck, rel_tol=1e-9):
            raise SystemExit(f"the annealer's cost {res.bottleneck} is not the evaluator's {ev.bottleneck}")
        costs.append(ev.bottleneck)
        moves, wall = moves + res.moves, wall + res.wall_time
    return costs, moves / max(wall, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=["layered", "regal"], default="layered")
    ap.add_argument("--nodes", type=int, default=500, help="ops of a layered graph")
    ap.add_argument("--seeds", type=int, nargs="+", default=[9201])
    ap.add_argument("--ks", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--chains", type=int, default=6, help="runs per graph, k and variant")
    ap.add_argument("--seconds", type=float, default=20.0, help="seconds per run")
    ap.add_argument("--move", choices=["cone", "swap"], default="cone", help="the kind of move measured")
    ap.add_argument("--share", type=float, default=None, help="the part of the moves of that kind")
    args = ap.parse_args()
    key = "push" if args.move == "cone" else "swap"
    print(f"mtpp at {mtpp.__file__}; {args.chains} runs of {args.seconds:g} s per variant")
    head = f"{'graph':>12} {'k':>3}  {'without: median':>15} {'best':>10}  {args.move + 's: median':>13} {'best':>10}"
    print(f"{head}  ratio  Mmoves/s")
    for seed in args.seeds:
        g = mtpp.layered_graph(args.nodes, seed=seed) if args.kind == "layered" else mtpp.regal_graph(None, seed=seed)
        for k in args.ks:
            problem = mtpp.Problem(g, k)
            share = args.share if args.share is not None else PUSH if key == "push" else swap_share(problem)
            anneal_partition(problem, spread_start(problem, 0), moves=1000)  # compile first
            ref, ref_rate = chains(problem, {key: 0.0}, args.chains, args.seconds)
            new, new_rate = chains(problem, {key: share}, args.chains, args.seconds)
            ratio = statistics.median(new) / statistics.median(ref)
            print(
                f"{args.kind[:1]}{seed}/{g.n:<6} {k:>3}  {statistics.median(ref):>15,.0f} {min(ref):>10,.0f}"
                f"  {statistics.median(new):>13,.0f} {min(new):>10,.0f}  {ratio:.3f}"
                f"  {ref_rate / 1e6:.1f} / {new_rate / 1e6:.1f}"
            )


if __name__ == "__main__":
    main()
