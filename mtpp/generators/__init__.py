"""Seeded synthetic graph generators.

* :func:`regal_graph` — REGAL random DAGs with the hardness filter (MTPP paper, App. C.2);
* :func:`regal_connected_graph` — mtpp's first REGAL-style generator (kept
  so that old seeds give the same graphs);
* :func:`layered_graph` — NN-like layered graphs (Topoformer paper, App. A).

All are deterministic for an integer seed and use only numpy ``Generator`` objects
(and integer seeds handed to networkx), never global random state.
"""

from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_connected_graph, regal_graph

__all__ = ["layered_graph", "regal_connected_graph", "regal_graph"]
