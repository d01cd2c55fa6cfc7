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

import math
from dataclasses import dataclass

import numpy as np

from mtpp.core.memory import block_peak
from mtpp.core.problem import Problem


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


def block_excess(problem: Problem, assignment: np.ndarray, extra: np.ndarray | None = None) -> np.ndarray:
    """``size_param(P_b) [+ extra_b] - M + R`` for every block, each correctly rounded
    (:func:`math.fsum` of the block's parameters, ``extra_b``, ``-M`` and ``R``): the
    overflow subtracts the budget from a sum that may be far larger than the result,
    and a plain float sum leaves an error of ``u size_param(P_b)`` there (``M = 1e16``
    with parameters ``1e16`` and ``1``: 0 where the truth is 1).  ``O(n log n)``, one
    ``fsum`` per block."""
    a = np.asarray(assignment, dtype=np.int64)
    k = problem.k
    order = np.argsort(a, kind="stable")
    bounds = np.searchsorted(a[order], np.arange(k + 1))
    params = problem.graph.size_param[order]
    out = np.empty(k)
    m, r = problem.memory, problem.reserve
    for b in range(k):
        terms = params[bounds[b] : bounds[b + 1]].tolist()
        if extra is not None:
            terms.append(float(extra[b]))
        out[b] = math.fsum([*terms, -m, r])
    return out


def block_peaks(problem: Problem, assignment: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """``peak(P_b)`` of every block, its ops run in the relative order of the
    topological ``order`` (default: the graph's own topological order), by the
    independent reference :func:`mtpp.core.memory.block_peak`.  ``O(k (n + m))``."""
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
    peaks = block_peaks(problem, a, order) if problem.peak_aware else None
    if peaks is not None:
        params = params + peaks

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
    if math.isfinite(problem.param_budget):  # the budget cancels: each block's excess correctly rounded
        overflow = np.maximum(block_excess(problem, a, peaks), 0.0) / problem.bandwidth
    else:
        overflow = overflow_cost(problem, params)
    return BlockCosts(
        input_io=input_io * inv_b,
        work=work,
        overflow=overflow,
        output_io=output_io * inv_b,
    )
