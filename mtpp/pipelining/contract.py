"""The unit graph: one node per unit (:mod:`mtpp.pipelining.units`, e.g. one per
transformer layer at ``granularity=2``) for readable pictures and cheap searches.

Each unit ``U`` becomes a node with the work and parameters of its ops, followed by
one zero-work *output node* ``U/u`` for each op ``u`` of ``U`` whose tensor is read
outside ``U`` (``size_out(u)``, edges ``U -> U/u -> V`` for every unit ``V`` that
reads it); ``U`` itself outputs the sum of those tensors.  The ONNX importer models
ops with several outputs the same way.

* **Acyclic.** Units are contiguous runs of a topological order (the traced order),
  so every edge ``u -> v`` of the op graph has ``unit(u) <= unit(v)``; edges inside a
  unit disappear and the others run forward in unit order, with output nodes placed
  right after their unit.
* **Exact on plans.** A segmentation at unit starts that keeps each output node
  with its unit costs the same as the op partition it induces (every op in its
  unit's block): a tensor crosses between blocks exactly when its output node's
  edge does.
* **Never under-priced.** For *any* partition of the unit graph, each block costs at
  least its induced op block: an op tensor entering (leaving) a block is charged
  through its output node, or, if the output node sits with the consumer (producer)
  side, through the unit's edge to it, which charges the sum of all the unit's
  outputs.  So a unit-graph partition's value is an upper bound for its induced op
  partition, which :func:`mtpp.evaluate` re-prices on the op graph; lower bounds
  must still come from the op graph (the unit graph only restricts partitions).

``O(n + m)``.
"""

from __future__ import annotations

import numpy as np

from mtpp.core.graph import Graph
from mtpp.pipelining.units import Units


def unit_graph(graph: Graph, units: Units) -> tuple[Graph, np.ndarray]:
    """The unit graph of ``graph`` (index order = traced order) and, for each of its
    nodes, the unit it belongs to (output nodes belong to their unit)."""
    unit_of = np.repeat(np.arange(units.count), np.diff(units.starts))
    ids: list[str] = []  # "u3: layer1.2 layer2.0" and "u3/relu_6": the ids say it all
    work: list[float] = []
    param: list[float] = []
    out: list[float] = []
    owner: list[int] = []
    edges: list[tuple[int, int]] = []
    for u in range(units.count):
        lo, hi = units.starts[u], units.starts[u + 1]
        node = len(ids)
        calls = units.calls(lo, hi)
        ids.append(f"u{u}: {' '.join(calls) if calls else 'inputs'}")
        work.append(float(graph.work[lo:hi].sum()))
        param.append(float(graph.size_param[lo:hi].sum()))
        out.append(0.0)
        owner.append(u)
        for p in range(lo, hi):
            readers = sorted({int(unit_of[c]) for c in graph.successors(p) if unit_of[c] != u})
            if not readers:
                continue
            ids.append(f"u{u}/{graph.ids[p]}")
            work.append(0.0)
            param.append(0.0)
            out.append(float(graph.size_out[p]))
            owner.append(u)
            out[node] += float(graph.size_out[p])
            edges.append((node, len(ids) - 1))
            edges.extend((len(ids) - 1, -1 - r) for r in readers)  # unit nodes are resolved below
    first = {u: i for i, u in reversed(list(enumerate(owner)))}  # the unit node precedes its outputs
    resolved = [(a, first[-1 - b] if b < 0 else b) for a, b in edges]
    return Graph.from_arrays(work, param, out, resolved, ids=ids, name=graph.name), np.asarray(owner)
