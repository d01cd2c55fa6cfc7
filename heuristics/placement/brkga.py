"""BRKGA for joint placement and scheduling with the REGAL chromosome (App. A.2).

A chromosome has ``n * (d + 1)`` keys in ``[0, 1]``:

* genes ``v * d + j`` (``j < d``): the affinity of op ``v`` for device ``j``; the op goes
  to the device of largest affinity (ties: lower index);
* genes ``n * d + v``: the scheduling priority of op ``v``; the priority order is Kahn's
  algorithm with these priorities (higher first), REGAL's "topological sort over the
  ops ... breaking ties by using the corresponding node priorities".

REGAL's third part (``t * d`` tensor-to-device transfer priorities) is left out: in
:mod:`mtpp.core.simulator` a transfer starts when its producer ends and occupies
no device queue, so there is nothing for it to order.

**Fitness** (lower is better).  Let ``U`` be an upper bound on every simulated value of
the objective: for runtime, ``sum_v max_j time(v, j) + sum_{(u, v)} max_{a != b}
transfer(u, a, b)`` (the simulator is a list schedule, so no op ends later); for peak
memory, the sum of all parameter and output bytes times ``d``.  Then

* memory-feasible: ``fitness = objective`` (makespan, or the largest per-device peak);
* infeasible: ``fitness = U + 1 + overflow`` (the total bytes over capacity),

so every feasible solution ranks above every infeasible one, and infeasible ones are
ranked by how far they overflow.

Mutants are uniform, or drawn from per-gene Beta distributions (``mutant_beta``,
arrays of length ``n * (d + 1)``), passed straight to :func:`heuristics.brkga.brkga`
(the hook for REGAL's learned distributions).  Known placements (HEFT, single
devices) seed the first population as one-hot affinities and
:func:`heuristics.kahn.priorities_for` priorities.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heuristics.brkga import BrkgaParams, BrkgaResult, Progress, brkga
from heuristics.kahn import in_degrees, kahn_kernel, priorities_for
from heuristics.placement.baselines import PlacementCandidate, evaluate
from mtpp.core.errors import InvalidParameterError
from mtpp.core.simulator import PlacementContext, SimResult

OBJECTIVES = ("runtime", "peak_memory")


def objective_value(sim: SimResult, objective: str) -> float:
    """The objective of one simulation: makespan or the largest per-device peak."""
    return sim.makespan if objective == "runtime" else float(sim.peak_memory.max())


def infeasible_offset(ctx: PlacementContext, objective: str) -> float:
    """``U + 1``: larger than the objective of every simulated placement (module doc)."""
    g = ctx.graph
    if objective == "runtime":
        worst_link = 0.0
        if ctx.d > 1:
            off = ~np.eye(ctx.d, dtype=bool)
            worst = g.size_out[g.edge_src] * ctx.inv_bw[off].max() + ctx.lat[off].max()
            worst_link = float(worst.sum())
        return float(ctx.times.max(axis=1).sum()) + worst_link + 1.0
    return float((g.size_param.sum() + g.size_out.sum()) * ctx.d) + 1.0


def fitness(sim: SimResult, objective: str, offset: float) -> float:
    """Objective if memory-feasible, else ``offset + overflow``."""
    return objective_value(sim, objective) if sim.memory_feasible else offset + sim.overflow


def decode(ctx: PlacementContext, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Placement and priority order of one chromosome."""
    g, d = ctx.graph, ctx.d
    n = g.n
    place = np.argmax(keys[: n * d].reshape(n, d), axis=1).astype(np.int64)
    order = kahn_kernel(g.succ_ptr, g.succ_idx, in_degrees(g), np.ascontiguousarray(keys[n * d :]))
    return place, order


def encode(ctx: PlacementContext, place: np.ndarray, order: np.ndarray) -> np.ndarray:
    """A chromosome that decodes to exactly ``place`` and ``order``."""
    n, d = ctx.graph.n, ctx.d
    aff = np.zeros((n, d))
    aff[np.arange(n), place] = 1.0
    return np.concatenate([aff.reshape(-1), priorities_for(order)])


@dataclass(frozen=True)
class PlacementBrkgaResult:
    """The best candidate and the BRKGA run that found it."""

    best: PlacementCandidate
    fitness: float
    run: BrkgaResult


def placement_brkga(
    ctx: PlacementContext,
    objective: str = "runtime",
    params: BrkgaParams | None = None,
    seed: int = 0,
    seeds: list[PlacementCandidate] | None = None,
    mutant_beta: tuple[np.ndarray, np.ndarray] | None = None,
    time_limit: float | None = None,
    progress: Progress | None = None,
) -> PlacementBrkgaResult:
    """Minimise the fitness above over REGAL chromosomes; ``seeds`` join the first
    population.  Deterministic for a given ``seed`` (without a time limit)."""
    if objective not in OBJECTIVES:
        raise InvalidParameterError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    n_genes = ctx.graph.n * (ctx.d + 1)
    if mutant_beta is not None:
        a, b = (np.asarray(x, dtype=np.float64) for x in mutant_beta)
        if a.shape != (n_genes,) or b.shape != (n_genes,) or np.any(a <= 0) or np.any(b <= 0):
            raise InvalidParameterError(f"mutant_beta must be two positive arrays of length n * (d + 1) = {n_genes}")
        mutant_beta = (a, b)
    offset = infeasible_offset(ctx, objective)
    memory = objective == "peak_memory" or bool(np.isfinite(ctx.capacity).any())

    def run_batch(batch: np.ndarray, upper_bound: float) -> np.ndarray:
        out = np.empty(len(batch))
        for i, keys in enumerate(batch):
            place, order = decode(ctx, keys)
            out[i] = fitness(ctx.run(place, order, memory=memory), objective, offset)
        return out

    initial = np.array([encode(ctx, c.place, c.order) for c in seeds]) if seeds else None
    res = brkga(run_batch, n_genes, params, seed, initial, mutant_beta, time_limit, progress)
    place, order = decode(ctx, res.keys)
    best = evaluate(ctx, "brkga", place, order)
    return PlacementBrkgaResult(best, fitness(best.sim, objective, offset), res)
