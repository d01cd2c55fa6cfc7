"""Biased random-key genetic algorithm (Gonçalves & Resende 2011), problem-agnostic.

A chromosome is a vector of ``n`` keys in ``[0, 1]``; a *decoder* maps a batch of
chromosomes to fitness values (lower is better).  Each generation keeps the elite
fraction, adds fresh mutants, and fills the rest with offspring of one elite and
one non-elite parent, each gene taken from the elite parent with probability
``elite_bias`` (biased uniform crossover).  The MTPP paper's brkga-10000 is a
population of 100 over 100 generations (App. C.1).

Mutants are i.i.d. uniform by default; ``mutant_beta = (alpha, beta)`` (arrays of
length ``n``) draws gene ``i`` from ``Beta(alpha[i], beta[i])`` instead, which is the
hook for a learned model that predicts per-node mutant distributions (REGAL).

Decoders receive an ``upper_bound``: only the elite set matters for selection, so a
chromosome may be reported as ``inf`` whenever its fitness is not below the worst
elite of the previous generation.  Every reported finite value must be exact.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mtpp.core.errors import InvalidParameterError

Decoder = Callable[[np.ndarray, float], np.ndarray]
Progress = Callable[[int, int, float], None]
CHUNK_SECONDS = 0.25  # under a time limit, a population is decoded in chunks of about this long


def decode_until(decode: Decoder, chromosomes: np.ndarray, ub: float, deadline: float) -> tuple[np.ndarray, int]:
    """Fitness of ``chromosomes`` (``inf`` for those not decoded) and how many were
    decoded: all of them without a deadline; with one, chunk by chunk (sized from
    the first chromosome's time to last about :data:`CHUNK_SECONDS`) until a chunk
    ends past ``deadline``.  The first chunk always runs."""
    if math.isinf(deadline):
        return decode(chromosomes, ub), len(chromosomes)
    fit = np.full(len(chromosomes), math.inf)
    done, chunk = 0, 1
    while done < len(chromosomes):
        t0 = time.perf_counter()
        fit[done : done + chunk] = decode(chromosomes[done : done + chunk], ub)
        spent = time.perf_counter() - t0
        done += len(fit[done : done + chunk])
        if time.perf_counter() >= deadline:
            break
        chunk = max(1, min(len(chromosomes), int(CHUNK_SECONDS * chunk / max(spent, 1e-9))))
    return fit, done


@dataclass(frozen=True)
class BrkgaParams:
    """Population size, generations and the three BRKGA rates."""

    population: int = 100
    generations: int = 100
    elite_fraction: float = 0.2
    mutant_fraction: float = 0.15
    elite_bias: float = 0.7

    def __post_init__(self) -> None:
        if self.population < 2 or self.generations < 1:
            raise InvalidParameterError(
                f"BRKGA needs population >= 2 and generations >= 1, got {self.population}, {self.generations}"
            )
        if not 0 < self.elite_fraction < 1 or not 0 <= self.mutant_fraction < 1:
            raise InvalidParameterError("elite_fraction must be in (0, 1) and mutant_fraction in [0, 1)")
        if self.elite_count + self.mutant_count > self.population:
            raise InvalidParameterError("elite and mutant fractions add up to more than the population")
        if not 0.5 <= self.elite_bias <= 1:
            raise InvalidParameterError(f"elite_bias must be in [0.5, 1], got {self.elite_bias}")

    @property
    def elite_count(self) -> int:
        return max(1, round(self.elite_fraction * self.population))

    @property
    def mutant_count(self) -> int:
        return round(self.mutant_fraction * self.population)

    @classmethod
    def for_budget(cls, evaluations: int) -> BrkgaParams:
        """Square population x generations for a budget, as brkga-100 (10 x 10) and
        brkga-10000 (100 x 100) in App. C.1."""
        side = max(2, math.isqrt(max(evaluations, 4)))
        return cls(population=side, generations=max(1, evaluations // side))


@dataclass(frozen=True)
class BrkgaResult:
    """Best chromosome and fitness, evaluations spent, generations run, and the best
    fitness after each generation."""

    keys: np.ndarray
    fitness: float
    evaluations: int
    generations: int
    history: tuple[float, ...]
    stopped_by_time: bool


def brkga(
    decode: Decoder,
    n_genes: int,
    params: BrkgaParams | None = None,
    seed: int | np.random.Generator = 0,
    initial: np.ndarray | None = None,
    mutant_beta: tuple[np.ndarray, np.ndarray] | None = None,
    time_limit: float | None = None,
    progress: Progress | None = None,
) -> BrkgaResult:
    """Minimise ``decode`` over random keys.

    ``initial`` rows (e.g. the priorities of good known orders) replace part of the
    first population.  ``time_limit`` (seconds) is a wall-clock cap: populations are
    decoded in chunks of about :data:`CHUNK_SECONDS` and the search stops at the first
    chunk that ends past it (chromosomes left undecoded rank last, as ``inf``; the
    first chunk always runs, so the result is a decoded chromosome).
    ``progress(generation, generations, best)`` is called once per generation.
    Deterministic for a given ``seed`` (without a time limit).
    """
    p = params or BrkgaParams()
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    deadline = math.inf if time_limit is None else start + time_limit

    def mutants(count: int) -> np.ndarray:
        if mutant_beta is None:
            return rng.random((count, n_genes))
        alpha, beta = mutant_beta
        return rng.beta(alpha, beta, size=(count, n_genes))

    pop = mutants(p.population)
    if initial is not None:
        seeds = np.atleast_2d(np.asarray(initial, dtype=np.float64))[: p.population]
        if seeds.shape[1] != n_genes:
            raise InvalidParameterError(f"initial chromosomes have {seeds.shape[1]} genes; expected {n_genes}")
        pop[: len(seeds)] = seeds
    fit, evaluations = decode_until(decode, pop, math.inf, deadline)
    stopped = evaluations < len(pop)
    n_elite, n_mut = p.elite_count, p.mutant_count
    n_off = p.population - n_elite - n_mut
    history = []
    gen = 0
    for gen in range(1, p.generations + 1):
        rank = np.argsort(fit, kind="stable")
        elite, non_elite = rank[:n_elite], rank[n_elite:]
        best = float(fit[rank[0]])
        history.append(best)
        if progress is not None:
            progress(gen, p.generations, best)
        if gen == p.generations or stopped:
            break
        if time.perf_counter() >= deadline:
            stopped = True
            break
        threshold = float(fit[elite[-1]])
        ea = elite[rng.integers(0, n_elite, n_off)]
        nb = non_elite[rng.integers(0, len(non_elite), n_off)] if len(non_elite) else ea
        mask = rng.random((n_off, n_genes)) < p.elite_bias
        children = np.where(mask, pop[ea], pop[nb])
        fresh = np.vstack([mutants(n_mut), children])
        fresh_fit, done = decode_until(decode, fresh, threshold, deadline)
        evaluations += done
        stopped = done < len(fresh)
        pop = np.vstack([pop[elite], fresh])
        fit = np.concatenate([fit[elite], fresh_fit])
    i = int(np.argmin(fit))
    return BrkgaResult(
        keys=pop[i].copy(),
        fitness=float(fit[i]),
        evaluations=evaluations,
        generations=gen,
        history=tuple(history),
        stopped_by_time=stopped,
    )
