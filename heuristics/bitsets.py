"""Node sets as rows of ``uint64`` words, shared by the numba kernels that walk down-sets
(the ideal lattice of :mod:`heuristics.partition.ideals`, the peak-memory DP and search of
:mod:`heuristics.peak_memory.state_dp` and :mod:`heuristics.peak_memory.best_first`, the neural beam decoder).

Row ``r`` of a ``(rows, ceil(n / 64))`` array holds a set of node indices: node ``v``
is bit ``v & 63`` of word ``v >> 6``.  The graph is given as CSR successor and
predecessor lists (``succ_ptr``, ``succ_idx``, ``pred_ptr``, ``pred_idx``).
"""

from __future__ import annotations

import numpy as np

from mtpp.core.jit import njit

ONE = np.uint64(1)
DEBRUIJN = np.uint64(0x022FDD63CC95386D)


def _ctz_table() -> np.ndarray:
    table = np.empty(64, dtype=np.int64)
    for i in range(64):
        table[((1 << i) * 0x022FDD63CC95386D & 0xFFFFFFFFFFFFFFFF) >> 58] = i
    return table


CTZ = _ctz_table()
"""Index of a word's lowest set bit ``low`` (a power of two): ``CTZ[(low * DEBRUIJN) >> 58]``."""


def zobrist_keys(n: int, seed: int | np.random.Generator | None) -> np.ndarray:
    """``n`` random odd 64-bit keys, one per node, for a Zobrist hash of node sets (a
    set's hash is the XOR of its nodes' keys); fixed by ``seed``."""
    return np.random.default_rng(seed).integers(0, 2**63, size=n, dtype=np.int64).astype(np.uint64) * np.uint64(2) + ONE


@njit(cache=True, inline="always")
def has(bits, row, v):
    """Whether node ``v`` is in the set ``bits[row]`` (1 or 0)."""
    return (bits[row, v >> 6] >> np.uint64(v & 63)) & ONE


@njit(cache=True)
def ready_ops(ready, s, ctz):
    """The nodes of the set ``ready[s]``, by increasing index (``ctz`` is :data:`CTZ`)."""
    n_words = ready.shape[1]
    count = 0
    for w in range(n_words):
        x = ready[s, w]
        while x != 0:
            x &= x - ONE
            count += 1
    out = np.empty(count, dtype=np.int64)
    k = 0
    for w in range(n_words):
        x = ready[s, w]
        while x != 0:
            low = x & (~x + ONE)
            x ^= low
            out[k] = w * 64 + ctz[(low * DEBRUIJN) >> np.uint64(58)]
            k += 1
    return out


@njit(cache=True, inline="always")
def covered(bits, row, u, ptr, idx, skip):
    """Whether every neighbour of ``u`` in the CSR lists ``ptr``, ``idx`` but ``skip``
    is in the set ``bits[row]`` (with the successor lists: ``u``'s tensor is freed once
    ``skip`` has run after the set; with the predecessor lists: ``u`` is ready)."""
    for a in range(ptr[u], ptr[u + 1]):
        z = idx[a]
        if z != skip and has(bits, row, z) == 0:
            return False
    return True


@njit(cache=True, inline="always")
def mark_ready(members, ready, row, v, succ_ptr, succ_idx, pred_ptr, pred_idx):
    """After ``v`` joined the set ``members[row]``: add to ``ready[row]`` each successor
    of ``v`` whose predecessors are now all in ``members[row]``."""
    for a in range(succ_ptr[v], succ_ptr[v + 1]):
        z = succ_idx[a]
        if covered(members, row, z, pred_ptr, pred_idx, v):
            ready[row, z >> 6] |= ONE << np.uint64(z & 63)
