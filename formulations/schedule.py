"""The minimum-peak topological order as a cumulative scheduling model (no solver here).

Topoformer Eq. (1)-(3) and (15): choose a topological order minimising the largest
step memory.  As a constraint model over integer positions (one op per time step):

    p_v in {a_v, ..., n - 1 - d_v}                    position of op v; a_v / d_v = number
                                                      of its ancestors / descendants
    all_different(p)                                  one op per step
    p_u + 1 <= p_v                   for (u, v) in E  topological
    e_u = max_{w in succ(u)} p_w     (u with consumers)   last step that reads u's output
    tensor interval  [p_u, e_u + 1)  demand size_out(u)   (sinks: [p_u, p_u + 1))
    op interval      [p_v, p_v + 1)  demand size_param(v) (parameters only while v runs)
    cumulative(all intervals) <= C
    C >= L                                            redundant: L = max of the local bound
                                                      max_v (size_out(v) + size_param(v)
                                                      + sum_{u in pred(v)} size_out(u)) and
                                                      any proven bound from another method
    C <= U                                            optional: the peak of a known order
    minimise C

At step ``t`` the tensors whose interval covers ``t`` are exactly the live tensors of
Eq. (3) plus the op's own output (Eq. 2), so ``C`` at the optimum is the minimum peak.

Constraint solvers need integer demands: sizes are multiplied by ``scale``
(:func:`integer_scale`: the smallest power of ten up to ``10^6`` that makes them all
integers to within ``1e-9``, else a power of two) and rounded, to the nearest
integer or down, so a demand ``d_i`` may differ from ``scale x_i`` either way (a size
of ``1e-10`` at scale 1 becomes 0; ``0.3`` at scale 10 becomes 3, a hair *above*
``10 fl(0.3)``).  :func:`build_schedule` measures both directions in exact rational
arithmetic and stores them with the model:

* ``excess``: a float ``rho >= max_i d_i / (scale x_i) - 1`` (``0`` at least; zero
  sizes have zero demands and do not count).  Every order's model peak is a sum of
  demands, so it is at most ``(1 + rho) scale`` times its true peak: the model
  optimum is at most ``(1 + rho) scale OPT``, and a proven model bound ``B`` gives
  ``OPT >= B / ((1 + rho) scale)`` (``mtpp.scheduling._cpsat_lower``);
* ``deficit``: a float ``D >= sum_i max(0, scale x_i - d_i)``.  Every order's model
  peak is at least its true step memory at its true peak step times ``scale``, less
  what rounding took off those terms: the model optimum is at least ``scale OPT - D``.

The redundant row ``C >= L`` is therefore ``ceil(scale L - D)`` for a proven ``L`` (in
rationals, so no rounding can lift it), never above the model optimum (nor is the
local bound in model units, a bound of the model itself); the row ``C <= U`` is the
model's own integer peak of a known order (:meth:`ScheduleModel.capacity`), or
``ceil((1 + rho) scale U)`` for a float ``U`` at least some order's true peak, never
below the model optimum either.  ``exact`` is true when every demand is exactly ``scale x_i``
(``rho = D = 0``): the model optimum is then ``scale OPT``.

The model is a plain data record: :mod:`solvers.cpsat_schedule` turns it into a
CP-SAT model.  It is not a MILP, so it does not go through :class:`solvers.Model`
(a linear encoding of the cumulative constraint needs ``O(n^2)`` binaries).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from mtpp.core.graph import Graph

MAX_TOTAL = 2**50  # keeps every sum of demands far from int64 overflow
MAX_DECIMALS = 6


@dataclass(frozen=True)
class ScheduleModel:
    """Integer data of the model in the module docstring (arrays indexed by node)."""

    n: int
    edge_src: np.ndarray
    edge_dst: np.ndarray
    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    out_demand: np.ndarray  # int64: size_out * scale, rounded (module docstring)
    param_demand: np.ndarray  # int64: size_param * scale, rounded
    earliest: np.ndarray  # int64: number of ancestors (smallest possible position)
    latest: np.ndarray  # int64: n - 1 - number of descendants
    scale: float
    exact: bool  # every demand is exactly scale * size
    lower_bound: int  # redundant C >= lower_bound (model units)
    upper_bound: int | None  # C <= upper_bound (model units), if given
    excess: float = 0.0  # rho: every demand <= (1 + rho) scale size (module docstring)
    deficit: float = 0.0  # D >= sum of max(0, scale size - demand) (module docstring)

    def to_size(self, capacity: float) -> float:
        """A capacity in model units as memory, ``capacity / scale`` (a proven bound
        only after the correction of ``mtpp.scheduling._cpsat_lower`` unless
        ``exact`` and ``scale`` is a power of two)."""
        return capacity / self.scale

    def positions(self, order: np.ndarray) -> np.ndarray:
        """``p`` of a topological order (node indices)."""
        pos = np.empty(self.n, dtype=np.int64)
        pos[np.asarray(order, dtype=np.int64)] = np.arange(self.n)
        return pos

    def ends(self, pos: np.ndarray) -> np.ndarray:
        """``e`` for positions ``pos``: the last consumer's position, ``p_u`` for sinks."""
        end = pos.copy()
        np.maximum.at(end, self.edge_src, pos[self.edge_dst])
        return end

    def capacity(self, order: np.ndarray) -> int:
        """The model's peak (in model units) of a topological order."""
        pos = self.positions(order)
        end = self.ends(pos)
        delta = np.zeros(self.n + 1, dtype=np.int64)
        np.add.at(delta, pos, self.out_demand)
        np.add.at(delta, end + 1, -self.out_demand)
        use = np.cumsum(delta)[: self.n]
        use[pos] += self.param_demand
        return int(use.max())


def integer_scale(values: np.ndarray) -> tuple[float, bool]:
    """The smallest ``10^k`` (``k <= 6``) making ``values`` integral to within
    ``1e-9 max(1, |x|)`` without passing ``MAX_TOTAL`` (second item true: round to the
    nearest integer); otherwise a power-of-two scale for flooring (second item
    false).  The tolerance only picks the scale: rounding either way is allowed
    (a value below ``1e-9`` rounds to 0, a value a hair below an integer rounds up),
    and a caller that needs a bound accounts for it (:func:`build_schedule`)."""
    total = float(np.sum(values)) if values.size else 0.0
    for k in range(MAX_DECIMALS + 1):
        s = 10.0**k
        x = values * s
        if total * s >= MAX_TOTAL:
            break
        if np.all(np.abs(x - np.round(x)) <= 1e-9 * np.maximum(1.0, np.abs(x))):
            return s, True
    s = 2.0 ** math.floor(math.log2(MAX_TOTAL / max(total, 1.0)))
    return s, False


def float_above(q: Fraction) -> float:
    """The least float at or above the rational ``q``."""
    f = float(q)
    return math.nextafter(f, math.inf) if Fraction(f) < q else f


def rounding_errors(sizes: np.ndarray, demands: np.ndarray, scale: float) -> tuple[Fraction, Fraction]:
    """``(rho, D)`` of the module docstring in exact rationals: the largest relative
    excess ``max(0, max_i d_i / (scale x_i) - 1)`` over sizes ``x_i > 0`` and the total
    deficit ``sum_i max(0, scale x_i - d_i)``.  Every float is an integer ratio ``p /
    q`` (``q`` a power of two, :meth:`float.as_integer_ratio`, exact), so both are
    integer arithmetic over the common denominator; each distinct ``(x_i, d_i)`` is
    computed once.  ``O(n log n)`` (a few microseconds a distinct pair)."""
    sn, sd = float(scale).as_integer_ratio()
    pairs, counts = np.unique(np.stack([sizes, demands.astype(np.float64)]), axis=1, return_counts=True)
    ratios = [(x.as_integer_ratio(), int(d), c) for x, d, c in zip(*pairs.tolist(), counts.tolist()) if x > 0]
    big_q = max((q for (_, q), _, _ in ratios), default=1)
    top_num, top_den = 1, 1  # the largest d_i / (scale x_i) = d sd q / (sn p), at least 1
    short = 0  # the deficit times sd * big_q
    for (p, q), d, c in ratios:
        model, true = d * sd * q, sn * p  # d_i and scale x_i, both times sd * q
        if model > true and model * top_den > top_num * true:
            top_num, top_den = model, true
        elif model < true:
            short += c * (true - model) * (big_q // q)
    return Fraction(top_num, top_den) - 1, Fraction(short, sd * big_q)


def _ancestor_counts(graph: Graph, order: np.ndarray, reverse: bool) -> np.ndarray:
    """Number of ancestors (or descendants, ``reverse``) of each node, with Python
    ints as bitsets: ``O(n m / 64)``."""
    n = graph.n
    ptr, idx = (graph.succ_ptr, graph.succ_idx) if reverse else (graph.pred_ptr, graph.pred_idx)
    sets = [0] * n
    for v in (order[::-1] if reverse else order).tolist():
        acc = 0
        for u in idx[ptr[v] : ptr[v + 1]].tolist():
            acc |= sets[u] | (1 << u)
        sets[v] = acc
    return np.array([s.bit_count() for s in sets], dtype=np.int64)


def local_bound_units(graph: Graph, out: np.ndarray, param: np.ndarray) -> np.ndarray:
    """Per node ``out(v) + param(v) + sum_{u in pred(v)} out(u)``: the memory of v's own
    step whatever the order (its inputs and output are live, its parameters loaded)."""
    inputs = np.zeros_like(out)
    np.add.at(inputs, graph.edge_dst, out[graph.edge_src])
    return out + param + inputs


def build_schedule(
    graph: Graph,
    lower_bound: float = 0.0,
    upper_bound: float | None = None,
    upper_order: np.ndarray | None = None,
) -> ScheduleModel:
    """The model of the module docstring for ``graph``.  ``lower_bound`` (a proven
    bound on the true minimum peak, in memory units) becomes the redundant row ``C >=
    ceil(scale L - D)``, with the local bound in model units; ``upper_order`` (a
    topological order, node indices) the row ``C <=`` its model peak, and
    ``upper_bound`` (a float at least the true peak of some order, as
    :attr:`mtpp.Schedule.peak` is) the row ``C <= ceil((1 + rho) scale U)``, the
    smaller of the two when both are given.  Neither row cuts off the model optimum
    (module docstring); should ``lower_bound`` not be a bound, the row is capped at
    ``C <= U`` so the model stays feasible."""
    sizes = np.concatenate([graph.size_out, graph.size_param])
    scale, nearest = integer_scale(sizes)
    rnd = np.round if nearest else np.floor
    out = rnd(graph.size_out * scale).astype(np.int64)
    param = rnd(graph.size_param * scale).astype(np.int64)
    rho, deficit = rounding_errors(sizes, np.concatenate([out, param]), scale)
    order, n = graph.topological_order, graph.n
    model = ScheduleModel(
        n=n,
        edge_src=graph.edge_src,
        edge_dst=graph.edge_dst,
        succ_ptr=graph.succ_ptr,
        succ_idx=graph.succ_idx,
        out_demand=out,
        param_demand=param,
        earliest=_ancestor_counts(graph, order, reverse=False),
        latest=n - 1 - _ancestor_counts(graph, order, reverse=True),
        scale=scale,
        exact=rho == 0 and deficit == 0,
        lower_bound=int(local_bound_units(graph, out, param).max(initial=0)),
        upper_bound=None,
        excess=float_above(rho),
        deficit=float_above(deficit),
    )
    lb, ub = model.lower_bound, None
    if lower_bound > 0 and math.isfinite(lower_bound):
        # OPT >= L, and every order's model peak is at least scale * (its true peak) - D
        lb = max(lb, math.ceil(Fraction(lower_bound) * Fraction(scale) - deficit))
    if upper_order is not None:
        ub = model.capacity(np.asarray(upper_order, dtype=np.int64))
    if upper_bound is not None and math.isfinite(upper_bound):
        # that order's model peak is at most (1 + rho) scale times its true peak, at most U
        from_float = math.ceil(Fraction(upper_bound) * Fraction(scale) * (1 + rho))
        ub = from_float if ub is None else min(ub, from_float)
    return replace(model, lower_bound=lb if ub is None else min(lb, ub), upper_bound=ub)
