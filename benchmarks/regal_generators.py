"""REGAL generators against the paper's data (issue 23): how hard are their graphs?

For 12 graphs per generator on seeds the tests never use (1000-1011), prints the mean
n, the share of all work the heaviest op carries, the fraction of ops whose work is
below their output size, the hardness-filter tries and gain, and the simple bound
(Lemma 3.3) over SliceGraph's bottleneck (``mtpp.partition``, BRKGA capped at
``--time-limit`` seconds) at k = 2..64 as a geometric mean, next to Table 3 of the MTPP
paper (simple bound / best BRKGA solution on REGAL's released graphs).

Generators: ``regal`` (:func:`mtpp.generators.regal_graph`, the default reading
``work = (in + out)(1 + r)``), ``regal-output`` (``cost="output"``, ``size_out (1 + r)``,
the rule that fits the release's example file) and ``regal-connected``
(:func:`mtpp.generators.regal_connected_graph`, mtpp's generator before issue 23).

    .venv/bin/python benchmarks/regal_generators.py [--graphs 12] [--time-limit 2]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import mtpp  # noqa: E402
from mtpp.generators.regal import RegalSample, regal_connected_sample, regal_sample  # noqa: E402

KS = (2, 4, 8, 16, 32, 64)
PAPER = {2: 0.9579, 4: 0.8795, 8: 0.7911, 16: 0.5821, 32: 0.4087, 64: 0.3336}  # MTPP Table 3, "simple"
FIRST_SEED = 1000
GENERATORS: dict[str, Callable[[int], RegalSample]] = {
    "regal": lambda seed: regal_sample(seed=seed),
    "regal-output": lambda seed: regal_sample(seed=seed, cost="output"),
    "regal-connected": lambda seed: regal_connected_sample(seed=seed),
}


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() or "?"


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(max(v, 1e-300)) for v in values) / len(values))


def measure(name: str, graphs: int, time_limit: float) -> list[str]:
    make = GENERATORS[name]
    ns, heavy, below, tries, gains = [], [], [], [], []
    ratios: dict[int, list[float]] = {k: [] for k in KS}
    t0 = time.perf_counter()
    for seed in range(FIRST_SEED, FIRST_SEED + graphs):
        sample = make(seed)
        g = sample.to_graph()
        ns.append(g.n)
        heavy.append(float(g.work.max() / g.work.sum()))
        below.append(float(np.mean(g.work < g.size_out)))
        tries.append(sample.tries)
        gains.append(sample.gain)
        for k in KS:
            sol = mtpp.partition(g, k, seed=0, time_limit=time_limit)
            ratios[k].append(sol.lower_bound / sol.bottleneck)
    gain = "-" if all(math.isnan(x) for x in gains) else f"{np.nanmean(gains):.2f}"
    cells = [
        name,
        f"{np.mean(ns):.0f} ({min(ns)}-{max(ns)})",
        f"{100 * np.mean(heavy):.1f}% ({100 * min(heavy):.1f}-{100 * max(heavy):.1f})",
        f"{100 * np.mean(below):.0f}%",
        f"{np.mean(tries):.1f}",
        gain,
        *(f"{geomean(ratios[k]):.3f}" for k in KS),
        f"{time.perf_counter() - t0:.0f}",
    ]
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", type=int, default=12)
    ap.add_argument("--time-limit", type=float, default=2.0)
    ap.add_argument("--generators", nargs="+", default=list(GENERATORS), choices=list(GENERATORS))
    args = ap.parse_args()
    print(
        f"REGAL generators at commit {git_commit()}; {os.cpu_count()} cores; seeds {FIRST_SEED}-"
        f"{FIRST_SEED + args.graphs - 1}; mtpp.partition(brkga, time_limit={args.time_limit:g} s); "
        "ratio = simple bound / SliceGraph UB, geometric mean"
    )
    head = ["generator", "n mean (range)", "heaviest op's work share", "work < size_out", "tries", "gain"]
    head += [f"k={k}" for k in KS] + ["s"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name in args.generators:
        print("| " + " | ".join(measure(name, args.graphs, args.time_limit)) + " |", flush=True)
    paper = ["MTPP Table 3 (REGAL data, simple / BRKGA)", "50-200", "?", "?", "-", "-"]
    print("| " + " | ".join(paper + [f"{PAPER[k]:.3f}" for k in KS] + ["-"]) + " |")


if __name__ == "__main__":
    main()
