"""The weighted pigeonhole bound: the cheapest convex block that carries a
``1/k`` share of any weighting of the ops.

Claim.  Let ``pi >= 0`` weight the ops, ``Pi = sum_v pi_v > 0``.  A partition into at
most ``k`` blocks splits ``Pi`` over at most ``k`` non-empty blocks, so its heaviest
block ``S`` has ``pi(S) >= Pi / k``, and ``pi(S) >= max_v pi_v`` (it weighs at least the
block of the heaviest op); every block of an acyclic partition is convex (a path leaving
and re-entering a block is a cycle of the quotient graph).  Hence

    OPT(k) >= c(pi) = min { f(S) : S convex, pi(S) >= max(Pi / k, max_v pi_v) },

for *every* weighting, and each ``c(pi)`` is a proof on its own.  ``pi = work`` is the
bottleneck MIP of Section 3.2 (its block 2 with constraint (14), ``L = max(W / k, max_v
work(v))``) when no parameters overflow; other weightings give other bounds, and the best
of them is the point of this module.

The MIP (one block, ``O(n)`` variables, ``O(m)`` rows), on the instance scaled to
``O(1)`` (:mod:`formulations.scaling`):

* ``x_v`` binary: ``v`` is in ``S``; ``a_v, d_v`` in ``[0, 1]``: the ideal and the
  filter ``S`` generates (``a_v >= x_v``, ``a_u >= a_v`` and ``d_v >= d_u`` for an
  edge ``(u, v)``), and ``x_v >= a_v + d_v - 1``, so an op both below and above ``S``
  is in ``S``: ``S`` is convex, and every convex ``S`` is feasible with ``a``, ``d``
  its closures (0/1).  A non-convex ``x`` has an op ``w`` outside ``S`` with
  ``a_w = d_w = 1`` forced, so continuous ``a``, ``d`` already exclude it.  At a source
  ``d_v = x_v`` and ``a_v = 1``, at a sink ``a_v = x_v`` and ``d_v = 1`` (their least
  values that meet every row: :func:`_closures`), so only the ops with predecessors and
  successors carry ``a``, ``d`` and their rows;
* ``in_u, out_u`` in ``[0, 1]`` for each producer ``u`` with a consumer:
  ``in_u >= x_v - x_u`` (tensor ``u`` enters ``S``) and ``out_u >= x_u - x_v``
  (it leaves ``S``) for each edge ``(u, v)``: once per tensor however many consumers;
* ``o >= (size_param(S) - (M - R)) / B``, ``o >= 0`` where parameters can overflow
  (relaxed to each op's own overflow where the sizes would cancel: :data:`OVERFLOW_ROW_LIMIT`);
* ``sum_v pi_v x_v >= r`` with ``r <= max(Pi / k, max_v pi_v)`` (below);
* minimise ``work(S) + sum_u io_u (in_u + out_u) + o``: Eq. (3) of ``S`` (with
  peak-aware costs, ``peak(S) >= 0`` is left out: a lower bound still).

Tensor costs are capped at ``f(V) >= OPT`` as in :mod:`formulations.blocks` (a
relaxation whose optimum stays ``>= min(c(pi), f(V))``; a bound above ``f(V)`` is above
every partition and only comes from a solver failure, which certify drops).

Rounding.  ``r`` is ``max(fsum(pi) / k, max_v pi_v)`` lowered by a relative ``2^-40``, so
every block that carries the share in exact arithmetic meets the row; the solver's feasibility
tolerance only widens the set.  The bound is the solver's proven dual bound moved down
by the margin its own tolerances allow (:meth:`solvers.base.Tolerances.margin`), times
the scale: a lower bound on ``c(pi)``, hence on ``OPT(k)``.  "Infeasible" is a solver
failure (``S = V`` is always feasible).

Weights.  The best weighting is the optimal dual of the set-partitioning LP over
convex blocks of cost at most ``T``, a column-generation problem whose convergence
took minutes at 150 ops (measured while choosing this).  :func:`pigeonhole_bound` finds good
weights the cheap way, by multiplicative updates (Arora, Hazan and Kale, "The
Multiplicative Weights Update Method", 2012): after each MIP the weights of the ops of
its optimal block are multiplied by ``1 - eta``, so the next cheapest block that
carries ``1/k`` of the weight must cost more or lie elsewhere; the step decays
geometrically.  The first weighting is ``work`` (the bottleneck MIP's block), the second
each op's cost as a block of its own (``f({v})``: its work, inputs, output and overflow),
from which the updates go on.
On REGAL-style graphs (``mtpp generate regal``, 152 ops) twenty MIPs lifted the best of
the other bounds at ``k = 4 / 8 / 16`` by 6 / 9 / 14%.

Seed.  A third weighting may follow the two starts (``seed``: certify passes the best
weighting of the next smaller k).  The updates follow it only where its MIP lifts the bound
above both starts; otherwise they go on from ``f({v})`` as without it (the seed costs one MIP).
Any weighting is a proof on its own, so the seed changes only which weightings are tried.
Measured on REGAL-style graphs (dev seeds 9301-9306 and 9311-9316, never the benchmark's,
12 s per k, the seed from the best weighting of ``k / 2`` after its own 12 s): at ``k = 32``
the bound rose on 8 of 12 graphs, by up to 15%, and fell on 2 by at most 0.5% (geometric
mean +3.6%); at ``k = 16`` the mean rose by 0.2% (from -1.3% to +3.3%), at ``k = 8`` it was
unchanged (-0.5% to +0.5%).  At the larger ks, ``f({v})`` starts far from the weights the
updates reach, and the weights of ``k / 2`` start near them (9312, 118 ops, ``k = 32``:
``f({v})`` 480, the seed 621, 12 s of updates from ``f({v})`` 610, from the seed 690).

Measured and left out (unseen REGAL-style seeds 8001-8004, 14 MIPs at k = 16 and 32
unless said):

* other steps (``eta`` 0.1-0.5, decay 0.85-0.97): none better on every graph, ``eta =
  0.5`` up to 7% lower;
* the mean of the iterates' weightings instead of the best one: 0.995 of it (8003, k = 8, 37 MIPs);
* penalising with each block the ops one step away that keep it within 1-10% of its
  cost: equal, or up to 1.4% lower;
* shorter MIPs: stopping at the first block cheaper than the best bound (8004, k = 32,
  60 s: 5 of 29 MIPs stopped so, the same 29 MIPs and bound), at a relative gap of 1e-3 /
  1e-2 (28 MIPs, 0.2% / 1% lower), a MIP start from the cheapest earlier block that
  carries the share (the same time), Gurobi's ``Presolve = 2`` or ``MIPFocus = 1`` (within
  the 10% one setting's time moves from run to run; ``MIPFocus = 2`` / ``3``, ``Cuts = 2`` and
  ``Heuristics = 0`` took 2.0 / 2.8, 1.3 and 1.6 times as long on six weightings at k = 32, the
  same optima): the MIPs' time is their search;
* column generation from the blocks the updates found, at a threshold 0.5% above their
  bound (8003, k = 8: 784 pricings in 40 s; the master's fractional count of blocks fell
  from 10.7 to 8.45, still above k: no threshold decided, no bound lifted).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from formulations.errors import FormulationError, InfeasibleFormulationError
from formulations.scaling import normalised
from mtpp.bounds.hull_cuts import reach
from mtpp.core.problem import Problem
from solvers.base import SolveOptions
from solvers.model import Model
from solvers.registry import get_backend
from solvers.result import SolveResult, Status

ETA = 0.2
"""The first multiplicative step: the weights of the last block's ops are multiplied by ``1 - eta``."""
DECAY = 0.9
"""The step is multiplied by this after every MIP."""
PATIENCE = 8
"""The updates stop after this many MIPs in a row that neither lifted the best bound (by a
relative ``1e-6``) nor found a block not seen before: on a tiny graph the weights soon keep
finding the same few blocks.  A new block is progress even where the bound stays: on the
REGAL-style graph of seed 9301 (190 ops) the first 24 MIPs at k = 8 and 16 found new blocks
without lifting it, then the next 32 lifted it by 1.2% and 1.7% (stopping after 8 MIPs without
a higher bound, as this did before, gave none of that)."""
WIND_ETA = 0.1
"""A second wind (:func:`second_wind`) restarts the step at this."""
WIND_DECAY = 0.97
"""... and decays it this much slower than :data:`DECAY`, for up to :data:`WIND_PATIENCE`
MIPs without progress.  REGAL-style graphs of 30-72 ops whose first updates stopped after 37-58
MIPs (patience, 4-15 s) went on to lift the bound by 0.9-2.1% within 40 s (seeds 8305, k = 8:
750 -> 757; 8003, k = 8: 958 -> 974; 8003, k = 16: 548 -> 560), where the ceiling of the family,
the set-partitioning LP, lies 0.2-6% above the first updates' bound (``docs/decisions.md``)."""
WIND_PATIENCE = 40
"""MIPs in a row without progress after which a second wind stops (see :data:`WIND_DECAY`)."""
WIND_MIPS = 400
"""MIPs a second wind may add to ``max_mips`` (the clock usually stops it first: 95-150 MIPs
more in the 40 s of the figures above)."""
MAX_MIPS = 64
"""MIPs of one run of updates at most (``max_mips``'s default)."""
R_LOWER = 1.0 - 2.0**-40
"""The weight row's right-hand side is ``fsum(pi) / k`` times this (module docstring, rounding)."""
TINY = 1e-7
"""Costs and parameter sizes below this (on the scaled instance, whose costs are ``O(1)``) are
dropped on the safe side: every block costs less (by at most ``n TINY`` of the simple bound).
HiGHS 1.16's presolve at the tolerances of :class:`solvers.highs.HighsBackend` called
mixed-scale models "optimal" far above their optimum: four ops with a cost of ``3e-15`` and an
overflow coefficient of ``3e-10`` (three times above; any of its rules 5, 15, 20 off mended it),
three ops with a cost of ``3e-7`` and an overflow coefficient of ``2e-8`` (9% above; no rule
off mended it, dropping the coefficients below ``1e-7`` did).  :meth:`PigeonholeMip.cheaper_block`
checks every answer besides."""
TINY_WEIGHT = 1e-6
"""Weights below this part of the share ``Pi / k`` become 0 (the claim holds for any weights),
so the weight row (which reads ``>= 1``) has no coefficient below it: SCIP 10 called a
seven-op model whose row had coefficients of ``1e-8`` "optimal" 7% above a feasible block."""


class PigeonholeSolverError(FormulationError):
    """A solver proved more than a block that meets the share row costs: its bound is wrong."""

    def __init__(self, solver: str, claimed: float, cheaper: float) -> None:
        self.solver, self.claimed, self.cheaper = solver, claimed, cheaper
        super().__init__(
            f"{solver} proved {claimed!r} for the pigeonhole MIP, but a block that carries the share costs "
            f"{cheaper!r}: a solver failure, the bound was dropped"
        )

    def __reduce__(self) -> tuple[type, tuple[str, float, float]]:
        return (type(self), (self.solver, self.claimed, self.cheaper))


OVERFLOW_ROW_LIMIT = 1e3
"""Above this (scaled: the answer is ``O(1)``), the sizes in the overflow row ``o >= (P(S) -
b) / B`` would cancel (a needle: one op's ``1e10`` parameters, a memory a hair above them):
the row's margin would swamp the bound, and HiGHS without presolve called such a model
infeasible.  Each op's own overflow ``(p_v - b)^+ / B`` is summed instead, a relaxation:
``(P(S) - b)^+ >= sum_(v in S) (p_v - b)^+`` (the ops over ``b`` each add at least their excess)."""


@dataclass(frozen=True)
class PigeonholeMip:
    """The one-block model of the module docstring on the scaled instance, one model per
    weighting (:meth:`model_for`; building one is ``O(n + m)``)."""

    problem: Problem
    """The instance scaled to ``O(1)``."""
    scale: float
    """Bounds of the scaled instance times this are bounds of the original."""
    integral: bool
    """``a``, ``d``, ``in``, ``out`` declared binary (for integer-only solvers)."""

    def share_row(self, weights: np.ndarray) -> tuple[np.ndarray, float]:
        """``(w, r)``: the weights with those below :data:`TINY_WEIGHT` of the share set to 0,
        scaled to sum to ``k`` (so the share is about 1 and the row's activity, which the
        solvers' margin grows with, stays at most ``k``), and ``r = max(fsum(w) / k,
        max_v w_v)`` lowered (module docstring)."""
        w = np.asarray(weights, dtype=np.float64)
        w = np.where(w >= TINY_WEIGHT * math.fsum(w.tolist()) / self.problem.k, w, 0.0)
        w = w * (self.problem.k / math.fsum(w.tolist()))
        return w, max(math.fsum(w.tolist()) / self.problem.k, float(w.max())) * R_LOWER

    def model_for(self, weights: np.ndarray) -> Model:
        """The model with the row ``sum_v w_v x_v >= r`` of :meth:`share_row`."""
        m = _skeleton(self.problem, self.integral)
        x = m.blocks["x"].indices
        w, r = self.share_row(weights)
        nz = np.flatnonzero(w)
        m.add_rows_coo(np.zeros(nz.size, dtype=np.int64), x[nz], w[nz], 1, lower=r)
        return m

    def block(self, solution: np.ndarray) -> np.ndarray:
        """The ops of the block in a solution vector (a boolean mask; ``x`` comes first)."""
        return np.asarray(solution)[: self.problem.graph.n] > 0.5

    def cost(self, block: np.ndarray) -> float:
        """``f(S)`` without its peak on the scaled instance (the model's objective at ``S``,
        before :data:`TINY` drops anything: at least the model's value)."""
        p, g = self.problem, self.problem.graph
        src, dst = g.edge_src, g.edge_dst
        into = np.unique(src[~block[src] & block[dst]])
        out = np.unique(src[block[src] & ~block[dst]])
        io = g.size_out / p.bandwidth
        over = max(float(g.size_param[block].sum()) - p.param_budget, 0.0) / p.bandwidth
        return float(g.work[block].sum()) + float(io[into].sum()) + float(io[out].sum()) + over

    def cheaper_block(self, weights: np.ndarray, claim: float, found: np.ndarray | None) -> float | None:
        """The cost of a block that meets the share row of ``weights`` and costs less than
        ``claim`` (a proven value on the scaled instance), or ``None``: every op, ``V``, and
        the blocks one op away from the solver's own block ``found`` (one op dropped, or one
        neighbour added, where convex).  A solver that proved more than such a block costs
        has failed (HiGHS 1.16's presolve at tight tolerances missed the one-op block beside
        the two-op block it called optimal on a three-op mixed-scale graph)."""
        g = self.problem.graph
        w, r = self.share_row(weights)
        candidates = [np.ones(g.n, dtype=bool)]
        if found is not None and found.any():
            inside = np.flatnonzero(found)
            touching = np.zeros(g.n, dtype=bool)
            touching[g.edge_dst[found[g.edge_src]]] = True
            touching[g.edge_src[found[g.edge_dst]]] = True
            for v in [*inside.tolist(), *np.flatnonzero(touching & ~found).tolist()]:
                near = found.copy()
                near[v] = not near[v]
                candidates.append(near)
        for v in np.flatnonzero(w >= r):
            alone = np.zeros(g.n, dtype=bool)
            alone[v] = True
            candidates.append(alone)
        for block in candidates:
            if block.any() and math.fsum(w[block].tolist()) >= r and self.convex(block):
                cost = self.cost(block)
                if claim > cost * (1 + 1e-9) + 1e-12:
                    return cost
        return None

    def convex(self, block: np.ndarray) -> bool:
        """No path leaves ``block`` and comes back."""
        g = self.problem.graph
        ops = np.flatnonzero(block)
        below = reach(g.succ_ptr, g.succ_idx, ops, g.n)
        above = reach(g.pred_ptr, g.pred_idx, ops, g.n)
        return not np.any(below & above & ~block)


def _skeleton(problem: Problem, integral: bool) -> Model:
    """Variables, convexity, IO and overflow rows and the objective of the one-block model."""
    g = problem.graph
    n, bw = g.n, problem.bandwidth
    kind = "binary" if integral else "continuous"
    m = Model(f"pigeonhole_k{problem.k}")
    x = m.add_variables(n, "binary", name="x")
    src, dst = g.edge_src, g.edge_dst
    a, d = _closures(m, problem, x, kind)
    inner = (a >= 0) & (d >= 0)
    m.add_rows(np.stack([a[a >= 0], x[a >= 0]], axis=1), np.array([1.0, -1.0]), lower=0.0)  # a_v >= x_v
    m.add_rows(np.stack([d[d >= 0], x[d >= 0]], axis=1), np.array([1.0, -1.0]), lower=0.0)  # d_v >= x_v
    m.add_rows(np.stack([x[inner], a[inner], d[inner]], axis=1), np.array([1.0, -1.0, -1.0]), lower=-1.0)  # convex
    up = a[src] >= 0  # a_u >= a_v, where a_u is not 1
    if up.any():
        m.add_rows(np.stack([a[src[up]], _or_x(a, x)[dst[up]]], axis=1), np.array([1.0, -1.0]), lower=0.0)  # an ideal
    down = d[dst] >= 0  # d_v >= d_u, where d_v is not 1
    if down.any():
        m.add_rows(np.stack([d[dst[down]], _or_x(d, x)[src[down]]], axis=1), np.array([1.0, -1.0]), lower=0.0)
    has_out = np.zeros(n, dtype=bool)
    has_out[src] = True
    producers = np.flatnonzero(has_out & (g.size_out > 0))
    total_param = float(g.size_param.sum())
    budget = problem.param_budget
    whole = float(g.work.sum()) + max(total_param - budget, 0.0) / bw  # f(V) >= OPT
    io = np.minimum(g.size_out[producers] / bw, whole * (1 + 1e-6))
    cin = m.add_variables(producers.size, kind, upper=1.0, name="in")
    cout = m.add_variables(producers.size, kind, upper=1.0, name="out")
    pos = np.full(n, -1)
    pos[producers] = np.arange(producers.size)
    keep = pos[src] >= 0
    es, ed = src[keep], dst[keep]
    if es.size:
        m.add_rows(np.stack([cin[pos[es]], x[ed], x[es]], axis=1), np.array([1.0, -1.0, 1.0]), lower=0.0)
        m.add_rows(np.stack([cout[pos[es]], x[es], x[ed]], axis=1), np.array([1.0, -1.0, 1.0]), lower=0.0)
    obj_idx = [x, cin, cout]
    obj_val = [_safe(g.work), _safe(io), _safe(io)]
    if math.isfinite(budget) and total_param > budget:
        # a cap far above any block's overflow (P / B), only to keep the domain finite (CP-SAT, the
        # margin): HiGHS 1.16's presolve called a three-op model "optimal" 9% above its optimum
        # with o capped a hair above its coefficient (P / B (1 + 1e-6)), and right at this cap
        o = m.add_variables(1, "continuous", upper=2.0 * total_param / bw + 1.0, name="overflow")
        if (total_param + budget) / bw <= OVERFLOW_ROW_LIMIT:
            params, floor = _safe(g.size_param / bw), -budget / bw
        else:  # each op's own overflow: (P(S) - b)^+ >= sum over S of (p_v - b)^+, without cancellation
            params, floor = _safe(np.maximum(g.size_param - budget, 0.0) / bw), 0.0
        nz = np.flatnonzero(params)
        m.add_rows_coo(np.zeros(nz.size + 1, dtype=np.int64), np.r_[o, x[nz]], np.r_[1.0, -params[nz]], 1, lower=floor)
        obj_idx.append(o)
        obj_val.append(np.ones(1))
    m.set_objective(np.concatenate(obj_idx), np.concatenate(obj_val))
    return m


CLOSURE_ONE = -1
"""In :func:`_closures`' index arrays: the variable is the constant 1."""
CLOSURE_X = -2
"""In :func:`_closures`' index arrays: the variable is ``x_v`` itself."""


def _closures(m: Model, problem: Problem, x: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The indices of ``a`` and ``d`` per op, with the variables fixed at a source or a sink
    left out (:data:`CLOSURE_ONE`, :data:`CLOSURE_X`).  ``a`` and ``d`` appear only in the
    rows of the module docstring, bounded from below, so each may sit at its least value
    given ``x``; at a source ``v`` that is ``d_v = x_v`` (its only lower bound), and then
    ``a_v = 1`` meets every row it is in (``a_v >= x_v``, ``a_v >= a_w`` for its successors
    ``w``, and ``x_v >= a_v + d_v - 1`` reads ``x_v >= x_v``); at a sink the mirror image
    (``a_v = x_v``, ``d_v = 1``); an op with neither predecessors nor successors has
    ``a_v = d_v = x_v`` and no row.  The same blocks stay feasible, in the MIP and in its
    relaxation, with 3 + deg(v) fewer rows per such op: REGAL-style graphs of 200 ops keep
    the model under the 2,000 rows of Gurobi's pip licence (8001-8008: 8004, 199 ops, had
    2,054 and ran on SCIP, solving no weighting in 5 s)."""
    g = problem.graph
    source = np.diff(g.pred_ptr) == 0
    sink = np.diff(g.succ_ptr) == 0
    a = np.where(source & ~sink, CLOSURE_ONE, CLOSURE_X).astype(np.int64)
    d = np.where(sink & ~source, CLOSURE_ONE, CLOSURE_X).astype(np.int64)
    inner = ~source & ~sink
    a[inner] = m.add_variables(int(inner.sum()), kind, upper=1.0, name="a")
    d[inner] = m.add_variables(int(inner.sum()), kind, upper=1.0, name="d")
    return a, d


def _or_x(closure: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``closure``'s indices with :data:`CLOSURE_X` replaced by ``x``'s (callers filter out
    :data:`CLOSURE_ONE`)."""
    return np.where(closure == CLOSURE_X, x, closure)


def _safe(values: np.ndarray) -> np.ndarray:
    """Non-negative costs with those below :data:`TINY` set to 0 (lower: the safe side)."""
    return np.where(values >= TINY, values, 0.0)


def build_pigeonhole(problem: Problem, integral: bool = False) -> PigeonholeMip:
    """The one-block model's data on ``problem`` scaled to ``O(1)``
    (:func:`formulations.scaling.normalised`); ``integral`` declares ``a``, ``d``, ``in``,
    ``out`` binary (for integer-only solvers)."""
    scaled, s = normalised(problem)
    return PigeonholeMip(scaled, s, integral)


def singleton_costs(problem: Problem) -> np.ndarray:
    """``f({v})`` of every op without its peak: work, one input per distinct producer,
    its output if consumed, its parameters' overflow (the first weighting)."""
    g = problem.graph
    io = g.size_out / problem.bandwidth
    inputs = np.bincount(g.edge_dst, weights=io[g.edge_src], minlength=g.n)
    consumed = np.zeros(g.n, dtype=bool)
    consumed[g.edge_src] = True
    over = np.maximum(g.size_param - problem.param_budget, 0.0) / problem.bandwidth
    return g.work + inputs + np.where(consumed, io, 0.0) + over


@dataclass
class PigeonholeUpdates:
    """Where the multiplicative updates stand when a call of :func:`pigeonhole_bound` stops:
    passed back as its ``resume``, the next call goes on with the next weighting (the same one
    where the clock stopped a MIP before it finished) as if it had never stopped."""

    problem: Problem
    """The problem the updates belong to (a resumed call must pass this same object)."""
    mip: PigeonholeMip
    weights: np.ndarray
    """The next weighting to solve."""
    eta: float
    starts: list[np.ndarray]
    """The start weightings not yet solved (module docstring)."""
    seen: set[bytes] = field(default_factory=set)
    """The optimal blocks found so far (bytes of their masks)."""
    seed: np.ndarray | None = None
    """A weighting still to try after the starts (module docstring, seed)."""
    detour: tuple[np.ndarray, float] | None = None
    """While the seed's MIP runs: the weights and step the updates go on with where it does not
    lift the bound."""
    best: float = -math.inf
    best_weights: np.ndarray | None = None
    """The weighting of :attr:`best` (a seed for a larger k)."""
    best_res: SolveResult | None = None
    last: SolveResult | None = None
    mips: int = 0
    optimal: int = 0
    stale: int = 0
    """MIPs in a row without progress (:attr:`patience`)."""
    decay: float = DECAY
    """The step is multiplied by this after every MIP."""
    patience: int = PATIENCE
    """The updates stop after this many MIPs in a row without progress."""
    stalled: bool = False
    """They stopped for want of progress (:attr:`patience`) or of MIPs (``max_mips``): a
    second wind may take them on (:func:`second_wind`)."""
    work_solved: bool = False
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    finished: bool = False
    """The updates ran their course: more time would not go on."""


@dataclass(frozen=True)
class PigeonholeBound:
    """The best of the weightings tried at one k."""

    bound: float | None
    """A float at most ``OPT(k)`` (``None``: no MIP proved anything)."""
    mips: int
    """MIPs solved (one per weighting)."""
    optimal: int
    """Of them, solved to optimality."""
    status: Status
    """``time_limit`` when the clock stopped the updates (or a MIP), else ``optimal``: they ran
    their course (``max_mips``, no progress, the target reached, or a MIP without a block)."""
    solver: str
    solver_version: str
    wall_time: float
    """Seconds over this call and the calls it resumed."""
    margin: float
    """What the solver's tolerances took off the best MIP's dual bound (problem units)."""
    work_solved: bool = False
    """The first weighting, ``work``, was solved to optimality: without overflow the bound
    is at least the bottleneck MIP's optimum (Section 3.2)."""
    message: str = ""
    updates: PigeonholeUpdates | None = None
    """Where the updates stand, to go on from with ``resume``."""

    @property
    def resumable(self) -> bool:
        """The clock stopped the updates before they ran their course."""
        return self.updates is not None and not self.updates.finished


def weighted_bound(
    mip: PigeonholeMip,
    weights: np.ndarray,
    solver: str,
    time_limit: float | None,
    target: float | None = None,
    threads: int = 1,
) -> tuple[float, SolveResult, np.ndarray | None]:
    """``c(weights)`` from below (problem units), the solve, and the optimal block's mask
    (``None`` without a solution).  Raises :class:`InfeasibleFormulationError` for a
    solver that calls the model infeasible."""
    backend = get_backend(solver)
    opts = SolveOptions(
        time_limit=time_limit,
        threads=threads,
        dual_bound_target=None if target is None else target / mip.scale,
        robust=True,
    )
    res = backend.solve(mip.model_for(weights), opts)
    if res.status is Status.INFEASIBLE:
        raise InfeasibleFormulationError("pigeonhole", res.solver, res.message or "S = V is always feasible")
    block = mip.block(res.solution) if res.solution is not None else None
    if not math.isfinite(res.safe_bound):
        return -math.inf, res, block
    cheaper = mip.cheaper_block(weights, res.safe_bound, block)
    if cheaper is not None:
        raise PigeonholeSolverError(res.solver, res.safe_bound * mip.scale, cheaper * mip.scale)
    return res.safe_bound * mip.scale, res, block


def pigeonhole_bound(
    problem: Problem,
    solver: str = "auto",
    time_limit: float | None = None,
    target: float | None = None,
    max_mips: int = MAX_MIPS,
    eta: float = ETA,
    resume: PigeonholeUpdates | None = None,
    threads: int = 1,
    seed: np.ndarray | None = None,
) -> PigeonholeBound:
    """The best ``c(pi)`` over multiplicative-weight updates (module docstring), within
    ``time_limit`` seconds for the whole call (each MIP gets what is left), stopping at
    ``max_mips`` MIPs in all, after :data:`PATIENCE` MIPs in a row without progress (neither a
    higher bound nor a new block), when a
    bound reaches ``target`` (the cost of a partition) or when a MIP returns no block to
    update the weights from.  With ``resume`` (the ``updates`` of an earlier call on the same
    ``problem`` and ``solver`` that the clock stopped), it goes on from where that call
    stopped, and its result is the best over both calls.  ``solver`` and ``threads`` go to
    :func:`solvers.registry.get_backend` and the solves (``"auto"``: Gurobi where the model
    fits its licence, one MIP 20 times faster than on HiGHS on a 152-op REGAL-style graph at
    k = 16).  ``seed`` (non-negative, one weight per op, not all zero; ignored with ``resume``)
    is tried after the two starts and followed only where it lifts the bound (module
    docstring)."""
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    state = resume
    if state is None:
        mip = build_pigeonhole(problem, integral=bool(getattr(get_backend(solver), "integral_data", False)))
        starts = [problem.graph.work.astype(np.float64), singleton_costs(problem)]
        state = PigeonholeUpdates(problem, mip, starts.pop(0), eta, starts, seed=_checked_seed(problem, seed))
    elif state.problem is not problem:
        raise ValueError("resume holds the updates of another problem: pass the same Problem object")
    _update(state, solver, deadline, target, max_mips, threads)
    state.seconds += time.perf_counter() - t0
    clock = deadline is not None and time.perf_counter() >= deadline
    last = state.last
    timed_out = clock or (last is not None and last.status is Status.TIME_LIMIT)
    status = Status.TIME_LIMIT if timed_out else Status.OPTIMAL
    shown = state.best_res or last
    return PigeonholeBound(
        bound=state.best if math.isfinite(state.best) else None,
        mips=state.mips,
        optimal=state.optimal,
        status=status,
        solver=shown.solver if shown else solver,
        solver_version=shown.version if shown else "",
        wall_time=state.seconds,
        margin=(state.best_res.margin * state.mip.scale) if state.best_res else 0.0,
        work_solved=state.work_solved,
        message=f"{state.mips} weightings, {state.optimal} solved to optimality"
        + "".join(f"; dropped: {failure}" for failure in state.failures),
        updates=state,
    )


def _checked_seed(problem: Problem, seed: np.ndarray | None) -> np.ndarray | None:
    """``seed`` as float64 weights, or ``ValueError`` naming what is wrong with it."""
    if seed is None:
        return None
    w = np.asarray(seed, dtype=np.float64)
    if w.shape != (problem.graph.n,):
        raise ValueError(f"seed has shape {w.shape}, not one weight per op ({problem.graph.n},)")
    if not np.all(np.isfinite(w)) or np.any(w < 0.0) or not w.any():
        raise ValueError("seed weights must be finite, non-negative and not all zero")
    return w.copy()


def _update(
    state: PigeonholeUpdates, solver: str, deadline: float | None, target: float | None, max_mips: int, threads: int
) -> None:
    """The loop of :func:`pigeonhole_bound`: one MIP per weighting until the clock stops it
    (``state.finished`` stays false) or the updates run their course."""
    mip, state.finished, state.stalled = state.mip, False, False
    while state.mips < max_mips and math.fsum(state.weights.tolist()) > 0.0:
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0.0:
            return
        state.mips += 1
        try:
            bound, res, block = weighted_bound(mip, state.weights, solver, left, target, threads=threads)
        except (PigeonholeSolverError, InfeasibleFormulationError) as exc:
            state.failures.append(str(exc))
            if state.detour is not None:  # the seed failed: back to the updates
                (state.weights, state.eta), state.detour = state.detour, None
                continue
            if not state.starts:
                break
            state.weights = state.starts.pop(0)
            continue
        state.last = res
        lifted = bound > state.best + 1e-6 * abs(state.best)
        if bound > state.best:
            state.best, state.best_res, state.best_weights = bound, res, state.weights.copy()
        if res.status is Status.TIME_LIMIT:  # unfinished: a resumed call solves this weighting again
            return
        state.optimal += res.status is Status.OPTIMAL
        on_work = len(state.starts) == 1  # the first weighting, work: f({v}) is still to come
        state.work_solved = state.work_solved or (on_work and res.status is Status.OPTIMAL)
        key = None if block is None else block.tobytes()
        new = key is not None and key not in state.seen
        if key is not None:
            state.seen.add(key)
        state.stale = 0 if new or lifted else state.stale + 1
        if state.detour is not None:  # this MIP solved the seed
            if not lifted or block is None or not block.any():
                (state.weights, state.eta), state.detour = state.detour, None
                continue  # the patience and the target are read after the next MIP
            state.detour = None
        if state.stale >= state.patience:
            state.stalled = True
            break
        if target is not None and state.best >= target:
            break
        if state.starts:
            state.weights = state.starts.pop(0)
        elif block is None or not block.any():
            break
        else:
            state.weights = state.weights * np.where(block, 1.0 - state.eta, 1.0)
            state.eta *= state.decay
            if state.seed is not None:  # the starts are done: try the seed next
                state.detour, state.weights, state.seed = (state.weights, state.eta), state.seed, None
    state.stalled = state.stalled or state.mips >= max_mips
    state.finished = True


def second_wind(state: PigeonholeUpdates) -> bool:
    """Take on updates that stopped for want of progress or of MIPs (``state.stalled``): the
    step restarts at :data:`WIND_ETA` from the weights where they stopped and decays by
    :data:`WIND_DECAY`, for up to :data:`WIND_PATIENCE` MIPs without progress; the next
    ``pigeonhole_bound(resume=state)`` goes on (its ``max_mips`` counts the MIPs of every call).
    Every weighting is still a proof on its own (module docstring), so the bound stays sound;
    false where the updates did not stall (the clock stopped them: resume them as they are; or
    they reached the target or ran out of weight or blocks)."""
    if not (state.finished and state.stalled):
        return False
    state.eta, state.decay, state.patience = WIND_ETA, WIND_DECAY, WIND_PATIENCE
    state.stale, state.finished, state.stalled = 0, False, False
    return True
