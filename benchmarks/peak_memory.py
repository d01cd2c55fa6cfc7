"""Peak-memory orders on layered graphs, in the form of Topoformer Table 1 (run by hand).

    python -m benchmarks.peak_memory                 # ~15 min on 2 cores
    python -m benchmarks.peak_memory --n100 3 --n500 1 --n1000 1 --cpsat-limit 10 --limit 10   # quick look
    python -m benchmarks.peak_memory --certified --limit 60   # certified gaps of mtpp.schedule, ~25 min

``--certified`` runs ``mtpp.schedule(graph, method="auto", time_limit=--limit)``
(one wall-clock budget for the whole call) on unseen layered graphs of 100, 250,
500 and 1000 ops (seeds 1000, 1001, ...; ``--count`` each), the shared graphs and
the ONNX model-zoo architectures of ``benchmarks/_common.py`` (imported on the
a100 preset), and prints per graph the best order, the proven bound, the certified
gap ``(peak - bound) / peak``, the bound's method, the number of parts the graph
splits into and the wall time, then per set the mean / max gap and the count proven
optimal.

Graph sets (Topoformer App. A generator, :func:`mtpp.generators.layered_graph` with the
paper's parameters and its parameter costs of Eq. 15, seeds 0, 1, ...), plus the
shared Moccasin graph of the same size (``shared/graphs/layered``, no parameters).

For every graph, every method's peak is re-evaluated by :func:`mtpp.core.memory.peak_memory`;
"best" is the smallest peak any method found, "bound" the largest proven lower bound
(the local bound, the DP's bound, CP-SAT's bound).  The table gives, per size, the mean
% gap from the best order ``100 (peak - best) / best``, the mean % gap from the proven
bound ``100 (peak - bound) / bound``, and the mean run time.

Methods: dfs / bfs / random-100 (the paper's baselines); greedy (state DP, beam 1);
beam-1000 (the paper's approximate DP with state collapsing, beam 1000); brkga (Kahn
priorities, 50 x 200, seeded with dfs/bfs/greedy); dp-all (the state DP keeping every
state up to 2*10^5 per level, pruned by the best order so far: exact when it ends
uncut; after ``--limit`` s it narrows to 16 states per level so it ends with an order
and a bound); cpsat (the CP model of formulations/schedule.py, hinted with the best
order so far, ``--cpsat-limit`` s on 100 nodes, ``--limit`` s above).  Times of
dp-all and cpsat exclude the hint / upper bound they start from.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict

import numpy as np

from benchmarks._common import ONNX_MODELS, git_commit, shared_graphs, zoo_graph
from formulations.schedule import build_schedule
from heuristics.brkga import BrkgaParams
from heuristics.peak_memory.orders import brkga_order, random_orders, traversal_order
from heuristics.peak_memory.state_dp import state_dp
from mtpp import Graph
from mtpp.bounds.peak_memory import forced_live_bound
from mtpp.core.memory import local_lower_bound, peak_memory
from mtpp.generators import layered_graph
from solvers.cpsat_schedule import solve_schedule
from solvers.result import Status

METHODS = ("dfs", "bfs", "random-100", "greedy", "beam-1000", "brkga", "dp-all", "cpsat")


def graphs(n: int, count: int, shared: bool) -> list[tuple[str, Graph]]:
    out = [(f"layered({n}, seed={s})", layered_graph(n, s, param_costs=True)) for s in range(count)]
    if shared:
        out += [(f"shared {path.name[:22]}", g) for path, g in shared_graphs(f"random_layered_n{n}_*.json")]
    return out


def run_graph(g: Graph, cpsat_limit: float, limit: float, threads: int, seed: int) -> dict[str, tuple]:
    """method -> (peak, proven lower bound or 0, seconds, proven optimal)."""
    res: dict[str, tuple] = {}
    orders: dict[str, np.ndarray] = {}
    best_order, best_peak = None, np.inf

    def record(name: str, order: np.ndarray | None, lower: float, seconds: float, proven: bool = False) -> None:
        nonlocal best_order, best_peak
        peak = np.inf if order is None else peak_memory(g, order)
        if order is not None:
            orders[name] = order
        if peak < best_peak:
            best_order, best_peak = order, peak
        res[name] = (peak, lower, seconds, proven)

    for name, fn in (
        ("dfs", lambda: traversal_order(g, "dfs")),
        ("bfs", lambda: traversal_order(g, "bfs")),
        ("random-100", lambda: random_orders(g, 100, seed)),
    ):
        t = time.perf_counter()
        r = fn()
        record(name, r.order, 0.0, time.perf_counter() - t)
    for name, width in (("greedy", 1), ("beam-1000", 1000)):
        d = state_dp(g, beam_width=width, seed=seed)
        record(name, d.order, d.lower_bound, d.wall_time, d.exact)
    t = time.perf_counter()
    b = brkga_order(g, BrkgaParams(population=50, generations=200), seed, [orders["greedy"]], time_limit=limit)
    record("brkga", b.order, 0.0, time.perf_counter() - t)
    d = state_dp(g, beam_width=None, upper_order=best_order, time_limit=cpsat_limit if g.n <= 100 else limit)
    record("dp-all", d.order, d.lower_bound, d.wall_time, d.exact)
    t = time.perf_counter()
    forced = forced_live_bound(g)
    res["forced-live"] = (np.inf, forced, time.perf_counter() - t, False)
    model = build_schedule(g, lower_bound=forced, upper_bound=best_peak)  # redundant C >= forced-live bound
    c = solve_schedule(model, hint=best_order, time_limit=cpsat_limit if g.n <= 100 else limit, threads=threads)
    lower = model.to_size(c.bound) if np.isfinite(c.bound) else 0.0
    record("cpsat", c.order, lower, c.wall_time, c.status is Status.OPTIMAL and model.exact)
    return res


BOUNDS = ("local", "forced-live", "beam-1000", "dp-all", "cpsat")
CERTIFIED_SEED = 1000  # unseen by the tests and the default table (seeds 0, 1, ...)


def certified_sets(count: int, sizes: list[int]) -> list[tuple[str, list[tuple[str, Graph]]]]:
    from mtpp.core.presets import get_device

    sets = []
    for n in sizes:
        gs = [
            (f"layered({n}, seed={s})", layered_graph(n, s, param_costs=True))
            for s in range(CERTIFIED_SEED, CERTIFIED_SEED + count)
        ]
        gs += [(f"shared {p.name[:22]}", g) for p, g in shared_graphs(f"random_layered_n{n}_*.json")]
        sets.append((f"layered {n}", gs))
    spec = get_device("a100")
    sets.append(("onnx zoo", [(m, zoo_graph(m, spec)) for m in ONNX_MODELS]))
    return sets


def certified(args: argparse.Namespace) -> None:
    """The certified-gap table of ``mtpp.schedule(method="auto")`` (module docstring)."""
    from heuristics.peak_memory.split import split_graph
    from mtpp.scheduling import schedule

    print(
        f"mtpp certified peak memory at commit {git_commit()}; {os.cpu_count()} cores; "
        f"mtpp.schedule(method='auto', time_limit={args.limit:g})"
    )
    schedule(layered_graph(30, 0), time_limit=5)  # JIT warm-up (cached on disk after the first run)
    head = f"{'graph':34s} {'n':>5s} {'parts':>5s} {'peak':>14s} {'bound':>14s} {'gap %':>7s} {'bound by':>10s}"
    head += f" {'time':>6s}"
    summary = []
    for name, gs in certified_sets(args.count, args.sizes):
        print(f"\n{name}\n{head}")
        gaps, times, proven = [], [], 0
        for label, g in gs:
            s = schedule(g, method="auto", time_limit=args.limit, threads=args.threads, seed=args.seed)
            assert s.peak == peak_memory(g, s.index_order) and s.lower_bound <= s.peak
            parts = len(split_graph(g))
            gaps.append(100 * s.gap)
            times.append(s.wall_time)
            proven += s.status == "optimal"
            print(
                f"{label:34s} {g.n:5d} {parts:5d} {s.peak:14.0f} {s.lower_bound:14.0f} {100 * s.gap:7.2f} "
                f"{s.bound_method:>10s} {s.wall_time:6.1f}",
                flush=True,
            )
        summary.append((name, len(gs), np.mean(gaps), np.max(gaps), proven, np.mean(times), np.max(times)))
    print(
        f"\n{'set':12s} {'graphs':>6s} {'mean gap %':>10s} {'max gap %':>9s} {'optimal':>7s} {'mean s':>7s}"
        f" {'max s':>6s}"
    )
    for name, c, mean, worst, proven, mt, xt in summary:
        print(f"{name:12s} {c:6d} {mean:10.2f} {worst:9.2f} {proven:4d}/{c:<2d} {mt:7.1f} {xt:6.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n100", type=int, default=10, help="generated 100-node graphs")
    ap.add_argument("--n500", type=int, default=3, help="generated 500-node graphs")
    ap.add_argument("--n1000", type=int, default=2, help="generated 1000-node graphs")
    ap.add_argument("--no-shared", action="store_true", help="leave out the shared Moccasin graphs")
    ap.add_argument("--cpsat-limit", type=float, default=60.0, help="CP-SAT / dp-all seconds on 100 nodes")
    ap.add_argument("--limit", type=float, default=30.0, help="CP-SAT / dp-all / brkga seconds above 100 nodes")
    ap.add_argument("--threads", type=int, default=min(8, os.cpu_count() or 1), help="CP-SAT workers")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--certified", action="store_true", help="the certified-gap table of mtpp.schedule instead")
    ap.add_argument("--count", type=int, default=5, help="--certified: unseen layered graphs per size")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 250, 500, 1000], help="--certified: layered sizes")
    args = ap.parse_args()
    if args.certified:
        certified(args)
        return

    t_start = time.perf_counter()
    print(f"mtpp peak-memory benchmark at commit {git_commit()}; {os.cpu_count()} cores, CP-SAT {args.threads} workers")
    state_dp(layered_graph(20, 0), beam_width=2)  # JIT warm-up (cached on disk after the first run)
    sizes = {100: args.n100, 500: args.n500, 1000: args.n1000}
    table: dict[int, dict[str, list[tuple[float, float, float]]]] = {}
    bounds: dict[int, dict[str, list[float]]] = {}
    proven: dict[int, dict[str, int]] = {}
    counts: dict[int, int] = {}
    for n, count in sizes.items():
        sets = graphs(n, count, not args.no_shared)
        if not sets:
            continue
        table[n], bounds[n], proven[n] = defaultdict(list), defaultdict(list), defaultdict(int)
        counts[n] = len(sets)
        for label, g in sets:
            res = run_graph(g, args.cpsat_limit, args.limit, args.threads, args.seed)
            res["local"] = (np.inf, local_lower_bound(g), 0.0, False)
            best = min(r[0] for r in res.values())
            bound = max(r[1] for r in res.values())
            assert bound <= best * (1 + 1e-9), (label, bound, best)
            for name in METHODS:
                peak, _, seconds, ok = res[name]
                table[n][name].append((100 * (peak - best) / best, 100 * (peak - bound) / bound, seconds))
                proven[n][name] += bool(ok)
            for name in BOUNDS:
                bounds[n][name].append(100 * (best - res[name][1]) / max(res[name][1], 1e-300))
            bounds[n]["best bound"].append(100 * (best - bound) / bound)
            proven[n]["any"] += bool(best <= bound * (1 + 1e-9))
            print(
                f"  n={n:4d} {label:34s} best {best:10.0f}  bound {bound:10.0f}  "
                f"gap {100 * (best - bound) / bound:5.1f}%  " + " ".join(f"{m}={res[m][0]:.0f}" for m in METHODS),
                flush=True,
            )

    ns = list(table)
    print()
    print("Mean over the graphs of each size: % gap of each method's peak from the best order any method")
    print("found, % gap from the best proven lower bound, and run time [s] (the layout of Topoformer Table 1).")
    head = f"{'method':12s}" + "".join(f" | {f'{n}-node graphs ({counts[n]})':^30s}" for n in ns)
    sub = f"{'':12s}" + "".join(f" | {'% best':>8s} {'% bound':>9s} {'time':>9s} " for _ in ns)
    print(head)
    print(sub)
    print("-" * len(sub))
    for m in METHODS:
        line = f"{m:12s}"
        for n in ns:
            rows = np.array(table[n][m])
            line += f" | {rows[:, 0].mean():8.2f} {rows[:, 1].mean():9.2f} {rows[:, 2].mean():9.2f} "
        print(line)
    print()
    print("Lower bounds: mean % gap of the best order above each proven bound (0 = the bound proves optimality).")
    for name in (*BOUNDS, "best bound"):
        print(f"{name:12s}" + "".join(f" | {np.mean(bounds[n][name]):8.2f}" for n in ns))
    print()
    for n in ns:
        c = counts[n]
        parts = [f"{m} {proven[n][m]}/{c}" for m in ("beam-1000", "dp-all", "cpsat")]
        lim = args.cpsat_limit if n <= 100 else args.limit
        print(f"proven optimal, n={n} ({lim:g} s limits): " + ", ".join(parts) + f", any method {proven[n]['any']}/{c}")
    print(f"total wall time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
