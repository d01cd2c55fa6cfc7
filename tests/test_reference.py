"""The benchmark's reference SliceGraph (2D difference array + textbook DP) agrees
with the pruned kernels: two independent implementations of Lemma 4.1 / Algorithm 1."""

import math

import numpy as np

from benchmarks.reference import reference_slice_value, reference_table
from heuristics.kahn import kahn_order
from heuristics.partition.segments import segment_cost_table
from heuristics.partition.slicegraph import slice_order
from mtpp import Problem
from tests.oracle import random_dag


def test_reference_agrees_with_kernels():
    rng = np.random.default_rng(5)
    for _ in range(150):
        n, k = int(rng.integers(1, 16)), int(rng.integers(1, 6))
        g = random_dag(rng, n, p=float(rng.random()), integral=False)
        problem = Problem(g, k, memory=math.inf if rng.random() < 0.5 else 5.0, bandwidth=float(rng.choice([1, 3])))
        order = kahn_order(g, rng.random(n))
        np.testing.assert_allclose(reference_table(problem, order), segment_cost_table(problem, order), atol=1e-9)
        assert abs(reference_slice_value(problem, order) - slice_order(problem, order).bottleneck) < 1e-9
