"""Proven optimal at every k on real models (issue 13): the ideal DP and the cut bound
inside ``mtpp.certify`` against the MIPs alone.  Run by hand:
``python -m benchmarks.ideal_dp [--budget S] [--mip-budget S] [--mip-k 4 16 64] [--models ...]``.

Graphs: the ONNX model-zoo architectures shipped with ``onnx`` (through
:func:`mtpp.from_onnx`), BERT-base and a GPT-2-style model (``GPT2Config()``, 12
layers, random weights, sequence length 128) through :func:`mtpp.from_torch`, all
priced on the ``a100`` preset (microseconds, bytes, its bandwidth; unlimited memory
unless ``--limit-memory``).

For each graph, one ``mtpp.certify(problem, k=[2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64],
budget=--budget)`` call (all methods, bounds shared across k) gives per k: the number
of ideals, the ideal DP's time and status, LB / UB and the method that proved the
lower bound.  "MIPs alone" is the certificate without the new methods
(``bounds="simple,bottleneck,guess,exact"``) with a total budget of ``--mip-budget``
seconds per k (default 10, so the whole run stays at a few minutes), at the ks of
``--mip-k`` only.  Every UB is a partition re-checked by :func:`mtpp.evaluate`.
"""

from __future__ import annotations

import argparse
import os
import time

from benchmarks._common import ONNX_MODELS, bert_graph, git_commit, zoo_graph
from heuristics.partition.ideals import DEFAULT_MAX_IDEALS, enumerate_ideals
from mtpp import Graph, certify
from mtpp.core.presets import get_device

KS = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]


def gpt2_graph(seq: int) -> Graph:
    import torch
    import transformers

    from mtpp.io.torch_model import from_torch

    torch.manual_seed(0)
    model = transformers.GPT2Model(transformers.GPT2Config(use_cache=False)).eval()
    return from_torch(model, (torch.randint(0, 1000, (1, seq)),), device_spec="a100", name="gpt2")


def load(name: str, seq: int) -> Graph:
    if name == "bert-base":
        return bert_graph(seq)[0]
    if name == "gpt2":
        return gpt2_graph(seq)
    return zoo_graph(name, "a100")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, nargs="+", default=KS)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds for the certify call over all k")
    parser.add_argument("--mip-budget", type=float, default=10.0, help="seconds per k for the MIPs alone")
    parser.add_argument("--mip-k", type=int, nargs="*", default=[4, 16, 64], help="ks for the MIPs-alone column")
    parser.add_argument("--models", nargs="+", default=[*ONNX_MODELS, "bert-base", "gpt2"])
    parser.add_argument("--seq", type=int, default=128, help="sequence length of BERT and GPT-2")
    parser.add_argument("--limit-memory", action="store_true", help="the device's memory M per block")
    args = parser.parse_args()

    spec = get_device("a100")
    print(
        f"ideal DP + cut bound benchmark at commit {git_commit()}; {os.cpu_count()} cores; device a100"
        f"{', memory limited' if args.limit_memory else ''}; certify budget {args.budget:g} s for all k; "
        f"MIPs alone {args.mip_budget:g} s per k"
    )
    header = (
        f"{'model':<14}{'n':>5}{'ideals':>8}{'k':>4}{'UB':>11}{'LB/UB':>8}{'LB by':>22}{'DP s':>7}"
        f"{'DP status':>15}{'MIPs alone':>11}"
    )
    summary = []
    for name in args.models:
        g = load(name, args.seq)
        problem = spec.problem(g, args.k[0], limit_memory=args.limit_memory)
        t0 = time.perf_counter()
        certs = certify(problem, k=args.k, budget=args.budget)
        wall = time.perf_counter() - t0
        lattice = enumerate_ideals(g)
        ideals = f">{DEFAULT_MAX_IDEALS}" if lattice is None else str(lattice.count)
        print(f"\n{name}: n={g.n} m={g.m}, {ideals} ideals; certify over k={args.k[0]}..{args.k[-1]} took {wall:.1f} s")
        print(header)
        print("-" * len(header))
        for cert in certs:
            dp = cert.bound("ideal-dp")
            mip = "-"
            if cert.k in args.mip_k:
                alone = certify(
                    spec.problem(g, cert.k, limit_memory=args.limit_memory),
                    bounds="simple,bottleneck,guess,exact",
                    budget=args.mip_budget,
                )
                mip = f"{alone.ratio:.4f}"
            dp_time = f"{dp.wall_time:.2f}" if dp is not None and dp.status != "skipped" else "-"
            status = dp.status if dp is not None else "-"
            print(
                f"{name:<14}{g.n:>5}{ideals:>8}{cert.k:>4}{cert.upper_bound:>11.4f}{cert.ratio:>8.4f}"
                f"{cert.lower_bound_method:>22}{dp_time:>7}{status:>15}{mip:>11}",
                flush=True,
            )
        summary.append((name, g.n, wall, sum(c.optimal for c in certs), len(certs), min(c.ratio for c in certs)))
    print(f"\n{'model':<14}{'n':>5}{'certify s':>10}{'optimal':>9}{'worst LB/UB':>13}")
    for name, n, wall, opt, total, worst in summary:
        print(f"{name:<14}{n:>5}{wall:>10.1f}{f'{opt}/{total}':>9}{worst:>13.4f}")


if __name__ == "__main__":
    main()
