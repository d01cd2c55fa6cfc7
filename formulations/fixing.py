"""Fixing ``y`` variables against a known upper bound (a sound strengthening beyond the paper).

If node ``v`` is in block ``b`` or earlier (0-based), so are all its ancestors, and
blocks ``0..b`` carry at least ``A(v) = work(v) + work(ancestors of v)``, so one of
them has work ``>= A(v) / (b + 1)``.  Hence every partition with bottleneck
``<= UB`` has ``y_vb = 0`` whenever ``A(v) > (b + 1) UB``.  Symmetrically, with
``D(v)`` the work of ``v`` and its descendants, ``v`` cannot be in block ``b`` or
later when ``D(v) > (k - b) UB``, i.e. ``y_v(b-1) = 1``.

The fixed model keeps every partition of value ``<= UB``, so its optimum equals OPT
whenever ``UB >= OPT``, and in every case ``min(UB, dual bound)`` is a valid lower
bound (if ``UB < OPT`` it is below OPT anyway).  Callers must report that minimum.
"""

from __future__ import annotations

import numpy as np

from mtpp.core.graph import Graph


def _closure_work(graph: Graph, order: np.ndarray, ptr: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """For each node, the work of itself and every node reaching it through ``ptr/idx``
    (predecessors for ancestors, successors for descendants), visiting ``order``."""
    n = graph.n
    sets = [0] * n
    ptr_l, idx_l = ptr.tolist(), idx.tolist()
    nbytes = (n + 7) // 8
    out = np.empty(n)
    for v in order.tolist():
        s = 1 << v
        for u in idx_l[ptr_l[v] : ptr_l[v + 1]]:
            s |= sets[u]
        sets[v] = s
        bits = np.unpackbits(np.frombuffer(s.to_bytes(nbytes, "little"), dtype=np.uint8), bitorder="little")[:n]
        out[v] = float(graph.work[bits.astype(bool)].sum())
    return out


def ancestor_work(graph: Graph) -> np.ndarray:
    """``A(v)``: work of ``v`` and all its ancestors.  ``O(n^2 / w)`` with bitsets."""
    return _closure_work(graph, graph.topological_order, graph.pred_ptr, graph.pred_idx)


def descendant_work(graph: Graph) -> np.ndarray:
    """``D(v)``: work of ``v`` and all its descendants."""
    return _closure_work(graph, graph.topological_order[::-1], graph.succ_ptr, graph.succ_idx)


def fixings(graph: Graph, k: int, upper_bound: float, rtol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Boolean ``(n, k)`` masks ``(zero, one)``: ``y_vb`` may be fixed to 0 / to 1 in
    every partition with bottleneck ``<= upper_bound`` (module docstring).  A margin
    of ``rtol`` keeps floating-point ties unfixed."""
    ub = upper_bound * (1 + rtol) + rtol
    anc, desc = ancestor_work(graph), descendant_work(graph)
    b = np.arange(k)
    zero = anc[:, None] > (b[None, :] + 1) * ub  # v cannot be in blocks 0..b
    zero[:, k - 1] = False  # boundary y_v(k-1) = 1 stays; infeasibility shows up through earlier rows
    one = np.zeros((graph.n, k), dtype=bool)
    # v cannot be in block b' >= b when desc(v) > (k - b) ub: then y_v(b-1) = 1
    cannot_from = desc[:, None] > (k - b[None, :]) * ub  # (n, k), index b
    one[:, : k - 1] = cannot_from[:, 1:]
    return zero, one
