"""``mtpp.partition``: SliceGraph with an orderer, re-checked by the evaluator."""

from __future__ import annotations

import math
import os
import time
import warnings
from typing import TYPE_CHECKING

import numpy as np

from heuristics.brkga import Progress
from heuristics.partition.orderers import Orderer, OrderSearch, get_orderer, priorities_for
from heuristics.partition.presolve import presolve as presolve_problem
from heuristics.partition.slicegraph import slice_order
from mtpp.bounds.simple import simple_lower_bound
from mtpp.core.errors import InvalidParameterError, MtppError, entry_point
from mtpp.core.evaluate import Evaluation, evaluate
from mtpp.core.graph import Graph
from mtpp.core.machine import Choice, MachineWarning, choose
from mtpp.core.problem import Problem
from mtpp.core.schema import Machine
from mtpp.core.validation import check_bool, check_instance, check_k, check_optional_time_limit, check_seed
from mtpp.solution import Solution

if TYPE_CHECKING:
    from mtpp.core.devices import DeviceSpec

# The DP and the evaluator add the same terms in different orders.
CONSISTENCY_TOLERANCE = 1e-9


def device_machine(device: str | DeviceSpec | Machine) -> Machine:
    """The :class:`~mtpp.core.schema.Machine` of a device preset's name, a
    :class:`~mtpp.core.devices.DeviceSpec` or a machine itself."""
    from mtpp.core.devices import DeviceSpec
    from mtpp.core.presets import get_device

    if isinstance(device, Machine):
        return device
    if not isinstance(device, (str, DeviceSpec)):
        raise InvalidParameterError(f"device must be a preset name, a DeviceSpec or a Machine, got {device!r}")
    return get_device(device).machine()


def resolve_problem(
    graph_or_problem: Graph | Problem,
    k: int | None,
    bandwidth: float | None,
    memory: float | None,
    reserve: float | None,
    peak_aware: bool | None = None,
    device: str | DeviceSpec | Machine | None = None,
) -> tuple[Problem, Choice | None]:
    """A :class:`Problem` from either a problem or a graph plus parameters (``k``
    larger than the graph is the same problem as ``k = n``: see :class:`Problem`), and,
    for a graph, which machine gave its bandwidth and memory (:func:`mtpp.core.machine.choose`:
    explicit figures, then ``device``, then the graph's recorded machine, then ``B = 1``
    and unlimited memory)."""
    check_instance("graph_or_problem", graph_or_problem, (Graph, Problem), "an mtpp.Graph or mtpp.Problem")
    if isinstance(graph_or_problem, Problem):
        given = {
            "bandwidth": bandwidth,
            "memory": memory,
            "reserve": reserve,
            "peak_aware": peak_aware,
            "device": device,
        }
        clash = [name for name, value in given.items() if value is not None]
        if clash or (k is not None and min(check_k(k), graph_or_problem.graph.n) != graph_or_problem.k):
            raise InvalidParameterError(
                f"a Problem already fixes k and the machine; do not pass {', '.join(clash) or 'another k'}"
            )
        return graph_or_problem, None
    if k is None:
        raise InvalidParameterError("k is required when a Graph is given")
    graph = graph_or_problem
    spec = None if device is None else device_machine(device)
    choice = choose(graph.units, graph.machine, spec, bandwidth, memory, graph.name)
    problem = Problem(
        graph,
        k,
        bandwidth=choice.bandwidth,
        memory=choice.memory,
        reserve=0.0 if reserve is None else reserve,
        peak_aware=bool(peak_aware),
        machine=choice.machine,
    )
    return problem, choice


def as_problem(
    graph_or_problem: Graph | Problem,
    k: int | None,
    bandwidth: float | None,
    memory: float | None,
    reserve: float | None,
    peak_aware: bool | None = None,
    device: str | DeviceSpec | Machine | None = None,
) -> Problem:
    """:func:`resolve_problem`'s problem; its :class:`~mtpp.core.machine.MachineWarning`
    (a graph in bytes priced at ``B = 1``) is issued here."""
    problem, choice = resolve_problem(graph_or_problem, k, bandwidth, memory, reserve, peak_aware, device)
    warn_machine(choice, stacklevel=5)  # this, as_problem, the entry point, its wrapper: the caller's line
    return problem


def warn_machine(choice: Choice | None, stacklevel: int = 4) -> None:
    """Issue the :class:`~mtpp.core.machine.MachineWarning` of ``choice``, if it has one
    (``stacklevel`` 4: the caller of the entry point that called this)."""
    if choice is not None and choice.warning is not None:
        warnings.warn(choice.warning, MachineWarning, stacklevel=stacklevel)


SLICE_SLACK = 1e-9
"""Relative slack on the search's own value of its best order when re-slicing it."""


def unique_order(graph: Graph) -> np.ndarray | None:
    """The graph's topological order when it is its only one (consecutive ops are
    joined by an edge: a Hamiltonian path, e.g. a chain), else ``None``.  Then every
    acyclic partition is a segmentation of it, so SliceGraph's DP on it is exact."""
    order = graph.topological_order
    if order.size <= 1:
        return order
    position = np.empty(graph.n, dtype=np.int64)
    position[order] = np.arange(graph.n)
    step = position[graph.edge_src]
    joined = np.zeros(graph.n, dtype=bool)  # joined[i]: an edge runs from order[i] to order[i + 1]
    joined[step[position[graph.edge_dst] == step + 1]] = True
    return order if joined[:-1].all() else None


def equal_work_fallback(problem: Problem, value: float, order: np.ndarray) -> tuple[Evaluation, np.ndarray] | None:
    """The best equal-work split of the graph's topological order (Kahn's) into ``1, 2, 4,
    ..., k`` contiguous pieces (:func:`heuristics.partition.slicegraph.equal_work_split`,
    torchgpipe's rule and fewer pieces where input/output makes them cheaper), re-checked by
    the evaluator, where it costs less than ``value`` (the partition found, sliced from
    ``order``); else ``None``.  ``O((n + m) log k)``: a partition never does worse than
    this split, whatever the search and the deadline did (torchgpipe's rule).  Nothing to do where
    ``order`` is that order: its slicing is capped by the split already."""
    topo = np.asarray(problem.graph.topological_order, dtype=np.int64)
    if np.array_equal(np.asarray(order, dtype=np.int64), topo):
        return None
    seg = slice_order(problem, topo, deadline=-math.inf)  # a deadline already passed: the split itself
    assert seg is not None
    if not seg.bottleneck < value:
        return None
    split = evaluate(problem, seg.assignment, seg.order)
    return (split, seg.order) if split.bottleneck < value else None


@entry_point
def partition(
    graph_or_problem: Graph | Problem,
    k: int | None = None,
    *,
    orderer: str | Orderer = "brkga",
    seed: int = 0,
    bandwidth: float | None = None,
    memory: float | None = None,
    reserve: float | None = None,
    peak_aware: bool | None = None,
    device: str | DeviceSpec | Machine | None = None,
    time_limit: float | None = None,
    progress: Progress | None = None,
    weights: str | None = None,
    presolve: bool = True,
) -> Solution:
    """Partition a graph into at most ``k`` pipeline stages with SliceGraph.

    The orderer (see :mod:`heuristics.partition.orderers`; default ``"brkga"`` =
    brkga-10000) searches node priorities, Kahn's algorithm turns the best into a
    topological order, the DP of Algorithm 1 slices it optimally, and
    :func:`mtpp.evaluate` re-checks the partition from scratch.  The returned
    :class:`Solution` carries the simple lower bound of Lemma 3.3 and the
    ratio ``LB / UB``.

    The machine (``bandwidth`` ``B``, ``memory`` ``M``) is, per figure: the one given,
    else ``device``'s (a preset name, a :class:`~mtpp.core.devices.DeviceSpec` or a
    :class:`~mtpp.core.schema.Machine`), else the graph's recorded
    :attr:`~mtpp.Graph.machine` (what the importers write), else ``B = 1`` and
    unlimited memory (:mod:`mtpp.core.machine`; a graph in bytes priced at ``B = 1``
    gets a :class:`~mtpp.core.machine.MachineWarning`).  ``solution.problem.machine``
    and the document's ``machine`` say which machine priced it.

    ``peak_aware=True`` prices overflow with each block's activation peak (Eq. 2,
    see :class:`mtpp.Problem`).  ``time_limit`` (seconds) caps the wall time of the
    whole call: the search stops at it with the best partition found so far, and every
    DP (one takes seconds at 20,000 ops) stops at it too; where no slicing finished in
    time the best equal-work split of the order is returned (``stopped_by_time``), so
    a partition always arrives.  ``progress(done, total, best)`` is called as the
    search advances.  ``weights`` (a path or a shipped name) replaces the default
    weights of a learned orderer (``topoformer*``, ``regal-brkga*``, extra ``mtpp[neural]``).
    ``presolve`` (default on) first removes the ops that provably cost nothing where
    they join their neighbour (:mod:`heuristics.partition.presolve`), searches the reduced graph
    and lifts the partition back; the evaluator re-checks it on the original graph.
    """
    original = as_problem(graph_or_problem, k, bandwidth, memory, reserve, peak_aware, device)
    check_bool("presolve", presolve)
    seed = check_seed(seed)
    time_limit = check_optional_time_limit(time_limit)
    if not isinstance(orderer, str) and not callable(orderer):
        raise InvalidParameterError(f"orderer must be an orderer name or a callable, got {orderer!r}")
    if weights is not None:
        check_instance("weights", weights, (str, os.PathLike), "a path or a shipped weights name")
    if progress is not None and not callable(progress):
        raise InvalidParameterError(f"progress must be a callable or None, got {progress!r}")
    search = get_orderer(orderer, weights) if isinstance(orderer, str) else orderer
    start = time.perf_counter()
    deadline = math.inf if time_limit is None else start + time_limit
    pre = presolve_problem(original) if presolve else None
    problem = original if pre is None else pre.problem
    name = orderer if isinstance(orderer, str) else getattr(orderer, "__name__", "custom")
    only = unique_order(problem.graph)
    if only is not None:  # every order is this one: no search can find another
        found = OrderSearch(priorities_for(only), only, evaluations=1, objective="none")
    else:
        left = None if time_limit is None else max(0.0, deadline - time.perf_counter())
        try:
            found = search(problem, seed=seed, time_limit=left, progress=progress)
        except MtppError:
            raise
        except Exception as exc:  # a failing orderer is a failed method: Kahn's order stands in, noted
            kahn = problem.graph.topological_order
            note = f"orderer {name} failed (internal error: {type(exc).__name__}: {exc}); Kahn's order instead"
            found = OrderSearch(priorities_for(kahn), kahn, evaluations=1, objective="none", note=note)
    seg = found.split  # the bottleneck searches keep their best slicing
    if seg is None and found.objective == "bottleneck" and found.history and math.isfinite(found.history[-1]):
        # the search already sliced this order: its value caps the DP's sweeps (values below
        # the cap are exact), which at 20,000 ops cuts the final slice from 8 s to far less
        seg = slice_order(problem, found.order, found.history[-1] * (1 + SLICE_SLACK) + SLICE_SLACK, deadline)
    if seg is None:
        seg = slice_order(problem, found.order, deadline=deadline)  # past the deadline: the equal-work split
    assert seg is not None  # no upper bound given: the DP always returns a split
    checked = evaluate(problem, seg.assignment, seg.order)
    g = problem.graph  # the DP sums costs incrementally: its rounding error scales with all the costs summed
    magnitude = float(g.work.sum()) + (float(g.size_param.sum()) + 2 * float(g.size_out.sum())) / problem.bandwidth
    if abs(checked.bottleneck - seg.bottleneck) > CONSISTENCY_TOLERANCE * (abs(checked.bottleneck) + magnitude):
        raise MtppError(
            f"internal error: SliceGraph reported {seg.bottleneck!r} but the evaluator found "
            f"{checked.bottleneck!r}; please report this graph"
        )
    order = seg.order
    if pre is not None and pre.reduced:
        order = pre.lift_order(seg.order)
        checked = evaluate(original, pre.lift(seg.assignment), order)
    note = found.note
    split = equal_work_fallback(original, checked.bottleneck, order)
    if split is not None:  # the search's order sliced worse than Kahn's order cut into equal work
        checked, order = split
        note = "; ".join(x for x in (note, "the equal-work split of Kahn's order beat the search's order") if x)
    return Solution(
        problem=original,
        evaluation=checked,
        lower_bound=simple_lower_bound(original),
        orderer=name,
        seed=seed,
        index_order=order,
        evaluations=found.evaluations,
        wall_time=time.perf_counter() - start,
        stopped_by_time=found.stopped_by_time or not seg.exact,
        note=note,
    )
