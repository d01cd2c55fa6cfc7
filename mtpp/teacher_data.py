"""Build training data from proofs: generated graphs labelled by an exact teacher (issue 25).

For peak memory the teacher is :func:`mtpp.schedule` with ``method="search"``: the
best-first search over scheduled sets, whose order is proven minimum-peak when its
bound meets it (Topoformer Eq. 1-3, 15).  Example ``i`` of a :class:`DataSpec` is
the graph drawn from ``numpy.random.default_rng([seed, 25, i])`` (a layered graph of
Topoformer App. A, half of them with the parameter costs of Eq. 15, or a REGAL-style
graph of MTPP App. C.2), with a node count uniform in ``nodes``.  The streams
``[seed, 25, i]`` are disjoint from the training loop's fresh graphs and from the
benchmarks' test seeds (plain integers from 10^6 on).

The data set is written shard by shard (:mod:`heuristics.neural.proof_data`), in
parallel over ``jobs`` processes; building again into the same directory resumes at
the first missing shard and refuses a directory built with other options.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from heuristics.neural.proof_data import DataSpec, Example, done_shards, write_manifest, write_shard
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph
from mtpp.graph import Graph
from mtpp.scheduling import schedule

STREAM = 25  # the middle word of every example's seed sequence


def example_graph(spec: DataSpec, index: int) -> Graph:
    """Graph ``index`` of ``spec`` (see the module docstring)."""
    rng = np.random.default_rng([spec.seed, STREAM, index])
    lo, hi = spec.nodes
    n = int(rng.integers(lo, hi, endpoint=True))
    if spec.family == "layered":
        return layered_graph(n, seed=rng, param_costs=bool(rng.random() < 0.5))
    return regal_graph(n, seed=rng)


def label(spec: DataSpec, index: int) -> Example:
    """Example ``index``: its graph and the exact teacher's order with what it proved."""
    graph = example_graph(spec, index)
    t0 = time.perf_counter()
    s = schedule(graph, method="search", time_limit=spec.time_limit, seed=index)
    return Example(
        index=index,
        graph=graph,
        order=np.asarray(s.index_order, dtype=np.int64),
        value=float(s.peak),
        lower_bound=float(s.lower_bound),
        optimal=s.status.value == "optimal",
        seconds=time.perf_counter() - t0,
    )


def _build_shard(root: Path, spec: DataSpec, shard: int) -> int:
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    examples = [label(spec, i) for i in spec.shard_range(shard)]
    write_shard(root, shard, examples)
    return sum(e.optimal for e in examples)


def build_teacher_data(
    out_dir: str | os.PathLike[str],
    spec: DataSpec,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Build (or resume) the data set of ``spec`` in ``out_dir`` with ``jobs`` worker
    processes; ``progress(done, total)`` after each shard.  Returns the directory."""
    root = Path(out_dir)
    write_manifest(root, spec)
    todo = [s for s in range(spec.shards) if s not in set(done_shards(root, spec))]
    done = spec.shards - len(todo)
    if progress is not None:
        progress(done, spec.shards)
    if not todo:
        return root
    if jobs <= 1:
        for shard in todo:
            _build_shard(root, spec, shard)
            done += 1
            if progress is not None:
                progress(done, spec.shards)
        return root
    from joblib import Parallel, delayed

    runner = Parallel(n_jobs=jobs, return_as="generator_unordered")
    for _ in runner(delayed(_build_shard)(root, spec, s) for s in todo):
        done += 1
        if progress is not None:
            progress(done, spec.shards)
    return root
