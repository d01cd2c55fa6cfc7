import numpy as np
import pytest

from heuristics.brkga import BrkgaParams, brkga
from mtpp import InvalidParameterError


def sphere(keys: np.ndarray, ub: float) -> np.ndarray:
    """Distance to a target point; a decoder that reports inf at or above ub."""
    target = np.linspace(0.1, 0.9, keys.shape[1])
    value = ((keys - target) ** 2).sum(axis=1)
    return np.where(value < ub, value, np.inf)


def test_improves_and_is_reproducible():
    params = BrkgaParams(population=30, generations=40)
    a = brkga(sphere, 8, params, seed=5)
    b = brkga(sphere, 8, params, seed=5)
    c = brkga(sphere, 8, params, seed=6)
    assert a.fitness == b.fitness and np.array_equal(a.keys, b.keys)
    assert a.fitness != c.fitness
    assert list(a.history) == sorted(a.history, reverse=True)  # elitism: never worse
    assert a.history[-1] < a.history[0] / 5
    assert a.evaluations == 30 + 39 * (30 - params.elite_count)
    assert sphere(a.keys[None], np.inf)[0] == pytest.approx(a.fitness)


def test_initial_chromosomes_are_used():
    target = np.linspace(0.1, 0.9, 8)
    res = brkga(sphere, 8, BrkgaParams(population=10, generations=1), seed=0, initial=target[None])
    assert res.fitness == 0.0


def test_beta_mutants_follow_the_given_distribution():
    n = 6
    seen = []

    def record(keys, ub):
        seen.append(keys.copy())
        return keys.sum(axis=1)

    alpha, beta = np.full(n, 50.0), np.full(n, 1.0)  # mass near 1
    brkga(record, n, BrkgaParams(population=20, generations=1), mutant_beta=(alpha, beta))
    assert seen[0].mean() > 0.9


def test_time_limit_stops_early():
    res = brkga(sphere, 4, BrkgaParams(population=10, generations=10_000), time_limit=0.05)
    assert res.stopped_by_time and res.generations < 10_000


@pytest.mark.parametrize(
    "kwargs",
    [
        {"population": 1},
        {"generations": 0},
        {"elite_fraction": 0},
        {"elite_fraction": 0.9, "mutant_fraction": 0.5},
        {"elite_bias": 0.3},
    ],
)
def test_bad_parameters(kwargs):
    with pytest.raises(InvalidParameterError):
        BrkgaParams(**kwargs)


def test_budget_shapes():
    assert (BrkgaParams.for_budget(10_000).population, BrkgaParams.for_budget(10_000).generations) == (100, 100)
    assert (BrkgaParams.for_budget(100).population, BrkgaParams.for_budget(100).generations) == (10, 10)


def test_time_limit_holds_within_a_population() -> None:
    """A population that would take 5 s to decode stops at the limit, mid-population,
    and still returns a decoded chromosome with its exact fitness."""
    import time

    def slow(keys: np.ndarray, ub: float) -> np.ndarray:
        time.sleep(0.05 * len(keys))
        return keys.sum(axis=1)

    t0 = time.perf_counter()
    res = brkga(slow, 6, BrkgaParams(population=100, generations=10), seed=1, time_limit=0.5)
    elapsed = time.perf_counter() - t0
    assert res.stopped_by_time and 1 <= res.evaluations < 100
    assert elapsed < 0.5 + 1.0
    assert res.fitness == pytest.approx(res.keys.sum()) and np.isfinite(res.fitness)
