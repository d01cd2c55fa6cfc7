"""The min-cut live bound: an order-independent lower bound on the minimum peak
memory (Topoformer Eq. 1-3, 15) that dominates the forced-live bound.

Claim.  For every op ``v``, in every topological order, the ops run before ``v``
form a down-closed set ``S`` (an ideal) with ``anc(v) <= S`` and ``S cap desc*(v) =
{}``, and while ``v`` runs memory holds ``size_out(v) + size_param(v)`` plus every
tensor of ``S`` that still has a consumer outside ``S`` (Eq. 3: it is freed only
after its last consumer).  Hence

    OPT >= max_v ( size_out(v) + size_param(v) + C(v) ),
    C(v) = min { I(S) : S ideal, anc(v) <= S, S cap desc*(v) = {} },
    I(S) = sum of size_out(u) over u in S with a consumer outside S.

``C(v)`` is a minimum cut (a closure problem): nodes ``x_u`` (``u`` in ``S``) and
``c_u`` (every consumer of ``u`` is in ``S``), source side = 1; infinite arcs
``z -> u`` per edge ``(u, z)`` (``S`` is down-closed), ``c_u -> z`` per consumer
``z`` (``c_u`` only if ``z`` is in ``S``), source ``-> u`` for ``u`` in ``anc(v)``,
``z -> `` sink for ``z`` in ``desc*(v)``; the arc ``x_u -> c_u`` of capacity
``size_out(u)`` is cut exactly when ``u`` is in ``S`` and some consumer is not.  A
minimum cut sets every ``c_u`` it may, so its value is ``C(v)``.  The forced-live
tensors (ancestors of ``v`` feeding ``desc*(v)``) are cut in every feasible ``S``, so
this bound is never below :func:`mtpp.bounds.peak_memory.forced_live_bound`.

Capacities are integers for the max-flow code: each ``size_out`` is multiplied by a
power of two ``2^k`` (the largest that keeps the float total at most ``2^30``, with
``|k| <= 1000``) and rounded down, and the flow is divided by ``2^k`` again.
Rounding down lowers every cut (tensors below ``2^-k`` become 0: weaker, still
valid), and both scalings are exact in floating point (a power of two; a product
too small to be a normal float is below 1 and floors to 0 anyway, and the flow, an
integer, divided by ``2^k <= 2^1000`` stays normal), so ``flow / 2^k`` is at most
``C(v)`` (exact for integral sizes up to the scale).  Infinite arcs get ``2^30``:
should the finite capacities (whose true total may exceed ``2^30`` by the float
sum's rounding) make one of them worth cutting, that cut is still no more than the
true one, and the flow stays below ``2^31`` (``int32``).  The value
``fl(fl(size_out(v) + size_param(v)) + flow / 2^k)`` is a sum of three non-negative
terms and the forced-live values sums of at most ``n + 1``, so the maximum is
lowered by a relative ``gamma(n + 2)`` (:func:`proven_bound`; nothing when the
sizes sum exactly, :func:`mtpp.core.memory.sums_are_exact`).

Cost: one max flow (scipy, Dinic) on ``2n + 2`` nodes and ``2m + n + |anc| + |desc|``
arcs per op; ops whose cut cannot beat the best value so far (an upper bound on
``C(v)`` is ``I(anc(v))``) are skipped, and ops are visited by decreasing
forced-live memory so the best value rises early.  Graphs above ``MAX_NODES`` ops
get the forced-live values (the matrices would not fit).
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_flow

from mtpp.bounds.peak_memory import ancestor_bits, masked_sums, needed_bits
from mtpp.core.graph import Graph
from mtpp.core.memory import lower_sum_bound

MAX_NODES = 4000  # n x max(n, m) boolean matrices; larger graphs get the forced-live values
CAPACITY_BITS = 30  # the scaled sizes sum to at most 2^30; arcs that must not be cut get INFINITE
INFINITE = 2**30


def bits_to_bool(bits: np.ndarray, n: int) -> np.ndarray:
    """An ``(rows, n)`` boolean matrix from rows of 64-bit bitsets."""
    return np.unpackbits(np.ascontiguousarray(bits).view(np.uint8), axis=1, bitorder="little")[:, :n].astype(bool)


def cut_memory_bytes(n: int, m: int, every_op: bool = False) -> float:
    """Bytes the cuts of :func:`cut_live_memory` hold on ``n`` ops and ``m`` edges:
    boolean ``n x n`` ancestor and descendant matrices, the ``n x m`` leaving-edge
    matrix, the ``n x n`` live-ancestor matrix as floats and, with ``every_op``, the
    ``n x n`` float residuals."""
    return float(n) * m + 11.0 * n * n + (8.0 * n * n if every_op else 0.0)


def cut_live_memory(
    graph: Graph, time_limit: float | None = None, every_op: bool = False, max_bytes: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per op ``v``, a lower bound on the memory of ``v``'s step in every order: the
    min-cut value ``size_out(v) + size_param(v) + C(v)`` of the module docstring where
    it was computed, else the forced-live memory (also valid).  Returns the values
    and the mask of ops whose cut was computed: unless ``every_op``, ops that cannot
    beat the maximum are skipped; ``time_limit`` seconds stop the cuts early (the
    values stay valid).  With ``every_op``, also the residuals ``R[v, u] =
    size_out(u) - flow(x_u -> c_u)`` of a maximum flow for ``v`` (rows of skipped ops,
    and of ops whose rounded-down cut fell below their forced-live value, are zero;
    an ``(0, 0)`` array without ``every_op``): for a scheduled set ``S``, each ``u`` in
    ``S`` with a consumer in ``desc*(v)`` adds the path source ``-> x_u -> c_u ->``
    that consumer ``->`` sink, whose only finite arc is ``u``'s own, so

        C(v | S) >= C(v) + sum_{u in S, u feeds desc*(v)} R[v, u],

    where ``C(v | S)`` also forces ``S`` to the source side (the search's
    relative bound, :mod:`heuristics.peak_memory.best_first`).  The cuts are skipped
    (forced-live values) on graphs above ``MAX_NODES`` ops or whose matrices
    (:func:`cut_memory_bytes`) would take more than ``max_bytes``; the residuals are
    then ``(0, 0)`` (no relative terms)."""
    t0 = time.perf_counter()
    g = graph
    n = g.n
    anc_bits = ancestor_bits(g.topological_order, g.pred_ptr, g.pred_idx)
    reach = needed_bits(g.topological_order, g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx)
    own = g.size_out + g.size_param
    values = own + masked_sums(anc_bits & reach, g.size_out)  # forced-live: valid everywhere
    done = np.zeros(n, dtype=bool)
    total = float(g.size_out.sum())
    too_big = max_bytes is not None and cut_memory_bytes(n, g.m, every_op) > max_bytes
    residual = np.zeros((n, n) if every_op and n <= MAX_NODES and not too_big else (0, 0))
    if g.m == 0 or total <= 0 or n > MAX_NODES or too_big:
        return values, done, residual
    anc = bits_to_bool(anc_bits, n)
    desc = anc.T.copy()
    np.fill_diagonal(desc, True)
    # upper bound on C(v): I(anc(v)), the tensors of anc(v) with a consumer outside it
    src, dst = g.edge_src, g.edge_dst
    leaving = anc[:, src] & ~anc[:, dst]  # (v, edge): the edge leaves anc(v)
    starts = g.succ_ptr[:-1][np.diff(g.succ_ptr) > 0]
    producers = src[starts]
    live_anc = np.zeros((n, n), dtype=bool)
    live_anc[:, producers] = np.logical_or.reduceat(leaving, starts, axis=1)
    upper = own + live_anc.astype(np.float64) @ g.size_out
    del leaving, live_anc
    mantissa, exponent = math.frexp(total)  # total = mantissa 2^exponent, 0.5 <= mantissa < 1
    ceil_log2 = exponent - 1 if mantissa == 0.5 else exponent
    scale = math.ldexp(1.0, min(max(CAPACITY_BITS - ceil_log2, -1000), 1000))
    cap_out = np.floor(g.size_out * scale)
    big = np.full(src.size, INFINITE)
    base_rows = np.concatenate([dst, np.arange(n), n + src])
    base_cols = np.concatenate([src, n + np.arange(n), dst])
    base_caps = np.concatenate([big, cap_out, big])
    source, sink = 2 * n, 2 * n + 1
    idx = np.arange(n)
    best = float(values.max())
    for v in np.argsort(-values, kind="stable").tolist():
        if upper[v] <= (values[v] if every_op else best):
            continue
        if time_limit is not None and time.perf_counter() - t0 >= time_limit:
            break
        a, d = np.flatnonzero(anc[v]), np.flatnonzero(desc[v])
        rows = np.concatenate([base_rows, np.full(a.size, source), d])
        cols = np.concatenate([base_cols, a, np.full(d.size, sink)])
        caps = np.concatenate([base_caps, np.full(a.size + d.size, INFINITE)]).astype(np.int32)
        net = sp.csr_matrix((caps, (rows, cols)), shape=(2 * n + 2, 2 * n + 2))
        res = maximum_flow(net, source, sink)
        cut = own[v] + res.flow_value / scale
        done[v] = True
        if every_op and cut >= values[v]:  # residuals extend this flow, not a larger forced-live value
            through = np.asarray(res.flow.tocsr()[idx, n + idx]).ravel()
            residual[v] = g.size_out - through / scale
        values[v] = max(values[v], cut)
        best = max(best, float(values[v]))
    return values, done, residual


def proven_bound(graph: Graph, values: np.ndarray) -> float:
    """The largest of the ``values`` of :func:`cut_live_memory`, lowered for their
    rounding (module docstring): a proven lower bound on the minimum peak."""
    return lower_sum_bound(graph, float(values.max()), graph.n + 2) if values.size else 0.0


def cut_live_bound(graph: Graph, time_limit: float | None = None) -> float:
    """The min-cut live lower bound on the minimum peak (module docstring)."""
    return proven_bound(graph, cut_live_memory(graph, time_limit)[0])
