"""Order-independent lower bounds on the minimum peak memory (Topoformer Eq. 1-3, 15).

*Forced-live bound.*  While op ``v`` runs, in **every** topological order, memory
holds ``v``'s output and parameters and the output of every ancestor ``u`` of ``v``
that has a consumer ``w`` in ``desc*(v)`` (``v`` or a descendant of ``v``): ``u`` ran
before ``v`` and ``w`` runs at or after ``v``, so ``u``'s tensor is live at ``v``'s
step.  Hence

    peak >= max_v ( size_out(v) + size_param(v) + sum_{u in anc(v) cap P(v)} size_out(u) ),
    P(v) = union_{w in desc*(v)} pred(w) = pred(v) cup union_{w in succ(v)} P(w).

The inputs of ``v`` are in ``anc(v) cap P(v)``, so this is never below the local
bound ``max_v (size_out(v) + size_param(v) + sum_{u in pred(v)} size_out(u))`` of
:func:`mtpp.core.memory.local_lower_bound`; on layered graphs with skip connections it
is much stronger (on ``shared/graphs/layered``: 225220 against 49399 at 500 nodes).
``anc`` and ``P`` are bitsets: ``O(m n / 64)`` time and ``2 n^2 / 8`` bytes, so graphs
above ``MAX_NODES`` get the local bound instead.
"""

from __future__ import annotations

import numpy as np

from mtpp.core.graph import Graph
from mtpp.core.jit import njit
from mtpp.core.memory import local_lower_bound, lower_sum_bound

MAX_NODES = 30_000  # 2 n^2 / 8 bytes of bitsets: 225 MB at this size
_ONE = np.uint64(1)


@njit(cache=True)
def ancestor_bits(topo, pred_ptr, pred_idx):
    """Row ``v``: the bitset of ``anc(v)``, ``O(m n / 64)``."""
    n = topo.shape[0]
    n_words = (n + 63) // 64
    anc = np.zeros((n, n_words), dtype=np.uint64)
    for i in range(n):
        v = topo[i]
        for e in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[e]
            for w in range(n_words):
                anc[v, w] |= anc[u, w]
            anc[v, u >> 6] |= _ONE << np.uint64(u & 63)
    return anc


@njit(cache=True)
def needed_bits(topo, succ_ptr, succ_idx, pred_ptr, pred_idx):
    """Row ``v``: the bitset of ``P(v) = union_{w in desc*(v)} pred(w)``, the tensors
    some op at or after ``v`` consumes, ``O(m n / 64)``."""
    n = topo.shape[0]
    n_words = (n + 63) // 64
    reach = np.zeros((n, n_words), dtype=np.uint64)
    for i in range(n - 1, -1, -1):
        v = topo[i]
        for e in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[e]
            reach[v, u >> 6] |= _ONE << np.uint64(u & 63)
        for e in range(succ_ptr[v], succ_ptr[v + 1]):
            z = succ_idx[e]
            for w in range(n_words):
                reach[v, w] |= reach[z, w]
    return reach


@njit(cache=True)
def masked_sums(bits, weight):
    """Row ``v``: the sum of ``weight`` over the bits set in ``bits[v]``."""
    n, n_words = bits.shape
    out = np.zeros(n)
    for v in range(n):
        total = 0.0
        for w in range(n_words):
            x = bits[v, w]
            b = 0
            while x != 0:
                if x & _ONE:
                    total += weight[w * 64 + b]
                x >>= _ONE
                b += 1
        out[v] = total
    return out


def forced_live_memory(graph: Graph) -> np.ndarray:
    """Per node ``v``: memory that is live at ``v``'s step in every order."""
    g = graph
    anc = ancestor_bits(g.topological_order, g.pred_ptr, g.pred_idx)
    reach = needed_bits(g.topological_order, g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx)
    return g.size_out + g.size_param + masked_sums(anc & reach, g.size_out)


def forced_live_bound(graph: Graph) -> float:
    """The forced-live lower bound on the minimum peak (module docstring); the local
    bound for graphs above ``MAX_NODES`` nodes.  Each value of
    :func:`forced_live_memory` is a float sum of at most ``n + 1`` non-negative sizes
    (distinct ancestors, the op's output and parameters), so the maximum is lowered
    by :func:`mtpp.core.memory.lower_sum_bound` (a relative ``gamma(n + 1)``; nothing when
    the sizes sum exactly)."""
    if graph.n > MAX_NODES:
        return local_lower_bound(graph)
    return lower_sum_bound(graph, float(forced_live_memory(graph).max()), graph.n + 1)
