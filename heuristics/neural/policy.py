"""Log-probabilities of topological orders under the priority policy (Topoformer Eq. 6, 8).

With priorities ``y`` (Eq. 7), an order ``sigma`` has probability (Eq. 6, 8)

    p(sigma) = prod_t exp(y_{sigma_t}) / sum_{i in R_t} exp(y_i),

where ``R_t`` is the schedulable set before step ``t``.  Op ``i`` is schedulable exactly
at the steps ``first_i <= t <= pos_i``: from the step after its last producer
(``first_i = 1 + max`` position of a predecessor, 0 for a source) until it is placed
(``pos_i``).  Hence

    log p(sigma) = sum_t y_{sigma_t} - sum_t logsumexp_{i : first_i <= t <= pos_i} y_i,

which :func:`order_log_probs` evaluates for a batch of orders at once, differentiably
in ``y`` (the REINFORCE gradient of Topoformer Section 4.3): from the list of
schedulable (step, op) pairs (default) or from a dense boolean ``(steps, ops)`` mask per
order.  The decoders are in :mod:`heuristics.neural.decoding`.
"""

from __future__ import annotations

import numpy as np
import torch

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph

CHUNK_ELEMENTS = 1 << 24  # mask entries built at once (orders x n x n); bounds the forward's scratch memory


def _check_orders(graph: Graph, orders: object) -> np.ndarray:
    """``orders`` as an ``(S, n)`` int64 array of permutations (a single order of shape
    ``(n,)`` becomes ``(1, n)``)."""
    n = graph.n
    o = np.asarray(orders)
    given = o.shape
    if o.ndim == 1:
        o = o[None, :]
    if o.ndim != 2 or o.shape[1] != n or o.shape[0] < 1:
        raise InvalidParameterError(f"orders has shape {given}; expected (S, {n}) with S >= 1")
    if not np.issubdtype(o.dtype, np.integer):
        raise InvalidParameterError(f"orders must hold integer node indices, got dtype {o.dtype}")
    o = np.ascontiguousarray(o, dtype=np.int64)
    bad = np.flatnonzero(np.any(np.sort(o, axis=1) != np.arange(n), axis=1))
    if bad.size:
        raise InvalidParameterError(f"orders[{bad[0]}] is not a permutation of the node indices 0..{n - 1}")
    return o


def availability(graph: Graph, orders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each order (row of ``orders``, ``(S, n)``; or one order ``(n,)``) and node
    ``i``: ``first[s, i]``, the first step at which ``i`` is schedulable (one after its
    last predecessor's position, 0 for a source), and ``pos[s, i]``, the step at which it
    is placed.  ``i`` is in the schedulable set of Eq. 8 at the steps ``first <= t <=
    pos``.  Raises :class:`~mtpp.core.errors.InvalidParameterError` for a row that is not a
    topological order.  ``O(S (n + m))``, vectorised."""
    return _first_pos(graph, _check_orders(graph, orders))


def _first_pos(graph: Graph, o: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`availability` of checked permutations ``o`` (still checks topology)."""
    s_count, n = o.shape
    pos = np.empty_like(o)
    pos[np.arange(s_count)[:, None], o] = np.arange(n)
    first = np.zeros_like(o)
    has_pred = np.flatnonzero(np.diff(graph.pred_ptr) > 0)
    if has_pred.size:
        after = pos[:, graph.pred_idx] + 1  # (S, m), grouped by consumer (pred CSR)
        first[:, has_pred] = np.maximum.reduceat(after, graph.pred_ptr[has_pred], axis=1)
    late = np.argwhere(first > pos)
    if late.size:
        s, i = (int(x) for x in late[0])
        raise InvalidParameterError(
            f"orders[{s}] is not a topological order: node {i} is placed at step {pos[s, i]} "
            f"before one of its producers"
        )
    return first, pos


def order_log_probs(
    priorities: torch.Tensor,
    orders: np.ndarray,
    graph: Graph,
    method: str = "sparse",
    chunk_elements: int = CHUNK_ELEMENTS,
) -> torch.Tensor:
    """``log p(order)`` under Topoformer Eq. 6 and 8 for each row of ``orders``
    (``(S, n)`` topological orders, or one order ``(n,)``), as an ``(S,)`` tensor of the
    priorities' dtype and device, differentiable w.r.t. ``priorities`` (shape ``(n,)``).

    ``log p = sum_t y[order_t] - sum_t logsumexp_{i: first_i <= t <= pos_i} y_i`` with
    ``first, pos`` from :func:`availability`.  Two vectorised evaluations (no Python loop
    over steps), equal up to rounding:

    * ``method="dense"``: the ``(orders, steps, ops)`` boolean mask ``first_i <= t <=
      pos_i`` by numpy broadcasting, ``chunk_elements`` entries at a time (at least one
      order per chunk), and a masked ``logsumexp``.  Time and memory ``O(S n^2)``:
      autograd keeps the masked ``(S, n, n)`` logits for the backward pass (``S n^2``
      floats: 16 orders of 1000 ops take 128 MB in float64).
    * ``method="sparse"`` (default): only the pairs ``(t, i)`` with ``i`` schedulable at
      ``t``, listed with ``np.repeat`` from the intervals, and a segmented log-sum-exp
      (``scatter_reduce`` max as the shift, ``index_add_`` of the exponentials).  Time
      and memory ``O(S (n + sum_t |R_t|))``, ``|R_t|`` the schedulable set's size: the
      same as the dense mask in the worst case (no edges), far less on graphs whose
      ready sets stay small.
    """
    n = graph.n
    if not isinstance(priorities, torch.Tensor):
        raise InvalidParameterError(f"priorities must be a torch.Tensor, got {type(priorities).__name__}")
    if tuple(priorities.shape) != (n,):
        raise InvalidParameterError(f"priorities has shape {tuple(priorities.shape)}; expected ({n},), one per node")
    if not priorities.is_floating_point():
        raise InvalidParameterError(f"priorities must be a floating-point tensor, got {priorities.dtype}")
    if not bool(torch.isfinite(priorities).all()):
        raise InvalidParameterError("priorities must be finite")
    if method not in ("sparse", "dense"):
        raise InvalidParameterError(f"method must be 'sparse' or 'dense', got {method!r}")
    if isinstance(chunk_elements, bool) or not isinstance(chunk_elements, (int, np.integer)) or chunk_elements < 1:
        raise InvalidParameterError(f"chunk_elements must be an integer >= 1, got {chunk_elements!r}")
    o = _check_orders(graph, orders)
    first, pos = _first_pos(graph, o)
    y = priorities
    chosen = y[torch.from_numpy(o).to(y.device)].sum(dim=1)  # (S,)
    if method == "dense":
        return chosen - _dense_normalisers(y, first, pos, int(chunk_elements))
    return chosen - _sparse_normalisers(y, first, pos)


def _dense_normalisers(y: torch.Tensor, first: np.ndarray, pos: np.ndarray, chunk_elements: int) -> torch.Tensor:
    """``sum_t logsumexp`` over the schedulable sets, per order, from dense masks."""
    n = first.shape[1]
    steps = np.arange(n)[None, :, None]
    per = max(1, chunk_elements // (n * n))
    neg_inf = torch.tensor(-torch.inf, dtype=y.dtype, device=y.device)
    parts = []
    for a in range(0, first.shape[0], per):
        f, p = first[a : a + per, None, :], pos[a : a + per, None, :]
        mask = torch.from_numpy((f <= steps) & (steps <= p)).to(y.device)  # (s, t, i)
        parts.append(torch.logsumexp(torch.where(mask, y, neg_inf), dim=2).sum(dim=1))
    return torch.cat(parts)


def _pairs(first: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (order * n + op, order * n + step) index of every triple (order, step, op)
    with ``op`` schedulable at ``step`` (``first <= step <= pos``), listed with
    ``np.repeat`` from the intervals."""
    s_count, n = first.shape
    length = (pos - first + 1).reshape(-1)  # steps each (order, op) is schedulable, >= 1
    start = np.cumsum(length) - length
    offset = np.arange(int(length.sum())) - np.repeat(start, length)
    step = np.repeat(first.reshape(-1), length) + offset
    flat = np.repeat(np.arange(s_count * n), length)  # order * n + op
    return flat, (flat // n) * n + step


def _segment_logsumexp(vals: torch.Tensor, segment: torch.Tensor, segments: int) -> torch.Tensor:
    """``logsumexp`` of ``vals`` per segment id (``scatter_reduce`` max as the shift,
    ``index_add`` of the exponentials); ``-inf`` for an empty segment."""
    shift = torch.full((segments,), -torch.inf, dtype=vals.dtype, device=vals.device)
    shift = shift.scatter_reduce(0, segment, vals.detach(), reduce="amax")
    safe = torch.where(torch.isfinite(shift), shift, 0.0)
    total = torch.zeros(segments, dtype=vals.dtype, device=vals.device)
    total = total.index_add(0, segment, torch.exp(vals - safe[segment]))
    return torch.log(total) + safe


def _sparse_normalisers(y: torch.Tensor, first: np.ndarray, pos: np.ndarray) -> torch.Tensor:
    """``sum_t logsumexp`` over the schedulable sets, per order, from the list of
    (order, step, op) availability triples."""
    s_count, n = first.shape
    flat, segment = _pairs(first, pos)
    vals = y[torch.from_numpy(flat % n).to(y.device)]
    lse = _segment_logsumexp(vals, torch.from_numpy(segment).to(y.device), s_count * n)  # every step has a pick
    return lse.reshape(s_count, n).sum(dim=1)


def schedulable_pairs(graph: Graph, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ops, steps)``: every op of one topological ``order`` with each step at which it
    is schedulable (the sets ``R_t`` of Eq. 8), for :func:`batch_log_probs`; compute it
    once per (graph, teacher order) and reuse it every epoch."""
    return _pairs(*availability(graph, order))


def block_picks(order: np.ndarray, blocks: np.ndarray, ops: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """For the :func:`schedulable_pairs` ``(ops, steps)`` of one ``order``: which pairs'
    op lies in the block (``blocks[v]``, a label per op) of the op the order places at
    that step.  With a block per op that is the order's own op alone."""
    order = np.asarray(order, dtype=np.int64)
    blocks = np.asarray(blocks)
    return blocks[ops] == blocks[order[steps]]


def batch_log_probs(
    y: torch.Tensor,
    pairs: list[tuple[torch.Tensor, torch.Tensor]],
    sizes: list[int],
    picks: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """``log p(order_b | G_b)`` (Eq. 6, 8) for a padded batch: ``y`` ``(B, N)`` the
    priorities (0 at padded nodes), ``pairs[b]`` :func:`schedulable_pairs` of graph
    ``b``'s order (as tensors on ``y``'s device) and ``sizes[b]`` its op count.  One
    segmented log-sum-exp for the whole batch; equals :func:`order_log_probs` graph by
    graph up to round-off.  The chosen ops' term ``sum_t y[order_t]`` is the sum of
    every real node's priority, since an order is a permutation.

    ``picks[b]`` (optional, boolean over ``pairs[b]``, :func:`block_picks`) widens each
    step's pick to a set: the step's term becomes ``log sum_{i in R_t, picked} p_t(i)``,
    the probability that the step places some op of the set (a log-sum-exp over the
    picked pairs in place of ``y[order_t]``).  With the ready ops of the teacher's
    current block, the sum over steps is the log-likelihood, along the teacher's
    steps, of listing its blocks one after another in any order within each block."""
    if y.dim() != 2 or len(pairs) != y.shape[0] or len(sizes) != y.shape[0]:
        raise InvalidParameterError(f"y has shape {tuple(y.shape)}; expected (B, N) with B = {len(pairs)} orders")
    batch, width = y.shape
    offsets = [b * width for b in range(batch)]
    ops = torch.cat([p[0] + o for p, o in zip(pairs, offsets)])
    steps = torch.cat([p[1] + o for p, o in zip(pairs, offsets)])
    vals = y.reshape(-1)[ops]
    lse = _segment_logsumexp(vals, steps, batch * width).reshape(batch, width)
    n = torch.as_tensor(sizes, device=y.device)
    real = torch.arange(width, device=y.device) < n[:, None]
    if picks is None:
        chosen = torch.where(real, y, 0.0).sum(dim=1)
    else:
        mask = torch.cat(list(picks))
        picked = _segment_logsumexp(vals[mask], steps[mask], batch * width).reshape(batch, width)
        chosen = torch.where(real, picked, 0.0).sum(dim=1)
    return chosen - torch.where(real, lse, 0.0).sum(dim=1)
