"""How the shipped ``rule-peak`` weights of :mod:`heuristics.peak_memory.learned_rule` are
trained (issue 25): an evolution strategy on layered graphs (Topoformer App. A) of
400-2000 ops, against the best of 100 random orders of each, on one CPU core.

    python -m benchmarks.train_learned_rule --out heuristics/peak_memory/weights/rule-peak.npz

Training graphs use seeds 6300.., validation graphs 6400.. (the benchmarks' unseen
graphs are 2,000,000.., ``benchmarks/neural_peak.py``).  Deterministic in ``--seed``;
the file's metadata records the options, the generation kept, the time and the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

import mtpp
from benchmarks._common import git_commit
from heuristics.peak_memory.learned_rule import fit_rule
from heuristics.peak_memory.orders import random_orders


def graphs(first: int, count: int, sizes: list[int]) -> list[tuple[mtpp.Graph, float]]:
    out = []
    for i in range(count):
        g = mtpp.layered_graph(sizes[i % len(sizes)], seed=first + i)
        out.append((g, random_orders(g, 100, seed=1).peak))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--generations", type=int, default=2400)
    ap.add_argument("--train", type=int, default=80, help="training graphs (seeds 6300..)")
    ap.add_argument("--validation", type=int, default=24, help="validation graphs (seeds 6400..)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"training rule-peak at commit {git_commit()}", flush=True)
    train = graphs(6300, args.train, [400, 700, 1000, 1500, 2000])
    validation = graphs(6400, args.validation, [500, 1000, 2000])
    weights = fit_rule(train, validation, args.generations, seed=args.seed, report=lambda s: print(s, flush=True))
    weights.meta.update(
        train=f"{args.train} layered graphs, seeds 6300.., 400-2000 ops",
        validation=f"{args.validation} layered graphs, seeds 6400.., 500-2000 ops",
        reference="random-100 (random_orders(g, 100, seed=1))",
        machine=f"{platform.machine()}, {os.cpu_count()} cores, CPU only, one thread",
        command=" ".join(sys.argv),
    )
    weights.save(args.out)
    print(f"wrote {args.out}: {weights.meta}")


if __name__ == "__main__":
    main()
