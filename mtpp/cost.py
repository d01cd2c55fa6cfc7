"""Block costs of the MTPP objective (Eq. 1-3 of the MTPP paper).

For a block ``S``:

* input IO  = io(V \\ S, S): one ``size_out(u) / B`` per producer ``u`` outside ``S``
  with at least one consumer in ``S`` (a tensor is counted once per block, however
  many of its consumers are there);
* work      = sum of ``work(v)`` over ``S``;
* overflow  = ``(size_param(S) - (M - R))^+ / B``, or with peak-aware costs
  ``(size_param(S) + peak(S) - M)^+ / B`` (Eq. 2);
* output IO = io(S, V \\ S): one ``size_out(u) / B`` per producer ``u`` in ``S``
  with at least one consumer outside ``S``.

``f(S)`` is their sum and the MTPP objective is ``max_b f(P_b)`` (Eq. 4).  The
functions here are vectorised over all blocks at once and know nothing about how a
partition was found, which is what makes them usable as an independent check.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtpp.memory import block_peak
from mtpp.problem import Problem


@dataclass(frozen=True)
class BlockCosts:
    """The four terms of Eq. (3) for each block, and their sum ``total``."""

    input_io: np.ndarray
    work: np.ndarray
    overflow: np.ndarray
    output_io: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.input_io + self.work + self.overflow + self.output_io


def overflow_cost(problem: Problem, size_param: np.ndarray | float) -> np.ndarray:
    """Eq. (2) with a fixed activation reserve: ``(size_param - (M - R))^+ / B``."""
    excess = np.asarray(size_param, dtype=np.float64) - problem.param_budget
    return np.maximum(excess, 0.0) / problem.bandwidth


def block_peaks(problem: Problem, assignment: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """``peak(P_b)`` of every block, its ops run in the relative order of the
    topological ``order`` (default: the graph's own topological order), by the
    independent reference :func:`mtpp.memory.block_peak`.  ``O(k (n + m))``."""
    g = problem.graph
    seq = g.topological_order if order is None else np.asarray(order, dtype=np.int64)
    in_block = np.asarray(assignment, dtype=np.int64)[seq]
    return np.array([block_peak(g, seq[in_block == b]) for b in range(problem.k)])


def block_costs(problem: Problem, assignment: np.ndarray, order: np.ndarray | None = None) -> BlockCosts:
    """Cost terms of every block for ``assignment[i]`` = block of node ``i``, in
    ``O(n + m log m)``.  The assignment must already be valid (see
    :func:`mtpp.evaluate`, which checks it first).  With ``problem.peak_aware`` the
    overflow includes each block's activation peak, its ops run in the order of
    ``order`` (see :func:`block_peaks`)."""
    g, k = problem.graph, problem.k
    a = np.asarray(assignment, dtype=np.int64)
    work = np.bincount(a, weights=g.work, minlength=k)
    params = np.bincount(a, weights=g.size_param, minlength=k)
    if problem.peak_aware:
        params = params + block_peaks(problem, a, order)

    src, dst = g.edge_src, g.edge_dst
    cut = a[src] != a[dst]
    cut_src, cut_dst_block = src[cut], a[dst[cut]]
    # input IO: each (producer, consuming block) pair once
    pairs = np.unique(cut_src * k + cut_dst_block)
    producers_in, blocks_in = pairs // k, pairs % k
    input_io = np.bincount(blocks_in, weights=g.size_out[producers_in], minlength=k)
    # output IO: each producer with a consumer in another block once, in its own block
    producers_out = np.unique(cut_src)
    output_io = np.bincount(a[producers_out], weights=g.size_out[producers_out], minlength=k)

    inv_b = 1.0 / problem.bandwidth
    return BlockCosts(
        input_io=input_io * inv_b,
        work=work,
        overflow=overflow_cost(problem, params),
        output_io=output_io * inv_b,
    )
