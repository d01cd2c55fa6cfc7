"""Topoformer: topologically masked attention and the priority head (Section 4.1, 4.2).

The encoder turns node features ``x_i`` (App. C.5) into embeddings and the head
turns the embeddings into scheduling priorities:

* ``h_i^(0) = W x_i + b`` (Section 4.1);
* ``L`` pre-layer-norm blocks (Xiong et al., ref. [31] of the paper)::

      h^_i = h_i + P concat_j MHA_j(LN(h); M^j)_i        (Eq. 4)
      h_i  = h^_i + MLP(LN(h^)_i),  MLP = Linear-GELU-Linear  (Eq. 5)

  where the group of heads ``MHA_j`` of relation ``j`` is masked by ``M^j``, one of
  the seven DAG-derived graphs of :mod:`heuristics.neural.masks`, and ``P`` projects
  the concatenated heads back to ``dim``;
* ``y_i = MLP(h_i^(L))``, ``MLP = Linear-ReLU-Linear`` to one number (Eq. 7);
* ``y~ = alpha (y - mean(y)) / std(y)`` (Eq. 17, App. C.2).

Choices the paper leaves open, made here:

* A head of relation ``r`` lets node ``i`` attend to ``j`` iff ``relation[i, j] == r``
  **or** ``i == j``.  The self pair keeps every softmax row non-empty (a node with no
  partner in a relation, e.g. a sink in ``TR``, attends to itself only instead of
  producing NaN).  The query is the receiver: ``TR`` heads of node ``i`` read its
  reduction *successors*, ``TR_REV`` heads its reduction predecessors.
* The query/key/value projections have no bias (a key bias is invisible to softmax
  and the layer norms already carry a shift), and the last layer of the priority
  head has no bias (Eq. 17 removes any constant).  So every parameter gets a gradient.
* ``std`` in Eq. 17 is the population standard deviation; when it is zero (``n = 1``
  or constant priorities, up to float32 round-off) the normalised priorities are all
  zero.
* One graph per call (``x`` ``(n, in_features)``, ``relation`` ``(n, n)``), or a padded
  batch (``x`` ``(B, N, in_features)``, ``relation`` ``(B, N, N)``, :func:`pad_batch`):
  a padded node carries the code :data:`~heuristics.neural.masks.PAD` on its diagonal
  and with every other node, so no head lets a real node see it, it sees only itself,
  and Eq. 17 normalises each graph over its own nodes (the padded ones get priority 0).
  A graph gives the same priorities alone or in a batch, up to float round-off.

The attention uses :func:`torch.nn.functional.scaled_dot_product_attention`.  The
boolean mask (:meth:`Topoformer.attention_mask`) is built once per forward from the
relation matrix: ``(heads, n, n)``, or ``(relations, 1, n, n)`` broadcast over the
heads when every used relation has the same number of heads (the paper's setting),
so it costs ``n^2`` entries per used relation, not per head.  It is turned into an
additive float mask (0 / -inf) once and shared by all layers: SDPA would otherwise
convert a boolean mask again in every layer (about 1.6x slower attention on CPU).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from heuristics.neural.masks import N_RELATIONS, PAD, RELATION_NAMES
from mtpp.core.errors import InvalidParameterError

_STD_RTOL = 1e-6  # std below this fraction of max |y| counts as zero in Eq. 17 (float32 eps ~ 1.2e-7)


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidParameterError(f"TopoformerConfig.{name} = {value!r}; expected an integer >= {minimum}")


@dataclass(frozen=True)
class TopoformerConfig:
    """Hyper-parameters of :class:`Topoformer` (defaults: App. C.2 but for the heads).

    ``heads_per_relation[r]`` is the number of attention heads masked by relation
    ``r`` of :mod:`heuristics.neural.masks` (in the order of ``RELATION_NAMES``); 0
    means no message passing along that graph.  The paper uses 10 heads of dimension
    64 per relation.  ``mlp_hidden`` is the hidden width of the MLP of Eq. 5
    (``None``: ``dim``), ``alpha`` the scale of Eq. 17.  Invalid values raise
    :class:`~mtpp.core.errors.InvalidParameterError` naming the field.
    """

    in_features: int
    layers: int = 4
    dim: int = 256
    heads_per_relation: tuple[int, ...] = (1,) * N_RELATIONS
    head_dim: int = 32
    mlp_hidden: int | None = None
    alpha: float = 5.0
    dropout: float = 0.0

    def __post_init__(self) -> None:
        _check_int("in_features", self.in_features, 1)
        _check_int("layers", self.layers, 1)
        _check_int("dim", self.dim, 1)
        _check_int("head_dim", self.head_dim, 1)
        if self.mlp_hidden is not None:
            _check_int("mlp_hidden", self.mlp_hidden, 1)
        heads = self.heads_per_relation
        if isinstance(heads, (str, bytes)) or not hasattr(heads, "__iter__"):
            raise InvalidParameterError(
                f"TopoformerConfig.heads_per_relation = {heads!r}; expected {N_RELATIONS} integers >= 0"
            )
        heads = tuple(heads)
        if len(heads) != N_RELATIONS:
            raise InvalidParameterError(
                f"TopoformerConfig.heads_per_relation has {len(heads)} entries; expected {N_RELATIONS} "
                f"(one per relation: {', '.join(RELATION_NAMES)})"
            )
        for r, h in enumerate(heads):
            _check_int(f"heads_per_relation[{r}] ({RELATION_NAMES[r]})", h, 0)
        if sum(heads) == 0:
            raise InvalidParameterError("TopoformerConfig.heads_per_relation is all zero; at least one head is needed")
        object.__setattr__(self, "heads_per_relation", tuple(int(h) for h in heads))
        for name in ("alpha", "dropout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise InvalidParameterError(f"TopoformerConfig.{name} = {value!r}; expected a number")
            object.__setattr__(self, name, float(value))
        if not (math.isfinite(self.alpha) and self.alpha > 0):
            raise InvalidParameterError(f"TopoformerConfig.alpha = {self.alpha!r}; expected a finite number > 0")
        if not 0.0 <= self.dropout < 1.0:
            raise InvalidParameterError(f"TopoformerConfig.dropout = {self.dropout!r}; expected 0 <= dropout < 1")

    @property
    def hidden(self) -> int:
        """Hidden width of the MLP of Eq. 5."""
        return self.dim if self.mlp_hidden is None else self.mlp_hidden

    @property
    def heads(self) -> int:
        """Total number of attention heads per layer."""
        return sum(self.heads_per_relation)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (the head counts as a list); :meth:`from_dict` inverts it."""
        d = asdict(self)
        d["heads_per_relation"] = list(self.heads_per_relation)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TopoformerConfig:
        """The config of a :meth:`to_dict` dict; unknown or missing keys raise
        :class:`~mtpp.core.errors.InvalidParameterError`."""
        if not isinstance(d, dict):
            raise InvalidParameterError(f"TopoformerConfig.from_dict needs a dict, got {type(d).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise InvalidParameterError(f"TopoformerConfig has no field {unknown[0]!r}")
        if "in_features" not in d:
            raise InvalidParameterError("TopoformerConfig.in_features is missing")
        kwargs = dict(d)
        if "heads_per_relation" in kwargs and isinstance(kwargs["heads_per_relation"], list):
            kwargs["heads_per_relation"] = tuple(kwargs["heads_per_relation"])
        return cls(**kwargs)


class _Block(nn.Module):
    """One pre-layer-norm attention block (Eq. 4 and 5)."""

    def __init__(self, config: TopoformerConfig) -> None:
        super().__init__()
        inner = config.heads * config.head_dim
        self.heads = config.heads
        self.head_dim = config.head_dim
        self.dropout = config.dropout
        self.ln_attn = nn.LayerNorm(config.dim)
        self.qkv = nn.Linear(config.dim, 3 * inner, bias=False)
        self.proj = nn.Linear(inner, config.dim)
        self.ln_mlp = nn.LayerNorm(config.dim)
        self.mlp = nn.Sequential(nn.Linear(config.dim, config.hidden), nn.GELU(), nn.Linear(config.hidden, config.dim))
        self.drop = nn.Dropout(config.dropout)

    def forward(self, h: Tensor, mask: Tensor, grouped: bool) -> Tensor:
        """One block on ``h`` ``(..., n, dim)``; ``mask`` is the additive attention mask of
        :meth:`Topoformer.embed`, grouped by relation (``(..., relations, 1, n, n)``) or
        per head (``(..., heads, n, n)``)."""
        lead, n = h.shape[:-2], h.shape[-2]
        qkv = self.qkv(self.ln_attn(h)).unflatten(-1, (3, self.heads, self.head_dim))  # (..., n, 3, H, d)
        q, k, v = qkv.movedim(-3, 0).transpose(-2, -3).unbind(0)  # each (..., H, n, d)
        # SDPA on 4-D tensors: (graphs x relations, heads per relation, n, d) or (graphs, heads, n, d)
        groups = mask.shape[-4] if grouped else 1
        shape = (-1, self.heads // groups, n, self.head_dim)
        q, k, v = q.reshape(shape), k.reshape(shape), v.reshape(shape)
        p = self.dropout if self.training else 0.0
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.reshape(-1, *mask.shape[-3:]), dropout_p=p)
        a = a.reshape(*lead, self.heads, n, self.head_dim).transpose(-2, -3).reshape(*lead, n, -1)
        h = h + self.drop(self.proj(a))  # Eq. 4
        return h + self.drop(self.mlp(self.ln_mlp(h)))  # Eq. 5


class Topoformer(nn.Module):
    """The Topoformer encoder with the priority head of Eq. 7 and the normalisation of
    Eq. 17; see the module docstring for the architecture and the choices made.

    ``forward(x, relation)`` takes the node features ``(n, in_features)`` (float32)
    and the relation codes ``(n, n)`` of :func:`heuristics.neural.masks.relation_matrix`
    (a uint8 / integer tensor or numpy array) of one graph and returns the
    normalised priorities ``(n,)``; or a padded batch ``(B, N, in_features)``, ``(B, N,
    N)`` of :func:`pad_batch` and returns ``(B, N)``.  :meth:`priorities` returns them
    before Eq. 17 and :meth:`embed` the final embeddings ``h^(L)``.
    """

    _mask_relations: Tensor  # relation code of each mask row (a buffer)

    def __init__(self, config: TopoformerConfig) -> None:
        super().__init__()
        if not isinstance(config, TopoformerConfig):
            raise InvalidParameterError(f"Topoformer needs a TopoformerConfig, got {type(config).__name__}")
        self.config = config
        self.input = nn.Linear(config.in_features, config.dim)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.layers))
        self.head = nn.Sequential(nn.Linear(config.dim, config.dim), nn.ReLU(), nn.Linear(config.dim, 1, bias=False))
        used = [r for r, c in enumerate(config.heads_per_relation) if c > 0]
        counts = {config.heads_per_relation[r] for r in used}
        self._grouped = len(counts) == 1  # equal head counts: one mask per relation, broadcast over its heads
        per_head = [r for r in used for _ in range(config.heads_per_relation[r])]
        self.register_buffer("_mask_relations", torch.tensor(used if self._grouped else per_head), persistent=False)

    def attention_mask(self, relation: Tensor | np.ndarray) -> Tensor:
        """The boolean masks ``M^j`` of Eq. 4 (True = may attend), self pairs included:
        ``(..., heads, n, n)``, or ``(..., relations used, 1, n, n)`` when every used
        relation has the same number of heads; ``...`` is the batch of a padded
        ``relation`` ``(B, N, N)``, empty for one graph's ``(n, n)``."""
        rel = torch.as_tensor(relation, device=self._mask_relations.device)
        if rel.dim() not in (2, 3) or rel.shape[-1] != rel.shape[-2]:
            raise InvalidParameterError(f"relation has shape {tuple(rel.shape)}; expected (n, n) or (B, N, N)")
        n = rel.shape[-1]
        mask = rel.unsqueeze(-3) == self._mask_relations.to(rel.dtype).view(-1, 1, 1)
        mask |= torch.eye(n, dtype=torch.bool, device=rel.device)
        return mask.unsqueeze(-3) if self._grouped else mask

    def embed(self, x: Tensor, relation: Tensor | np.ndarray) -> Tensor:
        """The embeddings ``h^(L)`` ``(..., n, dim)`` after the input layer and ``L`` blocks."""
        if x.dim() not in (2, 3) or x.shape[-1] != self.config.in_features:
            raise InvalidParameterError(
                f"x has shape {tuple(x.shape)}; expected (n, {self.config.in_features}) for one graph "
                f"or (B, N, {self.config.in_features}) for a padded batch"
            )
        mask = self.attention_mask(relation)
        batch = mask.shape[: -4 if self._grouped else -3]
        if mask.shape[-1] != x.shape[-2] or tuple(batch) != tuple(x.shape[:-2]):
            raise InvalidParameterError(
                f"relation {tuple(torch.as_tensor(relation).shape)} does not match x {tuple(x.shape)}"
            )
        # SDPA turns a boolean mask into an additive float one on every call: do it once for all layers
        bias = torch.zeros(mask.shape, dtype=x.dtype, device=x.device).masked_fill_(~mask.to(x.device), -math.inf)
        h = self.input(x)
        for block in self.blocks:
            h = block(h, bias, self._grouped)
        return h

    def priorities(self, x: Tensor, relation: Tensor | np.ndarray) -> Tensor:
        """The raw priorities ``y`` ``(..., n)`` of Eq. 7, before the normalisation of Eq. 17."""
        return self.head(self.embed(x, relation)).squeeze(-1)

    def forward(self, x: Tensor, relation: Tensor | np.ndarray) -> Tensor:
        """The normalised priorities ``y~ = alpha (y - mean) / std`` ``(..., n)`` of Eq. 17,
        per graph over its own nodes (padded nodes: 0)."""
        y = self.priorities(x, relation)
        if y.dim() == 1:
            return normalize_priorities(y, self.config.alpha)
        real = torch.as_tensor(relation, device=y.device).diagonal(dim1=-2, dim2=-1) != PAD
        return normalize_priorities(y, self.config.alpha, real)


def normalize_priorities(y: Tensor, alpha: float, real: Tensor | None = None) -> Tensor:
    """Eq. 17: ``alpha (y - mean(y)) / std(y)`` with the population ``std``; all zeros
    when ``std`` vanishes (one node, or constant ``y`` up to float round-off).  Over the
    last axis; with ``real`` (a boolean mask of ``y``'s shape) over the real entries
    only, and 0 at the others."""
    if real is None:
        real = torch.ones_like(y, dtype=torch.bool)
    count = real.sum(dim=-1, keepdim=True).clamp(min=1)
    centred = torch.where(real, y - torch.where(real, y, 0.0).sum(dim=-1, keepdim=True) / count, 0.0)
    var = centred.pow(2).sum(dim=-1, keepdim=True) / count
    top = torch.where(real, y.detach().abs(), 0.0).amax(dim=-1, keepdim=True)
    degenerate = var <= (_STD_RTOL * top) ** 2
    # sqrt of a safe value: sqrt'(0) = inf would turn the masked branch's gradient into NaN
    std = torch.where(degenerate, torch.ones_like(var), var).sqrt()
    return torch.where(degenerate, torch.zeros_like(y), alpha * centred / std)


def pad_batch(graphs: list[tuple[Tensor, Tensor]]) -> tuple[Tensor, Tensor]:
    """Stack graphs' ``(x, relation)`` (``(n_b, F)``, ``(n_b, n_b)`` uint8, on one device)
    into a padded batch ``(B, N, F)``, ``(B, N, N)`` with ``N = max n_b``: padded
    features are 0 and padded relation entries :data:`~heuristics.neural.masks.PAD`."""
    if not graphs:
        raise InvalidParameterError("pad_batch needs at least one graph")
    x0, r0 = graphs[0]
    size = max(int(x.shape[0]) for x, _ in graphs)
    x = torch.zeros((len(graphs), size, x0.shape[1]), dtype=x0.dtype, device=x0.device)
    rel = torch.full((len(graphs), size, size), PAD, dtype=r0.dtype, device=r0.device)
    for b, (xb, rb) in enumerate(graphs):
        n = xb.shape[0]
        x[b, :n] = xb
        rel[b, :n, :n] = rb
    return x, rel


def count_parameters(model: nn.Module) -> int:
    """Number of scalar parameters of ``model``."""
    return sum(p.numel() for p in model.parameters())
