"""``mtpp.schedule`` is sound on fresh random tiny graphs (issue 73): every method, and
every bound method called directly, against the exact optimum
(:func:`tests.soundness.schedule_checks.schedule_findings`).

Each run draws new seeds (a random first seed; a finding names its seed and the graph:
rerun one with ``schedule_findings(seed)``), in :data:`CHUNKS` chunks that pytest-xdist
spreads over the cores, each stopping at :data:`SEEDS_PER_CHUNK` seeds or
:data:`CHUNK_SECONDS` (200 seeds a chunk in 13-17 s on a 2-core machine;
``benchmarks/soundness.py`` runs long sweeps).  The torch methods (about half a second
a seed together) run on one seed in :data:`LEARNED_EVERY`, the others on every seed."""

from __future__ import annotations

import random
import time

import pytest

from tests.soundness.schedule_checks import TORCH_METHODS, draw_graph, runnable_methods, schedule_findings

CHUNKS = 2
SEEDS_PER_CHUNK = 200
CHUNK_SECONDS = 25.0
LEARNED_EVERY = 10


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_schedule_bounds_orders_and_status_are_sound(chunk: int) -> None:
    first = random.SystemRandom().randrange(2**40)
    quick = [m for m in runnable_methods() if m not in TORCH_METHODS]
    t0 = time.perf_counter()
    found: list[str] = []
    ran = 0
    for i in range(SEEDS_PER_CHUNK):
        if time.perf_counter() - t0 > CHUNK_SECONDS:
            break
        here = schedule_findings(first + i, methods=None if i % LEARNED_EVERY == chunk else quick)
        found += [*here, f"seed={first + i}: graph {draw_graph(first + i).to_json()}"] if here else []
        ran += 1
    assert not found, f"chunk {chunk}, seeds {first}..{first + ran - 1}:\n" + "\n".join(found)
    print(f"chunk {chunk}: {ran} seeds from {first} in {time.perf_counter() - t0:.1f} s, no findings")
    assert ran >= 10, f"only {ran} seeds in {CHUNK_SECONDS} s"
