"""Node features for the learned orderers (Topoformer App. C.5, REGAL Section 2.1).

Per node, each normalised per graph so that graphs of any size and scale look alike:

1. output memory ``size_out`` and parameter memory ``size_param`` (App. C.5, item 1),
   plus ``work`` (what the MTPP bottleneck also prices), each divided by its maximum
   over the graph;
2. in- and out-degree (item 2), divided by the maximum degree;
3. minimum and maximum hop distance from a source and to a sink (item 3), divided by
   the number of layers (longest path, in hops);
4. the Laplacian positional encoding (item 4): eigenvectors of the ``pe_dim``
   smallest non-trivial eigenvalues of the symmetric normalised Laplacian of the
   undirected graph, scaled by ``sqrt(n)`` so entries keep their size across ``n``,
   each sign fixed so that its largest-magnitude entry is positive (eigenvectors are
   defined up to sign; fixing it makes inference deterministic), zero-padded when
   ``n - 1 < pe_dim``.

``node_features(graph)`` returns a float32 array of shape ``(n, N_SCALAR + pe_dim)``,
in ``O(n + m)`` plus the eigensolve: dense up to ``DENSE_LIMIT`` nodes; above, one per
connected component (the Laplacian is block-diagonal over them, so its spectrum is theirs
together), dense for a small component and Lanczos on the largest eigenvalues of
``2 I - L`` for a large one (matrix products only: 0.02 s at n = 2000, 0.3 s at 20,000).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse import csgraph
from threadpoolctl import ThreadpoolController

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.jit import njit

SCALAR_FEATURES = (
    "size_out",
    "size_param",
    "work",
    "in_degree",
    "out_degree",
    "min_hops_from_source",
    "max_hops_from_source",
    "min_hops_to_sink",
    "max_hops_to_sink",
)
N_SCALAR = len(SCALAR_FEATURES)
PE_DIM = 20
DENSE_LIMIT = 300
"""Up to this many nodes the whole graph's Laplacian is solved dense, as in training."""
DENSE_FALLBACK_LIMIT = 3000
"""A component where Lanczos does not converge is solved dense up to this many nodes
(72 MB, about 3 s); above, the eigenpairs Lanczos did converge are kept."""
# The eigensolves run on one BLAS thread: a few-hundred-node matrix gains nothing from
# more, and a multi-threaded BLAS beside busy cores (training, joblib workers) spins,
# taking fifty times as long.
_BLAS = ThreadpoolController()


@njit(cache=True)
def _hops_along(order, ptr, idx, out, col):
    """``out[v, col]`` / ``out[v, col + 1]``: min / max hops to ``v`` from a node with no
    neighbour in ``ptr``/``idx`` (a source for predecessors, a sink for successors),
    filled in ``order`` (neighbours first)."""
    for v in order:
        if ptr[v + 1] > ptr[v]:
            lo, hi = np.inf, 0.0
            for e in range(ptr[v], ptr[v + 1]):
                u = idx[e]
                lo = min(lo, out[u, col] + 1.0)
                hi = max(hi, out[u, col + 1] + 1.0)
            out[v, col], out[v, col + 1] = lo, hi


def hop_distances(graph: Graph) -> np.ndarray:
    """``(n, 4)``: min / max hops from any source, then min / max hops to any sink."""
    out = np.zeros((graph.n, 4))
    topo = np.asarray(graph.topological_order)
    _hops_along(topo, graph.pred_ptr, graph.pred_idx, out, 0)
    _hops_along(topo[::-1].copy(), graph.succ_ptr, graph.succ_idx, out, 2)
    return out


def _scaled(x: np.ndarray) -> np.ndarray:
    top = float(np.max(x)) if x.size else 0.0
    return x / top if top > 0 else np.zeros_like(x)


def _normalised_laplacian(graph: Graph) -> sp.csr_matrix:
    """``I - D^-1/2 A D^-1/2`` of the undirected graph (an isolated node keeps its 1)."""
    n = graph.n
    adj = sp.coo_matrix((np.ones(graph.m), (graph.edge_src, graph.edge_dst)), shape=(n, n)).tocsr()
    adj = ((adj + adj.T) > 0).astype(np.float64)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    inv = np.zeros(n)
    inv[deg > 0] = 1.0 / np.sqrt(deg[deg > 0])
    return (sp.identity(n, format="csr") - sp.diags(inv) @ adj @ sp.diags(inv)).tocsr()


def _smallest_pairs(lap: sp.csr_matrix, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``count`` smallest eigenpairs of one connected component's Laplacian
    (``count <= size``; ``count < size`` above ``DENSE_LIMIT``), ascending.  Lanczos
    runs on ``2 I - L`` (spectrum in [0, 2]), whose largest eigenvalues are ``L``'s
    smallest: matrix products only, where the shift-invert solve it replaces factorised
    ``L`` with heavy fill-in.  A connected component has a one-dimensional
    null space; a null space of many components stalled ARPACK (single-vector Lanczos
    misses multiplicity), which is why the solve runs per component."""
    s = lap.shape[0]
    if s <= DENSE_LIMIT:
        vals, vecs = np.linalg.eigh(lap.toarray())
        return vals[:count], vecs[:, :count]
    v0 = np.random.default_rng(s).standard_normal(s)  # fixed: ARPACK's own is random per call
    shifted = (2.0 * sp.identity(s, format="csr") - lap).tocsr()
    try:
        vals, vecs = spla.eigsh(shifted, k=count, which="LA", v0=v0, tol=1e-10, ncv=min(s, max(2 * count + 1, 64)))
    except spla.ArpackNoConvergence as stalled:
        if s <= DENSE_FALLBACK_LIMIT:
            vals, vecs = np.linalg.eigh(lap.toarray())
            return vals[:count], vecs[:, :count]
        vals, vecs = stalled.eigenvalues, stalled.eigenvectors
    vals = 2.0 - vals
    order = np.argsort(vals, kind="stable")
    return vals[order], vecs[:, order]


def laplacian_encoding(graph: Graph, dim: int = PE_DIM) -> np.ndarray:
    """The ``(n, dim)`` Laplacian positional encoding of item 4 above.  Above
    ``DENSE_LIMIT`` nodes the eigenpairs come per connected component (module
    docstring); equal eigenvalues (the zeros of several components) are taken in the
    order of their components' first nodes, so the encoding is deterministic."""
    n = graph.n
    pe = np.zeros((n, dim))
    count = min(dim, n - 1)
    if count <= 0:
        return pe
    lap = _normalised_laplacian(graph)
    with _BLAS.limit(limits=1, user_api="blas"):  # one thread: see _BLAS
        if n <= DENSE_LIMIT:
            _, vecs = np.linalg.eigh(lap.toarray())
        else:
            vecs = _componentwise_pairs(lap, count + 1)
    vecs = vecs[:, 1 : count + 1] * np.sqrt(n)
    top = np.argmax(np.abs(vecs), axis=0)
    vecs = vecs * np.where(vecs[top, np.arange(vecs.shape[1])] < 0, -1.0, 1.0)
    pe[:, : vecs.shape[1]] = vecs
    return pe


def _componentwise_pairs(lap: sp.csr_matrix, count: int) -> np.ndarray:
    """``(n, <= count)``: eigenvectors of the ``count`` smallest eigenvalues of the
    whole Laplacian, gathered from its connected components' own."""
    n = lap.shape[0]
    _, label = csgraph.connected_components(lap, directed=False)
    members = np.argsort(label, kind="stable")
    ends = np.append(np.flatnonzero(np.diff(label[members])) + 1, n)
    grouped = lap[members][:, members].tocsr()  # each component a diagonal block: sliced contiguously
    found: list[tuple[float, int, int, np.ndarray, np.ndarray]] = []
    for c, (a, b) in enumerate(zip(np.append(0, ends[:-1]), ends)):
        nodes = members[a:b]
        vals, vecs = _smallest_pairs(grouped[a:b, a:b], min(count, nodes.size))
        found.extend((round(float(vals[j]), 9), c, j, nodes, vecs[:, j]) for j in range(vals.size))
    found.sort(key=lambda pair: pair[:3])
    out = np.zeros((n, min(count, len(found))))
    for col, (_, _, _, nodes, vec) in enumerate(found[: out.shape[1]]):
        out[nodes, col] = vec
    return out


def node_features(graph: Graph, pe_dim: int = PE_DIM) -> np.ndarray:
    """The ``(n, N_SCALAR + pe_dim)`` float32 feature matrix described above."""
    if isinstance(pe_dim, bool) or not isinstance(pe_dim, (int, np.integer)) or pe_dim < 0:
        raise InvalidParameterError(f"pe_dim must be an integer >= 0, got {pe_dim!r}")
    g = graph
    indeg = np.diff(g.pred_ptr).astype(np.float64)
    outdeg = np.diff(g.succ_ptr).astype(np.float64)
    hops = hop_distances(g)
    depth = max(float(hops[:, 1].max()), 1.0)
    max_deg = max(float(indeg.max()), float(outdeg.max()), 1.0)
    scalar = np.column_stack(
        [_scaled(g.size_out), _scaled(g.size_param), _scaled(g.work), indeg / max_deg, outdeg / max_deg, hops / depth]
    )
    return np.hstack([scalar, laplacian_encoding(g, int(pe_dim))]).astype(np.float32)
