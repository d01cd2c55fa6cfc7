"""Where a ``torch.distributed.pipelining`` split spec can cut a traced model.

``pipeline(module, mb_args, split_spec={name: SplitPoint.BEGINNING | END})`` wraps
the named submodule's ``forward`` so that a ``pipe_split()`` marker runs before (or
after) *every* call of it, exports the module and splits the traced graph at the
markers.  So a cut can only fall where a submodule call starts or ends, and it cuts
the traced order: a pipeline is a contiguous segmentation of that order.

The importer (:func:`mtpp.io.torch_model.torch_costed_ops`) gives each op its
*scope*, the module calls it runs inside, outermost first (``"h.0"``,
``"h.0.attn"``, ...; a repeated call of one module is ``"act@1"``, ``"act@2"``).
Between positions ``p - 1`` and ``p`` of the order, the calls in the scope of ``p``
and not in the scope of ``p - 1`` start at ``p``, and those in the scope of ``p - 1``
and not in that of ``p`` end there (calls nest, so a call's ops are contiguous).
A cut at ``p`` is *expressible* when one of those modules is called exactly once in
the whole trace: a marker on a module called twice would cut at every call.

``granularity`` (call depth ``d``, or ``None`` for every depth) keeps only calls at
depth ``<= d`` (scopes truncated to ``d`` entries), so that, say, ``d = 1`` on a
GPT-2 cuts only between its top-level calls (``wte``, ``h.0``, ..., ``ln_f``).
The *units* are the maximal runs of positions between expressible cuts; a
segmentation of the order at unit starts is exactly a split-point plan.
``O(n * depth)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mtpp.core.errors import InvalidParameterError, MtppError


class SplitPointError(MtppError, ValueError):
    """A plan's cuts cannot all be written as distinct split points."""


def module_name(call: str) -> str:
    """The qualified module name of a scope entry (``"act@2"`` -> ``"act"``)."""
    return call.partition("@")[0]


@dataclass(frozen=True)
class Units:
    """``starts[u]``: first position of unit ``u`` (``starts[0] = 0``, ``starts[-1] =
    n`` as a sentinel); ``split[u]`` for ``u >= 1``: the split points ``(module,
    "BEGINNING" | "END")`` that cut before unit ``u``, outermost module first
    (``split[0]`` is empty); ``scopes``: each op's calls at the granularity."""

    starts: tuple[int, ...]
    split: tuple[tuple[tuple[str, str], ...], ...]
    scopes: tuple[tuple[str, ...], ...]

    @property
    def count(self) -> int:
        """Number of units."""
        return len(self.starts) - 1

    @property
    def layers(self) -> tuple[int, ...]:
        """The units that begin a *layer* (what DeepSpeed and torchgpipe balance): a
        unit with a module call begins one; units of top-level ops only (glue such as
        a residual add or a reshape, and the inputs) join the layer before them, or
        the first layer."""
        has_call = [any(self.scopes[p] for p in range(a, b)) for a, b in zip(self.starts[:-1], self.starts[1:])]
        first = next((u for u, c in enumerate(has_call) if c), self.count)
        return (0, *(u for u in range(first + 1, self.count) if has_call[u]))

    def markers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The split points of each cut as bitmasks over call depth, for
        :func:`~mtpp.pipelining.segmentation.expressible_segmentation`:
        ``begin[u]`` / ``end[u]``: the depths (in the scopes of positions
        ``starts[u]`` / ``starts[u] - 1``) of the modules whose ``BEGINNING`` /
        ``END`` cuts before unit ``u``; ``reach[u, i]``: where the split-point module
        at depth ``i`` of position ``starts[u]`` ends (one past its last op; 0 where
        that call makes no split point).  ``O(n * depth)``."""
        names = {module for points in self.split for module, _ in points}
        last: dict[str, int] = {}
        for p, scope in enumerate(self.scopes):
            for call in scope:
                last[call] = p
        depth = max((len(s) for s in self.scopes), default=0)
        begin = np.zeros(self.count, dtype=np.int64)
        end = np.zeros(self.count, dtype=np.int64)
        reach = np.zeros((self.count, max(depth, 1)), dtype=np.int64)
        for u in range(self.count):
            p = self.starts[u]
            scope = self.scopes[p]
            for i, call in enumerate(scope):
                if module_name(call) in names:
                    reach[u, i] = last[call] + 1
            if u == 0:
                continue
            prev = self.scopes[p - 1]
            common = 0
            while common < min(len(scope), len(prev)) and scope[common] == prev[common]:
                common += 1
            begin[u] = sum(1 << i for i in range(common, len(scope)) if module_name(scope[i]) in names)
            end[u] = sum(1 << i for i in range(common, len(prev)) if module_name(prev[i]) in names)
        return begin, end, reach

    def split_points(self, parts: Sequence[int]) -> dict[str, str]:
        """One split point per cut of the plan ``parts`` (unit boundaries, first 0 and
        last :attr:`count`), no module used twice (a dict holds one point per module,
        and a module can both begin one stage and end another), in cut order:
        ``{module: "BEGINNING" | "END"}``.  Cuts and their candidate modules form a
        bipartite graph; Kuhn's augmenting paths find a matching covering every cut
        whenever one exists, outermost candidates first, else
        :class:`SplitPointError` names a cut.  ``O(cuts * candidates^2)``."""
        cuts = list(parts[1:-1])
        owner: dict[str, int] = {}  # module -> index of the cut it makes

        def assign(c: int, seen: set[str]) -> bool:
            for module, _ in self.split[cuts[c]]:
                if module in seen:
                    continue
                seen.add(module)
                if module not in owner or assign(owner[module], seen):
                    owner[module] = c
                    return True
            return False

        for c, u in enumerate(cuts):
            if not assign(c, set()):
                names = ", ".join(f"{m} ({p})" for m, p in self.split[u])
                raise SplitPointError(
                    f"the cut before op position {self.starts[u]} can only be made by {names}, "
                    "each needed by another cut"
                )
        return {module: dict(self.split[cuts[c]])[module] for module, c in sorted(owner.items(), key=lambda mc: mc[1])}

    def calls(self, lo: int, hi: int) -> tuple[str, ...]:
        """What positions ``lo..hi-1`` run, readably: for each op the outermost call
        that lies wholly inside the range, else its innermost call marked
        ``" (part)"``; in order, without repeats.  ``O(n * depth)``."""
        span: dict[str, list[int]] = {}
        for p, scope in enumerate(self.scopes):
            for call in scope:
                span.setdefault(call, [p, p])[1] = p
        names: list[str] = []
        for scope in self.scopes[lo:hi]:
            inside = next((c for c in scope if lo <= span[c][0] and span[c][1] < hi), None)
            name = inside if inside is not None else (f"{scope[-1]} (part)" if scope else None)
            if name is not None and name not in names:
                names.append(name)
        return tuple(names)


def module_units(scopes: Sequence[tuple[str, ...]], granularity: int | None = None) -> Units:
    """The units of a traced order whose op ``p`` runs inside the calls ``scopes[p]``."""
    if granularity is not None and (
        isinstance(granularity, bool) or not isinstance(granularity, int) or granularity < 1
    ):
        raise InvalidParameterError(f"granularity must be a call depth >= 1 or None, got {granularity!r}")
    cut = granularity if granularity is not None else max((len(s) for s in scopes), default=0)
    trunc = [tuple(s[:cut]) for s in scopes]
    calls: dict[str, set[str]] = {}
    for scope in scopes:
        for call in scope:
            calls.setdefault(module_name(call), set()).add(call)
    once = {name for name, c in calls.items() if len(c) == 1}

    starts: list[int] = [0]
    split: list[tuple[tuple[str, str], ...]] = [()]
    for p, scope in enumerate(trunc):
        if p > 0 and scope != trunc[p - 1]:
            prev = trunc[p - 1]
            common = 0
            while common < min(len(scope), len(prev)) and scope[common] == prev[common]:
                common += 1
            points = tuple((module_name(c), "BEGINNING") for c in scope[common:] if module_name(c) in once) + tuple(
                (module_name(c), "END") for c in prev[common:] if module_name(c) in once
            )
            if points:
                starts.append(p)
                split.append(points)
    starts.append(len(trunc))
    return Units(tuple(starts), tuple(split), tuple(trunc))
