"""Whether a learned model's forward pass fits in the time and memory left.

A forward pass has no clock inside it: the Topoformer's masked attention takes
``O(layers * n^2)`` time and ``O(n^2)`` memory, the REGAL GNN's message passing
``O(rounds * (n + m))`` of both.  Before one starts, its cost is estimated from the
per-unit figures below, measured through :func:`topoformer_priorities` and
:func:`regal_betas` (node features and the Laplacian eigensolve included) and rounded
up.  A pass that would need more than the memory cap of
:func:`mtpp.core.memory_cap.memory_limit` (a quarter of the machine), or more than
:data:`FORWARD_SHARE` of the time left, is not started: the caller falls back to the
method's classical counterpart (Kahn priorities for the Topoformer, uniform mutants,
i.e. plain BRKGA, for REGAL) and records ``"fell back to ...: <reason>"``.
"""

from __future__ import annotations

TOPOFORMER_SECONDS_PER_PAIR = 85e-9
"""Seconds per node pair and layer (the 4-layer ``topoformer-peak`` measured 55-81 ns)."""
TOPOFORMER_BYTES_PER_PAIR = 48
"""Peak memory per node pair, above the loaded process: the additive mask, the relation
codes and one layer's attention scores (44-46 bytes measured)."""
REGAL_SECONDS_PER_ITEM = 30e-6
"""Seconds per node or edge and message-passing round (the 3-round ``regal-peak``
measured 15-27 us)."""
REGAL_BYTES_PER_ITEM = 3000
"""Peak memory per node or edge (2.8 kB measured)."""
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
