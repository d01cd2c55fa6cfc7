"""Presolve on operator-level and ONNX-zoo graphs (issue 21, item 5).  Run by hand:
``python -m benchmarks.presolve [--quick] [--budget S] [--nopre-budget S] [--graphs ...]``.

Graphs: every ``benchmarks/graphs/ops/*.json`` (operator-level BERT, GPT-2 and
ResNet-50 with their views, constants, inputs and outputs kept as zero-cost ops;
rebuilt by ``benchmarks/build_op_graphs.py``) and the ONNX model-zoo graphs of
``benchmarks/ideal_dp.py`` (:data:`benchmarks._common.ONNX_MODELS` through
:func:`mtpp.from_onnx`), all priced on the ``a100`` preset (microseconds, bytes, its
bandwidth; unlimited memory).

Per graph: ops and edges before and after
:func:`heuristics.partition.presolve.presolve` (and the ops removed per rule), and the
ideals before and after (:func:`heuristics.partition.ideals.enumerate_ideals` up to
``--ideal-cap``; ``>cap`` when there are more).  Then

* **all k, presolve on**: one ``mtpp.certify(problem, k=KS, budget=--budget)`` call
  (presolve is its default) over ``KS = 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64``: its
  wall time, and per k the LB / UB, whether it is proven optimal, the method that
  proved the lower bound and the ideal DP's time at that k;
* **per k, on and off**: at the ks of ``--compare-k``, one ``certify(problem_k,
  budget=--nopre-budget)`` call each with presolve on and with ``presolve=False``:
  wall time and proven optimal or not (a call that hits its budget unproven shows
  its LB / UB).

The issue's goal: every graph up to ~800 ops proven optimal at every k in <= 10 s for
the all-k call, and each (graph, k) faster with presolve than without.  ``--quick``
(about a minute): the operator graphs and three zoo graphs, ideals counted up to
10^5, the on/off comparison at k = 2, 8, 64 with 2 s each.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

from benchmarks._common import ONNX_MODELS, OPS_GRAPHS, git_commit, timed, zoo_graph
from heuristics.partition.ideals import DEFAULT_MAX_IDEALS, enumerate_ideals
from heuristics.partition.presolve import presolve
from mtpp import Certificate, Graph, certify, load_example, load_graph
from mtpp.core.presets import get_device

KS = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
QUICK_ZOO = ["onnx:squeezenet", "onnx:resnet50", "onnx:inception_v1"]
GOAL_SECONDS = 10.0


def all_graphs() -> list[str]:
    """The operator graphs on disk, then the zoo graphs (``onnx:`` + model)."""
    return [p.stem for p in sorted(OPS_GRAPHS.glob("*.json"))] + [f"onnx:{m}" for m in ONNX_MODELS]


def load(name: str) -> Graph:
    """An operator graph by file stem, or ``onnx:<zoo model>``."""
    if name.startswith("onnx:"):
        return zoo_graph(name[5:], "a100")
    return load_graph(OPS_GRAPHS / f"{name}.json")


def count_ideals(g: Graph, cap: int) -> str:
    lattice = enumerate_ideals(g, cap)
    return f">{cap:.0e}".replace("e+0", "e") if lattice is None else str(lattice.count)


@dataclass
class Row:
    name: str
    n: int
    n_pre: int
    zero_share: float
    ideals: str
    ideals_pre: str
    wall_all: float = 0.0
    certs: list[Certificate] = field(default_factory=list)
    on: dict[int, tuple[float, Certificate]] = field(default_factory=dict)
    off: dict[int, tuple[float, Certificate]] = field(default_factory=dict)


def certified(problem: object, **kwargs: object) -> tuple[float, Certificate]:
    return timed(lambda: certify(problem, **kwargs))  # type: ignore[call-overload]


def proven(cert: Certificate) -> str:
    return "yes" if cert.optimal else f"{cert.ratio:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument(
        "--graphs",
        nargs="+",
        help="operator graphs by file stem and zoo graphs as onnx:<model> "
        "(default: all of benchmarks/graphs/ops/ and the zoo of benchmarks/ideal_dp.py)",
    )
    parser.add_argument("--k", type=int, nargs="+", default=KS, help="the ks of the all-k certify call")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds for the all-k certify call (default 60)")
    parser.add_argument(
        "--compare-k", type=int, nargs="*", help="ks of the per-k presolve on/off comparison (default: all of --k)"
    )
    parser.add_argument(
        "--nopre-budget", type=float, default=5.0, help="seconds per certify call of the on/off comparison (default 5)"
    )
    parser.add_argument(
        "--ideal-cap",
        type=int,
        default=DEFAULT_MAX_IDEALS,
        help=f"count ideals up to this many (default {DEFAULT_MAX_IDEALS:.0e})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="about a minute: the operator graphs and "
        + ", ".join(QUICK_ZOO)
        + "; ideals up to 1e5; on/off at k = 2, 8, 64, 2 s each",
    )
    args = parser.parse_args()
    if args.quick:
        args.graphs = args.graphs or [g for g in all_graphs() if not g.startswith("onnx:")] + QUICK_ZOO
        args.ideal_cap = min(args.ideal_cap, 100_000)
        args.compare_k = args.compare_k if args.compare_k is not None else [2, 8, 64]
        args.nopre_budget = min(args.nopre_budget, 2.0)
    graphs = args.graphs or all_graphs()
    compare_k = args.k if args.compare_k is None else args.compare_k

    spec = get_device("a100")
    warm = spec.problem(load_example(), 2)
    certify(warm, k=[2, 4], budget=10)  # compile the numba kernels outside the timings
    certify(warm, k=2, budget=10, presolve=False)
    print(
        f"presolve benchmark at commit {git_commit()}; {os.cpu_count()} cores; device a100, unlimited memory; "
        f"all-k certify budget {args.budget:g} s; on/off per k {args.nopre_budget:g} s each; "
        f"ideals counted up to {args.ideal_cap:.0e}"
    )
    rows = []
    for name in graphs:
        g = load(name)
        problem = spec.problem(g, args.k[0])
        pre = presolve(problem)
        zero = float(((g.work == 0.0) & (g.size_param == 0.0)).mean())
        row = Row(
            name,
            g.n,
            pre.problem.graph.n,
            zero,
            count_ideals(g, args.ideal_cap),
            count_ideals(pre.problem.graph, args.ideal_cap),
        )
        row.wall_all, row.certs = certified(problem, k=args.k, budget=args.budget)
        for k in compare_k:
            pk = spec.problem(g, k)
            row.on[k] = certified(pk, budget=args.nopre_budget)
            row.off[k] = certified(pk, budget=args.nopre_budget, presolve=False)
        rows.append(row)
        removed = ", ".join(f"{c} {r}" for r, c in pre.removed.items() if c) or "none"
        print(
            f"\n{name}: {g.n} ops, {g.m} edges, {100 * zero:.0f}% zero-cost -> presolve: {pre.problem.graph.n} ops, "
            f"{pre.problem.graph.m} edges ({removed}); ideals {row.ideals} -> {row.ideals_pre}; "
            f"certify over k={args.k[0]}..{args.k[-1]}: {row.wall_all:.2f} s"
        )
        header = (
            f"{'k':>4}{'UB':>11}{'LB/UB':>8}{'optimal':>8}{'LB by':>12}{'DP s':>7}"
            f"{'on s':>8}{'on opt':>7}{'off s':>8}{'off opt':>8}{'faster':>7}"
        )
        print(header)
        print("-" * len(header))
        for k in sorted({cert.k for cert in row.certs}):  # certify clamps k to n
            cert = next(c for c in row.certs if c.k == k)
            dp = cert.bound("ideal-dp")
            dp_time = f"{dp.wall_time:.3f}" if dp is not None and dp.status != "skipped" else "-"
            line = (
                f"{k:>4}{cert.upper_bound:>11.4f}{cert.ratio:>8.4f}{'yes' if cert.optimal else 'no':>8}"
                f"{cert.lower_bound_method:>12}{dp_time:>7}"
            )
            if k in row.on:
                (t_on, c_on), (t_off, c_off) = row.on[k], row.off[k]
                faster = "yes" if c_on.optimal and (t_on < t_off or not c_off.optimal) else "no"
                line += f"{t_on:>8.3f}{proven(c_on):>7}{t_off:>8.3f}{proven(c_off):>8}{faster:>7}"
            print(line, flush=True)

    header = (
        f"{'graph':<22}{'ops':>5}{'pre':>5}{'zero%':>6}{'ideals':>9}{'pre':>8}{'all-k s':>8}{'optimal':>8}"
        f"{'worst':>7}{'on s':>8}{'on opt':>7}{'off s':>8}{'off opt':>8}{'faster':>7}"
    )
    print(f"\nsummary (optimal: the all-k call; on/off: per-k calls at k = {', '.join(map(str, compare_k))}, summed)")
    print(header)
    print("-" * len(header))
    for r in rows:
        opt = sum(c.optimal for c in r.certs)
        worst = min(c.ratio for c in r.certs)
        on_s = sum(t for t, _ in r.on.values())
        off_s = sum(t for t, _ in r.off.values())
        on_opt = sum(c.optimal for _, c in r.on.values())
        off_opt = sum(c.optimal for _, c in r.off.values())
        faster = sum(r.on[k][1].optimal and (r.on[k][0] < r.off[k][0] or not r.off[k][1].optimal) for k in r.on)
        print(
            f"{r.name:<22}{r.n:>5}{r.n_pre:>5}{100 * r.zero_share:>6.0f}{r.ideals:>9}{r.ideals_pre:>8}"
            f"{r.wall_all:>8.2f}{f'{opt}/{len(r.certs)}':>8}{worst:>7.3f}{on_s:>8.2f}{f'{on_opt}/{len(r.on)}':>7}"
            f"{off_s:>8.2f}{f'{off_opt}/{len(r.off)}':>8}{f'{faster}/{len(r.on)}':>7}"
        )
    missed = [r.name for r in rows if r.wall_all > GOAL_SECONDS or not all(c.optimal for c in r.certs)]
    print(
        f"\ngoal (every k proven optimal in <= {GOAL_SECONDS:g} s for the all-k call): "
        f"{len(rows) - len(missed)} of {len(rows)} graphs" + (f"; missed: {', '.join(missed)}" if missed else "")
    )


if __name__ == "__main__":
    main()
