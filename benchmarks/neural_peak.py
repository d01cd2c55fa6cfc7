"""Learned peak-memory orders against the classical ones, in the form of Topoformer Table 1.

    python -m benchmarks.neural_peak                       # the full table (~30 min on 2 cores)
    python -m benchmarks.neural_peak --n500 20 --n1000 5 --n2000 2   # quick look

Test sets: ``--n500`` unseen 500-node layered graphs (Topoformer App. A generator,
seeds from 10^6 on (``--first-seed``), which training never draws; half with the parameter costs of
Eq. 15), ``--n1000`` and ``--n2000`` larger ones (cross-size generalisation: the
shipped model trained on 100-200 nodes), and the four shared graphs
(``shared/graphs/layered``).  Every peak is re-evaluated by
:func:`mtpp.core.memory.peak_memory`.

Methods: Topoformer greedy / sample-16 / beam-16 (shipped ``topoformer-peak``, or
``--weights``; ``--compare OTHER`` adds the same three rows for a second weights file,
marked ``'``, e.g. new weights against the shipped ones in one run); the learned
dispatch rule (:mod:`heuristics.peak_memory.learned_rule`, shipped ``rule-peak``, its
features included in its time), greedy and as the best of 16 samples; approximate DP (the
state DP with state collapsing, ``--dp-width`` states per level; the paper uses 10^5 on
a GPU); random-100; DFS; BFS; BRKGA (Kahn priorities, 50 x 100 = 5000 evaluations,
seeded with the dfs and bfs orders). ``brkga@t(sample-16)`` / ``@t(beam-16)`` /
``@t(rule s-16)``: the same BRKGA stopped at that decoder's wall time on the graph (the
equal-time question). Run
times include everything a user pays (features, masks, the forward pass on one CPU
thread, decoding).

Per size: mean % gap from the best order any method found, and from a proven lower
bound where one is asked for: CP-SAT's on the shared graphs (``--cpsat-limit``), that
of ``mtpp.schedule(method="auto")`` on the other graphs (``--bound-limit`` seconds
each; its order joins the best, and the graphs it proves optimal are counted), plus
mean run time; the graphs where each decoder beats BRKGA at its wall time; and
the share of graphs where each method is at least as good as each neural decoder.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import torch

from benchmarks._common import git_commit, shared_graphs
from heuristics.brkga import BrkgaParams
from heuristics.neural.inference import topoformer_order
from heuristics.neural.objectives import PeakMemory
from heuristics.peak_memory.learned_rule import RuleWeights, rule_order, rule_sample
from heuristics.peak_memory.orders import brkga_order, random_orders, traversal_order
from heuristics.peak_memory.state_dp import state_dp
from mtpp import Graph
from mtpp.core.memory import peak_memory
from mtpp.generators import layered_graph
from mtpp.scheduling import schedule

TEST_SEED = 1_000_000
NEURAL = ("neural greedy", "neural sample-16", "neural beam-16")
COMPARED = tuple(f"{m}'" for m in NEURAL)  # the --compare weights
RULE = ("learned rule", "rule sample-16")
EQUAL_TIME = ("brkga@t(sample-16)", "brkga@t(beam-16)", "brkga@t(rule s-16)")  # stopped at that decoder's wall time
METHODS = (*NEURAL, *RULE, "approx. DP", "random-100", "dfs", "bfs", "brkga-5000", *EQUAL_TIME)


def test_graphs(n: int, count: int, first: int = TEST_SEED) -> list[tuple[str, Graph]]:
    return [(f"layered({n}, {first + i})", layered_graph(n, first + i, param_costs=i % 2 == 0)) for i in range(count)]


def run_graph(
    g: Graph, weights: str, dp_width: int, seed: int, compare: str | None = None
) -> dict[str, tuple[np.ndarray, float]]:
    """method -> (order, seconds)."""
    out: dict[str, tuple[np.ndarray, float]] = {}

    def timed(name: str, fn: Callable[[], np.ndarray]) -> None:
        t = time.perf_counter()
        order = fn()
        out[name] = (order, time.perf_counter() - t)

    objective = PeakMemory()
    for names, w in ((NEURAL, weights), (COMPARED, compare)):
        for name, mode in zip(names, ("greedy", "sample", "beam")):
            if w is not None:
                timed(name, lambda mode=mode, w=w: topoformer_order(g, objective, w, mode, 16, seed).order)
    rule = RuleWeights.load()
    timed("learned rule", lambda: rule_order(g, rule))
    timed("rule sample-16", lambda: rule_sample(g, rule, 16, seed=seed))
    timed("approx. DP", lambda: state_dp(g, beam_width=dp_width, seed=seed).order)
    timed("random-100", lambda: random_orders(g, 100, seed).order)
    timed("dfs", lambda: traversal_order(g, "dfs").order)
    timed("bfs", lambda: traversal_order(g, "bfs").order)
    timed("brkga-5000", lambda: brkga_order(g, BrkgaParams(population=50, generations=100), seed).order)
    params = BrkgaParams(population=50, generations=10**6)
    for name, rival in zip(EQUAL_TIME, (*NEURAL[1:], RULE[1])):
        timed(name, lambda t=out[rival][1]: brkga_order(g, params, seed, time_limit=t).order)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n500", type=int, default=300)
    ap.add_argument("--n1000", type=int, default=20)
    ap.add_argument("--n2000", type=int, default=10)
    ap.add_argument("--no-shared", action="store_true")
    ap.add_argument("--dp-width", type=int, default=1000, help="approximate DP states per level (default 1000)")
    ap.add_argument("--cpsat-limit", type=float, default=0.0, help="CP-SAT seconds on the shared graphs (0: off)")
    ap.add_argument(
        "--bound-limit", type=float, default=0.0, help="seconds of schedule(method='auto') per other graph (0: off)"
    )
    ap.add_argument("--weights", default="topoformer-peak")
    ap.add_argument("--compare", default=None, help="a second Topoformer weights file, rows marked '")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--first-seed", type=int, default=TEST_SEED, help="first test graph seed (default 10^6)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    methods = (*NEURAL, *(COMPARED if args.compare else ()), *METHODS[len(NEURAL) :])

    t_start = time.perf_counter()
    compared = f" ({args.compare}: rows marked ')" if args.compare else ""
    print(
        f"mtpp neural peak-memory benchmark at commit {git_commit()}; weights {args.weights}{compared}; one CPU thread"
    )
    warm = layered_graph(300, 0)  # above the kernels' threshold for the Python path (mtpp.core.jit)
    run_graph(warm, args.weights, 4, 0, args.compare)  # JIT and model loads
    sets: dict[str, list[tuple[str, Graph]]] = {}
    for n, count in ((500, args.n500), (1000, args.n1000), (2000, args.n2000)):
        if count:
            sets[f"{n}-node ({count})"] = test_graphs(n, count, args.first_seed)
    if not args.no_shared:
        shared = [(p.stem[:28], g) for p, g in shared_graphs("*.json")]
        sets[f"shared ({len(shared)})"] = shared
    gaps: dict[str, dict[str, list[float]]] = {}
    bound_gaps: dict[str, dict[str, list[float]]] = {}
    times: dict[str, dict[str, list[float]]] = {}
    wins: dict[str, dict[str, list[float]]] = {}
    lower: dict[str, dict[str, list[float]]] = {}  # decoder -> sign(BRKGA's peak at its time - its peak)
    proven: dict[str, int] = defaultdict(int)  # graphs whose optimum --bound-limit proved
    for label, graphs in sets.items():
        gaps[label], bound_gaps[label] = defaultdict(list), defaultdict(list)
        times[label], wins[label], lower[label] = defaultdict(list), defaultdict(list), defaultdict(list)
        for name, g in graphs:
            res = run_graph(g, args.weights, args.dp_width, args.seed, args.compare)
            peaks = {m: peak_memory(g, order) for m, (order, _) in res.items()}
            best = min(peaks.values())
            bound = None
            if args.cpsat_limit > 0 and label.startswith("shared"):
                s = schedule(g, method="cpsat", time_limit=args.cpsat_limit, seed=args.seed)
                best, bound = min(best, s.peak), s.lower_bound
            elif args.bound_limit > 0:
                s = schedule(g, method="auto", time_limit=args.bound_limit, seed=args.seed)
                best, bound = min(best, s.peak), s.lower_bound
                proven[label] += s.peak <= bound
            for m in methods:
                gaps[label][m].append(100 * (peaks[m] - best) / best)
                times[label][m].append(res[m][1])
                wins[label][m].append(float(peaks[m] <= peaks["neural greedy"]))
                if bound:
                    bound_gaps[label][m].append(100 * (peaks[m] - bound) / bound)
            for rival, brkga in zip((*NEURAL[1:], RULE[1]), EQUAL_TIME):
                lower[label][rival].append(float(np.sign(peaks[brkga] - peaks[rival])))
            print(
                f"  {label:14s} {name:28s} n={g.n:5d} best {best:12.0f} "
                + " ".join(f"{m.replace(' ', '_')}={peaks[m]:.0f}" for m in methods),
                flush=True,
            )

    print()
    print("Mean % gap from the best order any method found and from the proven bound where run, mean run time [s]")
    if proven:
        print("optimum proven by --bound-limit: " + ", ".join(f"{lab} {proven[lab]}" for lab in sets if lab in proven))
    labels = list(sets)
    print(f"{'method':18s}" + "".join(f" | {lab:^27s}" for lab in labels))
    print(f"{'':18s}" + "".join(f" | {'% best':>8s} {'% bound':>8s} {'time':>8s}" for _ in labels))
    for m in methods:
        line = f"{m:18s}"
        for lab in labels:
            bg = f"{np.mean(bound_gaps[lab][m]):8.2f}" if bound_gaps[lab][m] else f"{'-':>8s}"
            line += f" | {np.mean(gaps[lab][m]):8.2f} {bg} {np.mean(times[lab][m]):8.4f}"
        print(line)
    print()
    print("Share of graphs where the method's peak is <= neural greedy's:")
    for m in methods[1:]:
        print(f"{m:18s}" + "".join(f" | {100 * np.mean(wins[lab][m]):6.1f}%" for lab in labels))
    print()
    print("Equal time: graphs where the decoder's peak is lower / equal / higher than BRKGA's at its wall time:")
    for rival in (*NEURAL[1:], RULE[1]):
        line = f"{rival:18s}"
        for lab in labels:
            signs = lower[lab][rival]
            line += f" | {signs.count(1.0):3d} / {signs.count(0.0):3d} / {signs.count(-1.0):3d}"
        print(line)
    print(f"total wall time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
