"""Training Topoformer with REINFORCE and a greedy-rollout baseline (Topoformer Section 4.3).

The policy ``p(sigma | G)`` of Eq. (6) and (8) is Topoformer's priorities decoded
step by step; the gradient is Eq. (9)

    grad J = E[(C(sigma) - b(G)) grad log p(sigma | G)]

with ``b(G)`` the cost of the greedy order of a *baseline* policy (Eq. 10), a frozen
copy of the model that is replaced by the trained one at the end of an epoch in
which the trained one's greedy orders beat it on a fixed validation set (App. C.4).
``C`` is either objective of :mod:`heuristics.neural.objectives`.  Each graph gets
``samples`` sampled orders (Eq. 8), so one graph gives several terms; the advantage
is taken relative to the baseline cost, ``(C - b) / b``, which makes graphs of
different scales weigh alike.  A fresh set of generated graphs every epoch
(App. C.1; the caller's :class:`~heuristics.neural.datasets.EpochGraphs`, such as
:func:`mtpp.generators.training.epoch_graphs`); Adam with the learning rate decayed
by ``lr_decay`` per epoch (App. C.1: 1e-4 and 0.996 on a GPU); ``reinforce_lr``
(default the paper's 1e-4) in the REINFORCE epochs, ``lr`` in the imitation epochs.

Warm start by imitation (not in the paper, which trains for 1-2 GPU days): the
first ``imitation_epochs`` epochs maximise the likelihood of a teacher's order under
the policy itself, ``-log p(sigma* | G) / n`` with ``log p`` of Eq. 6 and 8
(:func:`heuristics.neural.policy.order_log_probs`).  That is a listwise ranking loss
over the ops ready at each step: step ``t`` is a softmax over the schedulable set
``R_t`` whose target is the teacher's op, so the loss is zero exactly when greedy
(and sampled) decoding reproduces the teacher, and it only asks the priorities to
order ops that compete at some step (a pointwise regression onto the teacher's
positions would also fit the order of ops that never meet, and spend the
capacity there).  For the bottleneck a block's cost depends on its set of ops alone
(MTPP Eq. 3), so the teacher's order fixes only its slicing's blocks and their
sequence: step ``t``'s target widens to the ready ops of the teacher's block there
(:func:`~heuristics.neural.policy.batch_log_probs` with ``picks``), the loss is zero
when greedy decoding lists the teacher's blocks one after another, and the capacity
is not spent on an order within blocks that the teacher chose arbitrarily.  The
teacher (``teacher``):

* ``"exact"``: orders proven optimal (or within ``max_gap`` of the proven bound),
  read from the data sets ``teacher_data`` (:mod:`heuristics.neural.proof_data`,
  built by ``mtpp train ... --teacher exact``): the best-first search's orders for
  peak memory, certify's partitions at ``k`` as orders of contiguous blocks for the
  bottleneck; an imitation epoch takes the next ``graphs_per_epoch`` examples of a
  seeded shuffle of all of them;
* ``"approx"``: the approximate DP with state collapsing (``teacher_effort`` states
  per level) for peak memory, BRKGA with ``teacher_effort`` evaluations for the
  bottleneck, on the epoch's fresh graphs.

REINFORCE then optimises the objective itself. ``init`` (a Topoformer weights file,
or a shipped name, of the same model shape) starts the model and the first baseline
from trained weights instead of a random draw: fine-tuning on more data or larger
graphs. Imitation runs on padded batches (one forward pass and one segmented
log-sum-exp per batch, :func:`heuristics.neural.policy.batch_log_probs`). ``device``
(``"cpu"``, ``"cuda"``) is where the model and its inputs live; decoding and costs
run on the CPU.  ``jobs`` processes encode the exact teacher's examples and draw each
epoch's fresh graphs.

Everything is seeded: graph ``i`` of epoch ``e`` and the sampling seeds are functions
of ``(seed, e, i)``, and the model starts from ``torch.manual_seed(seed)``, so a run
resumed from its checkpoint (written atomically after every epoch) continues exactly
as an uninterrupted one.
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from heuristics.neural.datasets import VALIDATION_EPOCH, EpochGraphs
from heuristics.neural.decoding import greedy_order, sample_orders
from heuristics.neural.features import N_SCALAR, PE_DIM, node_features
from heuristics.neural.masks import relation_matrix
from heuristics.neural.objectives import OrderObjective, make_objective
from heuristics.neural.policy import batch_log_probs, block_picks, order_log_probs, schedulable_pairs
from heuristics.neural.proof_data import epoch_picks, teacher_examples
from heuristics.neural.runs import CHECKPOINT, HISTORY, PLOT, WEIGHTS, EpochLoop, EpochProgress, TrainingOptions
from heuristics.neural.teachers import teacher_order
from heuristics.neural.topoformer import Topoformer, TopoformerConfig, pad_batch
from heuristics.neural.weights import load_state, load_weights
from heuristics.traversal import bfs_order, dfs_order
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph

__all__ = ["CHECKPOINT", "HISTORY", "PLOT", "WEIGHTS", "EpochProgress", "TrainConfig", "TrainResult", "train"]


@dataclass(frozen=True)
class TrainConfig(TrainingOptions):
    """What to train and how (the model's own sizes are :class:`TopoformerConfig`)."""

    objective: str = "peak"
    k: int = 8
    nodes: tuple[int, int] = (100, 200)
    epochs: int = 50
    graphs_per_epoch: int = 64
    batch: int = 8
    samples: int = 8
    validation: int = 32
    imitation_epochs: int = 0
    teacher_effort: int = 64
    lr: float = 1e-3
    reinforce_lr: float = 1e-4
    lr_decay: float = 0.99
    seed: int = 0
    layers: int = 3
    dim: int = 64
    heads_per_relation: tuple[int, ...] = (1, 1, 1, 1, 1, 1, 1)
    head_dim: int = 16
    alpha: float = 5.0
    dropout: float = 0.0
    init: str = ""
    threads: int = 1
    teacher: str = "approx"
    teacher_data: tuple[str, ...] = ()
    max_gap: float = 0.0
    device: str = "cpu"
    jobs: int = 1

    def __post_init__(self) -> None:
        self.check_common("k epochs graphs_per_epoch batch samples validation threads teacher_effort jobs".split())
        object.__setattr__(self, "heads_per_relation", tuple(int(h) for h in self.heads_per_relation))
        if not all(x > 0 and math.isfinite(x) for x in (self.lr, self.reinforce_lr)) or not 0 < self.lr_decay <= 1:
            raise InvalidParameterError("lr and reinforce_lr must be > 0 and lr_decay in (0, 1]")
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError) as exc:
            raise InvalidParameterError(
                f"device must be a torch device such as 'cpu' or 'cuda', got {self.device!r}"
            ) from exc
        self.model_config()  # the model's sizes, alpha and dropout, checked now

    def model_config(self) -> TopoformerConfig:
        return TopoformerConfig(
            in_features=N_SCALAR + PE_DIM,
            layers=self.layers,
            dim=self.dim,
            heads_per_relation=self.heads_per_relation,
            head_dim=self.head_dim,
            alpha=self.alpha,
            dropout=self.dropout,
        )


@dataclass
class Encoded:
    """A graph with its model inputs (computed once per graph)."""

    graph: Graph
    x: torch.Tensor
    relation: torch.Tensor

    @classmethod
    def of(cls, graph: Graph, device: str = "cpu") -> Encoded:
        x, relation = _inputs(graph)
        return cls(graph, torch.from_numpy(x).to(device), torch.from_numpy(relation).to(device))


@dataclass
class TrainResult:
    """Where the run wrote its files, and its per-epoch history."""

    out_dir: Path
    weights: Path
    history: list[dict[str, float]] = field(default_factory=list)


def greedy_costs(model: Topoformer, data: list[Encoded], objective: OrderObjective) -> np.ndarray:
    """Cost of the greedy order (Eq. 8, argmax at every step) of ``model`` on each graph."""
    model.eval()
    with torch.no_grad():
        costs = [
            float(
                objective.order_costs(e.graph, greedy_order(e.graph, model(e.x, e.relation).double().cpu().numpy()))[0]
            )
            for e in data
        ]
    return np.array(costs)


def classic_costs(data: list[Encoded], objective: OrderObjective) -> np.ndarray:
    """The better of the depth- and breadth-first orders, a fixed yardstick for the history."""
    return np.array(
        [min(float(objective.order_costs(e.graph, o(e.graph))[0]) for o in (dfs_order, bfs_order)) for e in data]
    )


def _sample_seed(seed: int, epoch: int, index: int) -> int:
    return int(np.random.default_rng([seed, epoch + 1, index, 7]).integers(2**31))


Target = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""A teacher order's schedulable pairs (op, step) and which of them count as its pick
(:func:`heuristics.neural.policy.block_picks`), on the training device."""


def teacher_target(graph: Graph, order: np.ndarray, device: str, blocks: np.ndarray | None = None) -> Target:
    """A teacher's order as the (op, step) pairs of its schedulable sets (Eq. 8), each
    step's pick widened to the ready ops of the order's block there when ``blocks``
    labels the ops (:meth:`~heuristics.neural.objectives.OrderObjective.blocks`)."""
    ops, steps = schedulable_pairs(graph, order)
    picks = block_picks(order, np.arange(graph.n) if blocks is None else blocks, ops, steps)
    return tuple(torch.from_numpy(a).to(device) for a in (ops, steps, picks))  # type: ignore[return-value]


def size_batches(sizes: list[int], batch: int, seed: int, epoch: int) -> list[list[int]]:
    """The indices of an imitation epoch's graphs (``sizes``: their op counts) in batches
    of ``batch`` graphs of similar size, the batches in a seeded random order: a padded
    batch costs every graph its largest graph's ``n^2`` attention, so a 900-op graph
    among 100-op ones pads the whole batch to 900."""
    order = sorted(range(len(sizes)), key=lambda i: (sizes[i], i))
    groups = [order[a : a + batch] for a in range(0, len(order), batch)]
    return [groups[g] for g in np.random.default_rng([seed, epoch, 29]).permutation(len(groups))]


def imitation_loss(model: Topoformer, batch: list[tuple[Encoded, Target]]) -> torch.Tensor:
    """The batch's mean of ``-log p(order | G) / n`` under Eq. 6 and 8 (per graph, the
    mean over steps of the cross-entropy between the softmax over the ready set and
    the teacher's pick, or its block's ready ops; module docstring), from one padded
    forward pass."""
    x, relation = pad_batch([(e.x, e.relation) for e, _ in batch])
    sizes = [e.graph.n for e, _ in batch]
    pairs = [(t[0], t[1]) for _, t in batch]
    log_p = batch_log_probs(model(x, relation), pairs, sizes, [t[2] for _, t in batch])
    return -(log_p / torch.as_tensor(sizes, dtype=log_p.dtype, device=log_p.device)).mean()


def hardware(device: str) -> str:
    """What trained: the GPU's name, or the CPU with its core count."""
    if torch.device(device).type == "cuda" and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(torch.device(device))} (torch {torch.__version__})"
    return f"CPU, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads (torch {torch.__version__})"


def _inputs(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    return node_features(graph), relation_matrix(graph)


class _ExactTeacher:
    """The examples of the exact teacher's data sets, encoded once, served as a
    seeded shuffle: imitation epoch ``e`` takes the next ``per_epoch`` of them."""

    def __init__(self, config: TrainConfig) -> None:
        examples = teacher_examples(config.teacher_data, config.max_gap, config.objective, config.k)
        self.examples = examples
        if config.jobs > 1:  # the features' eigenvectors dominate: spread them over processes
            from joblib import Parallel, delayed

            inputs = Parallel(n_jobs=config.jobs, batch_size=32)(delayed(_inputs)(e.graph) for e in examples)
        else:
            inputs = [_inputs(e.graph) for e in examples]
        self.encoded = [
            Encoded(e.graph, torch.from_numpy(x).to(config.device), torch.from_numpy(r).to(config.device))
            for e, (x, r) in zip(examples, inputs)
        ]
        objective = make_objective(config.objective, config.k)
        self.targets = [
            teacher_target(e.graph, e.order, config.device, objective.blocks(e.graph, e.order)) for e in examples
        ]
        self.seed = config.seed

    def epoch(self, epoch: int, per_epoch: int) -> list[tuple[Encoded, Target | None]]:
        picks = epoch_picks(len(self.examples), self.seed, epoch, per_epoch)
        return [(self.encoded[i], self.targets[i]) for i in picks]


def _reinforce_loss(
    model: Topoformer,
    baseline: Topoformer,
    batch: list[tuple[Encoded, Target | None]],
    objective: OrderObjective,
    config: TrainConfig,
    epoch: int,
    first: int,
    advantages: list[float],
) -> torch.Tensor:
    """The batch's REINFORCE loss (Eq. 9-10): per graph, ``samples`` sampled orders
    weighted by their cost's relative advantage over the baseline's greedy order;
    appends each graph's mean advantage to ``advantages``."""
    b = greedy_costs(baseline, [e for e, _ in batch], objective)
    total = torch.zeros((), device=config.device)
    for j, (e, _) in enumerate(batch):
        y = model(e.x, e.relation)
        seed_j = _sample_seed(config.seed, epoch, first + j)
        orders = sample_orders(e.graph, y.detach().double().cpu().numpy(), config.samples, seed_j)
        costs = objective.order_costs(e.graph, orders)
        adv = torch.from_numpy((costs - b[j]) / max(b[j], 1e-12)).float().to(config.device)
        total = total + (adv * order_log_probs(y, orders, e.graph)).mean()
        advantages.append(float(adv.mean()))
    return total / len(batch)


def train(
    config: TrainConfig,
    out_dir: str | os.PathLike[str],
    graphs: EpochGraphs,
    resume: bool = True,
    progress: EpochProgress | None = None,
    time_limit: float | None = None,
) -> TrainResult:
    """Train a Topoformer policy on the training graphs ``graphs`` draws (such as
    :func:`mtpp.generators.training.epoch_graphs`); write ``checkpoint.pt`` and
    ``history.json`` after each epoch, and ``weights.pt`` (loadable by
    :func:`heuristics.neural.inference.load_topoformer`) and ``history.png`` at the
    end.  ``resume`` continues from ``checkpoint.pt`` when it exists (its training
    options must match ``config``).  ``time_limit`` (seconds from the call) stops
    before an epoch that would end past it (:class:`~heuristics.neural.runs.EpochClock`)."""
    loop = EpochLoop(config, out_dir, graphs, resume, progress, time_limit)
    torch.manual_seed(config.seed)
    device = config.device
    objective = make_objective(config.objective, config.k)
    model = Topoformer(config.model_config())
    if config.init:  # fine-tune: start from a weights file of the same model shape
        load_state(model, load_weights(config.init, "topoformer"))
    model = model.to(device)
    baseline = copy.deepcopy(model)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    if loop.state is not None:
        model.load_state_dict(loop.state["model"])
        baseline.load_state_dict(loop.state["baseline"])
        optimiser.load_state_dict(loop.state["optimiser"])
    exact = _ExactTeacher(config) if config.teacher == "exact" and loop.start < config.imitation_epochs else None

    validation = [Encoded.of(g, device) for g in loop.graphs(VALIDATION_EPOCH, config.validation)]
    classic = classic_costs(validation, objective)
    base_val = greedy_costs(baseline, validation, objective)

    def run_epoch(epoch: int, imitating: bool) -> dict[str, float]:
        nonlocal base_val
        pairs: list[tuple[Encoded, Target | None]]
        if imitating and exact is not None:
            pairs = list(exact.epoch(epoch, config.graphs_per_epoch))
        else:  # teacher orders come per batch
            pairs = [(Encoded.of(g, device), None) for g in loop.graphs(epoch, config.graphs_per_epoch)]
        for group in optimiser.param_groups:
            group["lr"] = (config.lr if imitating else config.reinforce_lr) * config.lr_decay**epoch
        losses: list[float] = []
        advantages: list[float] = []
        if imitating:
            groups = size_batches([e.graph.n for e, _ in pairs], config.batch, config.seed, epoch)
        else:
            groups = [list(range(a, min(a + config.batch, len(pairs)))) for a in range(0, len(pairs), config.batch)]
        for members in groups:
            optimiser.zero_grad()
            batch = [pairs[i] for i in members]
            first = members[0]
            model.train()
            if imitating:
                targets = []
                for i, (e, t) in zip(members, batch):
                    if t is None:  # the approximate teacher, on this epoch's fresh graphs
                        seed_j = _sample_seed(config.seed, epoch, i)
                        order = teacher_order(e.graph, objective, config.teacher_effort, seed_j)
                        t = teacher_target(e.graph, order, device, objective.blocks(e.graph, order))
                    targets.append((e, t))
                loss = imitation_loss(model, targets)
            else:
                loss = _reinforce_loss(model, baseline, batch, objective, config, epoch, first, advantages)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            losses.append(loss.item())
        current = greedy_costs(model, validation, objective)
        improved = float(np.mean(current / base_val)) < 1.0
        if improved:
            baseline.load_state_dict(model.state_dict())
            base_val = current
        return {
            "loss": float(np.mean(losses)),
            "advantage": float(np.mean(advantages)) if advantages else math.nan,
            "phase": float(imitating),
            "val_ratio_vs_classic": float(np.mean(current / classic)),
            "baseline_ratio_vs_classic": float(np.mean(base_val / classic)),
            "baseline_replaced": float(improved),
        }

    def state() -> dict[str, object]:
        return {"model": model.state_dict(), "baseline": baseline.state_dict(), "optimiser": optimiser.state_dict()}

    loop.run(run_epoch, state)
    # ship the baseline policy: it is the one that won on validation
    final = loop.history[-1] if loop.history else {}
    weights = loop.finish(
        "topoformer",
        config.model_config().to_dict(),
        baseline.state_dict(),
        {
            "objective": config.objective,
            "k": config.k,
            "pe_dim": PE_DIM,
            "training": config.to_dict(),
            "epochs": len(loop.history),
            "seconds": loop.elapsed,
            "hardware": hardware(device),
            "teacher": config.teacher,
            "teacher_examples": 0 if exact is None else len(exact.examples),
            "val_ratio_vs_classic": final.get("baseline_ratio_vs_classic", math.nan),
        },
        ("loss", "val_ratio_vs_classic", "baseline_ratio_vs_classic"),
        f"Topoformer, {config.objective}",
    )
    return TrainResult(loop.out, weights, loop.history)
