"""The partition rules of DeepSpeed and torchgpipe, re-implemented for comparison.

Both libraries cut a *sequence of layers* (an ``nn.Sequential`` or DeepSpeed's
``PipelineModule`` layer list) into contiguous parts and balance one number per
layer; neither sees communication.  Here a "layer" is a unit of
:mod:`mtpp.pipelining.units` and each rule returns DeepSpeed's ``parts`` list:
stage ``s`` holds units ``parts[s]:parts[s + 1]`` (``parts[0] = 0``,
``parts[-1]`` = number of units).  Neither library is a dependency; the rules are
written from their published descriptions:

* :func:`uniform_parts`: DeepSpeed ``partition_method="uniform"``
  (``deepspeed.runtime.utils.partition_uniform``): ``U // k`` layers per stage, the
  first ``U mod k`` stages one more.
* :func:`balanced_parts`: DeepSpeed ``partition_method="parameters"``
  (``partition_balanced`` over each layer's trainable parameter count): DeepSpeed's
  binary search finds the smallest heaviest part of a contiguous partition (the
  linear partition problem); here :func:`~mtpp.pipelining.segmentation.min_max_segmentation`
  solves it exactly.  (Recent DeepSpeed versions minimise the spread max - min
  instead; the heaviest part is what a pipeline's throughput depends on.)
* :func:`block_partition_parts`: torchgpipe ``balance_by_time``
  (``torchgpipe.balance.blockpartition.solve`` over the profiled time per layer):
  the local search of Bárány and Grinberg, *Block partitions of sequences*
  (Israel J. Math. 2015, arXiv:1308.2452): start from equal layer counts, then
  move one layer at a time from a neighbour of the lightest block towards the
  heaviest until ``max <= min + 1`` on the costs normalised to ``[0, 1]``.
"""

from __future__ import annotations

from collections.abc import Sequence

from mtpp.core.errors import InvalidParameterError
from mtpp.pipelining.segmentation import additive_costs, min_max_segmentation


def _check(units: int, k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidParameterError(f"k must be a positive integer, got {k!r}")
    if units < 1:
        raise InvalidParameterError("there are no layers to partition")


def uniform_parts(units: int, k: int) -> list[int]:
    """DeepSpeed's uniform rule; with fewer layers than stages, one layer each."""
    _check(units, k)
    k = min(k, units)
    chunk, extra = divmod(units, k)
    return [s * chunk + min(s, extra) for s in range(k + 1)]


def balanced_parts(weights: Sequence[float], k: int) -> list[int]:
    """The contiguous partition of ``weights`` into at most ``k`` parts with the
    smallest heaviest part (DeepSpeed's ``partition_balanced`` objective)."""
    _check(len(weights), k)
    firsts, _ = min_max_segmentation(additive_costs(weights), k)
    return [*firsts, len(weights)]


def block_partition_parts(costs: Sequence[float], k: int) -> list[int]:
    """torchgpipe's block partition (Bárány-Grinberg local search).  Each move
    shifts one layer and the loop ends when the normalised heaviest and lightest
    blocks differ by at most one; ``O(k U^2)`` moves at most, each ``O(k U)``."""
    _check(len(costs), k)
    n = len(costs)
    k = min(k, n)
    low, span = min(costs), max(costs) - min(costs)
    norm = [(c - low) / span if span > 0 else 0.0 for c in costs]
    splits = [n // k * (i + 1) for i in range(k - 1)] + [n]  # end of each block

    def size(i: int) -> float:
        return sum(norm[(splits[i - 1] if i > 0 else 0) : splits[i]])

    while True:
        biggest, p = max((size(i), i) for i in range(k))
        while True:
            smallest, q = min((size(i), i) for i in range(k))
            if biggest <= smallest + 1:
                return [0, *splits]
            if p < q:  # the block before q gives q its last layer
                h = q - 1
                splits[h] -= 1
            else:  # the block after q gives q its first layer
                h = q + 1
                splits[q] += 1
            if p == h:
                break
