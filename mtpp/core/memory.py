"""Peak memory of a topological order: the evaluator every schedule is scored by.

The objective is Eq. (1)-(3) of the Topoformer paper with parameters as in its
Eq. (15) (``papers/topoformer-neural-topological-ordering.txt``): for an order
``sigma`` of the ops,

    peak(sigma) = max_t M_t,    M_t = I_{t-1} + size_out(sigma_t) + size_param(sigma_t),

where ``I_t`` is the memory held after step ``t``.  Concretely, in mtpp:

* op ``v``'s output tensor is live from the step ``v`` runs until the step its last
  consumer runs, both inclusive (so while ``v`` runs, its inputs and its output are
  in memory); a tensor with no consumer (a sink's output) is live during its own
  step only;
* ``size_param(v)`` is in memory only during ``v``'s own step;
* ``M_t`` is the sum of every tensor live at step ``t`` plus ``size_param(sigma_t)``.

This is exactly Eq. (2)-(3): ``I_t`` frees the tensors whose consumers have all run
(``S_t``), sinks included, after ``M_t`` is taken.  It reproduces the optimum 36790
measured on ``shared/graphs/layered`` (100 nodes), see ``tests/mtpp/test_scheduling.py``.

A simple bound holds for every order: at ``v``'s step its inputs, output and
parameters are all in memory, so ``peak >= max_v (size_out(v) + size_param(v) +
sum_{u in pred(v)} size_out(u))`` (:func:`local_lower_bound`);
:func:`mtpp.bounds.peak_memory.forced_live_bound` adds every ancestor tensor that some
descendant of ``v`` still needs, which is much stronger on layered graphs.

Rounding.  "True" values are exact real arithmetic on the float sizes.
The local bound is a maximum of float sums of non-negative sizes, lowered by their
relative error (:func:`lower_sum_bound`); the evaluator adds and subtracts tensors,
and :func:`profile_error` bounds its error against the peak, the largest magnitude
it touches.  Both are exact, and nothing is lowered, when every size lies on one
power-of-two grid fine enough for the sums (:func:`sums_are_exact`: integer sizes,
say).

The evaluator here (:func:`memory_profile`, :func:`peak_memory`) is vectorised numpy,
``O(n + m)``, and shares no code with the searches (:mod:`heuristics.peak_memory.orders`,
:mod:`heuristics.peak_memory.state_dp`, :mod:`formulations.cpsat_schedule`); every order a search
returns is re-scored here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.rounding import UNIT, gamma, lower_by

REL_TOL = 1e-9  # relative tolerance of an "optimal" schedule (mtpp.scheduling); never absolute


# ---------------------------------------------------------------------- evaluator
def check_order(graph: Graph, order: Any) -> np.ndarray:
    """``order`` (node indices ``0..n-1``, or node ids where those are not integers, as
    :attr:`mtpp.Schedule.order` lists them) as an int64 array of indices, after
    checking that it is a topological order of ``graph``: :class:`InvalidParameterError`
    names a missing, repeated or unknown node, or the first edge it runs backwards."""
    try:
        arr = np.asarray(order)
    except Exception as exc:  # pragma: no cover - numpy accepts nearly anything
        raise InvalidParameterError(f"order is not an array of node indices: {exc}") from None
    if arr.ndim == 1 and arr.size and not np.issubdtype(arr.dtype, np.integer):
        arr = np.array([graph.index(v) for v in arr.tolist()], dtype=np.int64)  # ids; unknown ones raise
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise InvalidParameterError(f"order must be a 1-D sequence of node indices, got shape {arr.shape} {arr.dtype}")
    n = graph.n
    if arr.size != n:
        raise InvalidParameterError(f"order has {arr.size} entries for {n} nodes")
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >= n))
    if bad.size:
        raise InvalidParameterError(f"order entry {int(arr[bad[0]])} is not a node index 0..{n - 1}")
    seen = np.bincount(arr, minlength=n)
    if np.any(seen != 1):
        twice = int(np.flatnonzero(seen > 1)[0])
        raise InvalidParameterError(f"order lists node {graph.ids[twice]!r} {int(seen[twice])} times")
    pos = np.empty(n, dtype=np.int64)
    pos[arr] = np.arange(n)
    back = np.flatnonzero(pos[graph.edge_src] > pos[graph.edge_dst])
    if back.size:
        u, v = int(graph.edge_src[back[0]]), int(graph.edge_dst[back[0]])
        raise InvalidParameterError(
            f"order is not topological: node {graph.ids[v]!r} (position {pos[v]}) runs before its "
            f"producer {graph.ids[u]!r} (position {pos[u]})"
        )
    return arr


def memory_profile(graph: Graph, order: Any, *, check: bool = True) -> np.ndarray:
    """``M_t`` for every step ``t`` of ``order`` (Eq. 2, 3, 15; see the module
    docstring), ``O(n + m)``: each tensor adds ``size_out`` on the steps from its
    producer to its last consumer (a difference array and a cumulative sum), then each
    step adds its op's ``size_param``."""
    o = check_order(graph, order) if check else np.asarray(order, dtype=np.int64)
    n = graph.n
    pos = np.empty(n, dtype=np.int64)
    pos[o] = np.arange(n)
    last = pos.copy()
    np.maximum.at(last, graph.edge_src, pos[graph.edge_dst])
    delta = np.zeros(n + 1)
    np.add.at(delta, pos, graph.size_out)
    np.add.at(delta, last + 1, -graph.size_out)
    return np.cumsum(delta)[:n] + graph.size_param[o]


def peak_memory(graph: Graph, order: Any, *, check: bool = True) -> float:
    """Peak memory of a topological ``order`` (node indices, or string node ids as in
    :attr:`mtpp.Schedule.order`): Eq. (1), ``max_t M_t``."""
    return float(memory_profile(graph, order, check=check).max())


def block_peak(graph: Graph, ops: Any) -> float:
    """Activation peak ``peak(S)`` of a pipeline block (Eq. 2 of the MTPP paper) whose
    ops ``ops`` (node indices, distinct, in the order they run) form ``S``: an input
    tensor (producer outside ``S``, a consumer in ``S``) is held from the block's first
    step to its last consumer in ``S``; a tensor produced in ``S`` is live from its
    producer to its last consumer in ``S``, or to the block's last step if it has a
    consumer outside ``S``; a tensor without consumers lives during its own step.
    Parameters are not included (Eq. 2 counts ``size_param(S)`` separately).
    ``O(|S| + edges at S)``; independent of :mod:`heuristics.partition.segment_peaks`."""
    o = np.asarray(ops, dtype=np.int64).reshape(-1)
    n, s = graph.n, o.size
    if s == 0:
        return 0.0
    if np.any((o < 0) | (o >= n)) or np.unique(o).size != s:
        raise InvalidParameterError("block ops must be distinct node indices 0..n-1")
    step = np.full(n, -1, dtype=np.int64)
    step[o] = np.arange(s)
    src, dst = graph.edge_src, graph.edge_dst
    inside = (step[src] >= 0) & (step[dst] >= 0)
    if np.any(step[src[inside]] > step[dst[inside]]):
        raise InvalidParameterError("block ops are not in topological order")
    delta = np.zeros(s + 1)
    # tensors produced in S: from their step to the last consumer in S (or the end)
    last = step[o].copy()
    e_in = inside & (step[src] >= 0)
    np.maximum.at(last, step[src[e_in]], step[dst[e_in]])
    leaves = np.zeros(s, dtype=bool)
    out_edges = (step[src] >= 0) & (step[dst] < 0)
    leaves[step[src[out_edges]]] = True
    last[leaves] = s - 1
    size = graph.size_out[o]
    np.add.at(delta, np.arange(s), size)
    np.add.at(delta, last + 1, -size)
    # inputs from outside: from step 0 to their last consumer in S
    e_inp = (step[src] < 0) & (step[dst] >= 0)
    producers = src[e_inp]
    if producers.size:
        until = np.full(n, -1, dtype=np.int64)
        np.maximum.at(until, producers, step[dst[e_inp]])
        u = np.unique(producers)
        delta[0] += graph.size_out[u].sum()
        np.add.at(delta, until[u] + 1, -graph.size_out[u])
    return float(np.cumsum(delta)[:s].max())


def local_lower_bound(graph: Graph) -> float:
    """``max_v (size_out(v) + size_param(v) + sum_{u in pred(v)} size_out(u))``: the
    memory of ``v``'s own step in any order, so a lower bound on every peak.  Each
    term is a float sum of at most ``n + 1`` non-negative sizes, so it is lowered by
    :func:`lower_sum_bound` (exact when :func:`sums_are_exact`)."""
    inputs = np.zeros(graph.n)
    np.add.at(inputs, graph.edge_dst, graph.size_out[graph.edge_src])
    return lower_sum_bound(graph, float((graph.size_out + graph.size_param + inputs).max()), graph.n + 1)


# ---------------------------------------------------------------------- rounding
def exact_on_grid(values: np.ndarray, magnitude: float) -> bool:
    """Whether every float sum and difference of ``values`` whose true partial results
    stay within ``magnitude`` is exact: true when every value is an integer multiple
    of one power of two ``2^k`` and ``magnitude <= 2^52 2^k``.  Every such partial
    result is then a multiple of ``2^k`` of magnitude below ``2^53 2^k``, a float,
    which rounding to nearest returns unchanged.  ``O(len(values))``."""
    x = np.abs(np.asarray(values, dtype=np.float64).ravel())
    x = x[x > 0]
    if x.size == 0:
        return True
    if not np.all(np.isfinite(x)):
        return False
    mantissa, exponent = np.frexp(x)
    digits = (mantissa * 2.0**53).astype(np.int64)  # x = digits 2^(exponent - 53), digits < 2^53
    lowest = np.frexp((digits & -digits).astype(np.float64))[1] - 1  # trailing zero bits of digits
    k = int((exponent - 53 + lowest).min())
    return magnitude <= math.ldexp(2.0**52, k)


def sums_are_exact(graph: Graph) -> bool:
    """Whether every float sum and difference of the graph's sizes is exact as long as
    its true partial results stay within ``4 T``, ``T`` the sum of all ``size_out``
    and ``size_param`` (:func:`exact_on_grid`; integer sizes below ``2^50`` in all,
    say).  ``fl(T) (1 + 2^-20)`` stands for ``T``: a float sum of ``2n`` non-negative
    terms is within ``gamma(2n)`` of it."""
    x = np.concatenate([graph.size_out, graph.size_param])
    return exact_on_grid(x, 4.0 * float(x.sum()) * (1.0 + 2.0**-20))


def lower_sum_bound(graph: Graph, value: float, terms: int) -> float:
    """``value``, a float sum of at most ``terms`` non-negative sizes (or a maximum of
    such sums) that bounds the minimum peak in exact arithmetic, lowered to a proven
    bound: unchanged when :func:`sums_are_exact`, else lowered by a relative
    ``gamma(terms)`` (Higham Eq. 4.4: such a sum errs by at most ``gamma(terms - 1)``
    relative to itself, no cancellation), :func:`mtpp.core.rounding.lower_by`."""
    if sums_are_exact(graph):
        return value
    return lower_by(value, gamma(terms), 0.0)


def profile_error(graph: Graph, peak: float) -> float:
    """An upper bound on ``|peak - true peak|`` for ``peak`` computed by
    :func:`peak_memory`: 0 when :func:`sums_are_exact`, else ``1.01 (3n + 2) u peak``.
    Proof: the difference array takes one add per tensor (into 0, exact) and at most
    one subtract per tensor, the cumulative sum one add per step and each step one
    add of its parameters, so every ``M_t`` passes through at most ``2n + 1``
    roundings; each partial result is a live memory or a sum of tensors freed
    together, both at most the true peak, so each rounding errs by at most ``u`` times
    the peak (to first order; the ``1.01`` and the ``3n`` absorb the rest)."""
    if sums_are_exact(graph):
        return 0.0
    return 1.01 * (3 * graph.n + 2) * UNIT * peak
