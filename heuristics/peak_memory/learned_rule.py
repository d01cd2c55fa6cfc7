"""A learned dispatch rule for peak memory: Kahn's algorithm that runs, at
each step, the ready op of least score.  Linear in time and free of torch.

The objective is Topoformer Eq. (1) with the step memory of Eq. (15), ``M_t = I_{t-1}
+ m(sigma_t) + p(sigma_t)`` (:mod:`heuristics.peak_memory.orders`).  The score of a
ready op ``v`` is

    score(v) = s(v) + a . d(v),

* ``s(v)``, its static priority: a perceptron with one hidden layer (:data:`HIDDEN`
  tanh units) over :data:`STATIC` features of ``v`` computed once per graph
  (:func:`static_features`): depth and height over the longest path, its output and
  parameter sizes and the sizes of its inputs (over the mean output size), its degrees,
  and its positions in the depth- and breadth-first Kahn orders;
* ``d(v)``, :data:`DYNAMIC` features of running ``v`` now: the change in live memory
  (its output, if it has consumers, minus the inputs whose last consumer it is), the
  bytes it frees, the rise of the step memory ``M_t`` above the peak so far, the
  successors it releases, the steps since it became ready, and ``M_t`` over the peak
  so far.

Ties go to the first op in the ready list.  The weights were fitted by an evolution
strategy (:func:`fit_rule`: antithetic Gaussian perturbations, Adam on the estimated
gradient) to the mean over graphs of ``log(peak / peak of random-100)``, the best of
100 random topological orders of Topoformer Table 1, on layered graphs of 400-2000 ops
(App. A), keeping the weights best on separate validation graphs
(``benchmarks/train_learned_rule.py``).  Decoding is ``O(n + m + sum of ready ops per
step x in-degree)``: a fraction of a millisecond at 500 ops.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from heuristics.peak_memory.orders import after_step
from heuristics.traversal import bfs_order, dfs_order
from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph
from mtpp.core.jit import njit

STATIC = 10
DYNAMIC = 6
HIDDEN = 8
TEMPERATURE = 0.3
"""The sampling temperature of :func:`rule_sample`: of 0.003 to 3 (ten values), the
best of 16 draws is lowest at 0.3 for the shipped weights."""
PARAMETERS = STATIC * HIDDEN + 2 * HIDDEN + DYNAMIC
SHIPPED = Path(__file__).with_name("weights") / "rule-peak.npz"


@dataclass(frozen=True)
class RuleWeights:
    """The rule's weights (module docstring) and how they were made."""

    theta: np.ndarray
    """All :data:`PARAMETERS` weights: the hidden layer (``STATIC x HIDDEN``, row-major),
    its biases, the output layer, then the ``DYNAMIC`` weights ``a``."""
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        theta = np.asarray(self.theta, dtype=np.float64)
        if theta.shape != (PARAMETERS,) or not np.isfinite(theta).all():
            raise InvalidParameterError(f"rule weights must be {PARAMETERS} finite numbers, got shape {theta.shape}")
        object.__setattr__(self, "theta", theta)

    def parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        t, h = self.theta, STATIC * HIDDEN
        return t[:h].reshape(STATIC, HIDDEN), t[h : h + HIDDEN], t[h + HIDDEN : h + 2 * HIDDEN], t[h + 2 * HIDDEN :]

    def save(self, path: str | Path) -> None:
        np.savez(path, theta=self.theta, meta=json.dumps(self.meta, sort_keys=True))

    @classmethod
    def load(cls, path: str | Path | None = None) -> RuleWeights:
        """The weights in ``path`` (``None``: the shipped ``rule-peak``)."""
        try:
            with np.load(SHIPPED if path is None else path) as f:
                return cls(f["theta"], json.loads(str(f["meta"])))
        except (OSError, KeyError, ValueError) as e:
            raise InvalidParameterError(f"cannot read rule weights from {path or SHIPPED}: {e}") from e


def static_features(graph: Graph) -> np.ndarray:
    """The ``n x STATIC`` static features (module docstring), each of order one."""
    return feature_kernel(
        np.asarray(graph.topological_order, dtype=np.int64),
        dfs_order(graph),
        bfs_order(graph),
        graph.pred_ptr,
        graph.pred_idx,
        graph.succ_ptr,
        graph.succ_idx,
        graph.size_out,
        graph.size_param,
    )


@njit(cache=True, inline="always")
def size_scale(size_out):
    """One over the mean output size (1 where every tensor is empty): the unit of every
    size feature, static and dynamic."""
    n = size_out.shape[0]
    mean = 0.0
    for v in range(n):
        mean += size_out[v]
    mean = mean / n if n else 0.0
    return 1.0 / mean if mean > 0.0 else 1.0


@njit(cache=True, nogil=True)
def feature_kernel(order, dfs, bfs, pred_ptr, pred_idx, succ_ptr, succ_idx, size_out, size_param):
    """:func:`static_features` over a topological ``order`` and the ``dfs`` and ``bfs``
    orders: depth and height (edges on the longest path from a source / to a sink, over
    their sum's maximum), output, parameter and input sizes (over the mean output size;
    inputs and degrees also over 4), out- and in-degree, the two positions (over ``n``)
    and a constant."""
    n = order.shape[0]
    f = np.zeros((n, STATIC))
    scale = size_scale(size_out)
    for t in range(n):
        v = order[t]
        for e in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[e]
            f[v, 6] += size_out[u]
            f[v, 0] = max(f[v, 0], f[u, 0] + 1.0)
    for t in range(n - 1, -1, -1):
        v = order[t]
        for e in range(succ_ptr[v], succ_ptr[v + 1]):
            f[v, 1] = max(f[v, 1], f[succ_idx[e], 1] + 1.0)
    deepest, highest = 0.0, 0.0
    for v in range(n):
        deepest = max(deepest, f[v, 0])
        highest = max(highest, f[v, 1])
    length = 1.0 / max(1.0, deepest + highest)
    for t in range(n):
        f[dfs[t], 7] = t / n
        f[bfs[t], 8] = t / n
    for v in range(n):
        f[v, 0] *= length
        f[v, 1] *= length
        f[v, 2] = size_out[v] * scale
        f[v, 3] = size_param[v] * scale
        f[v, 4] = (succ_ptr[v + 1] - succ_ptr[v]) / 4.0
        f[v, 5] = (pred_ptr[v + 1] - pred_ptr[v]) / 4.0
        f[v, 6] *= scale / 4.0
        f[v, 9] = 1.0
    return f


@njit(cache=True, nogil=True)
def rule_kernel(succ_ptr, succ_idx, pred_ptr, pred_idx, size_out, size_param, features, w1, b1, w2, a, tau, rng):
    """The rule's order (module docstring) and its peak (Eq. 1/15), from the static
    ``features`` and the weights: the perceptron ``w1``, ``b1``, ``w2`` and ``a``.
    ``tau > 0`` samples instead: each step runs the ready op of least ``score - tau g``
    with ``g`` standard Gumbel noise drawn from the numpy Generator ``rng``, i.e. draws
    from ``softmax(-score / tau)`` over the ready ops (Gumbel-max); ``tau = 0`` is the
    greedy rule."""
    n = size_out.shape[0]
    static = np.zeros(n)
    for v in range(n):
        for h in range(b1.shape[0]):
            x = b1[h]
            for i in range(features.shape[1]):
                x += features[v, i] * w1[i, h]
            static[v] += np.tanh(x) * w2[h]
    scale = size_scale(size_out)
    indeg = np.empty(n, dtype=np.int64)
    remaining = np.empty(n, dtype=np.int64)
    since = np.zeros(n)
    for v in range(n):
        indeg[v] = pred_ptr[v + 1] - pred_ptr[v]
        remaining[v] = succ_ptr[v + 1] - succ_ptr[v]
    ready = np.empty(n, dtype=np.int64)
    count = 0
    for v in range(n):
        if indeg[v] == 0:
            ready[count] = v
            count += 1
    order = np.empty(n, dtype=np.int64)
    live = 0.0
    peak = 0.0
    for t in range(n):
        best, best_score = 0, np.inf
        for i in range(count):
            v = ready[i]
            freed = 0.0
            for e in range(pred_ptr[v], pred_ptr[v + 1]):
                u = pred_idx[e]
                if remaining[u] == 1:
                    freed += size_out[u]
            kept = size_out[v] if remaining[v] > 0 else 0.0
            step = live + size_out[v] + size_param[v]
            rise = max(0.0, step - peak)
            released = 0.0
            for e in range(succ_ptr[v], succ_ptr[v + 1]):
                if indeg[succ_idx[e]] == 1:
                    released += 1.0
            score = (
                static[v]
                + a[0] * (kept - freed) * scale
                + a[1] * freed * scale
                + a[2] * rise * scale
                + a[3] * released
                + a[4] * (t - since[v]) / n
                + a[5] * step / (peak + 1.0 / scale)
            )
            if tau > 0.0:
                score += tau * math.log(-math.log(rng.random() + 1e-300))
            if score < best_score:
                best, best_score = i, score
        v = ready[best]
        count -= 1
        ready[best] = ready[count]
        order[t] = v
        peak = max(peak, live + size_out[v] + size_param[v])
        live = after_step(v, live, remaining, pred_ptr, pred_idx, size_out)
        for e in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[e]
            indeg[w] -= 1
            if indeg[w] == 0:
                ready[count] = w
                since[w] = t
                count += 1
    return order, peak


class _Prepared:
    """A graph's fixed inputs to the rule: its features are computed once."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.features = static_features(graph)

    def run(self, weights: RuleWeights, tau: float = 0.0, seed: int = 0) -> tuple[np.ndarray, float]:
        g = self.graph
        args = (g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx, g.size_out, g.size_param, self.features)
        return rule_kernel(*args, *weights.parts(), tau, np.random.default_rng(seed))


def rule_order(graph: Graph, weights: RuleWeights | None = None) -> np.ndarray:
    """The learned rule's topological order of ``graph`` (weights ``None``: the shipped
    ``rule-peak``)."""
    order, _ = _Prepared(graph).run(RuleWeights.load() if weights is None else weights)
    return order


def rule_sample(
    graph: Graph,
    weights: RuleWeights | None = None,
    samples: int = 16,
    *,
    tau: float = TEMPERATURE,
    seed: int = 0,
    time_limit: float | None = None,
) -> np.ndarray:
    """The least-peak order of the greedy rule and ``samples - 1`` orders drawn from
    ``softmax(-score / tau)`` at each step (:func:`rule_kernel`), the learned rule's
    sample-16 decoding (Topoformer Section 5).  Deterministic in ``seed``; draws stop
    once another would pass ``time_limit`` seconds (the greedy order always runs)."""
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise InvalidParameterError(f"samples must be an integer >= 1, got {samples!r}")
    t0 = time.perf_counter()
    prepared = _Prepared(graph)
    w = RuleWeights.load() if weights is None else weights
    best, best_peak = prepared.run(w)
    seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=max(0, samples - 1))
    for runs, s in enumerate(seeds.tolist(), start=1):
        elapsed = time.perf_counter() - t0
        if time_limit is not None and elapsed + elapsed / runs > time_limit:  # the next draw would pass it
            break
        order, peak = prepared.run(w, tau, s)
        if peak < best_peak:
            best, best_peak = order, peak
    return best


def fit_rule(
    train: Sequence[tuple[Graph, float]],
    validation: Sequence[tuple[Graph, float]],
    generations: int,
    *,
    seed: int = 0,
    population: int = 24,
    batch: int = 16,
    sigma: float = 0.05,
    lr: float = 0.02,
    every: int = 25,
    report: Callable[[str], None] | None = None,
) -> RuleWeights:
    """Weights fitted by an evolution strategy (module docstring) to the mean of
    ``log(peak / reference)`` over ``(graph, reference peak)`` pairs: each generation
    draws ``batch`` training graphs and ``population`` antithetic pairs of
    perturbations of scale ``sigma``; every ``every`` generations the weights are
    scored on ``validation`` and the best so far kept.  Starts from the memory-greedy
    rule (``a = (1, 0, ..)``) with small random hidden weights; deterministic in
    ``seed``."""
    rng = np.random.default_rng(seed)
    prepared = [(_Prepared(g), ref) for g, ref in train]
    held_out = [(_Prepared(g), ref) for g, ref in validation]

    def loss(items: Sequence[tuple[_Prepared, float]], theta: np.ndarray) -> float:
        w = RuleWeights(theta)
        return float(np.mean([math.log(p.run(w)[1] / ref) for p, ref in items]))

    theta = np.zeros(PARAMETERS)
    theta[: STATIC * HIDDEN] = rng.normal(0.0, 0.3, STATIC * HIDDEN)
    theta[STATIC * HIDDEN + HIDDEN : STATIC * HIDDEN + 2 * HIDDEN] = rng.normal(0.0, 0.01, HIDDEN)
    theta[STATIC * HIDDEN + 2 * HIDDEN] = 1.0
    m, v = np.zeros(PARAMETERS), np.zeros(PARAMETERS)
    best_loss, best, best_generation = loss(held_out, theta), theta.copy(), 0
    t0 = time.perf_counter()
    for gen in range(1, generations + 1):
        items = [prepared[i] for i in rng.choice(len(prepared), min(batch, len(prepared)), replace=False)]
        eps = rng.normal(0.0, 1.0, (population, PARAMETERS))
        diff = np.array([loss(items, theta + sigma * e) - loss(items, theta - sigma * e) for e in eps])
        grad = (diff[:, None] * eps).mean(axis=0) / (2.0 * sigma)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        theta = theta - lr * m / (np.sqrt(v / (1.0 - 0.999**gen)) + 1e-8)
        if gen % every == 0 or gen == generations:
            held = loss(held_out, theta)
            if held < best_loss:
                best_loss, best, best_generation = held, theta.copy(), gen
            if report:
                seconds = time.perf_counter() - t0
                report(f"generation {gen}: validation {held:+.4f} (best {best_loss:+.4f}), {seconds:.0f} s")
    meta = {
        "generations": generations,
        "kept_generation": best_generation,
        "validation_log_ratio": best_loss,
        "seed": seed,
        "population": population,
        "batch": batch,
        "sigma": sigma,
        "lr": lr,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    return RuleWeights(best, meta)
