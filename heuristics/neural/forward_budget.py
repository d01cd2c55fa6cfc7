"""Whether a learned model's forward pass fits in the time and memory left (issue 24).

A forward pass has no clock inside it: the Topoformer's masked attention takes
``O(layers * n^2)`` time and ``O(n^2)`` memory, the REGAL GNN's message passing
``O(rounds * (n + m))`` of both.  Before one starts, its cost is estimated from the
per-unit figures below, measured through :func:`topoformer_priorities` and
:func:`regal_betas` (node features and the Laplacian eigensolve included) on layered
graphs (seed 4242) on the 2-core, 23 GB development machine under a load of 1-3.
A pass that would need more than the memory cap of
:func:`mtpp.core.memory_cap.memory_limit` (a quarter of the machine), or more than
:data:`FORWARD_SHARE` of the time left, is not started: the caller falls back to the
method's classical counterpart (Kahn priorities for the Topoformer, uniform mutants,
i.e. plain BRKGA, for REGAL) and records ``"fell back to ...: <reason>"``.
"""

from __future__ import annotations

TOPOFORMER_SECONDS_PER_PAIR = 85e-9
"""Seconds per node pair and layer: 55-81 ns measured with the 4-layer
``topoformer-peak`` (1.1 s at 2,000 ops, 3.5 s at 4,000, 8.6 s at 6,000, 20.9 s at 8,000)."""
TOPOFORMER_BYTES_PER_PAIR = 48
"""Peak memory per node pair, above the loaded process: 44-46 bytes measured (the
additive mask, the relation codes and one layer's attention scores; 1.1 GB peak at
4,000 ops, 3.2 GB at 8,000, 4.6 GB at 10,000, with 0.4 GB for the process)."""
REGAL_SECONDS_PER_ITEM = 30e-6
"""Seconds per node or edge and message-passing round: 15-27 us measured with the
3-round ``regal-peak`` (0.4 s at 1,000 ops / 7,494 edges, 3.7 s at 5,000 / 79,361,
18.6 s at 10,000 / 219,920; 43 s at 10,000 under a heavier load)."""
REGAL_BYTES_PER_ITEM = 3000
"""Peak memory per node or edge: 2.8 kB measured (1.04 GB at 10,000 ops, 0.4 GB of it the process)."""
FORWARD_SHARE = 0.5
"""The share of the time left a forward pass may take: the decoding or search after
it keeps the rest (a REGAL pass that took it all would leave BRKGA no evaluations,
worse than plain BRKGA)."""


def forward_skip(model: str, seconds: float, nbytes: float, time_left: float | None) -> str:
    """Why a ``model`` forward pass estimated at ``seconds`` and ``nbytes`` must not
    start with ``time_left`` seconds left (``None``: no limit), or ``""`` when it may."""
    from mtpp.core.memory_cap import GB, memory_limit

    cap = memory_limit()
    if nbytes > cap:
        return (
            f"the {model} forward pass would need about {nbytes / GB:.1f} GB, "
            f"more than the {cap / GB:.1f} GB memory cap"
        )
    if time_left is not None and seconds > FORWARD_SHARE * time_left:
        return (
            f"the {model} forward pass would take about {seconds:.3g} s, "
            f"more than {FORWARD_SHARE:.0%} of the {time_left:.3g} s left"
        )
    return ""


def topoformer_skip(n: int, layers: int, time_left: float | None) -> str:
    """:func:`forward_skip` for a Topoformer of ``layers`` layers on ``n`` ops."""
    pairs = float(n) * n
    seconds = TOPOFORMER_SECONDS_PER_PAIR * layers * pairs
    return forward_skip("Topoformer", seconds, TOPOFORMER_BYTES_PER_PAIR * pairs, time_left)


def regal_skip(n: int, m: int, rounds: int, time_left: float | None) -> str:
    """:func:`forward_skip` for a REGAL GNN of ``rounds`` rounds on ``n`` ops and ``m`` edges."""
    items = float(n + m)
    return forward_skip("REGAL", REGAL_SECONDS_PER_ITEM * rounds * items, REGAL_BYTES_PER_ITEM * items, time_left)
