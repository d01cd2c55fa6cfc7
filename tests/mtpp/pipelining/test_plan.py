"""plan_pipeline end to end: runnable torch.distributed.pipelining stages, the plan's
certificate, optimality among split-point plans, balances and errors."""

from __future__ import annotations

import itertools
import math
import os
import time
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from mtpp import Problem, evaluate  # noqa: E402
from mtpp.io.torch_model import TorchImportError  # noqa: E402
from mtpp.pipelining import SplitPointError, plan_pipeline, plan_stages, trace_model  # noqa: E402

TIME_LIMIT = 2.0


class Block(nn.Module):  # type: ignore[misc,name-defined]
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.a = nn.Linear(width, hidden)
        self.b = nn.Linear(hidden, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: Any) -> Any:
        return self.norm(x + self.b(torch.relu(self.a(x))))


class SkipNet(nn.Module):  # type: ignore[misc,name-defined]
    """Heterogeneous layers (a conv stem, narrow and wide MLP blocks) and a long skip."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv1d(4, 16, 3, padding=1)
        self.blocks = nn.ModuleList([Block(16, h) for h in (32, 256, 16, 128)])
        self.head = nn.Linear(16, 5)

    def forward(self, x: Any) -> Any:
        h = self.stem(x).transpose(1, 2)
        skip = h
        for block in self.blocks:
            h = block(h)
        return self.head(h + skip)


def run_stages(pipe: Any, x: Any) -> Any:
    """Call the stage modules one by one, in order, as the split graph wires them."""
    env: dict[str, Any] = {}
    stage = 0
    out = None
    for node in pipe.split_gm.graph.nodes:
        args = torch.fx.node.map_arg(node.args, lambda n: env[n.name])
        if node.op == "placeholder":
            env[node.name] = x
        elif node.op == "call_module":
            assert node.target.endswith(f"_{stage}")  # submod_pp_{stage}
            env[node.name] = pipe.get_stage_module(stage)(*args)
            stage += 1
        elif node.op == "call_function":
            env[node.name] = node.target(*args)
        elif node.op == "output":
            out = args[0]
    assert stage == pipe.num_stages
    return out[0] if isinstance(out, (tuple, list)) else out


def check_plan(plan: Any, model: Any, x: Any, expected: Any) -> None:
    pipe = plan.pipeline(model, (x,))
    assert pipe.num_stages == len(plan.stages)
    assert torch.allclose(run_stages(pipe, x), expected, atol=1e-5)
    assert torch.equal(model(x), expected)  # the model's forward is restored
    ub = evaluate(plan.problem, plan.assignment).bottleneck
    assert ub == pytest.approx(plan.certificate.upper_bound) == pytest.approx(plan.bottleneck)
    assert plan.certificate.lower_bound == plan.unrestricted.lower_bound <= plan.unrestricted.upper_bound + 1e-9
    assert plan.lower_bound <= ub + 1e-9  # the LB holds for every acyclic partition, so for the plan
    assert sum(len(s.ops) for s in plan.stages) == plan.graph.n
    assert max(s.cost for s in plan.stages) == pytest.approx(ub)
    units, stage = plan.unit_graph()  # one node per unit: the same plan, priced the same
    assert evaluate(Problem(units, plan.problem.k, bandwidth=plan.problem.bandwidth), stage).bottleneck == (
        pytest.approx(ub)
    )
    assert units.to_dot(stage).count('fillcolor="#') == units.n


@pytest.fixture(scope="module")
def skipnet() -> tuple[Any, Any, Any]:
    torch.manual_seed(0)
    model = SkipNet().eval()
    x = torch.randn(2, 4, 8)
    with torch.no_grad():
        return model, x, model(x)


@pytest.fixture(scope="module")
def skipnet_traced(skipnet: tuple) -> Any:
    return trace_model(skipnet[0], skipnet[1], device_spec="cpu")


@pytest.mark.parametrize("k", [2, 3, 4])
def test_skipnet_plan_runs_and_is_certified(skipnet: tuple, skipnet_traced: Any, k: int) -> None:
    model, x, expected = skipnet
    plan = plan_stages(skipnet_traced, k, time_limit=TIME_LIMIT)
    with torch.no_grad():
        check_plan(plan, model, x, expected)
    # optimal among split-point plans: every way of cutting at unit starts is no better
    starts = plan.units.starts

    def blocks(cuts: tuple[int, ...]) -> np.ndarray:
        unit_block = np.repeat(np.arange(len(cuts) + 1), np.diff([0, *cuts, plan.units.count]))
        return np.repeat(unit_block, np.diff(starts))

    best = min(
        evaluate(plan.problem, blocks(cuts)).bottleneck
        for j in range(k)
        for cuts in itertools.combinations(range(1, plan.units.count), j)
    )
    assert plan.bottleneck == pytest.approx(best)


def test_skipnet_granularity_and_training(skipnet: tuple) -> None:
    model, x, expected = skipnet
    plan = plan_pipeline(model, (x,), 3, device_spec="cpu", granularity=1, bounds="simple")
    top = {"stem", "blocks.0", "blocks.1", "blocks.2", "blocks.3", "head"}
    assert {name for stage in plan.stages for name in stage.modules} == top and set(plan.split_spec) <= top
    with torch.no_grad():
        check_plan(plan, model, x, expected)
    train = plan_pipeline(model, (x,), 3, device_spec="cpu", granularity=1, mode="training", bounds="simple")
    assert np.allclose(train.graph.work, 3 * plan.graph.work)
    assert train.problem.bandwidth == plan.problem.bandwidth / 2
    assert np.allclose(train.graph.size_param, 2 * plan.graph.size_param + plan.graph.size_out)


def test_measured_costs_and_baselines(skipnet: tuple) -> None:
    model, x, expected = skipnet
    measured = trace_model(model, (x,), cost="measured", repeats=3)
    assert measured.graph.work.sum() == pytest.approx(sum(measured.times.values()), rel=1e-6)
    certificate = None
    baselines = []
    for rule in ("deepspeed-uniform", "deepspeed-parameters", "torchgpipe-time"):
        plan = plan_stages(measured, 3, granularity=1, rule=rule, bounds="simple", certificate=certificate)
        certificate = plan.unrestricted
        with torch.no_grad():
            check_plan(plan, model, x, expected)
        baselines.append(plan.bottleneck)
        if rule == "deepspeed-uniform":  # 6 top-level calls, 2 per stage
            assert [len(s.modules) for s in plan.stages] == [2, 2, 2]
    # the rules cut at layer starts, a subset of the units: the optimum over units is no worse
    best = plan_stages(measured, 3, granularity=1, certificate=certificate)
    assert best.bottleneck <= min(baselines) + 1e-9


def test_sequential_balance_builds_the_same_stages() -> None:
    torch.manual_seed(1)
    layers = [nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 8), nn.ReLU(), nn.Linear(8, 3)]
    model = nn.Sequential(*layers).eval()
    x = torch.randn(4, 8)
    with torch.no_grad():
        expected = model(x)
    plan = plan_pipeline(model, (x,), 3, device_spec="cpu", granularity=1, bounds="simple")
    assert plan.balance and plan.balance.layers is not None and sum(plan.balance.layers) == len(layers)
    parts = plan.balance.parts
    assert parts is not None and plan.balance.reason == ""
    assert parts[0] == 0 and parts[-1] == len(layers) and list(np.diff(parts)) == list(plan.balance.layers)
    out = x
    for s, (a, b) in enumerate(itertools.pairwise(parts)):
        names = {str(i) for i in range(a, b)}
        assert {m.split("@")[0] for m in plan.stages[s].modules} <= names  # the stage runs those layers
        out = nn.Sequential(*layers[a:b])(out)
    assert torch.allclose(out, expected)
    with torch.no_grad():
        check_plan(plan, model, x, expected)


def test_tiny_gpt2_from_config() -> None:
    transformers = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=2, vocab_size=97, n_positions=16, attn_implementation="eager"
    )
    model = transformers.GPT2Model(config).eval()
    model.config.use_cache = False
    ids = torch.randint(0, 97, (1, 12))

    class Wrapped(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.gpt = model

        def forward(self, input_ids: Any) -> Any:
            return self.gpt(input_ids, use_cache=False).last_hidden_state

    wrapped = Wrapped().eval()
    with torch.no_grad():
        expected = wrapped(ids)
    for k in (2, 4):
        plan = plan_pipeline(wrapped, (ids,), k, device_spec="a100", granularity=2, time_limit=TIME_LIMIT)
        assert 2 <= len(plan.stages) <= k
        with torch.no_grad():
            check_plan(plan, wrapped, ids, expected)


def test_untraceable_module_names_why() -> None:
    class DataDependent(nn.Module):  # type: ignore[misc,name-defined]
        def forward(self, x: Any) -> Any:
            if x.sum() > 0:  # control flow on a value: neither tracer can follow it
                return x * 2
            return x - 1

    with pytest.raises(TorchImportError, match=r"torch\.export cannot trace DataDependent"):
        plan_pipeline(DataDependent(), (torch.randn(3),), 2)


def test_split_points_are_matched_to_distinct_modules() -> None:
    from mtpp.pipelining.plan import SplitPointError, _split_spec
    from mtpp.pipelining.units import module_units

    # w, then x, then a top-level op: cutting before and after x alone needs w's END
    # for the first cut (x's BEGINNING) when x's END is the only way to make the second
    units = module_units([("w",), ("x",), ()])
    assert units.starts == (0, 1, 2, 3)
    spec = _split_spec(units, [0, 1, 2, 3])
    assert {m: p.name for m, p in spec.items()} == {"w": "END", "x": "END"}
    lonely = module_units([(), ("x",), ()])  # only x can make either cut
    with pytest.raises(SplitPointError, match=r"can only be made by x \(END\)"):
        _split_spec(lonely, [0, 1, 2, 3])


class ResMLP(nn.Module):  # type: ignore[misc,name-defined]
    """A skip over fc1 and fc2 with top-level ops around fc1: fc1 alone can mark the cuts
    before and after it, so no plan cuts on both sides of it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc0 = nn.Linear(256, 512)
        self.fc1 = nn.Linear(512, 1024)
        self.fc2 = nn.Linear(1024, 512)
        self.fc3 = nn.Linear(512, 64)

    def forward(self, x: Any) -> Any:
        h = self.fc0(x)
        y = self.fc2(torch.relu(self.fc1(h))) + h
        return self.fc3(torch.relu(y))


@pytest.fixture(scope="module")
def resmlp() -> tuple[Any, Any, Any, Any]:
    torch.manual_seed(0)
    model = ResMLP().eval()
    x = torch.randn(64, 256)
    with torch.no_grad():
        return model, x, model(x), trace_model(model, (x,))


@pytest.mark.parametrize("k", [4, 5, 6, 8, 100])
def test_plans_never_fail_where_fewer_stages_can_be_cut(resmlp: tuple, k: int) -> None:
    model, x, expected, traced = resmlp
    plan = plan_stages(traced, k, time_limit=TIME_LIMIT)
    assert 2 <= len(plan.stages) <= k and plan.units.split_points(list(plan.parts))
    with torch.no_grad():
        check_plan(plan, model, x, expected)
    if len(plan.stages) < k:
        assert any(f"{len(plan.stages)} of k={k} stages" in note for note in plan.notes)
    if k >= 5:  # the unconstrained optimum cuts around fc1: a note says why this plan does not
        assert any("not expressible" in note and "fc" in note for note in plan.notes)
    # the best among the plans that distinct split points can make
    count = plan.units.count
    best = math.inf
    for j in range(min(k, count)):
        for cuts in itertools.combinations(range(1, count), j):
            parts = [0, *cuts, count]
            try:
                plan.units.split_points(parts)
            except SplitPointError:
                continue
            blocks = np.repeat(np.repeat(np.arange(j + 1), np.diff(parts)), np.diff(plan.units.starts))
            best = min(best, evaluate(plan.problem, blocks).bottleneck)
    assert plan.bottleneck == pytest.approx(best)


def test_cuts_no_split_point_can_make_are_dropped() -> None:
    """What a baseline rule's cuts become where distinct split points cannot make them all."""
    from mtpp.pipelining.plan import _expressible
    from mtpp.pipelining.units import module_units

    lonely = module_units([(), ("x",), (), ("y",), ("z",)])  # x alone marks both of its sides
    parts = _expressible(lonely, [0, 1, 2, 3, 4, 5])
    assert parts in ([0, 2, 3, 4, 5], [0, 1, 3, 4, 5]) and lonely.split_points(parts)


def test_both_ways_to_build_stages_work_on_one_model_in_either_order(resmlp: tuple) -> None:
    from torch.distributed.pipelining import pipeline

    model, x, expected, traced = resmlp
    plan = plan_stages(traced, 3, time_limit=TIME_LIMIT)
    other = {"fc2": plan.split_spec[next(iter(plan.split_spec))].__class__["BEGINNING"]}
    with torch.no_grad():
        check_plan(plan, model, x, expected)  # plan.pipeline first, then torch's own
        pipe = pipeline(model, (x,), split_spec=other)
        assert pipe.num_stages == 2
        assert torch.allclose(run_stages(pipe, x), expected, atol=1e-5)
        # torch left its marker on fc2: plan.pipeline lifts it while it traces and puts it back
        patched = vars(model.fc2)["forward"]
        pipe = plan.pipeline(model, (x,))
        assert pipe.num_stages == len(plan.stages)
        assert torch.allclose(run_stages(pipe, x), expected, atol=1e-5)
        assert vars(model.fc2)["forward"] is patched and "forward" not in vars(model.fc1)
        # and tracing the patched model again sees the model, not the marker
        again = plan_stages(trace_model(model, (x,)), 3, certificate=plan.unrestricted)
        assert again.graph.n == plan.graph.n and again.split_spec == plan.split_spec
    del vars(model.fc2)["forward"], vars(model.fc2)["_orig_forward"]


def test_balance_says_why_there_is_none(resmlp: tuple) -> None:
    plan = plan_stages(resmlp[3], 3, time_limit=TIME_LIMIT)
    assert not plan.balance and plan.balance.layers is None and plan.balance.parts is None
    assert "ResMLP is not an nn.Sequential" in plan.balance.reason


def test_str_is_a_short_summary_table(resmlp: tuple) -> None:
    plan = plan_stages(resmlp[3], 3, time_limit=TIME_LIMIT)
    text = str(plan)
    assert len(text) < 1500 and len(repr(plan)) < 200
    lines = text.splitlines()
    assert (
        lines[1].split() == ["stage", "ops", "work", "in", "IO", "out", "IO", "overflow", "cost", "modules"]
        and len(lines) >= 2 + len(plan.stages) + 4
    )
    assert f"{plan.bottleneck:.6g}" in text and f"{plan.lower_bound:.6g}" in text and f"{plan.ratio:.4f}" in text
    assert ("proven optimal" in text) == plan.proven


def test_the_time_limit_caps_the_whole_call_and_certify_runs_every_bound(skipnet: tuple, skipnet_traced: Any) -> None:
    from mtpp.engine.certify import METHODS

    model, x, _ = skipnet
    start = time.perf_counter()
    plan = plan_pipeline(model, (x,), 4, time_limit=3.0)
    wall = time.perf_counter() - start
    assert wall < 3.0 + 1.5  # the methods overrun their shares by a little at most
    assert {r.method for r in plan.unrestricted.bounds} == set(METHODS)  # every method was asked for
    assert any("of the 3 s time limit: tracing and pricing" in note for note in plan.notes)
    assert plan.lower_bound == plan.unrestricted.lower_bound
    assert plan.ratio == pytest.approx(plan.lower_bound / plan.bottleneck)
    assert plan.proven == plan.certificate.optimal
    start = time.perf_counter()
    plan_stages(skipnet_traced, 4, time_limit=1.0)  # the certificate takes what the plan leaves
    assert time.perf_counter() - start < 1.0 + 1.0
