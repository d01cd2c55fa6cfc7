"""Batch tasks: what one unit of work is, its key, and how it runs.

A task is one ``(graph, k, method, solver, settings)``:

a bound method (:data:`mtpp.core.records.BOUND_METHODS`: ``simple``, ``cut``, ... ``exact``)
    :func:`mtpp.certify` with ``bounds=[method]``: the partition of
    ``settings["orderer"]`` (the upper bound) plus that lower bound; only the
    pigeonhole bound and the MIPs of Section 3 (:data:`mtpp.core.records.SOLVER_METHODS`)
    use the solver.
``slicegraph:ORDERER`` (e.g. ``slicegraph:brkga``, ``slicegraph:random-100``)
    :func:`mtpp.partition` with that orderer (App. C.1): the upper bound and its
    running time (Figures 4-5, Table 2).

The **graph hash** is the sha256 of the graph's canonical binary form
(:func:`mtpp.core.fingerprint.graph_hash`, re-exported here), so a graph is the same task
input whatever file it came from.  The **task key** is the
sha256 of the canonical JSON of ``{graph hash, k, method, solver, settings}``, where
``settings`` keeps only what can change the result of that method (a ``simple`` task
ignores the solver and the time limit, for instance).

:func:`execute` runs one task in the current process and returns plain JSON data;
the sandbox process the runner starts for it runs :func:`mtpp.batch.sandbox.serve`.
"""

from __future__ import annotations

import glob
import json
import math
import os
import pickle
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from mtpp.core.devices import IMPORT_UNITS
from mtpp.core.errors import GraphFormatError, InvalidParameterError, MtppError
from mtpp.core.fingerprint import graph_hash as graph_hash  # re-exported: the batch API names it here
from mtpp.core.fingerprint import sha256
from mtpp.core.graph import Graph
from mtpp.core.machine import Choice, choose
from mtpp.core.records import BOUND_METHODS, COMBINATORIAL_METHODS, SOLVER_METHODS
from mtpp.core.schema import Machine, Units

SLICEGRAPH = "slicegraph:"
TABLE2_ORDERERS = ("mla", "mla-weighted", "random-1", "random-100", "random-10000", "brkga-100", "brkga-10000")
METHOD_ALIASES: dict[str, tuple[str, ...]] = {
    "quick": ("slicegraph:brkga", "simple", "bottleneck"),
    "all": ("slicegraph:brkga", *BOUND_METHODS),
    "bounds": BOUND_METHODS,
    "orderers": tuple(SLICEGRAPH + o for o in TABLE2_ORDERERS),
}
NO_SOLVER = "-"

# Result statuses kept in the store.
OK, TIME_LIMIT, ERROR, CRASHED, TIMEOUT = "ok", "time_limit", "error", "crashed", "timeout"
MIN_TIME_LEFT = 1e-6  # seconds: the time limit of a task whose limit was spent before it ran
STATUSES = (OK, TIME_LIMIT, ERROR, CRASHED, TIMEOUT)
FAILED = (ERROR, CRASHED, TIMEOUT)


def canonical_json(data: Any) -> str:
    """Sorted keys, no spaces: the same data gives the same bytes everywhere."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


# --------------------------------------------------------------------------- methods


def orderer_of(method: str) -> str | None:
    """``"brkga"`` for ``"slicegraph:brkga"``; ``None`` for a bound method."""
    return method[len(SLICEGRAPH) :] if method.startswith(SLICEGRAPH) else None


def parse_methods(spec: str | Iterable[str]) -> tuple[str, ...]:
    """Normalise ``"all"``, ``"bounds"``, ``"orderers"``, comma lists and lists of names.

    Bound methods are ``simple``, ``bottleneck``, ``guess``, ``exact``; an orderer run
    is ``slicegraph:ORDERER`` with an orderer name of :func:`heuristics.partition.orderers.get_orderer`.
    Raises :class:`InvalidParameterError` naming an unknown method or orderer."""
    from heuristics.partition.orderers import get_orderer

    items = [spec] if isinstance(spec, str) else list(spec)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidParameterError(f"a method must be a string, got {item!r}")
        for part in (p.strip() for p in item.split(",")):
            if part:
                names.extend(METHOD_ALIASES.get(part, (part,)))
    if not names:
        raise InvalidParameterError("no methods given")
    out: list[str] = []
    for name in names:
        orderer = orderer_of(name)
        if orderer is not None:
            try:
                get_orderer(orderer)
            except InvalidParameterError as exc:
                raise InvalidParameterError(f"method {name!r}: {exc}") from None
        elif name not in BOUND_METHODS:
            choices = ", ".join([*BOUND_METHODS, "slicegraph:ORDERER", *METHOD_ALIASES])
            raise InvalidParameterError(f"unknown method {name!r}; choose from {choices}")
        if name not in out:
            out.append(name)
    return tuple(out)


class Settings(BaseModel):
    """The knobs of a batch that reach the tasks.

    ``time_limit`` (seconds) caps each task as a whole, from its dispatch: a bound
    task's partition search included, and the start of a task process it waited for;
    ``orderer`` and ``seed`` make the partition (upper bound) of the bound tasks;
    ``threads`` goes to the solver; ``bandwidth``, ``memory`` (``None`` = unlimited)
    and ``reserve`` are the machine of :class:`mtpp.Problem`; ``presolve`` runs the
    exact graph reductions of :mod:`heuristics.partition.presolve` first (on by default;
    only ``False`` enters the task key, so stores made before it keep their keys)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    time_limit: float = 60.0
    orderer: str = "brkga"
    seed: int = 0
    threads: int = 1
    bandwidth: float | None = None
    memory: float | None = None
    reserve: float = 0.0
    presolve: bool = True
    device: str | None = None
    """``bandwidth`` / ``memory`` ``None``: the ``device``'s, else each graph's recorded
    machine's (:mod:`mtpp.core.machine`), else 1 and unlimited; each task's settings
    hold the figures so chosen (and the machine's name), so a graph without a machine
    keeps the key it had before graphs recorded one."""

    def machine(self, source: GraphSource) -> Choice:
        """The bandwidth and memory of ``source``'s tasks (:func:`mtpp.core.machine.choose`)."""
        device = None
        if self.device is not None:
            from mtpp.core.presets import get_device

            device = get_device(self.device).machine()
        return choose(source.units, source.machine, device, self.bandwidth, self.memory, source.name)

    def for_method(self, method: str, choice: Choice | None = None) -> dict[str, Any]:
        """The settings that can change the result of ``method``: the task key's part
        (``choice``: the machine of the task's graph, :meth:`machine`)."""
        if choice is None:
            bandwidth = 1.0 if self.bandwidth is None else self.bandwidth
            memory = self.memory
        else:
            bandwidth, memory = choice.bandwidth, (None if math.isinf(choice.memory) else choice.memory)
        machine: dict[str, Any] = {"bandwidth": bandwidth, "memory": memory, "reserve": self.reserve}
        if choice is not None and choice.machine is not None:
            machine["machine"] = choice.machine.name
        if not self.presolve:
            machine["presolve"] = False
        if orderer_of(method) is not None:
            return {"seed": self.seed, "time_limit": self.time_limit, **machine}
        if method in COMBINATORIAL_METHODS and method != "ideal-dp":  # no solver; the search still takes the time limit
            return {"orderer": self.orderer, "seed": self.seed, "time_limit": self.time_limit, **machine}
        return {
            "orderer": self.orderer,
            "seed": self.seed,
            "time_limit": self.time_limit,
            "threads": self.threads,
            **machine,
        }


class Task(BaseModel):
    """One unit of work; :attr:`key` identifies it in the results store."""

    model_config = ConfigDict(frozen=True)

    graph_hash: str
    graph: str
    path: str | None
    n: int
    m: int
    k: int
    method: str
    solver: str
    settings: dict[str, Any]

    @property
    def key(self) -> str:
        """sha256 of ``{graph hash, k, method, solver, settings}`` (canonical JSON)."""
        return sha256(
            canonical_json(
                {
                    "graph": self.graph_hash,
                    "k": self.k,
                    "method": self.method,
                    "solver": self.solver,
                    "settings": self.settings,
                }
            )
        )

    def label(self) -> str:
        solver = "" if self.solver == NO_SOLVER else f" [{self.solver}]"
        return f"{self.graph} k={self.k} {self.method}{solver}"


# --------------------------------------------------------------------------- graphs


@dataclass(frozen=True)
class GraphSource:
    """A graph as the batch ships it: the graph, its hash, name and origin.

    :attr:`payload` (the graph pickled, with its adjacency: a million ops in a fraction
    of a second each way) is what the runner sends its task processes; :attr:`text`
    (the canonical JSON, seconds to write and to read back at a million ops) is made
    only when asked for."""

    name: str
    path: str | None
    graph_hash: str
    n: int
    m: int
    graph: Graph = field(repr=False, compare=False)
    units: dict[str, str] | None = None
    machine: Machine | None = None

    @cached_property
    def text(self) -> str:
        """The graph's canonical JSON (:meth:`mtpp.Graph.to_json`)."""
        return self.graph.to_json()

    @cached_property
    def payload(self) -> bytes:
        """The graph pickled (:func:`graph_payload`)."""
        return graph_payload(self.graph)

    @classmethod
    def from_graph(cls, graph: Graph, path: str | None = None) -> GraphSource:
        fingerprint = graph_hash(graph)
        name = graph.name or (Path(path).stem if path else fingerprint[:12])
        return cls(
            name=name,
            path=path,
            graph_hash=fingerprint,
            n=graph.n,
            m=graph.m,
            graph=graph,
            units=graph.units,
            machine=graph.machine,
        )


def graph_payload(graph: Graph) -> bytes:
    """``graph`` as the runner ships it to a task process: pickled with its adjacency
    (its arrays are read-only, so the task process may keep it for the next task)."""
    return pickle.dumps(graph, protocol=pickle.HIGHEST_PROTOCOL)


def graph_of_payload(payload: bytes) -> Graph:
    """The graph of :func:`graph_payload` (only ever from this batch's own runner)."""
    graph = pickle.loads(payload)  # written by this batch's runner, never from outside
    if not isinstance(graph, Graph):
        raise TypeError(f"a graph payload holds a {type(graph).__name__}, not a Graph")
    return graph


def discover_graphs(specs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Graph files from directories (their ``*.json``, sorted), globs and file names.

    Raises :class:`GraphFormatError` naming a spec that matches nothing."""
    items = [specs] if isinstance(specs, (str, os.PathLike)) else list(specs)
    files: list[Path] = []
    for item in items:
        text = os.fspath(item)
        p = Path(text)
        if p.is_dir():
            found = sorted(p.glob("*.json"))
            if not found:
                raise GraphFormatError(f"{text}: directory has no *.json graph files")
        elif p.is_file():
            found = [p]
        else:
            found = sorted(Path(f) for f in glob.glob(text, recursive=True) if Path(f).is_file())
            if not found:
                raise GraphFormatError(f"{text}: no such file, directory or matching files")
        files.extend(f for f in found if f not in files)
    return files


def _load_source(path: Path) -> GraphSource:
    """The :class:`GraphSource` of the graph file ``path``; an error (a cycle, a bad
    weight, ...) keeps its type and gains the file's name in front of its message."""
    from mtpp.io.graph_file import load_graph

    try:
        return GraphSource.from_graph(load_graph(path), str(path))
    except MtppError as exc:
        if exc.args and str(path) not in str(exc):
            exc.args = (f"{path}: {exc}", *exc.args[1:])
        raise


def load_sources(graphs: Any) -> list[GraphSource]:
    """:class:`GraphSource` for each graph: ``graphs`` is a :class:`Graph`, a file, a
    directory, a glob, or a list of those.  Identical graphs (same hash) are kept once.
    An error in a graph file names the file."""
    items = [graphs] if isinstance(graphs, (str, os.PathLike, Graph)) else list(graphs)
    sources: list[GraphSource] = []
    seen: set[str] = set()
    for item in items:
        if isinstance(item, Graph):
            batch = [GraphSource.from_graph(item)]
        elif isinstance(item, GraphSource):
            batch = [item]
        elif isinstance(item, (str, os.PathLike)):
            batch = [_load_source(f) for f in discover_graphs(item)]
        else:
            raise InvalidParameterError(f"expected a Graph, a path or a glob, got {type(item).__name__}")
        for src in batch:
            if src.graph_hash not in seen:
                seen.add(src.graph_hash)
                sources.append(src)
    if not sources:
        raise InvalidParameterError("no graphs given")
    return sources


def make_tasks(
    sources: Sequence[GraphSource], ks: Iterable[int], methods: Sequence[str], solver: str, settings: Settings
) -> list[Task]:
    """All tasks, graph by graph, then k, then method."""
    ks = list(ks)
    if not ks:
        raise InvalidParameterError("no values of k given")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidParameterError(f"k must be an integer >= 1, got {k!r}")
    if not settings.time_limit > 0:
        raise InvalidParameterError(f"time_limit must be > 0 seconds, got {settings.time_limit!r}")
    machines = {s.graph_hash: settings.machine(s) for s in sources}
    return [
        Task(
            graph_hash=s.graph_hash,
            graph=s.name,
            path=s.path,
            n=s.n,
            m=s.m,
            k=k,
            method=method,
            solver=solver if method in SOLVER_METHODS else NO_SOLVER,
            settings=settings.for_method(method, machines[s.graph_hash]),
        )
        for s in sources
        for k in dict.fromkeys(ks)
        for method in methods
    ]


# --------------------------------------------------------------------------- execution


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def execute(task: Task, graph_json: str | Graph, spent: float = 0.0, received: float | None = None) -> dict[str, Any]:
    """Run ``task`` on the graph ``graph_json`` (its JSON text, or the graph itself) here
    and now.

    ``spent``: seconds the task has already waited since its dispatch (the sandbox
    passes the start of a task process started for it); they come off its time limit,
    which caps the task from dispatch to answer (a sandbox's start counts too), and so
    does everything since ``received`` (a :func:`time.perf_counter` reading; default:
    this call's start), reading the graph included.  Returns
    the result fields of the store (``status``, ``method_status``, ``bound``, ``ub``,
    ``method_time``, ``solver_used``, ``solver_version``, ``message``, ``result``), where
    ``result`` is the certificate or solution JSON.  A method that raises gives status ``error``; it
    never propagates."""
    from mtpp.io.graph_file import graph_from_dict

    t0 = time.perf_counter() if received is None else received
    try:
        if isinstance(graph_json, Graph):
            graph = graph_json
        else:
            graph = graph_from_dict(json.loads(graph_json), source=task.graph)
        s = task.settings
        machine = task_machine(graph, s)
        limit = time_left(s["time_limit"], spent + time.perf_counter() - t0)
        orderer = orderer_of(task.method)
        if orderer is not None:
            return _run_slicegraph(graph, task, orderer, machine, limit)
        return _run_bound(graph, task, machine, limit)
    except Exception as exc:
        return {"status": ERROR, "method_status": "error", "message": f"{type(exc).__name__}: {exc}"}


def task_machine(graph: Graph, settings: dict[str, Any]) -> dict[str, Any]:
    """The machine keywords of ``partition`` / ``certify`` for a task: the figures its
    settings hold (``memory`` ``None``: unlimited), labelled with the machine they came
    from, if any, so the result's ``machine`` names it."""
    memory = math.inf if settings["memory"] is None else settings["memory"]
    name = settings.get("machine")
    if name is None:
        return {"bandwidth": settings["bandwidth"], "memory": memory, "reserve": settings["reserve"]}
    units = Units(**(graph.units if graph.units is not None else IMPORT_UNITS))
    memory_field = None if math.isinf(memory) else memory
    device = Machine(name=name, bandwidth=settings["bandwidth"], memory=memory_field, units=units)
    return {"device": device, "memory": memory, "reserve": settings["reserve"]}


def time_left(time_limit: float, spent: float) -> float:
    """What a task's ``time_limit`` leaves after ``spent`` seconds, never less than
    ``MIN_TIME_LEFT`` (a time limit must be positive; the methods then return at once
    with the best they have, a checked partition and the closed-form bounds)."""
    return max(float(time_limit) - max(float(spent), 0.0), MIN_TIME_LEFT)


def _run_slicegraph(graph: Graph, task: Task, orderer: str, machine: dict[str, Any], limit: float) -> dict[str, Any]:
    from mtpp.partitioner import partition

    s = task.settings
    sol = partition(
        graph,
        task.k,
        orderer=orderer,
        seed=s["seed"],
        time_limit=limit,
        presolve=s.get("presolve", True),
        **machine,
    )
    return {
        "status": TIME_LIMIT if sol.stopped_by_time else OK,
        "method_status": "time_limit" if sol.stopped_by_time else "done",
        "bound": _finite(sol.lower_bound),
        "ub": _finite(sol.bottleneck),
        "method_time": sol.wall_time,
        "message": f"{sol.evaluations} orders",
        "result": sol.to_json(indent=None),
    }


def _run_bound(graph: Graph, task: Task, machine: dict[str, Any], limit: float) -> dict[str, Any]:
    from mtpp.engine.certify import certify

    s = task.settings
    solver = "auto" if task.solver == NO_SOLVER else task.solver
    cert = certify(
        graph,
        task.k,
        bounds=[task.method],
        solver=solver,
        time_limit=limit,
        budget=limit,  # the whole task, its partition search included
        fill_budget=False,  # a row measures its method, not a search sized to the time it left
        threads=s.get("threads", 1),
        orderer=s["orderer"],
        seed=s["seed"],
        presolve=s.get("presolve", True),
        **machine,
    )
    rec = cert.bound(task.method)
    assert rec is not None
    status = {"time_limit": TIME_LIMIT, "error": ERROR, "interrupted": ERROR}.get(rec.status, OK)
    return {
        "status": status,
        "method_status": rec.status,
        "bound": _finite(cert.lower_bound),
        "ub": _finite(cert.upper_bound),
        "method_time": rec.wall_time,
        "solver_used": rec.solver,
        "solver_version": rec.solver_version,
        "message": rec.message,
        "result": cert.to_json(indent=None),
    }
