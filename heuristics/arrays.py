"""A graph's arrays as the compiled kernels take them.

A kernel called from Python runs in Python when all its array arguments are tiny
(:class:`mtpp.core.jit.Kernel`), and it sees only the arrays passed as arguments, not
those inside a tuple.  So a kernel that Python calls takes the graph as ``*graph``,
the arrays of :func:`graph_arrays` one by one, and reads them by name through
:class:`GraphArrays` (``g = GraphArrays(*graph)``); kernels it calls get the tuple.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mtpp.core.graph import Graph


class GraphArrays(NamedTuple):
    """The CSR lists and the node costs of a graph (:class:`mtpp.core.graph.Graph`)."""

    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    pred_ptr: np.ndarray
    pred_idx: np.ndarray
    work: np.ndarray
    size_param: np.ndarray
    size_out: np.ndarray


def graph_arrays(graph: Graph) -> GraphArrays:
    """The arrays of ``graph`` (pass them to a kernel as ``*graph_arrays(graph)``)."""
    g = graph
    return GraphArrays(g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx, g.work, g.size_param, g.size_out)
