"""Topoformer encoder and priority head (Section 4.1, Eq. 4, 5, 7, 17)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from heuristics.neural.masks import (  # noqa: E402
    INCOMPARABLE,
    N_RELATIONS,
    SELF,
    TR,
    TR_REV,
    relation_matrix,
)
from heuristics.neural.topoformer import (  # noqa: E402
    Topoformer,
    TopoformerConfig,
    count_parameters,
    normalize_priorities,
    pad_batch,
)
from mtpp.core.errors import InvalidParameterError  # noqa: E402
from mtpp.core.graph import Graph  # noqa: E402

F_IN = 5
UNIFORM = (1,) * N_RELATIONS
UNEVEN = (1, 2, 0, 1, 1, 1, 3)


def _random_dag(n: int, density: float, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    i, j = np.triu_indices(n, k=1)
    keep = rng.random(i.size) < density
    perm = rng.permutation(n)
    return Graph.from_arrays(np.ones(n), np.ones(n), np.ones(n), np.stack([perm[i[keep]], perm[j[keep]]], axis=1))


@pytest.fixture(scope="module")
def graph() -> Graph:
    g = _random_dag(24, 0.15, seed=3)
    assert set(np.unique(relation_matrix(g)).tolist()) == set(range(N_RELATIONS + 1))  # all seven graphs occur
    return g


@pytest.fixture(scope="module")
def relation(graph: Graph) -> Any:
    return torch.from_numpy(relation_matrix(graph))


def _model(seed: int = 0, **kw: Any) -> Topoformer:
    cfg = {"in_features": F_IN, "layers": 2, "dim": 16, "head_dim": 4, **kw}
    torch.manual_seed(seed)
    return Topoformer(TopoformerConfig(**cfg))


def _x(n: int, seed: int = 1) -> Any:
    return torch.randn(n, F_IN, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------- output


@pytest.mark.parametrize("heads", [UNIFORM, UNEVEN, (2,) * N_RELATIONS])
@pytest.mark.parametrize("alpha", [5.0, 0.5])
def test_output_normalised(graph: Graph, relation: Any, heads: tuple[int, ...], alpha: float) -> None:
    model = _model(heads_per_relation=heads, alpha=alpha).eval()
    with torch.no_grad():
        y = model(_x(graph.n), relation)
    assert y.shape == (graph.n,) and y.dtype == torch.float32
    assert torch.isfinite(y).all()
    assert abs(float(y.mean())) < 1e-5 * alpha
    assert float(y.std(correction=0)) == pytest.approx(alpha, rel=1e-4)  # Eq. 17


def test_numpy_relation_accepted(graph: Graph, relation: Any) -> None:
    model = _model().eval()
    x = _x(graph.n)
    with torch.no_grad():
        a = model(x, relation)
        b = model(x, relation_matrix(graph))
        c = model(x, relation.long())
    assert torch.equal(a, b) and torch.equal(a, c)


@pytest.mark.parametrize("heads", [UNIFORM, UNEVEN])
def test_permutation_equivariance(graph: Graph, relation: Any, heads: tuple[int, ...]) -> None:
    model = _model(heads_per_relation=heads).eval()
    n = graph.n
    x = _x(n)
    perm = np.random.default_rng(5).permutation(n)
    # the relabelled graph (node k of the new graph is node perm[k] of the old one) has the permuted matrix
    inv = np.argsort(perm)
    relabelled = Graph.from_arrays(
        np.ones(n), np.ones(n), np.ones(n), np.stack([inv[graph.edge_src], inv[graph.edge_dst]], 1)
    )
    rel_p = relation_matrix(relabelled)
    np.testing.assert_array_equal(rel_p, relation.numpy()[np.ix_(perm, perm)])
    p = torch.from_numpy(perm)
    with torch.no_grad():
        y = model(x, relation)
        y_p = model(x[p], rel_p)
    torch.testing.assert_close(y_p, y[p], atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------- masks


def _support(model: Topoformer, x: Any, relation: Any) -> np.ndarray:
    """``[i, j]`` is True iff the raw priority ``y_i`` depends on the features of node ``j``."""
    jac = torch.autograd.functional.jacobian(lambda z: model.priorities(z, relation), x)  # (n, n, F_IN)
    return (jac.abs().sum(-1) > 0).numpy()


@pytest.mark.parametrize("code", [TR, TR_REV, INCOMPARABLE])
def test_one_layer_sees_only_its_relation(graph: Graph, relation: Any, code: int) -> None:
    """With heads on one relation only and one layer, ``y_i`` depends exactly on ``x_i``
    and the ``x_j`` with ``relation[i, j] == code`` (Eq. 4 with a single mask)."""
    heads = tuple(1 if r == code else 0 for r in range(N_RELATIONS))
    model = _model(layers=1, heads_per_relation=heads).eval()
    rel = relation.numpy()
    allowed = (rel == code) | np.eye(graph.n, dtype=bool)
    np.testing.assert_array_equal(_support(model, _x(graph.n), relation), allowed)


def test_perturbing_outside_tr_leaves_priority_unchanged(graph: Graph, relation: Any) -> None:
    """The same statement by perturbation: node ``i``'s TR heads read its reduction
    successors only, so rewriting every other node's features changes nothing."""
    model = _model(layers=1, heads_per_relation=(1, 0, 0, 0, 0, 0, 0)).eval()
    rel = relation.numpy()
    x = _x(graph.n)
    gen = torch.Generator().manual_seed(9)
    with torch.no_grad():
        y = model.priorities(x, relation)
        for i in range(graph.n):
            inside = (rel[i] == TR) | (np.arange(graph.n) == i)
            outside = torch.from_numpy(~inside)
            x2 = x.clone()
            x2[outside] = torch.randn(int(outside.sum()), F_IN, generator=gen)
            assert torch.equal(model.priorities(x2, relation)[i], y[i]), i
            succ = np.flatnonzero(rel[i] == TR)
            if succ.size:  # and a reduction successor does matter
                x3 = x.clone()
                x3[int(succ[0])] += 1.0
                assert not torch.equal(model.priorities(x3, relation)[i], y[i]), i


def test_two_layers_see_two_hops(graph: Graph, relation: Any) -> None:
    model = _model(layers=2, heads_per_relation=(1, 0, 0, 0, 0, 0, 0)).eval()
    a = ((relation.numpy() == TR) | np.eye(graph.n, dtype=bool)).astype(int)
    np.testing.assert_array_equal(_support(model, _x(graph.n), relation), (a @ a) > 0)


def test_all_relations_see_everything(graph: Graph, relation: Any) -> None:
    model = _model(layers=1).eval()
    assert _support(model, _x(graph.n), relation).all()


@pytest.mark.parametrize("heads", [UNIFORM, (3,) * N_RELATIONS, UNEVEN])
def test_attention_mask(relation: Any, heads: tuple[int, ...]) -> None:
    model = _model(heads_per_relation=heads)
    mask = model.attention_mask(relation)
    n = relation.shape[0]
    eye = torch.eye(n, dtype=torch.bool)
    per_head = [r for r in range(N_RELATIONS) for _ in range(heads[r])]
    if len({h for h in heads if h}) == 1:  # one mask per relation, broadcast over its heads
        rows = [r for r in range(N_RELATIONS) if heads[r]]
        assert mask.shape == (len(rows), 1, n, n)
        mask = mask[:, 0]
    else:
        rows = per_head
        assert mask.shape == (len(per_head), n, n)
    for m, r in zip(mask, rows):
        assert torch.equal(m, (relation == r) | eye)


# --------------------------------------------------------------------------- config


def test_config_round_trip() -> None:
    cfg = TopoformerConfig(in_features=9, layers=3, dim=32, heads_per_relation=UNEVEN, head_dim=8, mlp_hidden=48)
    d = json.loads(json.dumps(cfg.to_dict()))
    back = TopoformerConfig.from_dict(d)
    assert back == cfg and isinstance(back.heads_per_relation, tuple)
    default = TopoformerConfig(in_features=4)
    assert TopoformerConfig.from_dict(json.loads(json.dumps(default.to_dict()))) == default
    assert default.hidden == default.dim and default.heads == N_RELATIONS
    assert TopoformerConfig(in_features=4, heads_per_relation=[2] * 7).heads_per_relation == (2,) * 7  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"in_features": 0}, "in_features"),
        ({"in_features": 2.5}, "in_features"),
        ({"in_features": True}, "in_features"),
        ({"layers": 0}, "layers"),
        ({"dim": -1}, "dim"),
        ({"head_dim": 0}, "head_dim"),
        ({"mlp_hidden": 0}, "mlp_hidden"),
        ({"heads_per_relation": (1,) * 6}, "heads_per_relation"),
        ({"heads_per_relation": (1,) * 6 + (-1,)}, "heads_per_relation[6]"),
        ({"heads_per_relation": (0,) * 7}, "heads_per_relation"),
        ({"heads_per_relation": 3}, "heads_per_relation"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": math.nan}, "alpha"),
        ({"alpha": "5"}, "alpha"),
        ({"dropout": 1.0}, "dropout"),
        ({"dropout": -0.1}, "dropout"),
    ],
)
def test_bad_config(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidParameterError, match=f"TopoformerConfig.{field}".replace("[", r"\[")):
        TopoformerConfig(**{"in_features": 3, **kwargs})


def test_bad_dict() -> None:
    with pytest.raises(InvalidParameterError, match="'depth'"):
        TopoformerConfig.from_dict({"in_features": 3, "depth": 2})
    with pytest.raises(InvalidParameterError, match="in_features"):
        TopoformerConfig.from_dict({"layers": 2})
    with pytest.raises(InvalidParameterError, match="layers"):
        TopoformerConfig.from_dict({"in_features": 3, "layers": -2})


def test_bad_inputs(relation: Any) -> None:
    model = _model()
    n = relation.shape[0]
    with pytest.raises(InvalidParameterError, match="x has shape"):
        model(torch.randn(n, F_IN + 1), relation)
    with pytest.raises(InvalidParameterError, match="relation has shape"):
        model(torch.randn(n, F_IN), relation[:, :-1])
    with pytest.raises(InvalidParameterError, match="does not match x"):
        model(torch.randn(n - 1, F_IN), relation)


# --------------------------------------------------------------------------- training behaviour


def test_deterministic_in_eval_mode(graph: Graph, relation: Any) -> None:
    x = _x(graph.n)
    a, b = _model(seed=11, dropout=0.3).eval(), _model(seed=11, dropout=0.3).eval()
    with torch.no_grad():
        ya, yb, ya2 = a(x, relation), b(x, relation), a(x, relation)
    assert torch.equal(ya, yb) and torch.equal(ya, ya2)
    assert not torch.equal(ya, _model(seed=12).eval()(x, relation).detach())


@pytest.mark.parametrize("heads", [UNIFORM, UNEVEN])
def test_gradients_reach_every_parameter(graph: Graph, relation: Any, heads: tuple[int, ...]) -> None:
    model = _model(heads_per_relation=heads, mlp_hidden=12).train()
    y = model(_x(graph.n), relation)
    w = torch.randn(graph.n, generator=torch.Generator().manual_seed(4))
    (y * w).sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        assert float(p.grad.abs().sum()) > 0, name


def test_single_node() -> None:
    model = _model().train()
    x = torch.randn(1, F_IN, requires_grad=True)
    y = model(x, torch.tensor([[SELF]], dtype=torch.uint8))
    assert y.shape == (1,) and torch.equal(y, torch.zeros(1))
    y.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())


def test_two_incomparable_nodes() -> None:
    model = _model().eval()
    rel = relation_matrix(Graph.from_arrays(np.ones(2), np.ones(2), np.ones(2), []))
    y = model(_x(2), rel)
    assert y.shape == (2,) and torch.isfinite(y).all()


def test_normalize_degenerate() -> None:
    y = torch.full((6,), 3.7, requires_grad=True)
    out = normalize_priorities(y, 5.0)
    assert torch.equal(out, torch.zeros(6))
    out.sum().backward()
    assert y.grad is not None and torch.isfinite(y.grad).all()
    assert torch.equal(normalize_priorities(torch.zeros(3), 5.0), torch.zeros(3))


def test_count_parameters() -> None:
    cfg = TopoformerConfig(in_features=F_IN, layers=3, dim=16, heads_per_relation=UNEVEN, head_dim=4, mlp_hidden=20)
    d, h, inner = cfg.dim, cfg.hidden, cfg.heads * cfg.head_dim
    block = 4 * d + 3 * d * inner + inner * d + d + d * h + h + h * d + d
    expected = F_IN * d + d + cfg.layers * block + d * d + d + d
    assert count_parameters(Topoformer(cfg)) == expected


# --------------------------------------------------------------------------- padded batches


@pytest.mark.parametrize("heads", [UNIFORM, UNEVEN])
def test_a_padded_batch_gives_each_graph_its_own_priorities(heads: tuple[int, ...]) -> None:
    """A graph alone and in a padded batch beside larger and smaller ones: the same
    priorities (Eq. 7 and 17 over its own nodes), 0 at its padded nodes."""
    model = _model(seed=4, heads_per_relation=heads).eval()
    graphs = [_random_dag(n, 0.2, seed=n) for n in (9, 24, 1, 15)]
    inputs = [(_x(g.n, seed=g.n), torch.from_numpy(relation_matrix(g))) for g in graphs]
    with torch.no_grad():
        x, rel = pad_batch(inputs)
        assert x.shape == (4, 24, F_IN) and rel.shape == (4, 24, 24)
        batched = model(x, rel)
        for b, (g, (xg, rg)) in enumerate(zip(graphs, inputs)):
            torch.testing.assert_close(batched[b, : g.n], model(xg, rg), rtol=1e-5, atol=1e-5)
            assert torch.equal(batched[b, g.n :], torch.zeros(24 - g.n))
    with pytest.raises(InvalidParameterError, match="at least one graph"):
        pad_batch([])
