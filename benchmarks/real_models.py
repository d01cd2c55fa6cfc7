"""Real models: how much better than today's pipeline splitters is mtpp, and how far
from optimal is each (issue 6, section 5).  Run by hand:
``python -m benchmarks.real_models [--time-limit S] [--mip-time S] [--k 2 4 8 16]``.

Graphs: the ONNX model-zoo architectures shipped with ``onnx``
(``onnx/backend/test/data/light``) and BERT-base (``transformers``, random weights,
sequence length 128, through :func:`mtpp.io.torch_model.from_torch`), priced on the
``a100`` preset (microseconds, bytes; unlimited memory, so no overflow).

For each graph and k, three partitions, each re-checked by :func:`mtpp.evaluate`:

(a) ``uniform``  the graph's topological order cut into k runs of equal op count
    (DeepSpeed ``partition_method="uniform"``);
(b) ``balanced`` the same order cut where the running work crosses ``j W / k``,
    ignoring communication (DeepSpeed ``"parameters"`` / torchgpipe ``balance``);
(c) ``mtpp``     :func:`mtpp.partition` (SliceGraph + BRKGA, ``--time-limit`` s).

Each is reported as UB / LB against the best certified lower bound of
:func:`mtpp.certify` with ``bounds="simple,bottleneck"`` (Lemma 3.3 and the
three-superblock MIP with ``--mip-time`` seconds; a MIP bound is a proven dual
bound).  Import times are printed for densenet121 and BERT-base.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks._common import ONNX_MODELS, bert_graph, git_commit, zoo_path
from mtpp import Graph, certify, evaluate
from mtpp.core.presets import get_device
from mtpp.io.onnx_model import from_onnx
from mtpp.partitioner import partition


def uniform_split(g: Graph, k: int) -> np.ndarray:
    """(a) equal op counts along the topological order."""
    a = np.empty(g.n, dtype=np.int64)
    a[g.topological_order] = np.arange(g.n) * k // g.n
    return a


def balanced_split(g: Graph, k: int) -> np.ndarray:
    """(b) cut the topological order where the running work crosses j W / k."""
    w = g.work[g.topological_order]
    before = np.cumsum(w) - w  # work strictly before each op
    total = float(w.sum()) or 1.0
    a = np.empty(g.n, dtype=np.int64)
    a[g.topological_order] = np.minimum((before * k / total).astype(np.int64), k - 1)
    return a


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--time-limit", type=float, default=3.0, help="BRKGA seconds per (graph, k)")
    parser.add_argument("--mip-time", type=float, default=5.0, help="bottleneck-MIP seconds per (graph, k)")
    parser.add_argument("--models", nargs="+", default=[*ONNX_MODELS, "bert-base"])
    parser.add_argument("--seq", type=int, default=128, help="BERT sequence length")
    args = parser.parse_args()

    spec = get_device("a100")
    print(
        f"mtpp real-model benchmark at commit {git_commit()}; {os.cpu_count()} cores; device a100; "
        f"BRKGA {args.time_limit:g} s, bottleneck MIP {args.mip_time:g} s; cells are UB / LB"
    )
    graphs: list[Graph] = []
    for name in args.models:
        if name == "bert-base":
            g, dt = bert_graph(args.seq)
        else:
            path = zoo_path(name)
            t = time.perf_counter()
            g = from_onnx(path, device_spec=spec)
            dt = time.perf_counter() - t
        print(
            f"import {name}: n={g.n} m={g.m} in {dt:.2f} s; work {g.work.sum():.1f} us, "
            f"params {g.size_param.sum() / 2**20:.1f} MiB"
        )
        graphs.append(g)

    header = f"{'model':<14}{'n':>6}{'k':>4}{'LB (us)':>11}{'LB by':>12}{'uniform':>10}{'balanced':>10}{'mtpp':>8}"
    print(header)
    print("-" * len(header))
    rows = []
    for g in graphs:
        for k in args.k:
            problem = spec.problem(g, k)
            uni = evaluate(problem, uniform_split(g, k)).bottleneck
            bal = evaluate(problem, balanced_split(g, k)).bottleneck
            sol = partition(problem, time_limit=args.time_limit)
            cert = certify(problem, bounds="simple,bottleneck", time_limit=args.mip_time, orderer="kahn")
            lb = cert.lower_bound
            ub = min(sol.bottleneck, cert.upper_bound)
            row = (g.name, g.n, k, lb, cert.lower_bound_method, uni / lb, bal / lb, ub / lb)
            rows.append(row)
            print(
                f"{row[0]:<14}{row[1]:>6}{row[2]:>4}{row[3]:>11.2f}{row[4]:>12}{row[5]:>10.3f}{row[6]:>10.3f}"
                f"{row[7]:>8.3f}",
                flush=True,
            )
    for col, label in ((5, "uniform"), (6, "balanced"), (7, "mtpp")):
        vals = np.array([r[col] for r in rows])
        print(f"geometric mean UB / LB {label:<9} {np.exp(np.log(vals).mean()):.3f}  (max {vals.max():.3f})")


if __name__ == "__main__":
    main()
