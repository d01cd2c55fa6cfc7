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
   among such plans (:mod:`mtpp.pipelining.segmentation`; where the cuts cannot all
   have distinct split points, the best plan whose cuts can, with fewer stages and a
   note), or by one of the DeepSpeed / torchgpipe rules
   (:mod:`mtpp.pipelining.baselines`) for comparison.
3. **Certify**: :func:`mtpp.certify` on the op graph, every bound by default, in
   what the time limit leaves (it caps the whole call, tracing included), gives a
   lower bound over *all* acyclic partitions into ``k`` blocks (so also over
   split-point plans) and its own best unrestricted partition.  The plan's certificate is that certificate with
   the plan as its upper bound; ``restriction`` = plan / best unrestricted
   partition says what the split-point restriction costs, ``ratio`` = LB / plan.
   The plan is re-checked by :func:`mtpp.evaluate`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mtpp.core.devices import DeviceSpec
from mtpp.core.errors import InvalidParameterError
from mtpp.core.evaluate import Evaluation, evaluate
from mtpp.core.graph import Graph
from mtpp.core.presets import get_device
from mtpp.core.problem import Problem
from mtpp.core.records import closes
from mtpp.core.validation import check_time_limit
from mtpp.io.costed import CostedOp, costed_graph
from mtpp.io.torch_model import torch_costed_ops
from mtpp.pipelining.baselines import balanced_parts, block_partition_parts, uniform_parts
from mtpp.pipelining.contract import unit_graph
from mtpp.pipelining.segmentation import expressible_segmentation, min_max_segmentation, unit_costs
from mtpp.pipelining.timing import call_times, measured_work
from mtpp.pipelining.units import SplitPointError, Units, module_units

if TYPE_CHECKING:
    from mtpp.engine.certificate import Certificate

RULES = ("mtpp", "deepspeed-uniform", "deepspeed-parameters", "torchgpipe-time")
MIN_CERTIFY_SECONDS = 0.05
"""The least time the certificate gets when tracing spent the whole time limit: the
combinatorial bounds then mostly skip (each wants 0.5 s of its share) and a note says
to raise the limit."""
SHORT_CERTIFY_SECONDS = 2.0
"""A certificate given less than this and not proven gets a note to raise the limit."""
TRAINING_WORK_FACTOR = 3.0  # forward + backward at 2x forward


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
    layer boundaries: stage ``s`` holds layers ``parts[s]:parts[s + 1]``).

    A plan always has one (:attr:`PipelinePlan.balance`); where the plan cannot be
    written as layers per stage (the model is not an ``nn.Sequential``, or a cut falls
    inside one of its layers) ``layers`` and ``parts`` are ``None``, ``reason`` says
    why and the object is false (``if plan.balance:``)."""

    layers: tuple[int, ...] | None
    parts: tuple[int, ...] | None
    reason: str = ""

    def __bool__(self) -> bool:
        return self.layers is not None


@dataclass(frozen=True, repr=False)
class PipelinePlan:
    """A split-point plan and what it is worth; see :func:`plan_pipeline`.

    ``split_spec`` goes as is to ``torch.distributed.pipelining.pipeline``;
    ``stages`` describe the stages; ``bottleneck`` is the largest stage cost
    (re-checked by :func:`mtpp.evaluate`); ``certificate`` has the plan as its upper
    bound and a lower bound over all acyclic partitions; ``unrestricted`` is
    :func:`mtpp.certify`'s own result (its partition need not be a split-point plan);
    ``notes`` say where the plan has fewer than ``k`` stages and why, and how the
    time limit was spent.  ``str(plan)`` is a short table of the stages and the
    certificate.
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
    balance: Balance
    certificate: Certificate
    unrestricted: Certificate
    notes: tuple[str, ...] = ()

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
    def proven(self) -> bool:
        """The lower bound meets the plan: no acyclic partition into ``k`` blocks,
        split-point or not, has a smaller bottleneck."""
        return bool(self.certificate.optimal)

    @property
    def restriction(self) -> float:
        """``bottleneck`` over the best unrestricted partition found: what cutting
        only at module boundaries costs (>= 1 up to the search's quality)."""
        ub = self.unrestricted.upper_bound
        return 1.0 if ub == 0 else self.bottleneck / ub

    def __repr__(self) -> str:
        return (
            f"<PipelinePlan {self.graph.name!r} rule={self.rule} k={self.problem.k}: {len(self.stages)} stages, "
            f"bottleneck {self.bottleneck:.6g}, lower bound {self.lower_bound:.6g}, ratio {self.ratio:.4f}>"
        )

    def stage_table(self) -> list[str]:
        """The stages as plain text lines (a header, then one line per stage: op
        positions, modules, cost terms; ``*`` marks the bottleneck)."""
        rows: list[tuple[str, ...]] = [("stage", "ops", "work", "in IO", "out IO", "overflow", "cost", "modules")]
        worst = max(range(len(self.stages)), key=lambda s: self.stages[s].cost)
        for st in self.stages:
            lo, hi = self.units.starts[self.parts[st.index]], self.units.starts[self.parts[st.index + 1]]
            names = st.modules
            modules = "-" if not names else names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
            rows.append(
                (
                    f"{st.index}{' *' if st.index == worst else ''}",
                    f"{lo}-{hi - 1}",
                    *(f"{x:.4g}" for x in (st.work, st.input_io, st.output_io, st.overflow, st.cost)),
                    modules if len(modules) <= 60 else modules[:57] + "...",
                )
            )
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        left = {1, len(widths) - 1}
        return [
            "  ".join(v.ljust(w) if c in left else v.rjust(w) for c, (v, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows
        ]

    def __str__(self) -> str:
        """The stages (:meth:`stage_table`) and the certificate."""
        lines = [
            f"{self.graph.name}: {self.rule} split-point plan, {len(self.stages)} of k={self.problem.k} stages "
            f"(time in us; * the bottleneck)",
            *self.stage_table(),
        ]
        cert = self.certificate
        verdict = "proven optimal" if self.proven else f"gap {100 * (1 - self.ratio):.2f}%"
        lines += [
            f"bottleneck   {self.bottleneck:.6g} us",
            f"lower bound  {self.lower_bound:.6g} us ({cert.lower_bound_method}; over every acyclic partition)",
            f"LB / plan    {self.ratio:.4f} ({verdict})",
            f"best unrestricted partition {self.unrestricted.upper_bound:.6g} us (plan / it {self.restriction:.4f})",
        ]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def unit_graph(self) -> tuple[Graph, np.ndarray]:
        """The unit graph (:func:`mtpp.pipelining.contract.unit_graph`: one node per
        unit plus its output tensors) and the stage of each of its nodes: for
        ``graph.to_dot(stages)`` at a readable size.  Exact for this plan."""
        graph, owner = unit_graph(self.graph, self.units)
        unit_stage = np.repeat(np.arange(len(self.parts) - 1), np.diff(self.parts))
        return graph, unit_stage[owner]

    def pipeline(self, module: Any, mb_args: tuple[Any, ...]) -> Any:
        """``torch.distributed.pipelining.pipeline(module, mb_args, split_spec=...)``
        with the module as it was: split markers an earlier ``pipeline(module,
        split_spec=...)`` left on it are lifted while it traces, the ones this call
        adds are removed after, and the earlier ones put back."""
        from torch.distributed.pipelining import pipeline

        with without_split_markers(module):
            try:
                return pipeline(module, mb_args, split_spec=dict(self.split_spec))
            finally:
                for name in self.split_spec:
                    _unwrap(module.get_submodule(name))

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
            with without_split_markers(self.module):
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
    with without_split_markers(module):  # left by an earlier pipeline(module, split_spec=...)
        ops, edges = torch_costed_ops(module, args, spec, fx_fallback=False)
        times = call_times(module, args, repeats=repeats) if cost == "measured" else {}
    scopes = tuple(op.scope for op in ops)
    roofline = tuple(spec.roofline_time(op.flops, op.bytes_moved) for op in ops)
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
    bounds: str | Sequence[str] = "all",
    certificate: Certificate | None = None,
    presolve: bool = True,
) -> PipelinePlan:
    """Cut ``traced`` into at most ``k`` stages by ``rule`` (``"mtpp"``: the optimal
    split-point plan; or a baseline of :data:`RULES`), cutting only at module calls
    of call depth ``<= granularity`` (``None``: any depth), and certify it with
    :func:`mtpp.certify` (``bounds``, default every method; ``presolve``) in what is
    left of ``time_limit`` (seconds for this whole call), unless ``certificate`` (an
    earlier plan's ``unrestricted`` for the same model and ``k``) is reused.

    Where no plan of ``k`` stages can be written as distinct split points (a module
    between two top-level ops can mark its start or its end, not both) the plan has
    fewer stages, the best of those that can, and a note says so; so do plans where
    more stages would not lower the bottleneck or there are fewer places to cut."""
    from mtpp.engine.certify import certify

    start = time.perf_counter()
    time_limit = check_time_limit(time_limit)
    if rule not in RULES:
        raise InvalidParameterError(f"unknown rule {rule!r}; choose from {', '.join(RULES)}")
    graph = traced.graph
    problem = Problem(graph, k, bandwidth=traced.bandwidth)
    units = module_units(traced.scopes, granularity)
    starts = units.starts
    notes: list[str] = []
    if rule == "mtpp":
        cost = unit_costs(problem, starts)
        firsts, _ = min_max_segmentation(cost, k)
        parts = [*firsts, units.count]
        try:
            units.split_points(parts)
        except SplitPointError as exc:
            found = expressible_segmentation(cost, k, units)
            if found is None:  # too many nested split-point modules for the exact search
                parts = _expressible(units, parts)
            else:
                parts = [*found[0], units.count]
            notes.append(
                f"the best split-point plan is not expressible ({exc}); this is the best plan whose cuts "
                f"distinct split points make{'' if found is not None else ' that dropping cuts found'}"
            )
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
        try:
            units.split_points(parts)
        except SplitPointError as exc:
            parts = _expressible(units, parts)
            notes.append(f"the {rule} cuts are not all expressible ({exc}); the cuts that are not were dropped")
    used = len(parts) - 1
    if used < k:
        notes.append(_fewer_stages(k, used, units.count, rule))

    unit_block = np.repeat(np.arange(len(parts) - 1), np.diff(parts))
    assignment = np.repeat(unit_block, np.diff(starts))
    evaluation = evaluate(problem, assignment)
    split_spec = _split_spec(units, parts)
    if certificate is None:
        spent = time.perf_counter() - start
        left = max(time_limit - spent, MIN_CERTIFY_SECONDS)
        unrestricted = certify(
            problem, bounds=bounds, time_limit=left, budget=left, presolve=presolve, fill_budget=False
        )
    else:
        unrestricted = certificate
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
        notes=tuple(notes),
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
    bounds: str | Sequence[str] = "all",
    repeats: int = 5,
    presolve: bool = True,
) -> PipelinePlan:
    """Plan ``k`` pipeline stages for ``module`` called on ``example_args``:
    :func:`trace_model` (``cost``, ``device_spec``, ``mode``, ``repeats``) then
    :func:`plan_stages` (``rule``, ``granularity``, ``bounds``, ``presolve``).
    ``time_limit`` (seconds) caps the whole call: the certificate gets what tracing
    and pricing leave (at least :data:`MIN_CERTIFY_SECONDS`; a note says how it was
    spent)."""
    start = time.perf_counter()
    time_limit = check_time_limit(time_limit)
    traced = trace_model(module, example_args, cost=cost, device_spec=device_spec, mode=mode, repeats=repeats)
    traced_in = time.perf_counter() - start
    plan = plan_stages(
        traced,
        k,
        rule=rule,
        granularity=granularity,
        time_limit=max(time_limit - traced_in, MIN_CERTIFY_SECONDS),
        bounds=bounds,
        presolve=presolve,
    )
    return dataclasses.replace(
        plan, notes=(*plan.notes, *time_notes(time_limit, traced_in, time.perf_counter() - start, plan.unrestricted))
    )


def time_notes(time_limit: float, traced_in: float, total: float, certificate: Certificate) -> list[str]:
    """How a plan spent its time limit, and a hint where tracing left the certificate short."""
    notes = [
        f"{total:.1f} s of the {time_limit:g} s time limit: tracing and pricing {traced_in:.1f} s, "
        f"certificate {certificate.wall_time:.1f} s"
    ]
    if time_limit - traced_in < SHORT_CERTIFY_SECONDS and not certificate.optimal:
        notes.append(f"tracing left the certificate {max(time_limit - traced_in, 0):.1f} s: raise the time limit")
    return notes


def _fewer_stages(k: int, used: int, count: int, rule: str) -> str:
    """Why a plan has ``used < k`` stages."""
    if count < k:
        return f"{used} of k={k} stages: the trace has {count} units at this granularity, so {count - 1} places to cut"
    if rule == "mtpp":
        return f"{used} of k={k} stages: no plan with more stages that split points can make has a lower bottleneck"
    return f"{used} of k={k} stages: the {rule} rule gave fewer non-empty stages"


def _expressible(units: Units, parts: Sequence[int]) -> list[int]:
    """``parts`` less the fewest cuts, one at a time, until distinct split points
    make the rest (the cut whose removal leaves the most expressible ones first)."""
    parts = list(parts)
    while True:
        try:
            units.split_points(parts)
            return parts
        except SplitPointError:
            pass
        trials = [parts[:i] + parts[i + 1 :] for i in range(1, len(parts) - 1)]
        ok = [t for t in trials if _can_split(units, t)]
        parts = ok[0] if ok else trials[-1]


def _can_split(units: Units, parts: Sequence[int]) -> bool:
    try:
        units.split_points(parts)
    except SplitPointError:
        return False
    return True


_MARKERS: tuple[Any, ...] = ()


def _marker_functions() -> tuple[Any, ...]:
    """The ``forward`` wrappers ``torch.distributed.pipelining`` puts on split modules."""
    global _MARKERS
    if not _MARKERS:
        from torch.distributed.pipelining import _IR

        _MARKERS = (_IR._split_before_forward, _IR._split_after_forward)
    return _MARKERS


def _unwrap(sub: Any) -> None:
    """Remove a split marker's ``forward`` wrapper from ``sub`` (its class's, or the
    one it had before, comes back)."""
    attrs = vars(sub)
    forward = attrs.get("forward")
    if getattr(forward, "__func__", None) not in _marker_functions():
        return
    original = attrs.get("_orig_forward")
    del attrs["forward"]
    attrs.pop("_orig_forward", None)
    if original is not None and getattr(original, "__func__", None) not in _marker_functions():
        if getattr(original, "__func__", None) is not getattr(type(sub), "forward", None):
            attrs["forward"] = original  # an instance forward set before the marker


@contextlib.contextmanager
def without_split_markers(module: Any) -> Iterator[None]:
    """Within the block, ``module`` and its submodules run without the split markers
    that ``torch.distributed.pipelining.pipeline(module, split_spec=...)`` leaves on
    them (it wraps ``forward`` in place); they are put back after."""
    import torch

    saved: list[tuple[Any, dict[str, Any]]] = []
    if isinstance(module, torch.nn.Module):
        markers = _marker_functions()
        for sub in module.modules():
            attrs = vars(sub)
            if getattr(attrs.get("forward"), "__func__", None) in markers:
                saved.append((sub, {key: attrs[key] for key in ("forward", "_orig_forward") if key in attrs}))
                _unwrap(sub)
    try:
        yield
    finally:
        for sub, kept in saved:
            _unwrap(sub)
            vars(sub).update(kept)


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
    """:meth:`Units.split_points` as ``torch.distributed.pipelining.SplitPoint`` values."""
    from torch.distributed.pipelining import SplitPoint

    return {module: SplitPoint[point] for module, point in units.split_points(parts).items()}


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


def _balance(module: Any, split_spec: dict[str, Any]) -> Balance:
    """Layers per stage for an ``nn.Sequential`` whose cuts are all between layers,
    else a :class:`Balance` that says why there is none."""
    import torch

    if not isinstance(module, torch.nn.Sequential):
        return Balance(
            None,
            None,
            f"{type(module).__name__} is not an nn.Sequential: torchgpipe's balance and DeepSpeed's parts "
            "count layers of a sequence; use split_spec (plan.pipeline) instead",
        )
    layers = list(module._modules)
    bounds = [0]
    for name, point in split_spec.items():
        if name not in layers:
            return Balance(
                None,
                None,
                f"the cut at {name} ({point.name}) falls inside layer {name.split('.')[0]} of the Sequential",
            )
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
