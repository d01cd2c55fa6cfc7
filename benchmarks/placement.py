"""Heterogeneous placement: how good are the placements, and how far from optimal
(issue 8, section 5).  Run by hand:
``nice python -m benchmarks.placement [--time-limit S] [--cp-time S] [--seeds K]
[--regal-time S] [--regal-cp-time S] [--spec cpu]``.

(a) HSDAG Table 2 form.  inception_v2, resnet50, densenet121 (the ONNX model-zoo
    architectures shipped with ``onnx``, ``onnx/backend/test/data/light``) and
    BERT-base (``transformers``, random weights, sequence length 128, through
    :func:`mtpp.io.torch_model.from_torch`) on the ``cpu-igpu-dgpu`` preset.  Op times are
    priced with the ``--spec`` roofline (default ``cpu``: the preset's reference
    device, speed 1, is the CPU, so ``work`` is the CPU time); the iGPU and dGPU times
    follow from the preset's speed factors.  For each: the runtime of each single
    device, HEFT, BRKGA (``--time-limit`` s) and coarsened BRKGA (``--time-limit`` s:
    coarsen to the default target, BRKGA on the coarse graph for half, single-op
    refinement on the original graph for the rest), the speed-up over CPU-only, and
    the gap ``(runtime - bound) / runtime`` to the CP-SAT lower bound (``--cp-time``
    s, hinted with the best of HEFT and the single devices; the bound is on the
    original graph).  Every runtime is re-simulated on the original graph.

(b) REGAL-style synthetic graphs (:func:`mtpp.generators.regal_graph`, seeds
    ``0 .. K-1``) on the ``two-devices`` preset, for both objectives: the mean % gap
    of each method from the best placement any method found (``(v - best) / best``)
    and from the proven bound (``(v - bound) / v``).  Methods: the best single
    device, HEFT, BRKGA and coarse-BRKGA (``--regal-time`` s each) and, for runtime,
    CP-SAT (``--regal-cp-time`` s).  The runtime bound is the CP-SAT bound (with
    :func:`formulations.placement.simple_lower_bound`); the peak-memory bound is the
    largest single-op footprint (:func:`mtpp.placement.api.place`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common import bert_graph, git_commit, zoo_graph
from heuristics.placement.baselines import all_single_devices
from mtpp.core.graph import Graph
from mtpp.core.presets import get_devices
from mtpp.core.simulator import PlacementContext, simulate
from mtpp.generators import regal_graph
from mtpp.placement.api import Placement, place

MODELS = ["inception_v2", "resnet50", "densenet121", "bert-base"]


def load(name: str, spec: str) -> Graph:
    if name == "bert-base":
        return bert_graph(128, spec)[0]
    return zoo_graph(name, spec)


def checked(g: Graph, devices: str, p: Placement) -> float:
    """The objective value, re-simulated on the original graph."""
    r = simulate(g, devices, list(p.device), list(p.order))
    assert p.makespan >= r.makespan and r.memory_feasible == p.memory_feasible  # the upper bound is rounded up
    return p.upper_bound


def table_a(args: argparse.Namespace) -> None:
    ds = "cpu-igpu-dgpu"
    print(
        f"(a) HSDAG Table 2 form on {ds!r}: runtime in ms (op times from the {args.spec!r} roofline), "
        f"speed-up over CPU-only, gap to the CP-SAT bound; BRKGA and coarse-BRKGA {args.time_limit:g} s, "
        f"CP-SAT {args.cp_time:g} s, 2 threads"
    )
    head = f"{'model':<13} {'n':>4} {'method':<18} {'runtime ms':>11} {'speed-up':>9} {'gap %':>7} {'wall s':>7}"
    print(head)
    print("-" * len(head))
    for name in MODELS:
        t0 = time.perf_counter()
        g = load(name, args.spec)
        t_load = time.perf_counter() - t0
        ctx = PlacementContext(g, ds)
        rows: list[tuple[str, float, float]] = []
        for c in all_single_devices(ctx):
            rows.append((c.method.replace("single:", "") + "-only", c.sim.makespan, 0.0))
        for method, tl in (("heft", 1.0), ("brkga", args.time_limit), ("coarse-brkga", args.time_limit)):
            p = place(g, ds, method=method, time_limit=tl, seed=0, threads=2)
            rows.append((method, checked(g, ds, p), p.wall_time))
        cp = place(g, ds, method="cpsat", time_limit=args.cp_time, seed=0, threads=2)
        rows.append((f"cpsat ({cp.cpsat_status})", checked(g, ds, cp), cp.wall_time))
        bound = float(cp.lower_bound or 0.0)
        cpu = rows[0][1]
        for method, v, wall in rows:
            gap = 100 * (v - bound) / v if v > 0 else 0.0
            print(f"{name:<13} {g.n:>4} {method:<18} {v / 1e3:>11.4f} {cpu / v:>8.2f}x {gap:>7.2f} {wall:>7.1f}")
        print(
            f"{name:<13} {g.n:>4} {'CP-SAT bound':<18} {bound / 1e3:>11.4f} {cpu / bound:>8.2f}x "
            f"{'':>7} {'(load ' + format(t_load, '.1f') + ' s)':>7}"
        )
        print()


def table_b(args: argparse.Namespace) -> None:
    ds = "two-devices"
    print(
        f"(b) REGAL-style graphs (regal_graph seeds 0..{args.seeds - 1}) on {ds!r} "
        f"(2 x 16 GiB, memory limits enforced): mean % gap from the best known and from the proven bound; "
        f"heuristics {args.regal_time:g} s each, CP-SAT {args.regal_cp_time:g} s (runtime only)"
    )
    dev = get_devices(ds)
    for objective in ("runtime", "peak_memory"):
        methods = ["single", "heft", "brkga", "coarse-brkga"] + (["cpsat"] if objective == "runtime" else [])
        vals: dict[str, list[float]] = {m: [] for m in methods}
        bounds: list[float] = []
        ns: list[int] = []
        for s in range(args.seeds):
            g = regal_graph(seed=s)
            ns.append(g.n)
            lb = 0.0
            for m in methods:
                tl = args.regal_cp_time if m == "cpsat" else args.regal_time
                p = place(g, dev, objective=objective, method=m, time_limit=tl, seed=s, threads=2)
                v = checked(g, ds, p) if p.memory_feasible else float("inf")
                vals[m].append(v)
                lb = max(lb, float(p.lower_bound or 0.0))
            bounds.append(lb)
        best = np.min(np.array([vals[m] for m in methods]), axis=0)
        bnd = np.array(bounds)
        optimal = int(np.sum(np.isclose(best, bnd, rtol=1e-9)))
        gap = 100 * np.mean((best - bnd) / best)
        print(
            f"  objective {objective}: n = {min(ns)}..{max(ns)}; best known proven optimal on "
            f"{optimal}/{args.seeds}; mean gap best known -> bound {gap:.2f} %"
        )
        head = f"  {'method':<14} {'% from best':>12} {'% from bound':>13} {'best on':>8} {'infeasible':>11}"
        print(head)
        print("  " + "-" * (len(head) - 2))
        for m in methods:
            v = np.array(vals[m])
            ok = np.isfinite(v)
            from_best = 100 * np.mean((v[ok] - best[ok]) / best[ok]) if ok.any() else float("nan")
            from_bound = 100 * np.mean((v[ok] - bnd[ok]) / v[ok]) if ok.any() else float("nan")
            wins = int(np.sum(np.isclose(v, best, rtol=1e-9)))
            print(f"  {m:<14} {from_best:>12.2f} {from_bound:>13.2f} {wins:>5}/{args.seeds} {int((~ok).sum()):>11}")
        print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=15.0, help="BRKGA / coarse-BRKGA seconds per real model")
    ap.add_argument("--cp-time", type=float, default=30.0, help="CP-SAT seconds per real model")
    ap.add_argument("--seeds", type=int, default=10, help="REGAL graphs")
    ap.add_argument("--regal-time", type=float, default=3.0, help="BRKGA / coarse-BRKGA seconds per REGAL graph")
    ap.add_argument("--regal-cp-time", type=float, default=5.0, help="CP-SAT seconds per REGAL graph")
    ap.add_argument("--spec", default="cpu", help="roofline pricing the real models' ops (mtpp.core.devices)")
    ap.add_argument("--skip-a", action="store_true")
    ap.add_argument("--skip-b", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"mtpp commit {git_commit()}")
    if not args.skip_a:
        table_a(args)
    if not args.skip_b:
        table_b(args)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
