"""REGAL: the GNN of App. A.3 Eq. (1), the bandit's actions, BRKGA with learned mutants,
REINFORCE training with checkpoints, and the weights files."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from heuristics.neural import regal_training
from heuristics.neural.objectives import make_objective
from heuristics.neural.regal import (
    DEFAULT_CHOICES,
    EDGE_DIM,
    RegalConfig,
    RegalGNN,
    beta_brkga,
    edge_features,
    load_regal,
    regal_betas,
    regal_brkga,
    regal_logits,
    sample_betas,
    uniform_brkga,
)
from heuristics.neural.regal_training import CHECKPOINT, HISTORY, PLOT, WEIGHTS, RegalTrainConfig, train_regal
from heuristics.neural.weights import save_weights
from heuristics.traversal import classic_priorities
from mtpp.core.errors import InvalidParameterError, WeightsError
from mtpp.core.graph import Graph
from mtpp.generators.layered import layered_graph
from mtpp.generators.regal import regal_graph
from mtpp.generators.training import epoch_graphs
from tests.heuristics.neural.learned_brkga import check_learned_brkga
from tests.oracle import is_topological

torch.set_num_threads(1)


def small_model(rounds: int = 2, hidden: int = 16, seed: int = 0) -> RegalGNN:
    torch.manual_seed(seed)
    return RegalGNN(RegalConfig(hidden=hidden, rounds=rounds))


def assert_topological(graph: Graph, order: np.ndarray) -> None:
    assert sorted(order.tolist()) == list(range(graph.n))
    pos = np.empty(graph.n, dtype=np.int64)
    pos[order] = np.arange(graph.n)
    assert np.all(pos[graph.edge_src] < pos[graph.edge_dst])


# ------------------------------------------------------------------ configs
def test_config_round_trip_and_validation():
    cfg = RegalConfig(hidden=32, rounds=2, choices=(0.5, 1, 3))
    assert cfg.choices == (0.5, 1.0, 3.0) and cfg.uniform_index == 1
    assert RegalConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert RegalConfig().choices == DEFAULT_CHOICES and RegalConfig().edge_features == EDGE_DIM
    bad = [
        {"hidden": 0},
        {"rounds": 0},
        {"rounds": 1.5},
        {"in_features": 3},
        {"edge_features": 5},
        {"choices": ()},
        {"choices": (0.5, 2.0)},  # uniform unreachable
        {"choices": (1.0, 0.5)},  # not increasing
        {"choices": (0.0, 1.0)},
        {"choices": (1.0, math.inf)},
        {"choices": "1"},
    ]
    for kwargs in bad:
        with pytest.raises(InvalidParameterError):
            RegalConfig(**kwargs)
    with pytest.raises(InvalidParameterError, match="unknown"):
        RegalConfig.from_dict({"hidden": 8, "width": 3})


def test_train_config_round_trip_and_validation():
    cfg = RegalTrainConfig(objective="peak", nodes=(20, 30), epochs=2, choices=(1, 2))
    assert RegalTrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    for kwargs in (
        {"objective": "time"},
        {"nodes": (30, 20)},
        {"epochs": 0},
        {"lr": -1.0},
        {"baseline_decay": 1.0},
        {"choices": (2.0,)},
        {"evaluations": 0},
        {"batch": 0},
    ):
        with pytest.raises(InvalidParameterError):
            RegalTrainConfig(**kwargs)


# ------------------------------------------------------------------ the network
def test_forward_shapes_and_edge_features():
    g = regal_graph(40, seed=3)
    model = small_model()
    la, lb = regal_logits(model, g)
    assert la.shape == lb.shape == (g.n, len(DEFAULT_CHOICES))
    ef = edge_features(g)
    assert ef.shape == (g.m, EDGE_DIM) and ef.dtype == np.float32
    assert np.all((ef >= 0) & (ef <= 1))


def test_messages_flow_forward_and_backward():
    """With one round, node 1 of the chain 0 -> 1 -> 2 hears both neighbours; node 0
    does not hear node 2 (two hops away)."""
    model = small_model(rounds=1, seed=1)
    cfg = model.config
    src, dst = torch.tensor([0, 1]), torch.tensor([1, 2])
    edge_x = torch.rand(2, cfg.edge_features)
    x = torch.rand(3, cfg.in_features)

    def out(feats):
        with torch.no_grad():
            return torch.cat(model(feats, edge_x, src, dst), dim=1)

    base = out(x)
    pred_changed, succ_changed = x.clone(), x.clone()
    pred_changed[0] += 1.0
    succ_changed[2] += 1.0
    assert not torch.allclose(out(pred_changed)[1], base[1])  # forward message 0 -> 1
    assert not torch.allclose(out(succ_changed)[1], base[1])  # backward message 2 -> 1
    assert torch.equal(out(succ_changed)[0], base[0])  # one round reaches one hop only


def test_untrained_greedy_policy_is_uniform():
    model = RegalGNN(RegalConfig())
    alpha, beta = regal_betas(model, layered_graph(50, seed=1))
    assert np.all(alpha == 1.0) and np.all(beta == 1.0)


def test_sample_betas_choices_and_log_prob():
    g = regal_graph(30, seed=2)
    model = small_model()
    choices = model.config.choices
    logits = regal_logits(model, g)
    alpha, beta, log_prob = sample_betas(logits, choices, seed=4)
    assert set(alpha) <= set(choices) and set(beta) <= set(choices)
    assert alpha.shape == beta.shape == (g.n,)
    ia = torch.tensor([choices.index(a) for a in alpha])
    ib = torch.tensor([choices.index(b) for b in beta])
    expected = (
        torch.distributions.Categorical(logits=logits[0]).log_prob(ia).sum()
        + torch.distributions.Categorical(logits=logits[1]).log_prob(ib).sum()
    )
    assert float(log_prob.detach()) == pytest.approx(float(expected.detach()), rel=1e-5)
    log_prob.backward()  # the log-probability carries the gradient to the model
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    again = sample_betas(logits, choices, seed=4)
    assert np.array_equal(again[0], alpha) and np.array_equal(again[1], beta)
    ga, gb, _ = sample_betas(logits, choices, greedy=True)
    assert np.array_equal(ga, np.asarray(choices)[logits[0].argmax(1).numpy()])
    assert np.array_equal(gb, np.asarray(choices)[logits[1].argmax(1).numpy()])
    with pytest.raises(InvalidParameterError):
        sample_betas(logits, (1.0, 2.0), seed=0)


# ------------------------------------------------------------------ BRKGA with learned mutants
def test_regal_brkga_time_limit_covers_the_forward_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's load and forward pass come off the time limit (issue 24: solve
    --orderer regal-brkga --time-limit 10 took 12.6 s on 2,000 ops)."""
    import time

    import heuristics.neural.regal as module

    forward = module.regal_betas

    def slow_forward(*args, **kwargs):
        time.sleep(2.0)
        return forward(*args, **kwargs)

    monkeypatch.setattr(module, "regal_betas", slow_forward)
    g = layered_graph(300, seed=5)
    objective = make_objective("mtpp", 4)
    model = small_model(seed=2)
    regal_brkga(g, objective, model, evaluations=200, seed=1)  # warm: kernels loaded
    t = time.perf_counter()
    res = regal_brkga(g, objective, model, evaluations=10**6, seed=1, time_limit=3.0)
    # about 3 s when the forward pass comes off the limit, 5 s (2 s + 3 s of BRKGA) when it
    # does not; the 1 s either side absorbs a loaded machine (under pytest -n 2 next to the
    # soundness fuzz, a 1.5 s limit with a 1 s forward pass once took 2.6 s)
    assert time.perf_counter() - t < 4.0
    assert res.stopped_by_time and res.evaluations > 0
    assert_topological(g, res.order)


@pytest.mark.parametrize("objective_name", ["peak", "mtpp"])
def test_regal_brkga_cost_is_recomputed_exactly(objective_name):
    if objective_name == "peak":
        g, objective = layered_graph(40, seed=5), make_objective("peak")
    else:
        g, objective = regal_graph(40, seed=5), make_objective("mtpp", 4)
    model = small_model(seed=2)
    res = regal_brkga(g, objective, model, evaluations=300, seed=1)
    assert res.alpha is not None and res.beta is not None
    check_learned_brkga(g, objective, res)
    assert res.cost == pytest.approx(float(objective.order_costs(g, res.order)[0]), rel=1e-12)
    again = regal_brkga(g, objective, model, evaluations=300, seed=1)
    assert again.cost == res.cost and np.array_equal(again.order, res.order)


def test_all_ones_betas_are_uniform_mutants_but_not_the_same_draws():
    """Beta(1, 1) is the uniform distribution, yet numpy draws it differently from
    ``random()``: both runs are valid and no worse than the seeds, not identical."""
    g, objective = regal_graph(40, seed=6), make_objective("mtpp", 4)
    ones = np.ones(g.n)
    a = beta_brkga(g, objective, (ones, ones), evaluations=200, seed=3)
    u = uniform_brkga(g, objective, evaluations=200, seed=3)
    assert a.evaluations == u.evaluations
    bound = objective.key_costs(g, classic_priorities(g)).min()
    for res in (a, u):
        assert_topological(g, res.order)
        assert res.cost <= bound + 1e-9
    assert u.alpha is None and u.beta is None
    with pytest.raises(InvalidParameterError):
        beta_brkga(g, objective, (ones, -ones), evaluations=200)
    with pytest.raises(InvalidParameterError):
        beta_brkga(g, objective, (ones[:-1], ones[:-1]), evaluations=200)


# ------------------------------------------------------------------ training and weights
TINY = RegalTrainConfig(
    objective="mtpp",
    k=4,
    nodes=(20, 30),
    epochs=2,
    graphs_per_epoch=3,
    batch=2,
    evaluations=60,
    validation=2,
    hidden=16,
    rounds=2,
    seed=3,
)


def _drop_time(history):
    return [{k: v for k, v in row.items() if k != "seconds"} for row in history]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("regal")
    lines: list[str] = []
    calls: list[tuple[int, int]] = []
    result = train_regal(TINY, out, epoch_graphs, progress=lambda e, n, row: calls.append((e, n)), log=lines.append)
    return out, result, lines, calls


def test_training_writes_checkpoint_history_and_weights(trained):
    out, result, lines, calls = trained
    assert calls == [(1, 2), (2, 2)] and len(lines) == 2
    for name in (CHECKPOINT, HISTORY, WEIGHTS, PLOT):
        assert (out / name).is_file()
    history = json.loads((out / HISTORY).read_text())
    assert [row["epoch"] for row in history] == [1, 2]
    assert all(math.isfinite(row[k]) for row in history for k in ("loss", "mean_reward", "validation_ratio"))
    state = torch.load(out / CHECKPOINT, map_location="cpu", weights_only=True)
    assert state["epoch"] == 2 and state["history"] == result.history
    assert math.isfinite(result.validation_ratio) and 0 <= result.best_epoch <= 2


def test_resume_continues_exactly(trained, tmp_path):
    out, result, _, _ = trained
    resume_dir = tmp_path / "resumed"
    resume_dir.mkdir()
    (resume_dir / CHECKPOINT).write_bytes((out / CHECKPOINT).read_bytes())
    three = dataclasses.replace(TINY, epochs=3)
    resumed = train_regal(three, resume_dir, epoch_graphs)
    assert resumed.history[:2] == result.history  # the prefix is the checkpoint's, untouched
    straight = train_regal(three, tmp_path / "straight", epoch_graphs)
    assert _drop_time(resumed.history) == _drop_time(straight.history)
    with pytest.raises(InvalidParameterError, match="other training options"):
        train_regal(dataclasses.replace(three, lr=0.5), resume_dir, epoch_graphs)


def test_searches_over_processes_train_as_one_process(trained, tmp_path):
    _, result, _, _ = trained
    spread = train_regal(dataclasses.replace(TINY, jobs=2), tmp_path, epoch_graphs)
    assert _drop_time(spread.history) == _drop_time(result.history)


def test_samples_share_a_leave_one_out_baseline(monkeypatch):
    cfg = dataclasses.replace(TINY, samples=3)
    g = regal_graph(25, seed=4)
    model = small_model()
    costs = [10.0, 9.0, 12.0, 10.5]  # H(U), then the three samples' H(G, D)
    monkeypatch.setattr(regal_training, "brkga_costs", lambda runs, *a: costs[: len(runs)])
    losses: list[float] = []
    rewards = regal_training._reinforce_batch(model, [g], 0, 5, -1.0, make_objective("mtpp", 4), cfg, losses)
    got = [p.grad.clone() for p in model.parameters()]
    assert rewards == pytest.approx([-0.9, -1.2, -1.05])

    model.zero_grad()
    logits = regal_logits(model, g)
    expected = torch.zeros(())
    for s, r in enumerate(rewards):
        _, _, log_prob = sample_betas(
            logits, model.config.choices, seed=regal_training._sample_seed(TINY.seed, 5, 0, s)
        )
        others = (sum(rewards) - r) / 2
        expected = expected - (r - others) * log_prob / 3
    expected.backward()
    assert losses == pytest.approx([float(expected)])
    for a, b in zip(got, (p.grad for p in model.parameters())):
        assert torch.allclose(a, b, atol=1e-6)

    monkeypatch.setattr(regal_training, "brkga_costs", lambda runs, *a: [10.0] * len(runs))
    model.zero_grad()
    regal_training._reinforce_batch(model, [g], 0, 5, -1.0, make_objective("mtpp", 4), cfg, [])
    assert all(float(p.grad.abs().max()) == 0 for p in model.parameters())  # equal rewards: nothing to learn
    with pytest.raises(InvalidParameterError, match="samples"):
        RegalTrainConfig(samples=0)


def test_saved_weights_load_and_give_deterministic_choices(trained):
    out, _, _, _ = trained
    model = load_regal(out / WEIGHTS)
    assert not model.training and model.config.hidden == 16
    assert load_regal(str(out / WEIGHTS)) is model  # cached per file
    g = regal_graph(30, seed=9)
    a1, b1 = regal_betas(model, g)
    a2, b2 = regal_betas(model, g)
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2)
    objective = make_objective("mtpp", 4)
    by_path = regal_brkga(g, objective, out / WEIGHTS, evaluations=100, seed=2)
    by_model = regal_brkga(g, objective, model, evaluations=100, seed=2)
    assert by_path.cost == by_model.cost and np.array_equal(by_path.alpha, a1)


def test_bad_weights_files_raise(tmp_path):
    with pytest.raises(WeightsError):
        load_regal(tmp_path / "missing.pt")
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x00\x01 not a torch file \xff" * 10)
    with pytest.raises(WeightsError):
        load_regal(garbage)
    model = small_model()
    wrong_kind = save_weights(tmp_path / "topo.pt", "topoformer", model.config.to_dict(), model.state_dict())
    with pytest.raises(WeightsError, match="regal"):
        load_regal(wrong_kind)
    bad_config = save_weights(tmp_path / "cfg.pt", "regal", {"hidden": -1}, model.state_dict())
    with pytest.raises(WeightsError):
        load_regal(bad_config)
    other = RegalGNN(RegalConfig(hidden=8, rounds=1))
    mismatch = save_weights(tmp_path / "shape.pt", "regal", model.config.to_dict(), other.state_dict())
    with pytest.raises(WeightsError):
        load_regal(mismatch)


@pytest.mark.parametrize("name", ["regal-peak", "regal-mtpp"])
def test_shipped_regal_weights_load_offline_and_choose_deterministically(name: str) -> None:
    g = regal_graph(60, seed=21)
    model = load_regal(name)
    a1, b1 = regal_betas(model, g, greedy=True)
    a2, b2 = regal_betas(load_regal(name), g, greedy=True)
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2)
    assert set(np.unique(np.concatenate([a1, b1]))) <= set(model.config.choices)
    objective = make_objective(name.split("-")[1], 4)
    res = regal_brkga(g, objective, name, evaluations=200, seed=3)
    assert is_topological(g, res.order)
    assert res.cost == pytest.approx(float(objective.order_costs(g, res.order)[0]))


def test_imitation_epochs_fit_the_teacher_then_reinforce(tmp_path) -> None:
    cfg = dataclasses.replace(TINY, objective="peak", epochs=3, imitation_epochs=2, teacher_effort=8)
    result = train_regal(cfg, tmp_path, epoch_graphs)
    phases = [row["phase"] for row in result.history]
    assert phases == [1.0, 1.0, 0.0]
    assert all(math.isnan(row["mean_reward"]) for row in result.history[:2])
    assert math.isfinite(result.history[2]["mean_reward"])
    assert result.history[1]["loss"] < result.history[0]["loss"] * 1.5  # a finite cross-entropy, not diverging
    with pytest.raises(InvalidParameterError, match="imitation_epochs"):
        RegalTrainConfig(imitation_epochs=-1)
