"""Training the REGAL policy with REINFORCE (REGAL Section 2.3, App. A.3).

The policy (:class:`heuristics.neural.regal.RegalGNN`) is a contextual bandit: for a
graph ``G`` it picks ``alpha`` and ``beta`` per node from the discrete ``choices``
(the action ``D``), BRKGA runs with those mutant distributions, and the reward is

    r(D, G) = -M(G) / H(G, U),   M(G) = H(G, D)

with ``H(G, U)`` BRKGA with uniform mutants on the same graph, with the *same* BRKGA
seed, budget and seed population (:func:`heuristics.neural.regal.beta_brkga`), so a
reward above -1 means the learned distributions beat plain BRKGA.  The gradient is
REINFORCE with a scalar baseline,

    loss = mean over a batch of graphs of -(r - b) log p(D | G),

``log p`` the sum over nodes of both categorical log-probabilities.  Choices the
paper leaves open, made here:

* ``b`` is an exponential moving average of the rewards, not the paper's separate
  baseline GNN ``b(G)``: it starts at -1 (the reward of matching plain BRKGA), a
  batch's advantages use the value from before the batch, and after it
  ``b <- decay b + (1 - decay) mean(r)`` (``baseline_decay``).  Rewards are ratios, so
  one scalar fits graphs of any size;
* one Adam step per ``batch`` graphs (the loss above is the batch mean), gradient
  norm clipped to 1 (the log-probability sums over ``2 n`` choices);
* with ``samples = s > 1`` each graph gets ``s`` actions, and each one's baseline is the
  mean reward of the graph's other ``s - 1`` (leave-one-out, unbiased since the other
  draws are independent of it; Kool, van Hoof and Welling, "Buy 4 REINFORCE samples,
  get a baseline for free!", 2019): the BRKGA noise and the graph's own hardness cancel
  within the graph, where the scalar average mixes them across graphs;
* the BRKGA runs of a batch (every sample's ``H(G, D)`` and each graph's ``H(G, U)``)
  and of a validation go over ``jobs`` processes: the runs are the epoch's cost
  (1.2 s each at 5,000 evaluations on 150 ops) and do not depend on one another
  once the actions are drawn, so the results are those of one process;
* a fresh set of generated graphs every epoch (from the caller, such as
  :func:`mtpp.generators.training.epoch_graphs`: layered graphs for ``"peak"``,
  REGAL-style graphs for ``"mtpp"``), nothing cached
  across epochs;
* validation: the mean of ``M / H(U)`` with the *greedy* choices on a fixed set of
  graphs, each with a fixed BRKGA seed (``H(U)`` computed once per run);
  ``weights.pt`` holds the policy with the lowest validation ratio seen, the
  untrained one included (whose greedy choice is ``Beta(1, 1)``), so shipping never
  does worse on validation than plain BRKGA up to sampling noise.

Everything is seeded: graph ``i`` of epoch ``e``, its action sample and its BRKGA seed
are functions of ``(seed, e, i)``, and the model starts from ``torch.manual_seed(seed)``
(in a forked RNG, leaving the caller's alone).  So no random-generator state needs
saving: a run resumed from ``checkpoint.pt`` (written atomically after every epoch,
readable with ``torch.load(weights_only=True)``) continues exactly as an
uninterrupted one would.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from heuristics.neural.datasets import VALIDATION_EPOCH, EpochGraphs
from heuristics.neural.features import N_SCALAR, PE_DIM
from heuristics.neural.history import plot_history as plot_curves
from heuristics.neural.jobs import ordered_map
from heuristics.neural.objectives import OrderObjective, make_objective
from heuristics.neural.proof_data import epoch_picks, teacher_examples
from heuristics.neural.regal import (
    DEFAULT_CHOICES,
    KIND,
    GraphInputs,
    RegalConfig,
    RegalGNN,
    beta_brkga,
    regal_logits,
    sample_betas,
)
from heuristics.neural.runs import CHECKPOINT, HISTORY, PLOT, WEIGHTS, EpochLoop, EpochProgress, TrainingOptions
from heuristics.neural.teachers import beta_targets, teacher_order
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph

__all__ = ["CHECKPOINT", "HISTORY", "PLOT", "WEIGHTS", "RegalTrainConfig", "RegalTrainResult", "train_regal"]
PLOT_KEYS = ("loss", "mean_reward", "validation_ratio")
PLOT_TITLE = "REGAL (lower validation ratio is better)"

Log = Callable[[str], None]


@dataclass(frozen=True)
class RegalTrainConfig(TrainingOptions):
    """What to train and how.

    ``objective`` is ``"peak"`` or ``"mtpp"`` (with ``k`` blocks); training graphs have
    a node count uniform in ``nodes``; each of ``epochs`` epochs trains on
    ``graphs_per_epoch`` fresh graphs in Adam steps of ``batch`` graphs; every BRKGA
    run (learned and uniform) spends about ``evaluations`` decodes (the paper uses
    5000); ``validation`` graphs form the fixed validation set.  ``hidden``,
    ``rounds`` and ``choices`` are the model's (:class:`~heuristics.neural.regal.RegalConfig`);
    ``threads`` is torch's thread count; ``jobs`` processes draw each epoch's graphs
    (:class:`~heuristics.neural.datasets.EpochGraphs`) and run its BRKGA searches;
    ``samples`` actions per graph share a leave-one-out baseline (module docstring).
    The first ``imitation_epochs`` epochs instead fit the choices to a teacher's order
    by cross-entropy, a warm start for REINFORCE: ``teacher="approx"`` (:mod:`heuristics.neural.teachers`,
    ``teacher_effort``) on the epoch's fresh graphs, or ``teacher="exact"``: the
    next ``graphs_per_epoch`` proven orders of the data sets ``teacher_data`` within
    ``max_gap`` (:mod:`heuristics.neural.proof_data`; for the bottleneck, those
    labelled at ``k``).
    """

    objective: str = "mtpp"
    k: int = 8
    nodes: tuple[int, int] = (50, 150)
    epochs: int = 30
    graphs_per_epoch: int = 16
    batch: int = 4
    evaluations: int = 1000
    validation: int = 8
    lr: float = 1e-3
    baseline_decay: float = 0.9
    seed: int = 0
    hidden: int = 64
    rounds: int = 3
    choices: tuple[float, ...] = DEFAULT_CHOICES
    threads: int = 1
    imitation_epochs: int = 0
    teacher_effort: int = 64
    teacher: str = "approx"
    teacher_data: tuple[str, ...] = ()
    max_gap: float = 0.0
    jobs: int = 1
    samples: int = 1

    def __post_init__(self) -> None:
        counts = "k epochs graphs_per_epoch batch evaluations validation threads teacher_effort jobs samples".split()
        self.check_common(counts, "RegalTrainConfig.")
        for name in counts:
            object.__setattr__(self, name, int(getattr(self, name)))
        seed = self.seed
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InvalidParameterError(f"RegalTrainConfig.seed must be an integer >= 0, got {seed!r}")
        for name in ("lr", "baseline_decay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise InvalidParameterError(f"RegalTrainConfig.{name} must be a number, got {value!r}")
            object.__setattr__(self, name, float(value))
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise InvalidParameterError(f"RegalTrainConfig.lr must be > 0, got {self.lr!r}")
        if not 0 <= self.baseline_decay < 1:
            raise InvalidParameterError(f"RegalTrainConfig.baseline_decay must be in [0, 1), got {self.baseline_decay}")
        object.__setattr__(self, "choices", self.model_config().choices)  # validates hidden, rounds, choices

    def model_config(self) -> RegalConfig:
        return RegalConfig(N_SCALAR + PE_DIM, hidden=self.hidden, rounds=self.rounds, choices=tuple(self.choices))


@dataclass
class RegalTrainResult:
    """Where the run wrote its files, its per-epoch history, and the shipped policy's
    validation ratio ``M / H(U)`` and epoch (0: the untrained policy)."""

    out_dir: Path
    weights: Path
    history: list[dict[str, float]] = field(default_factory=list)
    validation_ratio: float = math.nan
    best_epoch: int = 0


def _seed(seed: int, epoch: int, index: int, stream: int) -> int:
    """Seed of one random stream (0: action sample, 1: BRKGA) of graph ``index`` of ``epoch``."""
    return int(np.random.default_rng([seed, epoch + 1, index, stream, 11]).integers(2**31))


def _ratio(learned: float, uniform: float) -> float:
    """``M / H(U)``; 1 when both are 0 (nothing to gain)."""
    if uniform > 0:
        return learned / uniform
    return 1.0 if learned <= uniform else math.inf


def _sample_seed(seed: int, epoch: int, index: int, sample: int) -> int:
    """Seed of action sample ``sample`` of graph ``index`` of ``epoch`` (sample 0 keeps
    the stream of one sample per graph)."""
    return _seed(seed, epoch, index, 0 if sample == 0 else 2 + sample)


Run = tuple[Graph, tuple[np.ndarray, np.ndarray] | None, int]  # graph, mutant Betas (None: uniform), BRKGA seed


def brkga_costs(runs: Sequence[Run], objective: OrderObjective, evaluations: int, jobs: int = 1) -> list[float]:
    """The cost of :func:`~heuristics.neural.regal.beta_brkga` for each ``(graph,
    mutant_beta, seed)`` of ``runs``, over ``jobs`` processes when more than one (the
    same costs: each run is seeded)."""
    return ordered_map(_brkga_cost, [(g, objective, d, evaluations, s) for g, d, s in runs], jobs)


def _brkga_cost(
    graph: Graph,
    objective: OrderObjective,
    mutant_beta: tuple[np.ndarray, np.ndarray] | None,
    evaluations: int,
    seed: int,
) -> float:
    return beta_brkga(graph, objective, mutant_beta, evaluations, seed).cost


def validation_ratios(
    model: RegalGNN,
    graphs: Sequence[Graph],
    objective: OrderObjective,
    evaluations: int,
    seeds: Sequence[int],
    uniform: Sequence[float],
    jobs: int = 1,
) -> np.ndarray:
    """``M / H(U)`` per graph with the model's greedy choices and the given BRKGA seeds
    (the searches over ``jobs`` processes)."""
    model.eval()
    runs: list[Run] = []
    for g, s in zip(graphs, seeds):
        with torch.no_grad():
            alpha, beta, _ = sample_betas(regal_logits(model, g), model.config.choices, greedy=True)
        runs.append((g, (alpha, beta), s))
    costs = brkga_costs(runs, objective, evaluations, jobs)
    return np.array([_ratio(c, u) for c, u in zip(costs, uniform)])


def plot_history(history: Sequence[dict[str, float]], path: str | os.PathLike[str]) -> Path:
    """A PNG of the loss, the mean training reward and the validation ratio per epoch."""
    return plot_curves(history, path, PLOT_KEYS, title=PLOT_TITLE)


def train_regal(
    config: RegalTrainConfig,
    out_dir: str | os.PathLike[str],
    graphs: EpochGraphs,
    resume: bool = True,
    progress: EpochProgress | None = None,
    log: Log | None = None,
    time_limit: float | None = None,
) -> RegalTrainResult:
    """Train a REGAL policy by REINFORCE (module docstring) on the training graphs
    ``graphs`` draws (such as :func:`mtpp.generators.training.epoch_graphs`); write
    ``checkpoint.pt`` and ``history.json`` after every epoch, ``weights.pt`` (kind
    ``"regal"``, loadable by :func:`heuristics.neural.regal.load_regal`) and
    ``history.png`` at the end.  ``resume`` continues from ``checkpoint.pt`` when it
    exists (its options other than ``epochs`` and ``threads`` must match ``config``).
    ``progress(epoch, epochs, row)`` is called after each epoch with its history row;
    ``log`` receives one line per epoch.  ``time_limit`` (seconds from the call) stops
    before an epoch that would end past it (:class:`~heuristics.neural.runs.EpochClock`)."""
    loop = EpochLoop(config, out_dir, graphs, resume, progress, time_limit)
    objective = make_objective(config.objective, config.k)
    mcfg = config.model_config()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = RegalGNN(mcfg)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)

    val_graphs = loop.graphs(VALIDATION_EPOCH, config.validation)
    val_seeds = [_seed(config.seed, VALIDATION_EPOCH, i, 1) for i in range(len(val_graphs))]
    val_uniform = brkga_costs(
        [(g, None, s) for g, s in zip(val_graphs, val_seeds)], objective, config.evaluations, config.jobs
    )

    def validate() -> float:
        ratios = validation_ratios(
            model, val_graphs, objective, config.evaluations, val_seeds, val_uniform, config.jobs
        )
        return float(np.mean(ratios))

    saved = loop.state
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimiser.load_state_dict(saved["optimiser"])
        baseline = float(saved["baseline"])
        best_state, best_ratio, best_epoch = saved["best_model"], float(saved["best_ratio"]), int(saved["best_epoch"])
        initial_ratio = float(saved["initial_ratio"])
    else:
        t0 = time.perf_counter()
        baseline = -1.0
        initial_ratio = best_ratio = validate()
        best_state, best_epoch = _copy_state(model), 0
        loop.elapsed = time.perf_counter() - t0

    exact = None
    if config.teacher == "exact" and loop.start < config.imitation_epochs:
        exact = teacher_examples(config.teacher_data, config.max_gap, config.objective, config.k)

    def run_epoch(epoch: int, imitating: bool) -> dict[str, float]:
        nonlocal baseline, best_ratio, best_state, best_epoch
        orders: list[np.ndarray | None] = [None] * config.graphs_per_epoch
        if imitating and exact is not None:
            picked = [exact[i] for i in epoch_picks(len(exact), config.seed, epoch, config.graphs_per_epoch)]
            drawn, orders = [e.graph for e in picked], [e.order for e in picked]
        else:
            drawn = loop.graphs(epoch, config.graphs_per_epoch)
        model.train()
        rewards, losses = [], []
        for first in range(0, len(drawn), config.batch):
            batch = drawn[first : first + config.batch]
            optimiser.zero_grad()
            batch_rewards: list[float] = []
            if imitating:
                for j, g in enumerate(batch):
                    i = first + j
                    logits = regal_logits(model, GraphInputs.of(g, mcfg))
                    teacher = orders[i]
                    if teacher is None:
                        teacher = teacher_order(g, objective, config.teacher_effort, _seed(config.seed, epoch, i, 2))
                    ta, tb = beta_targets(teacher, mcfg.choices)
                    loss = (F.cross_entropy(logits[0], ta) + F.cross_entropy(logits[1], tb)) / len(batch)
                    loss.backward()
                    losses.append(float(loss.detach()) * len(batch))
            else:
                batch_rewards = _reinforce_batch(model, batch, first, epoch, baseline, objective, config, losses)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            if batch_rewards:
                decay = config.baseline_decay
                baseline = decay * baseline + (1 - decay) * float(np.mean(batch_rewards))
            rewards.extend(batch_rewards)
        mean_reward = float(np.mean(rewards)) if rewards else math.nan
        ratio = validate()
        if ratio < best_ratio:
            best_ratio, best_state, best_epoch = ratio, _copy_state(model), epoch + 1
        return {
            "loss": float(np.mean(losses)),
            "mean_reward": mean_reward,
            "train_ratio": -mean_reward,
            "validation_ratio": ratio,
            "baseline": baseline,
            "phase": float(imitating),
        }

    def state() -> dict[str, object]:
        return {
            "model": model.state_dict(),
            "optimiser": optimiser.state_dict(),
            "baseline": baseline,
            "best_model": best_state,
            "best_ratio": best_ratio,
            "best_epoch": best_epoch,
            "initial_ratio": initial_ratio,
        }

    def line(row: dict[str, float]) -> None:
        if log is not None:
            log(
                f"epoch {row['epoch']}/{config.epochs}: loss {row['loss']:.4g}, train M/H(U) {row['train_ratio']:.4f}, "
                f"validation M/H(U) {row['validation_ratio']:.4f} (best {best_ratio:.4f} at epoch {best_epoch}), "
                f"{row['seconds']:.0f} s"
            )

    loop.run(run_epoch, state, line)
    weights = loop.finish(
        KIND,
        mcfg.to_dict(),
        best_state,
        {
            "objective": config.objective,
            "k": config.k,
            "pe_dim": mcfg.pe_dim,
            "seed": config.seed,
            "epochs": len(loop.history),
            "best_epoch": best_epoch,
            "validation_ratio": best_ratio,
            "initial_validation_ratio": initial_ratio,
            "training_seconds": loop.elapsed,
            "evaluations": config.evaluations,
            "training": config.to_dict(),
        },
        PLOT_KEYS,
        PLOT_TITLE,
    )
    return RegalTrainResult(loop.out, weights, loop.history, best_ratio, best_epoch)


def _reinforce_batch(
    model: RegalGNN,
    batch: Sequence[Graph],
    first: int,
    epoch: int,
    baseline: float,
    objective: OrderObjective,
    config: RegalTrainConfig,
    losses: list[float],
) -> list[float]:
    """One REINFORCE batch (module docstring): draw ``config.samples`` actions per graph,
    run every BRKGA search over ``config.jobs`` processes, accumulate the gradient of the
    batch's mean loss; returns the rewards and appends the graphs' losses to ``losses``."""
    m = config.samples
    log_probs: list[list[torch.Tensor]] = []
    runs: list[Run] = []
    for j, g in enumerate(batch):
        i = first + j
        logits = regal_logits(model, GraphInputs.of(g, model.config))
        bseed = _seed(config.seed, epoch, i, 1)
        log_probs.append([])
        runs.append((g, None, bseed))
        for s in range(m):
            alpha, beta, log_prob = sample_betas(
                logits, model.config.choices, seed=_sample_seed(config.seed, epoch, i, s)
            )
            log_probs[-1].append(log_prob)
            runs.append((g, (alpha, beta), bseed))
    costs = brkga_costs(runs, objective, config.evaluations, config.jobs)
    rewards: list[float] = []
    for j, graph_log_probs in enumerate(log_probs):
        uniform, learned = costs[j * (m + 1)], costs[j * (m + 1) + 1 : (j + 1) * (m + 1)]
        r = [-_ratio(c, uniform) for c in learned]
        total = sum(r)
        graph_loss = torch.zeros(())
        for s, log_prob in enumerate(graph_log_probs):
            b = (total - r[s]) / (m - 1) if m > 1 else baseline
            graph_loss = graph_loss - (r[s] - b) * log_prob / m
        loss = graph_loss / len(batch)
        loss.backward()
        losses.append(float(loss.detach()) * len(batch))
        rewards.extend(r)
    return rewards


def _copy_state(model: RegalGNN) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
