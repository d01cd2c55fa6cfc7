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
in ``O(n + m)`` plus the eigensolve (dense below ``DENSE_LIMIT`` nodes, sparse
shift-invert above: 0.3 s at n = 2000).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from threadpoolctl import ThreadpoolController

from mtpp.errors import InvalidParameterError
from mtpp.graph import Graph
from mtpp.jit import njit

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
# The eigensolves run on one BLAS thread: a few-hundred-node matrix gains nothing from
# more, and a multi-threaded BLAS beside busy cores (training, joblib workers) spins:
# one 200-node eigh took 0.26 s instead of 5 ms on 2 busy cores.
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


def laplacian_encoding(graph: Graph, dim: int = PE_DIM) -> np.ndarray:
    """The ``(n, dim)`` Laplacian positional encoding of item 4 above."""
    n = graph.n
    pe = np.zeros((n, dim))
    count = min(dim, n - 1)
    if count <= 0:
        return pe
    adj = sp.coo_matrix((np.ones(graph.m), (graph.edge_src, graph.edge_dst)), shape=(n, n)).tocsr()
    adj = ((adj + adj.T) > 0).astype(np.float64)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    inv = np.zeros(n)
    inv[deg > 0] = 1.0 / np.sqrt(deg[deg > 0])
    lap = sp.identity(n, format="csr") - sp.diags(inv) @ adj @ sp.diags(inv)
    vecs = None
    with _BLAS.limit(limits=1, user_api="blas"):  # one thread: see _BLAS
        if n > DENSE_LIMIT:
            try:
                # ARPACK's own start vector is random per call: a fixed one makes the
                # encoding, and every learned order over 300 ops, reproducible.  Where
                # ARPACK stalls (a null space of hundreds of components: REGAL-style
                # graphs of 2000 ops) the iteration cap hands over to the dense solve
                # (0.9 s at 2000 ops) after about 0.5 s instead of 28 s
                v0 = np.random.default_rng(n).standard_normal(n)
                vals, vecs = spla.eigsh(lap.tocsc(), k=count + 1, sigma=-1e-3, which="LM", v0=v0, maxiter=300)
                vecs = vecs[:, np.argsort(vals)]
            except (spla.ArpackNoConvergence, RuntimeError):
                vecs = None
        if vecs is None:
            _, vecs = np.linalg.eigh(lap.toarray())
    vecs = vecs[:, 1 : count + 1] * np.sqrt(n)
    top = np.argmax(np.abs(vecs), axis=0)
    vecs = vecs * np.where(vecs[top, np.arange(vecs.shape[1])] < 0, -1.0, 1.0)
    pe[:, :count] = vecs
    return pe


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
