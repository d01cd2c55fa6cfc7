"""The computation graph: ops with three weights, edges that carry one tensor each.

Section 2.1 of the MTPP paper: each op ``v`` has ``work(v)`` (run time),
``size_param(v)`` (parameter memory) and ``size_out(v)`` (its single output tensor);
an edge ``(u, v)`` means ``v`` consumes the output of ``u``.  A tensor with many
consumers is still one tensor.

Ids (``str`` or ``int``) are converted to contiguous indices ``0..n-1`` once, here,
at the boundary; everything inside mtpp works on the index arrays and the CSR
adjacency (``succ_ptr``/``succ_idx`` and ``pred_ptr``/``pred_idx``).  A ``Graph``
is validated when built and immutable afterwards.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pydantic_core
from numpy.typing import ArrayLike

from mtpp.core.errors import (
    WEIGHT_LIMIT,
    AmbiguousNodeIdError,
    CycleError,
    DuplicateNodeError,
    EmptyGraphError,
    GraphError,
    InvalidNodeIdError,
    InvalidParameterError,
    InvalidPartitionError,
    InvalidWeightError,
    SelfLoopError,
    UnknownNodeError,
    WeightOverflowError,
)
from mtpp.core.jit import njit
from mtpp.core.machine import as_machine, check_units
from mtpp.core.schema import FORMAT, MACHINE_VERSION, GraphDocument, Machine, NodeRecord, Units
from mtpp.core.validation import check_instance, check_iterable

if TYPE_CHECKING:
    import networkx as nx

NodeId = Union[str, int]
WEIGHT_FIELDS = ("work", "size_param", "size_out")
#: Fill colours of blocks in :meth:`Graph.to_dot` (ColorBrewer Set3), reused cyclically.
DOT_COLORS = (
    "#8dd3c7",
    "#ffffb3",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#d9d9d9",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
)


@dataclass(frozen=True)
class Node:
    """One op: its id, its three weights and optional descriptive labels."""

    id: NodeId
    work: float = 0.0
    size_param: float = 0.0
    size_out: float = 0.0
    name: str | None = None
    op: str | None = None


class MissingWeightError(GraphError, KeyError):
    """A node has no value for a weight that must be given: the message names the node,
    the attribute looked for and the keys the node has (a misspelt or differently named
    weight is never read as 0)."""

    def __init__(self, node_id: Any, attribute: str, keys: Sequence[str], hint: str = "") -> None:
        self.node_id = node_id
        self.attribute = attribute
        has = f"it has {', '.join(keys)}" if keys else "it has no attributes"
        super().__init__(f"node {node_id!r} has no {attribute!r} ({has}){hint}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def _weights(values: ArrayLike, field: str, ids: Sequence[NodeId]) -> np.ndarray:
    """One weight per node as float64; strings, booleans and other non-numbers are
    rejected (:class:`InvalidWeightError`), not coerced."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iuf":
        arr = values.astype(np.float64).reshape(-1)
    else:
        items = values if isinstance(values, list) else list(np.asarray(values, dtype=object).reshape(-1))
        if not all(_is_number_type(kind) for kind in set(map(type, items))):  # find the first culprit
            for node_id, v in zip(ids, items):
                if not _is_number_type(type(v)):
                    raise InvalidWeightError(node_id, field, v)
        arr = np.array(items, dtype=np.float64)
    if arr.shape != (len(ids),):
        raise GraphError(f"{field} has {arr.size} entries for {len(ids)} nodes")
    return arr


def _is_number_type(kind: type) -> bool:
    """Whether values of this type are weights: real numbers, not booleans."""
    return issubclass(kind, (Real, np.integer, np.floating)) and not issubclass(kind, (bool, np.bool_))


def _is_id_type(kind: type) -> bool:
    """Whether values of this type are node ids: strings and integers, not booleans."""
    return issubclass(kind, (str, int, np.integer)) and not issubclass(kind, (bool, np.bool_))


@njit(cache=True)
def kahn_stack(succ_ptr, succ_idx, indeg):
    """Kahn's algorithm with a stack, smallest index first among the sources: the order
    and how many nodes it holds (fewer than ``n`` when there is a cycle; ``indeg`` is
    left with the in-degrees of the nodes it could not remove).  ``O(n + m)``."""
    n = indeg.shape[0]
    stack = np.empty(n, dtype=np.int64)
    top = 0
    for i in range(n - 1, -1, -1):
        if indeg[i] == 0:
            stack[top] = i
            top += 1
    order = np.empty(n, dtype=np.int64)
    count = 0
    while top > 0:
        top -= 1
        u = stack[top]
        order[count] = u
        count += 1
        for e in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ_idx[e]
            indeg[v] -= 1
            if indeg[v] == 0:
                stack[top] = v
                top += 1
    return order[:count], count


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _csr(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR arrays grouping ``values`` by ``keys`` (stable, so sorted input stays sorted)."""
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return _readonly(ptr), _readonly(values[order].astype(np.int64))


class Graph:
    """An immutable, validated DAG of ops.

    Build one with :meth:`from_nodes` (ids and :class:`Node` records),
    :meth:`from_arrays` (weights as arrays, edges as index pairs) or
    :meth:`from_networkx`; read one with :func:`mtpp.load_graph`.

    Raises the typed errors of :mod:`mtpp.core.errors`: :class:`EmptyGraphError`,
    :class:`DuplicateNodeError`, :class:`InvalidWeightError`,
    :class:`UnknownNodeError`, :class:`SelfLoopError` and :class:`CycleError`
    (which names the nodes on one cycle).  Parallel duplicate edges are merged.
    """

    __slots__ = (
        "_index",
        "_text_index",
        "edge_dst",
        "edge_src",
        "ids",
        "machine",
        "name",
        "names",
        "ops",
        "pred_idx",
        "pred_ptr",
        "size_out",
        "size_param",
        "succ_idx",
        "succ_ptr",
        "topological_order",
        "units",
        "work",
    )

    def __init__(
        self,
        ids: Sequence[NodeId],
        work: ArrayLike,
        size_param: ArrayLike,
        size_out: ArrayLike,
        edge_src: ArrayLike,
        edge_dst: ArrayLike,
        names: Sequence[str | None] | None = None,
        ops: Sequence[str | None] | None = None,
        name: str | None = None,
        units: Mapping[str, str] | None = None,
        machine: Machine | Mapping[str, Any] | None = None,
    ) -> None:
        try:
            n = len(ids)
        except TypeError:
            raise InvalidParameterError(f"ids must be a sequence of node ids, got {type(ids).__name__}") from None
        if n == 0:
            raise EmptyGraphError()
        self.ids: tuple[NodeId, ...] = tuple(ids)
        kinds = set(map(type, self.ids))
        if not all(_is_id_type(kind) for kind in kinds):
            raise InvalidNodeIdError(next(v for v in self.ids if not _is_id_type(type(v))))
        self._index: dict[NodeId, int] = dict(zip(self.ids, range(n)))
        if len(self._index) < n:
            seen: set[NodeId] = set()
            raise DuplicateNodeError(next(v for v in self.ids if v in seen or seen.add(v)))  # type: ignore[func-returns-value]
        self._text_index: dict[str, int] | None = None  # str(id) -> index, built when first needed
        if any(issubclass(kind, str) for kind in kinds) and len(kinds) > 1:  # ids must read differently
            self._text_index = self._texts()
        raw = {"work": work, "size_param": size_param, "size_out": size_out}
        weights: dict[str, np.ndarray] = {}
        for field, values in raw.items():
            arr = _weights(values, field, self.ids)
            bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0))
            if bad.size:
                raise InvalidWeightError(self.ids[bad[0]], field, float(arr[bad[0]]))
            weights[field] = _readonly(arr)
        with np.errstate(over="ignore"):
            total = float(sum(np.sum(w) for w in weights.values())) + float(weights["size_out"].sum())
        if not total <= WEIGHT_LIMIT:  # work + size_param + 2 size_out: what one block can cost at B = 1
            raise WeightOverflowError("the weights (work + size_param + twice size_out)", total)
        self.work: np.ndarray = weights["work"]
        self.size_param: np.ndarray = weights["size_param"]
        self.size_out: np.ndarray = weights["size_out"]
        self.names: tuple[str | None, ...] = tuple(names) if names is not None else (None,) * n
        self.ops: tuple[str | None, ...] = tuple(ops) if ops is not None else (None,) * n
        self.name = name
        # what work and sizes are measured in, e.g. {"time": "us", "size": "bytes"} (None: unitless)
        self.units: dict[str, str] | None = None if units is None else dict(units)
        # the machine it was priced on (mtpp.core.machine): partition and certify use its bandwidth and memory
        self.machine: Machine | None = None if machine is None else as_machine(machine)
        if self.machine is not None:
            check_units(self.units, self.machine, name)
            if self.units is None:  # a machine's figures are in its units: the graph's are those
                self.units = self.machine.units.model_dump()

        src = np.asarray(edge_src, dtype=np.int64).reshape(-1)
        dst = np.asarray(edge_dst, dtype=np.int64).reshape(-1)
        loops = np.flatnonzero(src == dst)
        if loops.size:
            raise SelfLoopError(self.ids[src[loops[0]]])
        if src.size:
            keys = src * n + dst
            if not np.all(keys[1:] > keys[:-1]):  # else already sorted by (src, dst), no parallel edges
                keys = np.unique(keys)  # merges parallel edges, sorts by (src, dst)
            src, dst = keys // n, keys % n
        self.edge_src: np.ndarray = _readonly(src)
        self.edge_dst: np.ndarray = _readonly(dst)
        self.succ_ptr, self.succ_idx = _csr(src, dst, n)
        self.pred_ptr, self.pred_idx = _csr(dst, src, n)
        self.topological_order: np.ndarray = _readonly(self._topological_order())

    def _texts(self) -> dict[str, int]:
        """``str(id) -> index``; two ids that read the same (``1`` and ``"1"``) are refused."""
        texts: dict[str, int] = {}
        for i, node_id in enumerate(self.ids):
            text = str(node_id)
            if text in texts:
                raise AmbiguousNodeIdError(self.ids[texts[text]], node_id)
            texts[text] = i
        return texts

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_arrays(
        cls,
        work: ArrayLike,
        size_param: ArrayLike,
        size_out: ArrayLike,
        edges: Iterable[tuple[int, int]] | np.ndarray,
        ids: Sequence[NodeId] | None = None,
        names: Sequence[str | None] | None = None,
        ops: Sequence[str | None] | None = None,
        name: str | None = None,
        units: Mapping[str, str] | None = None,
        machine: Machine | Mapping[str, Any] | None = None,
    ) -> Graph:
        """Build a graph from weight arrays and edges given as index pairs ``(u, v)``
        (integers: ``1.0`` is index 1, ``1.5`` is rejected, not truncated); ``machine``:
        the machine it was priced on (:attr:`machine`)."""
        for field, values in (("work", work), ("size_param", size_param), ("size_out", size_out)):
            try:
                ndim = np.ndim(values)
            except ValueError:  # ragged nesting
                ndim = -1
            if isinstance(values, (str, bytes)) or ndim != 1:
                raise InvalidParameterError(f"{field} must be a one-dimensional array of weights, got {values!r:.80}")
        n = len(np.asarray(work))
        check_iterable("edges", edges, "pairs of node indices")
        try:
            raw = np.asarray(list(edges) if not isinstance(edges, np.ndarray) else edges)
            flat = raw.reshape(-1)
            if raw.dtype.kind == "f":  # 1.0 is index 1; 1.5 is not an index (it was truncated once)
                bad = flat[~np.isfinite(flat) | (flat != np.round(flat))]
            elif raw.dtype.kind in "iuO":  # object: Python and numpy ints mixed; anything else fails below
                bad = flat[
                    [
                        isinstance(x, (bool, np.bool_)) or (isinstance(x, (float, np.floating)) and x != int(x))
                        for x in flat
                    ]
                ]
            else:  # booleans, strings
                bad = flat
            if bad.size:
                shown = bad[0].item() if isinstance(bad[0], np.generic) else bad[0]
                raise GraphError(f"edges must be pairs of integer node indices 0..{n - 1}, got {shown!r}")
            e = raw.astype(np.int64).reshape(-1, 2)
        except (TypeError, ValueError, OverflowError) as exc:
            if isinstance(exc, GraphError):
                raise
            raise GraphError(f"edges must be pairs of node indices 0..{n - 1} ({exc})") from None
        if ids is not None:
            check_iterable("ids", ids, "a sequence of node ids")
        ids = list(range(n)) if ids is None else list(ids)
        bad = np.flatnonzero((e < 0) | (e >= n))
        if bad.size:
            raise UnknownNodeError(int(e.reshape(-1)[bad[0]]), "edge endpoint is not an index 0..n-1")
        return cls(ids, work, size_param, size_out, e[:, 0], e[:, 1], names, ops, name, units, machine)

    @classmethod
    def from_nodes(
        cls,
        nodes: Iterable[Node | Mapping[str, Any]],
        edges: Iterable[tuple[NodeId, NodeId]],
        name: str | None = None,
        units: Mapping[str, str] | None = None,
        machine: Machine | Mapping[str, Any] | None = None,
    ) -> Graph:
        """Build a graph from :class:`Node` records (or dicts of their fields) and id pairs.
        A dict must have ``work`` (:class:`MissingWeightError` otherwise: a misspelt key is
        not read as 0); ``size_param`` and ``size_out`` default to 0.  ``machine``: the
        machine it was priced on (:attr:`machine`)."""
        check_iterable("nodes", nodes, "an iterable of Node records or dicts")
        check_iterable("edges", edges, "an iterable of (producer id, consumer id) pairs")
        recs = []
        for pos, rec in enumerate(nodes):
            if not isinstance(rec, Node) and isinstance(rec, Mapping) and "work" not in rec:
                raise MissingWeightError(rec.get("id", pos), "work", sorted(map(str, rec)))
            try:
                recs.append(rec if isinstance(rec, Node) else Node(**rec))
            except TypeError as exc:
                raise GraphError(f"node {pos}: {rec!r} is not a node record ({exc})") from None
        index: dict[Any, int] = {}
        for i, rec in enumerate(recs):
            index.setdefault(rec.id, i)
        src, dst = [], []
        for edge in edges:
            if not isinstance(edge, (tuple, list)) or len(edge) != 2:
                raise GraphError(f"edge {edge!r} is not a pair of node ids")
            u, v = edge
            for end in (u, v):
                if end not in index:
                    raise UnknownNodeError(end, f"in edge {u!r} -> {v!r}")
            src.append(index[u])
            dst.append(index[v])
        return cls(
            [r.id for r in recs],
            [r.work for r in recs],
            [r.size_param for r in recs],
            [r.size_out for r in recs],
            np.array(src, dtype=np.int64),
            np.array(dst, dtype=np.int64),
            [r.name for r in recs],
            [r.op for r in recs],
            name,
            units,
            machine,
        )

    @classmethod
    def from_networkx(
        cls,
        g: nx.DiGraph,
        name: str | None = None,
        *,
        work: str | None = "work",
        size_param: str | None = "size_param",
        size_out: str | None = "size_out",
        units: Mapping[str, str] | None = None,
        machine: Machine | Mapping[str, Any] | None = None,
    ) -> Graph:
        """Build from a ``networkx.DiGraph`` whose nodes carry the three weights and
        optional ``name`` / ``op`` attributes.

        ``work``, ``size_param`` and ``size_out`` name the node attribute of each weight,
        as networkx's ``weight=`` does (``work="duration", size_out="out_cost",
        size_param="param_cost"`` for the Topoformer / Moccasin data); ``None`` says the
        graph has no such weight (0 on every node).  A node without a named attribute
        raises :class:`MissingWeightError` naming the node and the keys it has: a weight
        is never silently 0.  ``units`` and ``machine`` default to ``g.graph["units"]``
        and ``g.graph["machine"]`` (what :meth:`to_networkx` writes).  An undirected
        graph is refused (:class:`GraphError`): an edge must say which op produces the
        tensor."""
        import networkx as nx

        check_instance("g", g, nx.Graph, "a networkx.DiGraph")
        if not g.is_directed():
            raise GraphError(
                f"g is an undirected networkx.{type(g).__name__}: mtpp needs a networkx.DiGraph whose edges "
                "go from producer to consumer"
            )
        keys = {"work": work, "size_param": size_param, "size_out": size_out}
        for field, key in keys.items():
            if key is not None and not isinstance(key, str):
                raise InvalidParameterError(f"{field} must name a node attribute (a string) or be None, got {key!r}")
        weights: dict[str, list[Any]] = {field: [] for field in keys}
        for v, data in g.nodes(data=True):
            for field, key in keys.items():
                if key is None:
                    weights[field].append(0.0)
                elif key in data:
                    weights[field].append(data[key])
                else:
                    hint = f": name the attribute with {field}='...'"
                    if field != "work":
                        hint += f", or pass {field}=None if the graph has no {field}"
                    raise MissingWeightError(v, key, sorted(map(str, data)), hint)
        nodes = [
            Node(
                v,
                weights["work"][i],
                weights["size_param"][i],
                weights["size_out"][i],
                data.get("name"),
                data.get("op"),
            )
            for i, (v, data) in enumerate(g.nodes(data=True))
        ]
        return cls.from_nodes(
            nodes,
            g.edges(),
            name=name or g.graph.get("name"),
            units=units if units is not None else g.graph.get("units"),
            machine=machine if machine is not None else g.graph.get("machine"),
        )

    # ------------------------------------------------------------------ views
    @property
    def n(self) -> int:
        """Number of nodes."""
        return len(self.ids)

    @property
    def m(self) -> int:
        """Number of (deduplicated) edges."""
        return int(self.edge_src.size)

    def index(self, node_id: NodeId) -> int:
        """Contiguous index of ``node_id``; :class:`UnknownNodeError` if absent."""
        try:
            return self._index[node_id]
        except (KeyError, TypeError):
            raise UnknownNodeError(node_id) from None

    def index_of_text(self, text: str) -> int:
        """Contiguous index of the node whose id reads ``text`` (``str(id)``, unique in a
        graph: :class:`AmbiguousNodeIdError` refuses two ids that read the same), the
        form a certificate's assignment keys take; :class:`UnknownNodeError` if none."""
        if self._text_index is None:
            self._text_index = self._texts()
        try:
            return self._text_index[text]
        except (KeyError, TypeError):
            raise UnknownNodeError(text) from None

    def successors(self, i: int) -> np.ndarray:
        """Indices of the consumers of node ``i``'s output tensor."""
        return self.succ_idx[self.succ_ptr[i] : self.succ_ptr[i + 1]]

    def predecessors(self, i: int) -> np.ndarray:
        """Indices of the producers whose tensors node ``i`` consumes."""
        return self.pred_idx[self.pred_ptr[i] : self.pred_ptr[i + 1]]

    def nodes(self) -> list[Node]:
        """The nodes as :class:`Node` records, in index order."""
        return [
            Node(
                self.ids[i],
                float(self.work[i]),
                float(self.size_param[i]),
                float(self.size_out[i]),
                self.names[i],
                self.ops[i],
            )
            for i in range(self.n)
        ]

    def edges(self) -> list[tuple[NodeId, NodeId]]:
        """The edges as (producer id, consumer id) pairs."""
        return [(self.ids[u], self.ids[v]) for u, v in zip(self.edge_src.tolist(), self.edge_dst.tolist())]

    def to_networkx(self) -> nx.DiGraph:
        """A ``networkx.DiGraph`` with the weights and labels as node attributes (and
        ``units`` / ``machine``, as a dict, as graph attributes when the graph has them)."""
        import networkx as nx

        g = nx.DiGraph(name=self.name) if self.name else nx.DiGraph()
        if self.units is not None:
            g.graph["units"] = dict(self.units)
        if self.machine is not None:
            g.graph["machine"] = self.machine.model_dump()
        for node in self.nodes():
            attrs = {f: getattr(node, f) for f in WEIGHT_FIELDS}
            attrs.update({f: getattr(node, f) for f in ("name", "op") if getattr(node, f) is not None})
            g.add_node(node.id, **attrs)
        g.add_edges_from(self.edges())
        return g

    @classmethod
    def from_document(cls, doc: GraphDocument) -> Graph:
        """The graph of a document of the versioned mtpp JSON format
        (:mod:`mtpp.core.schema`), validated like every graph."""
        units = None if doc.units is None else doc.units.model_dump()
        return cls.from_nodes(
            (Node(**rec.model_dump()) for rec in doc.nodes), doc.edges, name=doc.name, units=units, machine=doc.machine
        )

    def to_document(self) -> GraphDocument:
        """The graph as a document of the versioned mtpp JSON format
        (:mod:`mtpp.core.schema`): :meth:`from_document` turns it back into this graph."""
        return GraphDocument(
            version=1 if self.machine is None else MACHINE_VERSION,  # version 1 files stay byte for byte the same
            name=self.name,
            units=None if self.units is None else Units(**self.units),
            machine=self.machine,
            nodes=[NodeRecord(**vars(node)) for node in self.nodes()],
            edges=[(u, v) for u, v in self.edges()],
        )

    def to_json(self, path: str | None = None, indent: int | None = None) -> str:
        """Serialise to the versioned mtpp JSON format (:mod:`mtpp.core.schema`); write to
        ``path`` if given.  :func:`mtpp.load_graph` reads it back.

        The text is ``self.to_document().model_dump_json(exclude_none=True)``, written by
        the same serializer (``pydantic_core.to_json``) from plain lists and dicts, with
        no validated record per node: a million ops in about a second, where the
        records take half a minute (the fingerprint of every result hashes this text)."""
        nodes = []
        for node_id, work, size_param, size_out, name, op in zip(
            (int(i) if isinstance(i, np.integer) else i for i in self.ids),
            self.work.tolist(),
            self.size_param.tolist(),
            self.size_out.tolist(),
            self.names,
            self.ops,
        ):
            record = {"id": node_id, "work": work, "size_param": size_param, "size_out": size_out}
            if name is not None:
                record["name"] = name
            if op is not None:
                record["op"] = op
            nodes.append(record)
        ids = [int(i) if isinstance(i, np.integer) else i for i in self.ids]
        document: dict[str, Any] = {"format": FORMAT, "version": 1 if self.machine is None else MACHINE_VERSION}
        if self.name is not None:
            document["name"] = self.name
        if self.units is not None:
            document["units"] = Units(**self.units).model_dump()
        if self.machine is not None:
            document["machine"] = self.machine.model_dump(exclude_none=True)
        document["nodes"] = nodes
        document["edges"] = [[ids[u], ids[v]] for u, v in zip(self.edge_src.tolist(), self.edge_dst.tolist())]
        text = pydantic_core.to_json(document, indent=indent).decode("utf-8")
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        return text

    def to_dot(self, assignment: Sequence[int] | np.ndarray | Mapping[NodeId, int] | None = None) -> str:
        """The DAG as Graphviz DOT text, each node labelled with its id and name (or
        op) and, given ``assignment`` (block per node index, or node id -> block),
        filled with its block's colour (:data:`DOT_COLORS`).  ``O(n + m)``; render
        with ``dot -Tpng``."""
        blocks: list[int] | None = None
        if assignment is not None:
            if isinstance(assignment, Mapping):
                blocks = [int(assignment[i]) for i in self.ids]
            else:
                blocks = [int(b) for b in np.asarray(assignment).reshape(-1)]
            if len(blocks) != self.n:
                raise InvalidPartitionError(f"assignment has {len(blocks)} entries for {self.n} nodes")

        def quote(text: object) -> str:
            return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

        lines = [f"digraph {quote(self.name or 'mtpp')} {{", "  node [shape=box, style=filled, fillcolor=white];"]
        for i, node_id in enumerate(self.ids):
            label = node_id if not (self.names[i] or self.ops[i]) else f"{node_id}\n{self.names[i] or self.ops[i]}"
            attrs = f"label={quote(label)}"
            if blocks is not None:
                attrs += f', fillcolor="{DOT_COLORS[blocks[i] % len(DOT_COLORS)]}", tooltip="stage {blocks[i]}"'
            lines.append(f"  {quote(node_id)} [{attrs}];")
        for u, v in self.edges():
            lines.append(f"  {quote(u)} -> {quote(v)};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Graph{label} n={self.n} m={self.m}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return (
            self.ids == other.ids
            and all(np.array_equal(getattr(self, f), getattr(other, f)) for f in WEIGHT_FIELDS)
            and np.array_equal(self.edge_src, other.edge_src)
            and np.array_equal(self.edge_dst, other.edge_dst)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable-looking arrays: no hashing

    # ------------------------------------------------------------------ checks
    def _topological_order(self) -> np.ndarray:
        """Kahn's algorithm by index (:func:`kahn_stack`); raises :class:`CycleError`
        naming one cycle."""
        indeg = np.diff(self.pred_ptr)
        order, count = kahn_stack(self.succ_ptr, self.succ_idx, indeg)
        if count < self.n:
            raise CycleError([self.ids[i] for i in self._find_cycle(indeg.tolist())])
        return order

    def _find_cycle(self, indeg: list[int]) -> list[int]:
        """One cycle among nodes Kahn could not remove: each has a remaining predecessor,
        so walking backwards must repeat a node."""
        remaining = [d > 0 for d in indeg]
        start = next(i for i, r in enumerate(remaining) if r)
        seen: dict[int, int] = {}
        walk: list[int] = []
        v = start
        while v not in seen:
            seen[v] = len(walk)
            walk.append(v)
            v = next(int(u) for u in self.predecessors(v) if remaining[u])
        cycle = walk[seen[v] :]
        cycle.reverse()  # backwards walk -> forward edge order
        return cycle
