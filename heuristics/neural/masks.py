"""The seven DAG-derived attention graphs of Topoformer (Section 4.1).

Topoformer gives each group of attention heads one graph derived from the DAG
``G = (V, E)`` and masks the heads to its edges (the masks ``M^j`` of Eq. 4):

* the transitive reduction ``TR(G)``;
* ``G \\ E_TR(G)``, the DAG edges that are not in the reduction;
* ``TC(G) \\ E``, the pairs ``i -> j`` of the transitive closure that are not edges;
* the same three with every edge reversed;
* the undirected graph of incomparable pairs (neither node reaches the other).

Together they partition the off-diagonal pairs ``(i, j)``, ``i != j``: a pair is
either comparable (``i`` reaches ``j`` or ``j`` reaches ``i``, never both in a DAG)
and then a TR edge, a non-TR DAG edge or a closure-only pair in one direction, or
incomparable.  :func:`relation_matrix` stores this partition as one ``(n, n)``
``uint8`` matrix of codes (:data:`TR` ... :data:`INCOMPARABLE`, :data:`SELF` on the
diagonal), from which the encoder builds its head masks with one comparison.

:func:`reachability` computes the strict descendants of every node as packed
bitsets in one sweep over the reverse topological order (each node ORs its
successors' rows): ``O(m n / 64)`` words.  An edge ``(u, v)`` is in the transitive
reduction iff ``v`` is not a descendant of any successor of ``u`` (``v`` is never a
strict descendant of itself, so the union may include ``v``'s own row), which costs
another ``O(m n / 64)``; filling the matrix is ``O(n^2)`` in compiled code.
"""

from __future__ import annotations

import numpy as np

from mtpp.core.graph import Graph
from mtpp.core.jit import njit

TR = 0  # edge i -> j of the transitive reduction
DAG_MINUS_TR = 1  # edge i -> j of the DAG that is not in the transitive reduction
TC_MINUS_DAG = 2  # i reaches j, but (i, j) is not an edge
TR_REV = 3  # edge j -> i of the transitive reduction
DAG_MINUS_TR_REV = 4  # edge j -> i of the DAG that is not in the transitive reduction
TC_MINUS_DAG_REV = 5  # j reaches i, but (j, i) is not an edge
INCOMPARABLE = 6  # neither node reaches the other
SELF = 7  # the diagonal i == j
PAD = 8  # a padded node of a batch (Topoformer.pad_batch): no relation to any node, itself included

N_RELATIONS = 7  # the seven graphs of Section 4.1 (SELF is not one of them)
RELATION_NAMES: tuple[str, ...] = (
    "transitive reduction",
    "DAG minus transitive reduction",
    "transitive closure minus DAG",
    "transitive reduction (reversed)",
    "DAG minus transitive reduction (reversed)",
    "transitive closure minus DAG (reversed)",
    "incomparable",
)

_ONE = np.uint64(1)


@njit(cache=True, inline="always")
def _has(bits: np.ndarray, row: int, v: int) -> bool:
    """Whether bit ``v`` of row ``row`` is set."""
    return ((bits[row, v >> 6] >> np.uint64(v & 63)) & _ONE) != 0


@njit(cache=True)
def reachability_kernel(succ_ptr: np.ndarray, succ_idx: np.ndarray, topo: np.ndarray) -> np.ndarray:
    """Strict descendants of every node as ``(n, ceil(n / 64))`` uint64 bitsets,
    filled in reverse topological order: ``desc(u) = U_{v in succ(u)} ({v} | desc(v))``."""
    n = topo.shape[0]
    words = (n + 63) >> 6
    desc = np.zeros((n, words), dtype=np.uint64)
    for t in range(n - 1, -1, -1):
        u = topo[t]
        for e in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ_idx[e]
            for w in range(words):
                desc[u, w] |= desc[v, w]
            desc[u, v >> 6] |= _ONE << np.uint64(v & 63)
    return desc


@njit(cache=True)
def relation_kernel(succ_ptr: np.ndarray, succ_idx: np.ndarray, desc: np.ndarray) -> np.ndarray:
    """The ``(n, n)`` relation codes from the descendant bitsets ``desc`` (module docstring)."""
    n, words = desc.shape
    rel = np.empty((n, n), dtype=np.uint8)
    rel[:, :] = INCOMPARABLE
    # comparable pairs: closure codes, both directions
    for i in range(n):
        rel[i, i] = SELF
        for j in range(n):
            if _has(desc, i, j):
                rel[i, j] = TC_MINUS_DAG
                rel[j, i] = TC_MINUS_DAG_REV
    # DAG edges overwrite them: in the reduction iff no successor of u reaches v
    union = np.empty(words, dtype=np.uint64)
    for u in range(n):
        union[:] = 0
        for e in range(succ_ptr[u], succ_ptr[u + 1]):
            s = succ_idx[e]
            for w in range(words):
                union[w] |= desc[s, w]
        for e in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ_idx[e]
            if ((union[v >> 6] >> np.uint64(v & 63)) & _ONE) != 0:
                rel[u, v] = DAG_MINUS_TR
                rel[v, u] = DAG_MINUS_TR_REV
            else:
                rel[u, v] = TR
                rel[v, u] = TR_REV
    return rel


def reachability(graph: Graph) -> np.ndarray:
    """Strict descendants of every node as packed bitsets.

    Returns an ``(n, ceil(n / 64))`` ``uint64`` array: bit ``j % 64`` of word
    ``j // 64`` in row ``i`` is set iff there is a directed path of at least one
    edge from ``i`` to ``j``.  One sweep over the reverse topological order,
    ``O(m n / 64)`` time and ``O(n^2 / 64)`` words of memory.
    """
    return reachability_kernel(graph.succ_ptr, graph.succ_idx, graph.topological_order)


def unpack_reachability(bits: np.ndarray, n: int) -> np.ndarray:
    """The ``(n, n)`` boolean matrix of the packed bitsets of :func:`reachability`."""
    as_bytes = np.ascontiguousarray(bits).astype("<u8", copy=False).view(np.uint8)
    return np.unpackbits(as_bytes, axis=1, count=n, bitorder="little").astype(bool)


def relation_matrix(graph: Graph) -> np.ndarray:
    """The seven attention graphs of Topoformer Section 4.1 as one code matrix.

    Returns an ``(n, n)`` ``uint8`` array whose entry ``[i, j]`` is exactly one of
    :data:`TR`, :data:`DAG_MINUS_TR`, :data:`TC_MINUS_DAG` (``i`` reaches ``j``: an
    edge of the reduction, another edge, or a path only), :data:`TR_REV`,
    :data:`DAG_MINUS_TR_REV`, :data:`TC_MINUS_DAG_REV` (the same with ``j`` reaching
    ``i``), :data:`INCOMPARABLE`, or :data:`SELF` on the diagonal.  The mask ``M^r``
    of Eq. 4 for relation ``r`` is ``relation_matrix(graph) == r``.

    ``O(m n / 64 + n^2)`` time in compiled code, ``n^2`` bytes of output.
    """
    desc = reachability(graph)
    return relation_kernel(graph.succ_ptr, graph.succ_idx, desc)
