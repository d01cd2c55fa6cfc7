"""The block skeleton shared by the MIPs of Section 3 (Figure 3 of the MTPP paper).

For ``kk`` blocks numbered in DAG order it holds

* ``y[v, b]`` (binary): node ``v`` is in block ``b`` or earlier.  ``x`` is eliminated
  through Eq. (11), ``x_vb = y_vb - y_v(b-1)`` with ``y_v(-1) = 0``, and the boundary
  condition ``y_v(kk-1) = 1`` is a fixed bound;
* the monotone rows ``y_v(b-1) <= y_vb`` and the DAG constraints (8)
  ``y_ub >= y_vb`` for every edge ``(u, v)``;
* ``c[u, b]`` in ``{0, 1}`` (or ``[0, 1]``) for every producer ``u`` with a consumer and
  ``size_out(u) > 0``: tensor ``u`` is cut by block ``b``, **one variable per tensor
  and block**, however many of its edges are cut, with one input-cut and one
  output-cut row per edge ``(u, v)`` and block: ``c_ub >= x_vb - x_ub`` and
  ``c_ub >= x_ub - x_vb``.  They are valid because of (8): if ``v`` is in ``b`` and
  ``u`` is not, ``u`` is in an earlier block and its tensor enters ``b``; if ``u`` is in
  ``b`` and ``v`` is not, ``v`` is later and the tensor leaves ``b``.  They dominate the
  paper's rows (9) ``c_ub >= y_u(b-1) + x_vb - 1`` and (10) ``c_ub >= x_ub - y_vb``
  on the LP relaxation, by ``1 - y_ub >= 0`` and ``y_v(b-1) >= 0``, with the same
  integer solutions (the pigeonhole MIP's ``in`` / ``out`` rows have this form too).
  HiGHS, bottleneck MIP, 60 s: on six REGAL-style graphs of 57-191 ops it proved 3
  (none before) and raised two bounds 7% and 12%; on 15 layered graphs of 100-300
  ops it proved 14 as before (one gained, one lost to the time limit; 8 faster,
  seconds in all 331 -> 354).  The paper allows ``c`` continuous, since it is integral
  at an optimum whenever ``y`` is (the default here; ``binary_cuts`` declares them binary);
* optionally ``o[b] >= 0`` with ``o_b >= (size_param(block b) - budget_b) / B``: the
  linear overflow term ``(size_param(S) - (M - R))^+ / B`` of Eq. (2) with a fixed
  activation reserve (``budget_b`` is ``M - R`` times the number of real blocks a
  superblock stands for; an infinite budget gets ``o_b = 0`` and no row).

Variable caps (``o``, the cost cap) only keep domains finite; they are rounded up so
that floating-point rounding never makes them cut off a partition.

Tensor costs are capped at ``C``, an upper bound on OPT (the cost of ``V`` as one
block, a valid partition since blocks may be empty): ``io_u = min(size_out(u) / B,
C)``.  Capping only lowers costs, so every model's optimum stays a lower bound; and
any solution that pays a capped tensor costs at least ``C >= OPT`` before and after,
so ``capped >= min(original, C)`` for every solution and the optimum of each model
(a relaxation: at most OPT) is unchanged.  The cap keeps a 1e15 tensor that never has
to cross from giving the solver a coefficient 1e17 times the answer, where its
tolerances no longer hold (SCIP 10 returned "optimal" at 3e17 on such a model).

:meth:`BlockModel.cost_terms` gives the right-hand side of Eq. (7) for a block, to
which each formulation attaches its own objective.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mtpp.core.errors import InvalidPartitionError
from mtpp.core.problem import Problem
from solvers.model import Model


@dataclass
class BlockModel:
    """The skeleton of a ``kk``-block model (module docstring)."""

    problem: Problem
    model: Model
    kk: int
    y: np.ndarray  # (n, kk) variable indices
    producers: np.ndarray  # nodes u that own a c variable
    c: np.ndarray  # (len(producers), kk) variable indices
    o: np.ndarray | None  # (kk,) overflow variable indices, or None without overflow
    budgets: np.ndarray  # (kk,) parameter budget of each block
    cost_cap: float  # no block of any partition costs more than this
    io: np.ndarray  # (len(producers),) capped tensor costs min(size_out / B, C) (module docstring)

    # ------------------------------------------------------------------ expressions
    def x_terms(self, b: int, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``sum_v weights_v x_vb`` as (columns, coefficients), via Eq. (11)."""
        nz = np.flatnonzero(weights)
        cols = [self.y[nz, b]]
        vals = [weights[nz]]
        if b > 0:
            cols.append(self.y[nz, b - 1])
            vals.append(-weights[nz])
        return np.concatenate(cols), np.concatenate(vals)

    def cost_terms(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Eq. (7) for block ``b``: work + cut tensors / B (+ overflow)."""
        g = self.problem.graph
        cols, vals = self.x_terms(b, g.work)
        parts_c = [cols, self.c[:, b]]
        parts_v = [vals, self.io]
        if self.o is not None:
            parts_c.append(self.o[b : b + 1])
            parts_v.append(np.ones(1))
        return np.concatenate(parts_c), np.concatenate(parts_v)

    def add_epigraph(self, t: int, b: int, weight: float = 1.0) -> None:
        """Row ``t >= weight * block_b`` (Eq. 6, or a superblock average of Section 3.3)."""
        cols, vals = self.cost_terms(b)
        self.model.add_rows_coo(
            np.zeros(cols.size + 1, dtype=np.int64), np.r_[t, cols], np.r_[1.0, -weight * vals], 1, lower=0.0
        )

    # ------------------------------------------------------------------ solutions
    def decode(self, solution: np.ndarray) -> np.ndarray:
        """Block of every node (``0..kk-1``) from a solution vector: the number of
        ``b`` with ``y_vb = 0``."""
        yv = np.asarray(solution)[self.y] > 0.5
        return (self.kk - yv.sum(axis=1)).astype(np.int64)

    def encode(self, assignment: np.ndarray) -> np.ndarray:
        """A full start vector (NaN outside the skeleton) for an assignment whose
        blocks are numbered in DAG order: ``y``, the smallest ``c`` and ``o``."""
        g, p = self.problem.graph, self.problem
        a = np.asarray(assignment, dtype=np.int64)
        if a.shape != (g.n,) or a.min() < 0 or a.max() >= self.kk:
            raise InvalidPartitionError(f"start assignment must give each of {g.n} nodes a block 0..{self.kk - 1}")
        if np.any(a[g.edge_src] > a[g.edge_dst]):
            raise InvalidPartitionError("start assignment is not numbered in DAG order (an edge goes backwards)")
        x = np.full(self.model.num_vars, np.nan)
        blocks = np.arange(self.kk)
        x[self.y] = (a[:, None] <= blocks[None, :]).astype(float)
        cval = np.zeros(self.c.shape)
        pos = np.full(g.n, -1)
        pos[self.producers] = np.arange(self.producers.size)
        src, dst = g.edge_src, g.edge_dst
        keep = pos[src] >= 0
        src, dst = src[keep], dst[keep]
        cut = a[src] != a[dst]
        cval[pos[src[cut]], a[src[cut]]] = 1.0  # output cut in the producer's block
        cval[pos[src[cut]], a[dst[cut]]] = 1.0  # input cut in the consumer's block
        x[self.c] = cval
        if self.o is not None:
            params = np.bincount(a, weights=g.size_param, minlength=self.kk)
            x[self.o] = np.maximum(params - self.budgets, 0.0) / p.bandwidth
        return x


def build_blocks(
    problem: Problem, kk: int, budgets: np.ndarray | None = None, name: str = "mtpp", binary_cuts: bool = False
) -> BlockModel:
    """Emit the skeleton of ``kk`` blocks into a fresh :class:`Model` (module docstring).

    ``budgets`` (default ``M - R`` for every block) is the parameter budget per block;
    the overflow variables are added only if some block can overflow.  ``binary_cuts``
    declares ``c`` binary (Eq. 12) rather than continuous; both are exact, and binary
    ``c`` keeps integer-only solvers (CP-SAT) tight on real-valued data."""
    g = problem.graph
    n, bw = g.n, problem.bandwidth
    m = Model(name)
    if budgets is None:
        budgets = np.full(kk, problem.param_budget)
    total_param = float(g.size_param.sum())
    use_overflow = bool(np.any(total_param > budgets))

    y = m.add_variables((n, kk), "binary", name="y")
    m.set_bounds(y[:, kk - 1], lower=1.0)  # boundary condition y_vk = 1
    if kk > 1:  # monotone: y_v(b-1) <= y_vb
        m.add_rows(np.stack([y[:, 1:], y[:, :-1]], axis=-1).reshape(-1, 2), np.array([1.0, -1.0]), lower=0.0)
    src, dst = g.edge_src, g.edge_dst
    if kk > 1 and src.size:  # DAG constraints (8), b = 0..kk-2 (b = kk-1 is 1 >= 1)
        pairs = np.stack([y[src, : kk - 1], y[dst, : kk - 1]], axis=-1).reshape(-1, 2)
        m.add_rows(pairs, np.array([1.0, -1.0]), lower=0.0)

    has_out = np.zeros(n, dtype=bool)
    has_out[src] = True
    producers = np.flatnonzero(has_out & (g.size_out > 0))
    c = m.add_variables((producers.size, kk), "binary" if binary_cuts else "continuous", upper=1.0, name="c")
    pos = np.full(n, -1)
    pos[producers] = np.arange(producers.size)
    keep = pos[src] >= 0
    es, ed = src[keep], dst[keep]
    if kk > 1 and es.size:
        cu = c[pos[es]]  # (E, kk)
        # c_ub >= |x_ub - x_vb|, x by Eq. (11): x_ub - x_vb = y_ub - y_u(b-1) - y_vb + y_v(b-1)
        blk = np.arange(1, kk)  # input cut into block b >= 1: c_ub + x_ub - x_vb >= 0
        idx = np.stack([cu[:, blk], y[es][:, blk], y[es][:, blk - 1], y[ed][:, blk], y[ed][:, blk - 1]], axis=-1)
        m.add_rows(idx.reshape(-1, 5), np.array([1.0, 1.0, -1.0, -1.0, 1.0]), lower=0.0)
        blk = np.arange(0, kk - 1)  # output cut from block b <= kk-2: c_ub - x_ub + x_vb >= 0
        prev_u = np.where(blk[None, :] > 0, y[es][:, np.maximum(blk - 1, 0)], -1)
        prev_v = np.where(blk[None, :] > 0, y[ed][:, np.maximum(blk - 1, 0)], -1)
        idx = np.stack([cu[:, blk], y[es][:, blk], prev_u, y[ed][:, blk], prev_v], axis=-1)
        m.add_rows(idx.reshape(-1, 5), np.array([1.0, -1.0, 1.0, 1.0, -1.0]), lower=0.0)

    o = None
    if use_overflow:
        # finite budgets only: a superblock without a budget never overflows (o = 0, no row,
        # since a row with an infinite side would be free); caps rounded up, never binding
        finite = np.isfinite(budgets)
        caps = np.where(finite, np.maximum(total_param - np.where(finite, budgets, 0.0), 0.0) / bw, 0.0)
        o = m.add_variables(kk, "continuous", lower=0.0, upper=caps * (1 + 1e-9), name="o")
    whole = float(g.work.sum()) + max(total_param - problem.param_budget, 0.0) / bw  # f(V) >= OPT
    io = np.minimum(g.size_out[producers] / bw, whole * (1 + 1e-6))  # a cap above OPT keeps every model tight
    bm = BlockModel(
        problem=problem,
        model=m,
        kk=kk,
        y=y,
        producers=producers,
        c=c,
        o=o,
        budgets=np.asarray(budgets, dtype=np.float64),
        cost_cap=0.0,
        io=io,
    )
    if o is not None:  # o_b - size_param(block b) / B >= -budget_b / B
        for b in np.flatnonzero(np.isfinite(budgets)).tolist():
            cols, vals = bm.x_terms(b, g.size_param)
            m.add_rows_coo(
                np.zeros(cols.size + 1, dtype=np.int64),
                np.r_[o[b], cols],
                np.r_[1.0, -vals / bw],
                1,
                lower=-budgets[b] / bw,
            )
    out_total = float(io.sum())
    overflow_cap = max(total_param - float(np.min(budgets)), 0.0) / bw if use_overflow else 0.0
    bm.cost_cap = (float(g.work.sum()) + 2.0 * out_total + overflow_cap) * (1 + 1e-9)  # rounded up
    if not math.isfinite(bm.cost_cap):  # pragma: no cover - weights are finite by construction
        raise ValueError("block cost cap is not finite")
    return bm
