"""From an ``nn.Module`` to pipeline stages that ``torch.distributed.pipelining`` runs,
with a certificate: :func:`plan_pipeline` and the :class:`PipelinePlan` it returns.

1. **Trace and price** (:func:`mtpp.io.torch_model.torch_costed_ops`, export path
   only, since ``pipeline()`` itself exports): roofline work on ``device_spec``
   (``cost="roofline"``) or the measured time of each module call
   (``cost="measured"``, :mod:`mtpp.pipelining.timing`).
   ``mode="training"`` prices one training step per micro-batch: work x 3 (the
   backward pass at twice the forward FLOPs and bytes, the usual rule of Kaplan et
   al. 2020 and Narayanan et al. 2021), parameters x 2 (weights and their
   gradients) plus every op's output kept for the backward pass in ``size_param``,
   and the inter-stage bandwidth halved (each activation crossing forward has a
   gradient of the same size crossing back).
2. **Cut** only where a split point can (:mod:`mtpp.pipelining.units`), optimally
   among such plans (:mod:`mtpp.pipelining.segmentation`), or by one of the
   DeepSpeed / torchgpipe rules (:mod:`mtpp.pipelining.baselines`) for comparison.
3. **Certify**: :func:`mtpp.certify` on the op graph gives a lower bound over *all*
   acyclic partitions into ``k`` blocks (so also over split-point plans) and its
   own best unrestricted partition.  The plan's certificate is that certificate with
   the plan as its upper bound; ``restriction`` = plan / best unrestricted
   partition says what the split-point restriction costs, ``ratio`` = LB / plan.
   The plan is re-checked by :func:`mtpp.evaluate`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mtpp.core.devices import DeviceSpec
from mtpp.core.errors import InvalidParameterError, MtppError
from mtpp.core.evaluate import Evaluation, evaluate
from mtpp.core.graph import Graph
from mtpp.core.presets import get_device
from mtpp.core.problem import Problem
from mtpp.core.records import closes
from mtpp.io.costed import CostedOp, costed_graph
from mtpp.io.torch_model import torch_costed_ops
from mtpp.pipelining.baselines import balanced_parts, block_partition_parts, uniform_parts
from mtpp.pipelining.contract import unit_graph
from mtpp.pipelining.segmentation import min_max_segmentation, unit_costs
from mtpp.pipelining.timing import call_times, measured_work
from mtpp.pipelining.units import Units, module_units

if TYPE_CHECKING:
    from mtpp.engine.certificate import Certificate

RULES = ("mtpp", "deepspeed-uniform", "deepspeed-parameters", "torchgpipe-time")
TRAINING_WORK_FACTOR = 3.0  # forward + backward at 2x forward


class SplitPointError(MtppError, ValueError):
    """A plan's cuts cannot all be written as distinct split points."""


@dataclass(frozen=True)
class Stage:
    """One pipeline stage: the module calls and op ids it holds, the four cost terms
    of Eq. (3) in microseconds, its parameter bytes and the tensors crossing into it
    as ``(producer op id, bytes)``."""

    index: int
    modules: tuple[str, ...]
    ops: tuple[str, ...]
    input_io: float
    work: float
    overflow: float
    output_io: float
    param_bytes: float
    inputs: tuple[tuple[str, float], ...]

    @property
    def cost(self) -> float:
        """``f(stage)``: the sum of the four terms."""
        return self.input_io + self.work + self.overflow + self.output_io


@dataclass(frozen=True)
class Balance:
    """The plan for an ``nn.Sequential``: ``layers[s]`` layers in stage ``s``
    (torchgpipe / GPipe ``balance``) and ``parts`` (DeepSpeed ``PipelineModule``
    layer boundaries: stage ``s`` holds layers ``parts[s]:parts[s + 1]``)."""

    layers: tuple[int, ...]
    parts: tuple[int, ...]


@dataclass(frozen=True)
class PipelinePlan:
    """A split-point plan and what it is worth; see :func:`plan_pipeline`.

    ``split_spec`` goes as is to ``torch.distributed.pipelining.pipeline``;
    ``stages`` describe the stages; ``bottleneck`` is the largest stage cost
    (re-checked by :func:`mtpp.evaluate`); ``certificate`` has the plan as its upper
    bound and a lower bound over all acyclic partitions; ``unrestricted`` is
    :func:`mtpp.certify`'s own result (its partition need not be a split-point plan).
    """

    rule: str
    graph: Graph
    problem: Problem
    units: Units
    parts: tuple[int, ...]
    split_spec: dict[str, Any]
    stages: tuple[Stage, ...]
    assignment: np.ndarray
    evaluation: Evaluation
    balance: Balance | None
    certificate: Certificate
    unrestricted: Certificate

    @property
    def bottleneck(self) -> float:
        """The plan's largest stage cost (microseconds)."""
        return self.evaluation.upper_bound

    @property
    def lower_bound(self) -> float:
        """No partition of the op graph into ``k`` acyclic blocks beats this."""
        return self.certificate.lower_bound

    @property
    def ratio(self) -> float:
        """``lower_bound / bottleneck``: 1 means the plan is optimal."""
        return 1.0 if self.bottleneck == 0 else self.lower_bound / self.bottleneck

    @property
    def restriction(self) -> float:
        """``bottleneck`` over the best unrestricted partition found: what cutting
        only at module boundaries costs (>= 1 up to the search's quality)."""
        ub = self.unrestricted.upper_bound
        return 1.0 if ub == 0 else self.bottleneck / ub

    def unit_graph(self) -> tuple[Graph, np.ndarray]:
        """The unit graph (:func:`mtpp.pipelining.contract.unit_graph`: one node per
        unit plus its output tensors) and the stage of each of its nodes: for
        ``graph.to_dot(stages)`` at a readable size.  Exact for this plan."""
        graph, owner = unit_graph(self.graph, self.units)
        unit_stage = np.repeat(np.arange(len(self.parts) - 1), np.diff(self.parts))
        return graph, unit_stage[owner]

    def pipeline(self, module: Any, mb_args: tuple[Any, ...]) -> Any:
        """``torch.distributed.pipelining.pipeline(module, mb_args, split_spec=...)``,
        then undo the ``forward`` wrappers it leaves on the split modules."""
        from torch.distributed.pipelining import pipeline

        try:
            return pipeline(module, mb_args, split_spec=dict(self.split_spec))
        finally:
            for name in self.split_spec:
                sub = module.get_submodule(name)
                if "forward" in vars(sub):
                    del sub.forward
                vars(sub).pop("_orig_forward", None)

    def plot(self, path: str, title: str | None = None) -> None:
        """Write the stage chart (:func:`mtpp.pipelining.plot.plot_stages`) to ``path``."""
        from mtpp.pipelining.plot import plot_stages

        used = len(self.stages)  # the evaluator lists k blocks; a plan may use fewer
        c = self.evaluation.costs
        costs = dataclasses.replace(
            c, input_io=c.input_io[:used], work=c.work[:used], overflow=c.overflow[:used], output_io=c.output_io[:used]
        )
        plot_stages(
            costs,
            self.lower_bound,
            path,
            title=title or f"{self.graph.name}: {self.rule} plan, k={self.problem.k}",
            unit="us",
        )


@dataclass(frozen=True)
class TracedModel:
    """A module traced and priced once, to plan for several ``k`` and rules
    (:func:`trace_model`, then :func:`plan_stages`).  ``graph``: the op graph in
    traced order; ``scopes``: each op's module calls; ``param_bytes``: each op's
    parameter bytes at inference; ``roofline``: each op's roofline time;
    ``bandwidth``: ``B`` of the planned mode."""

    module: Any
    args: tuple[Any, ...]
    graph: Graph
    scopes: tuple[tuple[str, ...], ...]
    param_bytes: tuple[float, ...]
    roofline: tuple[float, ...]
    bandwidth: float
    times: dict[str, float]
    repeats: int

    def layer_times(self) -> dict[str, float]:
        """The measured call times (:func:`~mtpp.pipelining.timing.call_times`),
        profiled on first use when the costs are rooflines."""
        if not self.times:
            self.times.update(call_times(self.module, self.args, repeats=self.repeats))
        return self.times


def trace_model(
    module: Any,
    example_args: Sequence[Any] | Any,
    *,
    cost: str = "roofline",
    device_spec: str | DeviceSpec = "a100",
    mode: str = "inference",
    repeats: int = 5,
) -> TracedModel:
    """Trace ``module`` on ``example_args`` (one micro-batch: a tuple of positional
    arguments, or one tensor) and price its ops.  ``cost``: ``"roofline"`` on
    ``device_spec`` or ``"measured"`` (median of ``repeats`` timed forwards on the
    module's own device); ``mode``: ``"inference"`` or ``"training"``.  Raises
    :class:`~mtpp.io.torch_model.TorchImportError` when ``torch.export`` cannot
    trace the module (the reason is in the message)."""
    import torch

    if cost not in ("roofline", "measured"):
        raise InvalidParameterError(f"cost must be 'roofline' or 'measured', got {cost!r}")
    if mode not in ("inference", "training"):
        raise InvalidParameterError(f"mode must be 'inference' or 'training', got {mode!r}")
    spec = get_device(device_spec)
    args = (example_args,) if isinstance(example_args, torch.Tensor) else tuple(example_args)
    ops, edges = torch_costed_ops(module, args, spec, fx_fallback=False)
    scopes = tuple(op.scope for op in ops)
    roofline = tuple(spec.roofline_time(op.flops, op.bytes_moved) for op in ops)
    times = call_times(module, args, repeats=repeats) if cost == "measured" else {}
    priced = ops
    if cost == "measured":
        priced = [dataclasses.replace(op, work=w) for op, w in zip(ops, measured_work(scopes, roofline, times))]
    if mode == "training":
        priced = [_training(op) for op in priced]
    return TracedModel(
        module=module,
        args=args,
        graph=costed_graph(priced, edges, spec, name=type(module).__name__),
        scopes=scopes,
        param_bytes=tuple(op.size_param for op in ops),
        roofline=roofline,
        bandwidth=spec.bandwidth_bytes_per_us / (2.0 if mode == "training" else 1.0),
        times=times,
        repeats=repeats,
    )


def plan_stages(
    traced: TracedModel,
    k: int,
    *,
    rule: str = "mtpp",
    granularity: int | None = None,
    time_limit: float = 10.0,
    bounds: str | Sequence[str] = ("simple", "bottleneck"),
    certificate: Certificate | None = None,
    presolve: bool = True,
) -> PipelinePlan:
    """Cut ``traced`` into at most ``k`` stages by ``rule`` (``"mtpp"``: the optimal
    split-point plan; or a baseline of :data:`RULES`), cutting only at module calls
    of call depth ``<= granularity`` (``None``: any depth), and certify it:
    ``bounds`` and ``time_limit`` (seconds per MIP) go to :func:`mtpp.certify`,
    unless ``certificate`` (an earlier plan's ``unrestricted`` for the same model
    and ``k``) is reused; ``presolve`` goes to :func:`mtpp.certify` too."""
    from mtpp.engine.certify import certify

    if rule not in RULES:
        raise InvalidParameterError(f"unknown rule {rule!r}; choose from {', '.join(RULES)}")
    graph = traced.graph
    problem = Problem(graph, k, bandwidth=traced.bandwidth)
    units = module_units(traced.scopes, granularity)
    starts = units.starts
    if rule == "mtpp":
        firsts, _ = min_max_segmentation(unit_costs(problem, starts), k)
        parts = [*firsts, units.count]
    else:  # the baselines balance layers, then cut at their first units
        layers = [*units.layers, units.count]

        def per_layer(values: Any) -> list[float]:
            return np.add.reduceat(np.asarray(values, dtype=np.float64), [starts[u] for u in layers[:-1]]).tolist()

        if rule == "deepspeed-uniform":
            cuts = uniform_parts(len(layers) - 1, k)
        elif rule == "deepspeed-parameters":
            cuts = balanced_parts(per_layer(traced.param_bytes), k)
        else:
            cuts = block_partition_parts(
                per_layer(measured_work(traced.scopes, traced.roofline, traced.layer_times())), k
            )
        parts = [layers[c] for c in cuts]
    parts = [p for i, p in enumerate(parts) if i == 0 or p > parts[i - 1]]  # drop empty stages

    unit_block = np.repeat(np.arange(len(parts) - 1), np.diff(parts))
    assignment = np.repeat(unit_block, np.diff(starts))
    evaluation = evaluate(problem, assignment)
    split_spec = _split_spec(units, parts)
    unrestricted = certificate or certify(problem, bounds=bounds, time_limit=time_limit, presolve=presolve)
    return PipelinePlan(
        rule=rule,
        graph=graph,
        problem=problem,
        units=units,
        parts=tuple(parts),
        split_spec=split_spec,
        stages=_stages(graph, units, parts, evaluation),
        assignment=assignment,
        evaluation=evaluation,
        balance=_balance(traced.module, split_spec),
        certificate=_for_plan(unrestricted, graph, evaluation, rule),
        unrestricted=unrestricted,
    )


def plan_pipeline(
    module: Any,
    example_args: Sequence[Any] | Any,
    k: int,
    *,
    cost: str = "roofline",
    device_spec: str | DeviceSpec = "a100",
    granularity: int | None = None,
    time_limit: float = 10.0,
    mode: str = "inference",
    rule: str = "mtpp",
    bounds: str | Sequence[str] = ("simple", "bottleneck"),
    repeats: int = 5,
    presolve: bool = True,
) -> PipelinePlan:
    """Plan ``k`` pipeline stages for ``module`` called on ``example_args``:
    :func:`trace_model` (``cost``, ``device_spec``, ``mode``, ``repeats``) then
    :func:`plan_stages` (``rule``, ``granularity``, ``time_limit``, ``bounds``, ``presolve``)."""
    traced = trace_model(module, example_args, cost=cost, device_spec=device_spec, mode=mode, repeats=repeats)
    return plan_stages(
        traced, k, rule=rule, granularity=granularity, time_limit=time_limit, bounds=bounds, presolve=presolve
    )


def _training(op: CostedOp) -> CostedOp:
    """One op priced for a training step (see the module docstring)."""
    return dataclasses.replace(
        op,
        flops=op.flops * TRAINING_WORK_FACTOR,
        bytes_moved=op.bytes_moved * TRAINING_WORK_FACTOR,
        work=None if op.work is None else op.work * TRAINING_WORK_FACTOR,
        size_param=2 * op.size_param + op.size_out,
    )


def _split_spec(units: Units, parts: Sequence[int]) -> dict[str, Any]:
    """One split point per cut, no module used twice (a dict holds one point per
    module, and a module can both begin one stage and end another).  Cuts and their
    candidate modules form a bipartite graph; Kuhn's augmenting paths find a
    matching covering every cut whenever one exists, outermost candidates first.
    ``O(cuts * candidates^2)``."""
    from torch.distributed.pipelining import SplitPoint

    cuts = list(parts[1:-1])
    owner: dict[str, int] = {}  # module -> index of the cut it makes

    def assign(c: int, seen: set[str]) -> bool:
        for module, _ in units.split[cuts[c]]:
            if module in seen:
                continue
            seen.add(module)
            if module not in owner or assign(owner[module], seen):
                owner[module] = c
                return True
        return False

    for c, u in enumerate(cuts):
        if not assign(c, set()):
            names = ", ".join(f"{m} ({p})" for m, p in units.split[u])
            raise SplitPointError(
                f"the cut before op position {units.starts[u]} can only be made by {names}, "
                "each needed by another cut: choose another k or granularity"
            )
    point = {module: dict(units.split[cuts[c]])[module] for module, c in owner.items()}
    return {module: SplitPoint[point[module]] for module, c in sorted(owner.items(), key=lambda mc: mc[1])}


def _stages(graph: Graph, units: Units, parts: Sequence[int], ev: Evaluation) -> tuple[Stage, ...]:
    stages = []
    c = ev.costs
    for s, (a, b) in enumerate(itertools.pairwise(parts)):
        lo, hi = units.starts[a], units.starts[b]
        inside = np.arange(lo, hi)
        producers = sorted({int(p) for v in inside for p in graph.predecessors(int(v)) if p < lo})
        stages.append(
            Stage(
                index=s,
                modules=units.calls(lo, hi),
                ops=tuple(str(graph.ids[v]) for v in inside),
                input_io=float(c.input_io[s]),
                work=float(c.work[s]),
                overflow=float(c.overflow[s]),
                output_io=float(c.output_io[s]),
                param_bytes=float(graph.size_param[lo:hi].sum()),
                inputs=tuple((str(graph.ids[p]), float(graph.size_out[p])) for p in producers),
            )
        )
    return tuple(stages)


def _balance(module: Any, split_spec: dict[str, Any]) -> Balance | None:
    """Layers per stage for an ``nn.Sequential`` whose cuts are all between layers."""
    import torch

    if not isinstance(module, torch.nn.Sequential):
        return None
    layers = list(module._modules)
    bounds = [0]
    for name, point in split_spec.items():
        if name not in layers:
            return None
        bounds.append(layers.index(name) + (point.name == "END"))
    bounds.append(len(layers))
    bounds.sort()
    return Balance(layers=tuple(int(x) for x in np.diff(bounds)), parts=tuple(bounds))


def _for_plan(cert: Certificate, graph: Graph, ev: Evaluation, rule: str) -> Certificate:
    """``cert`` (from :func:`mtpp.certify`) with the plan as its upper bound: its lower
    bound holds for every partition, so for the plan too."""
    ub, lb = ev.upper_bound, cert.lower_bound
    update: dict[str, Any] = {
        "upper_bound": ub,
        "partition_source": f"split-point plan ({rule})",
        "assignment": {str(graph.ids[i]): int(b) for i, b in enumerate(ev.assignment.tolist())},
        "order": [str(i) for i in graph.ids],
        "block_costs": [float(x) for x in ev.block_costs],
        "ratio": 1.0 if ub == 0 else lb / ub,
        "gap_percent": 0.0 if ub == 0 else 100.0 * (ub - lb) / ub,
        "optimal": closes(lb, ub),
        "notes": [
            *getattr(cert, "notes", []),
            f"upper bound: the {rule} split-point plan; the lower bound "
            f"holds for all acyclic partitions (best unrestricted partition found: {cert.upper_bound:.6g})",
        ],
    }
    fields = type(cert).model_fields
    return cert.model_copy(update={key: value for key, value in update.items() if key in fields})
