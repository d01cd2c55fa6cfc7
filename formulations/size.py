"""How big a method's MIP will be, before it is built: refuse what cannot fit in memory.

The block skeleton of :func:`formulations.blocks.build_blocks` with ``kk`` blocks on a
graph of ``n`` ops, ``m`` edges and ``P`` producers (ops with a consumer and a
non-zero output), of which ``E'`` edges leave a producer, has

* variables: ``y`` ``n kk``, ``c`` ``P kk``, ``o`` ``kk``, and one objective variable;
* rows: monotonicity ``n (kk - 1)``, DAG (8) ``m (kk - 1)``, input and output cuts
  ``2 E' (kk - 1)``, overflow ``kk``, epigraphs (6) ``kk`` and (14) one;
* non-zeros: ``2 n (kk - 1) + 2 m (kk - 1) + 10 E' (kk - 1)`` for those rows (at most), plus
  ``2 n + P + 2`` per epigraph or overflow row (``x = y_b - y_(b-1)`` and the cuts).

``kk = k`` for ``exact`` (Figure 3), ``3`` for ``bottleneck`` (Section 3.2) and each
``guess`` sub-MIP (Section 3.3; ``n_jobs`` of them are alive at once).  Memory is
estimated at :data:`BYTES_PER_NONZERO` per non-zero (measured: the COO arrays we
build, the solver's copy and its presolve), so a dense graph (5,000 ops, 10^6 edges:
tens of GB for ``exact``) is refused with a message naming the sizes instead of
exhausting the machine.  ``O(m)`` time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from formulations.errors import FormulationError
from mtpp.core.memory_cap import GB, LIMIT_ENV, memory_limit
from mtpp.core.problem import Problem

BYTES_PER_NONZERO = 280.0  # peak RSS per non-zero of HiGHS exact solves: 195-372 measured (docs/decisions.md)


class ModelTooLargeError(FormulationError):
    """A method's MIP would need more memory than the limit; the method is skipped."""


@dataclass(frozen=True)
class ModelSize:
    """Estimated size of one method's MIP(s) alive at once."""

    method: str
    blocks: int
    variables: int
    rows: int
    nonzeros: int
    copies: int = 1

    @property
    def bytes(self) -> float:
        return BYTES_PER_NONZERO * self.nonzeros * self.copies

    def __str__(self) -> str:
        times = f"{self.copies} x " if self.copies > 1 else ""
        return (
            f"{times}{self.variables:,} variables, {self.rows:,} rows, {self.nonzeros:,} non-zeros "
            f"(about {self.bytes / GB:.1f} GB)"
        )


def estimate_model_size(problem: Problem, method: str, n_jobs: int = 1) -> ModelSize:
    """The size of ``method``'s MIP on ``problem`` (see the module docstring)."""
    g = problem.graph
    kk = problem.k if method == "exact" else 3
    n, m = g.n, g.m
    has_out = np.zeros(n, dtype=bool)
    has_out[g.edge_src] = True
    producer = has_out & (g.size_out > 0)
    p = int(producer.sum())
    e_cut = int(producer[g.edge_src].sum())
    per_block = 2 * n + p + 2
    variables = (n + p + 1) * kk + 1
    rows = (n + m + 2 * e_cut) * (kk - 1) + 2 * kk + 1
    nonzeros = (2 * n + 2 * m + 10 * e_cut) * (kk - 1) + 2 * kk * per_block
    copies = max(1, min(n_jobs, problem.k)) if method == "guess" else 1
    return ModelSize(method, kk, variables, rows, nonzeros, copies)


def check_model_size(problem: Problem, method: str, n_jobs: int = 1) -> ModelSize:
    """The estimate, or :class:`ModelTooLargeError` when it exceeds :func:`memory_limit`."""
    size = estimate_model_size(problem, method, n_jobs)
    limit = memory_limit()
    if size.bytes > limit:
        raise ModelTooLargeError(
            f"the {method!r} MIP would have {size}, more than the {limit / GB:.1f} GB allowed "
            f"(set {LIMIT_ENV} to change it); skipped, the other bounds stand"
        )
    return size
