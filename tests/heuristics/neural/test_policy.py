"""Log-probabilities of orders under Topoformer Eq. 6 and 8 (vectorised, differentiable)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import torch

from heuristics.kahn import kahn_order
from heuristics.neural.decoding import beam_search, sample_orders
from heuristics.neural.policy import availability, batch_log_probs, block_picks, order_log_probs, schedulable_pairs
from mtpp import Graph
from mtpp.core.errors import InvalidParameterError
from mtpp.generators.layered import layered_graph
from tests.heuristics.neural.test_decoding import naive_log_prob
from tests.oracle import random_dag


def all_orders(graph: Graph) -> np.ndarray:
    return np.array([list(o) for o in nx.all_topological_sorts(graph.to_networkx())], dtype=np.int64)


def test_probabilities_of_all_orders_sum_to_one():
    rng = np.random.default_rng(0)
    for _ in range(25):
        n = int(rng.integers(1, 7))
        g = random_dag(rng, n, p=float(rng.random() * 0.5))
        y = torch.tensor(rng.normal(size=n) * 2, dtype=torch.float64)
        for method in ("sparse", "dense"):
            lp = order_log_probs(y, all_orders(g), g, method=method)
            assert torch.exp(lp).sum().item() == pytest.approx(1.0, abs=1e-12)


def test_extreme_priorities_stay_finite():
    """Priorities hundreds apart: steps of probability ~1 and ~exp(-600), no overflow."""
    rng = np.random.default_rng(9)
    g = layered_graph(30, seed=9)
    y = rng.normal(size=g.n) * 300
    orders = np.vstack([sample_orders(g, y, 2, seed=0), sample_orders(g, -y, 2, seed=0)])
    want = [naive_log_prob(g, y, o) for o in orders]
    for method in ("sparse", "dense"):
        got = order_log_probs(torch.tensor(y), orders, g, method=method).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-9)
    assert want[0] > -1.0 and -1e5 < want[-1] < -1e3


def test_matches_the_stepwise_definition():
    rng = np.random.default_rng(1)
    graphs = [random_dag(rng, int(rng.integers(1, 30)), p=float(rng.random() * 0.4)) for _ in range(15)]
    graphs += [layered_graph(40, seed=2)]
    for g in graphs:
        y = rng.normal(size=g.n)
        orders = sample_orders(g, y, 4, seed=3)
        got = order_log_probs(torch.tensor(y), orders, g).numpy()
        want = [naive_log_prob(g, y, o) for o in orders]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
        dense = order_log_probs(torch.tensor(y), orders, g, method="dense").numpy()
        np.testing.assert_allclose(dense, want, rtol=1e-10, atol=1e-10)
        # chunking is invisible; one order of shape (n,) is a batch of one
        chunked = order_log_probs(torch.tensor(y), orders, g, method="dense", chunk_elements=1).numpy()
        np.testing.assert_allclose(chunked, dense)
        assert order_log_probs(torch.tensor(y), orders[0], g).shape == (1,)


def test_beam_log_probs_agree():
    g = layered_graph(30, seed=4)
    y = np.random.default_rng(4).normal(size=g.n)
    r = beam_search(g, y, 8, "none")
    np.testing.assert_allclose(order_log_probs(torch.tensor(y), r.orders, g).numpy(), r.log_probs, rtol=1e-10)


def test_availability_intervals():
    rng = np.random.default_rng(5)
    g = random_dag(rng, 12, p=0.3)
    orders = sample_orders(g, rng.normal(size=g.n), 3, seed=0)
    first, pos = availability(g, orders)
    for s, order in enumerate(orders):
        placed: set[int] = set()
        for t, v in enumerate(order.tolist()):
            assert pos[s, v] == t
            ready = {u for u in range(g.n) if u not in placed and set(g.predecessors(u).tolist()) <= placed}
            assert ready == {u for u in range(g.n) if first[s, u] <= t <= pos[s, u]}
            placed.add(v)


def test_sample_frequencies_match_the_policy():
    """Chi-square of 30000 seeded samples over the 40 orders of a 5-node graph (fixed
    seed, so it cannot flake); the bound is far below what a wrong sampler gives."""
    g = Graph.from_arrays([1] * 5, [0] * 5, [1] * 5, [(0, 2), (1, 2)])
    y = np.array([0.3, -0.5, 1.0, 0.0, -1.2])
    orders = all_orders(g)
    assert len(orders) == 40
    p = torch.exp(order_log_probs(torch.tensor(y), orders, g)).numpy()
    count = 30000
    samples = sample_orders(g, y, count, seed=2024)
    index = {tuple(o): i for i, o in enumerate(orders.tolist())}
    observed = np.bincount([index[tuple(o)] for o in samples.tolist()], minlength=len(orders))
    expected = p * count
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    dof = len(orders) - 1
    assert chi2 < dof + 5 * math.sqrt(2 * dof)  # beyond the 99.99th percentile of chi2(39)
    # the test has power: one Gumbel perturbation of the priorities, then Kahn's
    # algorithm, reuses an op's noise after it lost a step and is far off
    few = 5000
    keys = y + np.random.default_rng(0).gumbel(size=(few, 5))
    wrong = np.bincount([index[tuple(kahn_order(g, k).tolist())] for k in keys], minlength=len(orders))
    assert float(((wrong - p * few) ** 2 / (p * few)).sum()) > 5 * (dof + 5 * math.sqrt(2 * dof))


def test_gradient_matches_gradcheck():
    rng = np.random.default_rng(6)
    g = random_dag(rng, 6, p=0.3)
    orders = sample_orders(g, rng.normal(size=6), 3, seed=1)
    y = torch.tensor(rng.normal(size=6), dtype=torch.float64, requires_grad=True)
    for method in ("sparse", "dense"):
        assert torch.autograd.gradcheck(lambda v, m=method: order_log_probs(v, orders, g, method=m), (y,))
    # the gradient of log p is the sum over steps of (one-hot of the pick - softmax over the ready set)
    lp = order_log_probs(y, orders[:1], g).sum()
    (grad,) = torch.autograd.grad(lp, y)
    assert grad.sum().item() == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    ("priorities", "orders", "word"),
    [
        (torch.zeros(5), [[0, 1, 2, 3]], "priorities"),
        (np.zeros(4), [[0, 1, 2, 3]], "priorities"),
        (torch.tensor([0.0, math.nan, 0.0, 0.0]), [[0, 1, 2, 3]], "priorities"),
        (torch.zeros(4, dtype=torch.int64), [[0, 1, 2, 3]], "priorities"),
        (torch.zeros(4), [[1, 0, 2, 3]], "topological"),
        (torch.zeros(4), [[0, 1, 2, 2]], "permutation"),
        (torch.zeros(4), [[0, 1, 2]], "orders"),
        (torch.zeros(4), [[0.0, 1.0, 2.0, 3.0]], "orders"),
    ],
)
def test_bad_inputs_raise(priorities, orders, word):
    g = Graph.from_arrays([1] * 4, [0] * 4, [1] * 4, [(0, 1), (1, 2), (2, 3)])
    with pytest.raises(InvalidParameterError, match=word):
        order_log_probs(priorities, np.array(orders), g)


def test_bad_options_raise():
    g = Graph.from_arrays([1] * 3, [0] * 3, [1] * 3, [])
    with pytest.raises(InvalidParameterError, match="method"):
        order_log_probs(torch.zeros(3), np.array([0, 1, 2]), g, method="loop")
    with pytest.raises(InvalidParameterError, match="chunk_elements"):
        order_log_probs(torch.zeros(3), np.array([0, 1, 2]), g, method="dense", chunk_elements=0)
    with pytest.raises(InvalidParameterError, match="permutation"):
        availability(g, np.array([[0, 0, 1]]))


def test_batch_log_probs_match_graph_by_graph():
    """One segmented log-sum-exp over a padded batch of graphs of different sizes gives
    each graph's log p(order) of Eq. 6 and 8, and the same gradient."""
    rng = np.random.default_rng(17)
    graphs = [random_dag(rng, n, p=0.3) for n in (6, 1, 11, 8)]
    width = max(g.n for g in graphs)
    y = torch.tensor(rng.normal(size=(len(graphs), width)) * 3, dtype=torch.float64, requires_grad=True)
    pad = torch.tensor([[float(i < g.n) for i in range(width)] for g in graphs], dtype=torch.float64)
    orders = [kahn_order(g, rng.random(g.n)) for g in graphs]
    pairs = [tuple(torch.from_numpy(a) for a in schedulable_pairs(g, o)) for g, o in zip(graphs, orders)]
    got = batch_log_probs(y * pad, pairs, [g.n for g in graphs])
    want = torch.stack([order_log_probs(y[b, : g.n], o, g)[0] for b, (g, o) in enumerate(zip(graphs, orders))])
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    (g_got,) = torch.autograd.grad(got.sum(), y)
    (g_want,) = torch.autograd.grad(want.sum(), y)
    torch.testing.assert_close(g_got, g_want, rtol=1e-12, atol=1e-12)
    with pytest.raises(InvalidParameterError, match="expected"):
        batch_log_probs(y[0], pairs, [g.n for g in graphs])


def test_block_picks_give_the_likelihood_of_listing_the_blocks_in_any_inner_order():
    """With picks widened to the ready ops of the order's current block, a step's term is
    log of the softmax mass of those ops over the ready set (a direct loop over steps);
    with one block per op it is Eq. 6 and 8 unchanged."""
    rng = np.random.default_rng(23)
    graphs = [random_dag(rng, n, p=0.35) for n in (7, 3, 10)]
    width = max(g.n for g in graphs)
    y = torch.tensor(rng.normal(size=(len(graphs), width)) * 2, dtype=torch.float64)
    orders = [kahn_order(g, rng.random(g.n)) for g in graphs]
    pairs = [schedulable_pairs(g, o) for g, o in zip(graphs, orders)]
    tensors = [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in pairs]
    sizes = [g.n for g in graphs]
    own = [torch.from_numpy(block_picks(o, np.arange(g.n), *p)) for g, o, p in zip(graphs, orders, pairs)]
    torch.testing.assert_close(batch_log_probs(y, tensors, sizes, own), batch_log_probs(y, tensors, sizes))
    blocks = []
    for g, o in zip(graphs, orders):
        cuts = np.sort(rng.choice(np.arange(1, g.n), size=min(2, g.n - 1), replace=False))
        label = np.empty(g.n, dtype=np.int64)
        label[o] = np.searchsorted(cuts, np.arange(g.n), side="right")  # three runs of the order
        blocks.append(label)
    picks = [torch.from_numpy(block_picks(o, b, *p)) for o, b, p in zip(orders, blocks, pairs)]
    got = batch_log_probs(y, tensors, sizes, picks)
    for b, (g, o) in enumerate(zip(graphs, orders)):
        first, pos = availability(g, o)
        want = 0.0
        for t in range(g.n):
            ready = [i for i in range(g.n) if first[0, i] <= t <= pos[0, i]]
            mass = torch.softmax(y[b, ready], dim=0)
            want += float(torch.log(sum(m for m, i in zip(mass, ready) if blocks[b][i] == blocks[b][o[t]])))
        assert float(got[b]) == pytest.approx(want, rel=1e-10, abs=1e-10)
