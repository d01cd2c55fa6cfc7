"""Seeded synthetic graph generators.

* :func:`regal_graph` — REGAL-style random DAGs (MTPP paper, App. C.2);
* :func:`layered_graph` — NN-like layered graphs (Topoformer paper, App. A).

Both are deterministic for an integer seed and use only numpy ``Generator`` objects
(and integer seeds handed to networkx), never global random state.
"""

from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph

__all__ = ["layered_graph", "regal_graph"]
