"""Pipeline plans for real architectures against the DeepSpeed and torchgpipe rules.

For a ResNet-50 (defined here: torchvision is not a dependency) and a GPT-2-small
model built from its config with random weights (transformers, offline), at
k = 2, 4, 8, print for each rule

* (a) DeepSpeed ``partition_method="uniform"`` and ``"parameters"``,
* (b) torchgpipe ``balance_by_time`` (times profiled on this CPU),
* (c) mtpp's optimal split-point plan, cutting between the same layers and, second,
  at any module call; third, between layers under measured costs
  (``cost="measured"``: every module call timed on this CPU),
* (d) mtpp's unrestricted partition (:func:`mtpp.certify`: SliceGraph + BRKGA, any
  acyclic partition of the op graph; it cannot be run as split points),

the cuts (split-point modules; ``^`` marks a cut at a module's END, else its
BEGINNING), the bottleneck under mtpp's cost model (roofline on the ``cpu`` preset, fp32,
microseconds), LB / UB with the lower bound of :func:`mtpp.certify` over all
acyclic partitions, and for (a)-(c) the measured time of each stage on this CPU:
``torch.distributed.pipelining.pipeline(model, args, split_spec=plan.split_spec)``,
then each stage module's forward alone on its real inputs, median of ``REPEATS``
rounds, one thread; each round runs every stage of every plan for that ``k`` once
(identical plans once), so a shared machine's load falls on all plans alike.
"Layers" are the module calls at call depth 2 (ResNet: stem modules and the 16
bottleneck blocks; GPT-2: embeddings, the 12 blocks, the final norm).

    python -m benchmarks.pipelining            # 13 minutes on 2 cores shared by other jobs (load ~8)
    python -m benchmarks.pipelining --quick    # k = 2, 4 only, GPT-2 with 6 layers
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import torch
from torch import nn

from benchmarks._common import git_commit
from mtpp import Problem, evaluate
from mtpp.pipelining import plan_stages, trace_model

REPEATS = 5
LAYER_DEPTH = 2
RULES = (
    ("deepspeed-uniform", "deepspeed-uniform", LAYER_DEPTH),
    ("deepspeed-parameters", "deepspeed-parameters", LAYER_DEPTH),
    ("torchgpipe-time", "torchgpipe-time", LAYER_DEPTH),
    ("mtpp (layers)", "mtpp", LAYER_DEPTH),
    ("mtpp (any call)", "mtpp", None),
)


class Bottleneck(nn.Module):
    """ResNet-50's bottleneck block (He et al. 2016), stride on the 3x3 convolution."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        out = planes * 4
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != out:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x: Any) -> Any:
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        return self.relu(self.bn3(self.conv3(y)) + identity)


class ResNet50(nn.Module):
    """ResNet-50: stem, stages of 3, 4, 6, 3 bottlenecks, average pool, classifier."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        inplanes, layers = 64, []
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            seq = []
            for b in range(blocks):
                seq.append(Bottleneck(inplanes, planes, stride if b == 0 else 1))
                inplanes = planes * 4
            layers.append(nn.Sequential(*seq))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x: Any) -> Any:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class GPT2Hidden(nn.Module):
    """GPT2Model returning its last hidden state as a tensor."""

    def __init__(self, layers: int) -> None:
        super().__init__()
        import transformers

        config = transformers.GPT2Config(n_layer=layers, attn_implementation="eager")
        self.gpt = transformers.GPT2Model(config)

    def forward(self, ids: Any) -> Any:
        return self.gpt(ids, use_cache=False).last_hidden_state


def stage_calls(plan: Any, model: Any, args: tuple[Any, ...]) -> list[tuple[Any, tuple[Any, ...]]]:
    """The stage modules of the plan's pipeline, each with its real inputs."""
    pipe = plan.pipeline(model, args)
    env: dict[str, Any] = {}
    calls: list[tuple[Any, tuple[Any, ...]]] = []
    for node in pipe.split_gm.graph.nodes:
        values = torch.fx.node.map_arg(node.args, lambda n: env[n.name])
        if node.op == "placeholder":
            env[node.name] = args[len(env)]
        elif node.op == "call_module":
            stage = pipe.get_stage_module(len(calls))
            calls.append((stage, values))
            env[node.name] = stage(*values)
        elif node.op == "call_function":
            env[node.name] = node.target(*values)
    return calls


def stage_times(plans: list[list[tuple[Any, tuple[Any, ...]]]]) -> list[list[float]]:
    """Median forward time (ms) of each stage of each plan over ``REPEATS`` rounds; a
    round runs every stage of every plan once, so load on a shared machine falls on
    all plans alike."""
    samples = [[[] for _ in calls] for calls in plans]
    for _ in range(REPEATS):
        for p, calls in enumerate(plans):
            for s, (stage, values) in enumerate(calls):
                t = time.perf_counter()
                stage(*values)
                samples[p][s].append(1e3 * (time.perf_counter() - t))
    return [[statistics.median(ts) for ts in plan] for plan in samples]


def bench(name: str, model: Any, args: tuple[Any, ...], ks: list[int], time_limit: float) -> None:
    t = time.perf_counter()
    traced = trace_model(model, args, device_spec="cpu")
    measured = trace_model(model, args, cost="measured", device_spec="cpu", repeats=REPEATS)
    assert measured.graph.n == traced.graph.n  # the same trace, priced by the clock
    print(
        f"\n## {name}: {traced.graph.n} ops, {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters, "
        f"roofline total {traced.graph.work.sum() / 1e3:.1f} ms on the cpu preset (traced in "
        f"{time.perf_counter() - t:.0f} s)"
    )
    print("| k | rule | cuts | bottleneck (us, model) | LB / UB | measured max stage (ms) | measured stages (ms) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for k in ks:
        certificate = None
        rows = []
        for label, rule, depth in RULES:
            plan = plan_stages(traced, k, rule=rule, granularity=depth, time_limit=time_limit, certificate=certificate)
            certificate = plan.unrestricted
            rows.append((label, plan, plan.bottleneck))
        # the optimal split-point plan between layers under *measured* costs, priced by the model
        plan = plan_stages(measured, k, granularity=LAYER_DEPTH, bounds=("simple",))
        model_ub = evaluate(Problem(traced.graph, k, bandwidth=traced.bandwidth), plan.assignment).bottleneck
        rows.append(("mtpp (layers, measured costs)", plan, model_ub))
        assert certificate is not None
        lb, ub = certificate.lower_bound, certificate.upper_bound
        specs = list(dict.fromkeys(tuple(p.split_spec.items()) for _, p, _ in rows))  # identical plans run once
        with torch.no_grad():
            calls = [
                stage_calls(next(p for _, p, _ in rows if tuple(p.split_spec.items()) == spec), model, args)
                for spec in specs
            ]
            times = stage_times(calls)
        for label, plan, value in rows:
            ms = times[specs.index(tuple(plan.split_spec.items()))]
            cuts = " ".join(f"{n}{'^' if point.name == 'END' else ''}" for n, point in plan.split_spec.items())
            print(
                f"| {k} | {label} | {cuts} | {value:.1f} | {lb / value:.3f} | {max(ms):.1f} | "
                f"{' / '.join(f'{m:.1f}' for m in ms)} |"
            )
        print(
            f"| {k} | mtpp unrestricted ({certificate.lower_bound_method} LB) | (any partition) | {ub:.1f} | "
            f"{lb / ub:.3f} | - | - |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="k = 2, 4 and a 6-layer GPT-2")
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per MIP bound (default 10)")
    opts = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"mtpp pipelining benchmark at commit {git_commit()}; torch {torch.__version__}, "
        f"1 thread, {os.cpu_count()} cores"
    )
    ks = [2, 4] if opts.quick else [2, 4, 8]
    torch.manual_seed(0)
    bench("ResNet-50, batch 1, 224 x 224", ResNet50().eval(), (torch.randn(1, 3, 224, 224),), ks, opts.time_limit)
    layers = 6 if opts.quick else 12
    ids = torch.randint(0, 50257, (1, 64))
    bench(
        f"GPT-2 small config ({layers} layers, d 768), batch 1, 64 tokens",
        GPT2Hidden(layers).eval(),
        (ids,),
        ks,
        opts.time_limit,
    )


if __name__ == "__main__":
    main()
