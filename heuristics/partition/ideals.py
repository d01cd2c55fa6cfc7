"""The lattice of ideals (down-sets) of a DAG, enumerated as bitsets.

An *ideal* is a node set ``I`` closed under predecessors: ``v in I`` and ``(u, v)``
an edge imply ``u in I``.  Every acyclic k-partition, its blocks listed in a
topological order of the quotient graph, is a chain of ideals
``{} = I_0 <= I_1 <= ... <= I_k = V`` with blocks ``I_j \\ I_{j-1}``, and every such
chain is an acyclic partition (Tarnawski et al., "Efficient Algorithms for Device
Placement of DNN Graph Operators", NeurIPS 2020, Section 3).  Real DNN graphs are
narrow, so they have few ideals (hundreds to about 10^5); a wide graph has
exponentially many, so enumeration stops at a cap and says so.

Enumeration is breadth first by size: the children of ``I`` are ``I + {v}`` for
each *ready* node ``v`` (not in ``I``, all predecessors in ``I``), duplicates are
merged through a Zobrist hash, and every ideal carries its ready set as a second
bitset so a child's ready set costs ``O(words + deg)``.  The *cover edges*
``I -> I + {v}`` are kept as CSR arrays; ideals are numbered by discovery, so a
subset always has a smaller number than its supersets.  Per ideal the module keeps
``work(I)``, ``size_param(I)`` and ``boundary(I)``, the total ``size_out`` of the
nodes of ``I`` with a consumer outside ``I`` (the tensors leaving ``I``).

Time ``O(E (words + deg^2))`` for ``E`` cover edges.  Memory, counted exactly as the
arrays grow (``_lattice_bytes``): per ideal ``16 words + 68`` bytes (the member and
ready bitsets, hash, size, the six sums, the edge pointer), 8 bytes per cover edge
(``int32`` node and target), a hash table of ``int32`` slots at most half full, and
the largest array while it is copied into a grown one.  Enumeration stops (too wide)
before that passes ``MAX_LATTICE_BYTES`` = 2 GiB or ``DEFAULT_MAX_IDEALS`` = 10^7
ideals (capacities grow by half, the hash table doubles), so a wide graph never
exhausts memory; the DP adds 32 bytes per ideal (:mod:`heuristics.partition.ideal_dp`).
Wider bitsets (``words = ceil(n / 64)``) or more cover edges per ideal lower the count
the budget allows.

The three sums are compensated (:mod:`mtpp.core.rounding`): each is the pair ``(x, x_lo)``
of a running sum along the discovery path from ``{}``, ``n`` updates of ``work`` and of
``size_param`` and at most ``n + m`` updates of ``boundary`` (one add per node, one
subtract per closed predecessor), so ``x + x_lo`` is the exact sum up to
:func:`mtpp.core.rounding.dd_error` of that many updates and of the largest partial sum
(``sum work``, ``sum size_param``, ``sum size_out``).  Differences ``x(I) - x(J)``,
which the ideal DP takes, are then exact to that tiny error however large ``x(J)`` is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heuristics.bitsets import CTZ, DEBRUIJN, ONE, covered, mark_ready
from mtpp.core.graph import Graph
from mtpp.core.jit import njit
from mtpp.core.rounding import dd_add

DEFAULT_MAX_IDEALS = 10_000_000
PYTHON_IDEALS = 1024  # a first try's cap: milliseconds on mtpp.core.jit's Python path, a 21-ideal chain of 20 ops
MAX_LATTICE_BYTES = 1 << 31  # the enumeration's arrays stay below 2 GiB (module docstring)
WORK, WORK_LO, PARAM, PARAM_LO, BOUNDARY, BOUNDARY_LO = range(6)  # the columns of IdealLattice.sums


@dataclass(frozen=True)
class IdealLattice:
    """The ideals of a graph (index 0 is the empty set, the last one is ``V``) with
    their cover edges ``s -> cover_to[e]`` adding node ``cover_node[e]`` for ``e`` in
    ``cover_ptr[s]:cover_ptr[s + 1]``, and per ideal its size and one row of ``sums``:
    work, parameter size and outgoing-tensor size ``boundary`` (raw ``size_out``
    units), each a compensated pair (columns ``WORK, WORK_LO, PARAM, PARAM_LO,
    BOUNDARY, BOUNDARY_LO``: the exact work is ``work + work_lo``, module docstring).
    One row per ideal keeps the six numbers the DP reads together in one cache line."""

    bits: np.ndarray  # (N, words) uint64
    size: np.ndarray  # (N,) int32
    sums: np.ndarray  # (N, 6) float64
    cover_ptr: np.ndarray  # (N + 1,) int64
    cover_node: np.ndarray  # (E,) int32
    cover_to: np.ndarray  # (E,) int32

    @property
    def count(self) -> int:
        return int(self.size.shape[0])

    @property
    def work(self) -> np.ndarray:
        return self.sums[:, WORK]

    @property
    def param(self) -> np.ndarray:
        return self.sums[:, PARAM]

    @property
    def boundary(self) -> np.ndarray:
        return self.sums[:, BOUNDARY]

    def members(self, s: int) -> np.ndarray:
        """The node indices of ideal ``s``."""
        row = self.bits[s]
        n_words = row.shape[0]
        flags = np.unpackbits(row.view(np.uint8), bitorder="little")[: n_words * 64]
        return np.flatnonzero(flags)


@njit(cache=True, nogil=True)
def _grow2(a, rows):
    out = np.zeros((rows, a.shape[1]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True, nogil=True)
def _grow1(a, length):
    out = np.zeros(length, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True, nogil=True)
def _lattice_bytes(cap, n_words, e_cap, slots_n):
    """Bytes held by the enumeration's arrays at these capacities, plus the largest
    old array while it is copied into a grown one."""
    per_ideal = 16 * n_words + 8 + 4 + 48 + 8  # bits, ready, hash, size, sums, cover_ptr
    return cap * per_ideal + 8 * e_cap + 4 * slots_n + max(cap // 2 * 48, 8 * e_cap // 2, 4 * slots_n // 2)


@njit(cache=True, nogil=True)
def _rehash(slots_n, hsh, count):
    """A hash table of ``slots_n`` slots holding the ideals ``0 .. count - 1``."""
    slots = np.full(slots_n, -1, dtype=np.int32)
    mask = np.uint64(slots_n - 1)
    for c in range(count):
        i = np.int64(hsh[c] & mask)
        while slots[i] != -1:
            i = np.int64((np.uint64(i) + ONE) & mask)
        slots[i] = c
    return slots


@njit(cache=True, nogil=True)
def _in_band(bits, s, w, low, v, band):
    """Whether ``I + {v}`` (``I`` the ideal in row ``s`` of ``bits``, ``v`` in word ``w``,
    bit ``low``) has its last member at most ``band`` positions after its first non-member."""
    last = v
    for q in range(bits.shape[1] - 1, -1, -1):
        x = bits[s, q]
        if x != 0:
            top = q * 64 + 63
            while (x >> np.uint64(top - q * 64)) & ONE == 0:
                top -= 1
            last = max(last, top)
            break
    for q in range(bits.shape[1]):
        x = bits[s, q]
        if q == w:
            x |= low
        if x != ~np.uint64(0):
            free = ~x
            return last - (q * 64 + CTZ[((free & (~free + ONE)) * DEBRUIJN) >> np.uint64(58)]) <= band
    return True


@njit(cache=True, nogil=True)
def enumerate_kernel(
    n, succ_ptr, succ_idx, pred_ptr, pred_idx, work, size_param, size_out, zob, max_ideals, max_bytes, band=-1
):  # fmt: skip
    """Breadth-first enumeration; returns the arrays of :class:`IdealLattice` and a
    flag that is ``False`` if there are more than ``max_ideals`` ideals or the arrays
    would outgrow ``max_bytes``.  With ``band >= 0`` only the ideals whose last member
    lies at most ``band`` after their first non-member are kept (node numbers as
    positions of a topological order: :func:`band_ideals`)."""
    n_words = (n + 63) // 64
    cap = 1024
    bits = np.zeros((cap, n_words), dtype=np.uint64)
    ready = np.zeros((cap, n_words), dtype=np.uint64)
    hsh = np.zeros(cap, dtype=np.uint64)
    size = np.zeros(cap, dtype=np.int32)
    sums = np.zeros((cap, 6))
    slots_n = 4096  # at most half full: doubled and rehashed as the lattice grows
    slots = np.full(slots_n, -1, dtype=np.int32)
    mask = np.uint64(slots_n - 1)
    e_cap = 4096
    cover_ptr = np.zeros(cap + 1, dtype=np.int64)
    cover_node = np.zeros(e_cap, dtype=np.int32)
    cover_to = np.zeros(e_cap, dtype=np.int32)

    for v in range(n):
        if pred_ptr[v + 1] == pred_ptr[v]:
            ready[0, v >> 6] |= ONE << np.uint64(v & 63)
    slots[0] = 0
    count = 1
    n_edges = 0
    s = 0
    while s < count:
        for w in range(n_words):
            x = ready[s, w]
            while x != 0:
                low = x & (~x + ONE)
                x ^= low
                v = w * 64 + CTZ[(low * DEBRUIJN) >> np.uint64(58)]
                if band >= 0 and not _in_band(bits, s, w, low, v, band):
                    continue
                h = hsh[s] ^ zob[v]
                i = np.int64(h & mask)
                child = -1
                while True:
                    c = slots[i]
                    if c == -1:
                        break
                    if hsh[c] == h and size[c] == size[s] + 1:
                        same = True
                        for q in range(n_words):
                            b = bits[s, q]
                            if q == w:
                                b |= low
                            if b != bits[c, q]:
                                same = False
                                break
                        if same:
                            child = c
                            break
                    i = np.int64((np.uint64(i) + ONE) & mask)
                if child == -1:
                    new_cap = cap + cap // 2 if count == cap else cap
                    new_slots = 2 * slots_n if 2 * (count + 1) > slots_n else slots_n
                    if count >= max_ideals or _lattice_bytes(new_cap, n_words, e_cap, new_slots) > max_bytes:
                        return bits[:0], size[:0], sums[:0], cover_ptr[:1], cover_node[:0], cover_to[:0], False
                    if 2 * (count + 1) > slots_n:
                        slots_n *= 2
                        slots = _rehash(slots_n, hsh, count)
                        mask = np.uint64(slots_n - 1)
                        i = np.int64(h & mask)
                        while slots[i] != -1:
                            i = np.int64((np.uint64(i) + ONE) & mask)
                    if count == cap:
                        cap = new_cap
                        bits = _grow2(bits, cap)
                        ready = _grow2(ready, cap)
                        hsh = _grow1(hsh, cap)
                        size = _grow1(size, cap)
                        sums = _grow2(sums, cap)
                        cover_ptr = _grow1(cover_ptr, cap + 1)
                    child = count
                    count += 1
                    slots[i] = child
                    hsh[child] = h
                    size[child] = size[s] + 1
                    for q in range(n_words):
                        bits[child, q] = bits[s, q]
                        ready[child, q] = ready[s, q]
                    bits[child, w] |= low
                    ready[child, w] ^= low
                    sums[child, WORK], sums[child, WORK_LO] = dd_add(sums[s, WORK], sums[s, WORK_LO], work[v])
                    sums[child, PARAM], sums[child, PARAM_LO] = dd_add(sums[s, PARAM], sums[s, PARAM_LO], size_param[v])
                    b, b_lo = sums[s, BOUNDARY], sums[s, BOUNDARY_LO]
                    if succ_ptr[v + 1] > succ_ptr[v]:
                        b, b_lo = dd_add(b, b_lo, size_out[v])  # v's consumers are all outside I
                    mark_ready(bits, ready, child, v, succ_ptr, succ_idx, pred_ptr, pred_idx)
                    for a in range(pred_ptr[v], pred_ptr[v + 1]):
                        u = pred_idx[a]
                        if covered(bits, child, u, succ_ptr, succ_idx, v):  # v is in the child too
                            b, b_lo = dd_add(b, b_lo, -size_out[u])  # u's tensor no longer leaves the ideal
                    sums[child, BOUNDARY] = b
                    sums[child, BOUNDARY_LO] = b_lo
                if n_edges == e_cap:
                    if _lattice_bytes(cap, n_words, e_cap + e_cap // 2, slots_n) > max_bytes:
                        return bits[:0], size[:0], sums[:0], cover_ptr[:1], cover_node[:0], cover_to[:0], False
                    e_cap += e_cap // 2
                    cover_node = _grow1(cover_node, e_cap)
                    cover_to = _grow1(cover_to, e_cap)
                cover_node[n_edges] = v
                cover_to[n_edges] = child
                n_edges += 1
        cover_ptr[s + 1] = n_edges
        s += 1
    return (
        bits[:count].copy(),
        size[:count].copy(),
        sums[:count].copy(),
        cover_ptr[: count + 1].copy(),
        cover_node[:n_edges].copy(),
        cover_to[:n_edges].copy(),
        True,
    )


@njit(cache=True, nogil=True)
def widest_level(n, pred_ptr, pred_idx, order):
    """The most ops of one depth (the longest path to them from a source, in edges): an
    antichain, since an edge ``u -> v`` puts ``v`` deeper than ``u``.  ``O(n + m)``."""
    depth = np.zeros(n, dtype=np.int64)
    for v in order:
        for e in range(pred_ptr[v], pred_ptr[v + 1]):
            depth[v] = max(depth[v], depth[pred_idx[e]] + 1)
    return int(np.bincount(depth).max()) if n else 0


def kernel_graph(graph: Graph) -> tuple:
    """The graph's arguments of :func:`enumerate_kernel`, with its odd random 64-bit key per
    node (an ideal's hash is the XOR of its members' keys), the same on every call."""
    g = graph
    zob = np.random.default_rng(0x1DEA1).integers(0, 2**63, g.n, dtype=np.uint64) * np.uint64(2) + ONE
    return g.n, g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx, g.work, g.size_param, g.size_out, zob


def enumerate_ideals(graph: Graph, max_ideals: int = DEFAULT_MAX_IDEALS) -> IdealLattice | None:
    """All ideals of ``graph`` with their cover edges, or ``None`` if there are more
    than ``max_ideals`` of them or their arrays would outgrow ``MAX_LATTICE_BYTES``
    (the graph is too wide).  Every subset of an antichain generates its own ideal, so
    a graph with an antichain of ``w`` ops (:func:`widest_level`) has at least ``2^w``
    ideals and is too wide without enumerating when ``2^w > max_ideals`` (finding that
    out by enumeration took seconds of a certify on REGAL-style graphs)."""
    g = graph
    width = widest_level(g.n, g.pred_ptr, g.pred_idx, np.asarray(g.topological_order, dtype=np.int64))
    if width >= 63 or 2**width > max_ideals:
        return None
    args = kernel_graph(g)
    # the kernel's work is not bounded by its arrays' sizes: a tiny graph, which runs it in
    # Python (mtpp.core.jit), may have a huge lattice, so it tries PYTHON_IDEALS first
    *arrays, complete = enumerate_kernel(*args, min(int(max_ideals), PYTHON_IDEALS), MAX_LATTICE_BYTES)
    if not complete and max_ideals > PYTHON_IDEALS:
        *arrays, complete = enumerate_kernel.dispatcher(*args, int(max_ideals), MAX_LATTICE_BYTES)
    return IdealLattice(*arrays) if complete else None
