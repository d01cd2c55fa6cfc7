"""Do learned orders make peak-memory proofs come faster?  (issue 25, item 4)

    python -m benchmarks.neural_incumbent                    # 250, 500, 1000 ops, 6 graphs each
    python -m benchmarks.neural_incumbent --sizes 250 --count 3 --time-limit 10

On unseen layered graphs (Topoformer App. A generator, seeds from 3 * 10^6 on, which
neither training nor the data sets draw), ``mtpp.schedule(method="search")`` is run
twice per graph within the same process: as shipped (the quick dfs, bfs and
random-100 orders seed the best-first search) and with ``incumbent=`` a learned
decoder (default ``topoformer-sample``, the shipped ``topoformer-peak`` weights),
whose order, when better, is the search's first incumbent.  Printed per size: how
many graphs each proves, the mean wall time to the answer, the mean certified gap
``peak / bound - 1`` and the mean starting gap (best incumbent before the search).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common import git_commit
from mtpp.generators import layered_graph
from mtpp.scheduling import schedule

TEST_SEED = 3_000_000


def start_gap(s) -> float:
    """The best order's gap before the search ran, against the final bound."""
    before = [st.peak for st in s.stages if st.method != "search" and np.isfinite(st.peak)]
    return min(before) / s.lower_bound - 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000])
    ap.add_argument("--count", type=int, default=6)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--incumbent", default="topoformer-sample")
    ap.add_argument("--weights", default=None)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    print(f"mtpp learned-incumbent benchmark at commit {git_commit()}; incumbent {args.incumbent}")
    schedule(layered_graph(30, 0), method="search", incumbent=args.incumbent, weights=args.weights)  # JIT, load
    variants = {"as shipped": {}, f"+ {args.incumbent}": {"incumbent": args.incumbent, "weights": args.weights}}
    print(f"{'ops':>5s} {'variant':24s} {'proven':>7s} {'time s':>8s} {'gap %':>8s} {'start gap %':>12s}")
    for n in args.sizes:
        rows: dict[str, list[tuple[float, float, float, float]]] = {v: [] for v in variants}
        for i in range(args.count):
            g = layered_graph(n, TEST_SEED + n + i, param_costs=i % 2 == 0)
            for name, extra in variants.items():
                t = time.perf_counter()
                s = schedule(g, method="search", time_limit=args.time_limit, **extra)
                wall = time.perf_counter() - t
                rows[name].append((float(s.optimal), wall, s.peak / s.lower_bound - 1, start_gap(s)))
        for name, r in rows.items():
            a = np.array(r)
            print(
                f"{n:5d} {name:24s} {int(a[:, 0].sum()):3d}/{len(a):<3d} {a[:, 1].mean():8.2f} "
                f"{100 * a[:, 2].mean():8.3f} {100 * a[:, 3].mean():12.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
