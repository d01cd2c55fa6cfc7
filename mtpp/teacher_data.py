"""Build training data from proofs: generated graphs labelled by an exact teacher.

For peak memory the teacher is :func:`mtpp.schedule` with ``method="search"``: the
best-first search over scheduled sets, whose order is proven minimum-peak when its
bound meets it (Topoformer Eq. 1-3, 15).  For the MTPP bottleneck it is
:func:`mtpp.certify` over all of the spec's ``ks`` in one call (``budget`` the
spec's time limit): its partition at each k, proven optimal where its lower bound
meets it, becomes an order whose blocks are contiguous (:func:`partition_order`),
the order SliceGraph's DP (MTPP Algorithm 1) cuts back into at most that
bottleneck.  Graph ``i`` of a :class:`DataSpec` is
the graph drawn from ``numpy.random.default_rng([seed, 25, i])`` (a layered graph of
Topoformer App. A, half of them with the parameter costs of Eq. 15, a REGAL-style
graph of MTPP App. C.2, or a real-model-like graph: a PyTorch transformer or residual
CNN of random shape imported by :mod:`mtpp.io.random_models`, which needs the
``mtpp[torch]`` extra), with a node count uniform in ``nodes`` (for a model: within
one block of it).  The streams
``[seed, 25, i]`` are disjoint from the training loop's fresh graphs and from the
benchmarks' test seeds (plain integers from 10^6 on).

The data set is written shard by shard (:mod:`heuristics.neural.proof_data`), its
graphs labelled in parallel over ``jobs`` processes; building again into the same directory resumes at
the first missing shard and refuses a directory built with other options.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from heuristics.kahn import kahn_order
from heuristics.neural.objectives import Bottleneck
from heuristics.neural.proof_data import DataSpec, Example, done_shards, write_manifest, write_shard
from mtpp.core.evaluate import dag_numbering
from mtpp.core.graph import Graph
from mtpp.core.problem import Problem
from mtpp.engine.certify import certify
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph
from mtpp.scheduling import schedule

STREAM = 25  # the middle word of every example's seed sequence


def example_graph(spec: DataSpec, index: int) -> Graph:
    """Graph ``index`` of ``spec`` (see the module docstring)."""
    rng = np.random.default_rng([spec.seed, STREAM, index])
    lo, hi = spec.nodes
    n = int(rng.integers(lo, hi, endpoint=True))
    if spec.family == "layered":
        return layered_graph(n, seed=rng, param_costs=bool(rng.random() < 0.5))
    if spec.family == "models":
        from mtpp.io.random_models import random_model_graph

        return random_model_graph(n, rng)
    return regal_graph(n, seed=rng)


def partition_order(problem: Problem, assignment: np.ndarray, tie_order: np.ndarray) -> np.ndarray:
    """A topological order of ``problem.graph`` that lists the blocks of the valid
    ``assignment`` one after another, in a topological order of the quotient graph,
    each block's ops in the order they take in ``tie_order`` where the edges allow.

    Kahn's algorithm picks the ready op of the lowest block (then the earliest in
    ``tie_order``): while block ``b`` is unfinished, its first unplaced op in a
    topological order has every predecessor placed (those in lower blocks are, and
    one in ``b`` would come before it), so no op of a later block comes in between."""
    g = problem.graph
    block = dag_numbering(problem, assignment)
    at = np.empty(g.n, dtype=np.int64)
    at[np.asarray(tie_order, dtype=np.int64)] = np.arange(g.n)
    return kahn_order(g, -(block * g.n + at).astype(np.float64))


def label(spec: DataSpec, index: int) -> list[Example]:
    """Graph ``index``'s examples: the exact teacher's order with what it proved (one
    for peak memory, one per k of ``spec.ks`` for the bottleneck)."""
    graph = example_graph(spec, index)
    t0 = time.perf_counter()
    if spec.objective == "peak":
        s = schedule(graph, method="search", time_limit=spec.time_limit, seed=index)
        return [
            Example(
                index=index,
                graph=graph,
                order=np.asarray(s.index_order, dtype=np.int64),
                value=float(s.peak),
                lower_bound=float(s.lower_bound),
                optimal=s.status.value == "optimal",
                seconds=time.perf_counter() - t0,
            )
        ]
    certs = certify(graph, k=list(spec.ks), budget=spec.time_limit, seed=index)
    seconds = time.perf_counter() - t0
    at = {str(v): i for i, v in enumerate(graph.ids)}  # a certificate names nodes by str(id)
    examples = []
    for k, cert in zip(spec.ks, certs):
        problem = Problem(graph, k)
        assignment = np.array([cert.assignment[str(v)] for v in graph.ids], dtype=np.int64)
        tie = np.array([at[v] for v in cert.order], dtype=np.int64)
        order = partition_order(problem, assignment, tie)
        value = float(Bottleneck(k).order_costs(graph, order)[0])  # <= cert.upper_bound
        examples.append(
            Example(
                index=index,
                graph=graph,
                order=order,
                value=value,
                lower_bound=float(cert.lower_bound),
                optimal=cert.optimal or value <= cert.lower_bound,
                seconds=seconds,
                k=k,
            )
        )
    return examples


def _label_one(spec: DataSpec, index: int) -> list[Example]:
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    return label(spec, index)


def build_teacher_data(
    out_dir: str | os.PathLike[str],
    spec: DataSpec,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Build (or resume) the data set of ``spec`` in ``out_dir`` with ``jobs`` worker
    processes; ``progress(done, total)`` after each shard.  Returns the directory.

    The workers label graphs, not shards: the graphs of the missing shards go out in
    order and a shard is written as soon as its last graph is back, so every worker is
    busy however few shards are missing, and an interrupted build loses only the graphs
    of the shard being filled and those in flight.  (With a shard per worker, a device
    machine's 15 processes built 320 graphs of 600-1400 ops, 5 shards of 64, on 5 of
    them: no shard in 200 s, at 5 s per graph.)"""
    root = Path(out_dir)
    write_manifest(root, spec)
    todo = [s for s in range(spec.shards) if s not in set(done_shards(root, spec))]
    done = spec.shards - len(todo)
    if progress is not None:
        progress(done, spec.shards)
    calls = [(spec, i) for s in todo for i in spec.shard_range(s)]
    if jobs > 1 and len(calls) > 1:
        from joblib import Parallel, delayed

        labelled = Parallel(n_jobs=min(jobs, len(calls)), return_as="generator")(
            delayed(_label_one)(*call) for call in calls
        )
    else:
        labelled = (_label_one(*call) for call in calls)
    for shard in todo:
        examples = [e for _ in spec.shard_range(shard) for e in next(labelled)]
        write_shard(root, shard, examples)
        done += 1
        if progress is not None:
            progress(done, spec.shards)
    return root
