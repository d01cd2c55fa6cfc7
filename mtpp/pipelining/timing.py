"""Measured op costs: time each module call on its device, as torchgpipe's
``balance_by_time`` profiles each layer.

Forward pre- and post-hooks on every submodule record each call's wall time
(``torch.cuda.synchronize`` first on CUDA, so queued kernels are counted where they
run); the whole forward runs ``warmup`` times unrecorded, then ``repeats`` times,
and each call's time is the **median** over the repeats.  A call's *exclusive* time
is its time minus that of the calls directly inside it, and the root module's is
the whole forward minus its top-level calls (clamped at 0; hook overhead lands
there).  The exclusive time of a call is spread over the traced ops whose innermost
timed call it is, in proportion to their roofline work (equally if all are zero),
so the ops' total is the measured forward time (less the time of calls that left
no op in the trace, such as dropout in eval mode).  Calls are named as in the trace
(:attr:`mtpp.io.costed.CostedOp.scope`: ``"act@1"`` is the second call of ``act``).
Times in microseconds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from mtpp.core.devices import MICROSECONDS_PER_SECOND
from mtpp.core.errors import InvalidParameterError


def call_times(module: Any, args: tuple[Any, ...], warmup: int = 1, repeats: int = 5) -> dict[str, float]:
    """Median exclusive time (microseconds) of every module call in one forward;
    the root's own ops under ``""``."""
    import torch

    if repeats < 1 or warmup < 0:
        raise InvalidParameterError(f"need repeats >= 1 and warmup >= 0, got {repeats} and {warmup}")
    cuda = any(t.is_cuda for t in [*module.parameters(), *(a for a in args if isinstance(a, torch.Tensor))])
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    names = {m: name for name, m in module.named_modules() if name}
    stack: list[tuple[str, float, float]] = []  # (call, start, time of calls inside)
    record: dict[str, float] = {}
    seen: dict[str, int] = {}

    def pre(mod: Any, _: Any) -> None:
        sync()
        name = names[mod]
        count = seen[name] = seen.get(name, -1) + 1
        stack.append((f"{name}@{count}" if count else name, time.perf_counter(), 0.0))

    def post(mod: Any, _: Any, __: Any) -> None:
        sync()
        call, start, inner = stack.pop()
        spent = time.perf_counter() - start
        record[call] = spent - inner
        if stack:
            parent, pstart, pinner = stack[-1]
            stack[-1] = (parent, pstart, pinner + spent)

    handles = [h for m in names for h in (m.register_forward_pre_hook(pre), m.register_forward_hook(post))]
    samples: dict[str, list[float]] = {}
    try:
        with torch.no_grad():
            for rep in range(warmup + repeats):
                record.clear()
                seen.clear()
                stack.append(("", time.perf_counter(), 0.0))
                sync()
                module(*args)
                sync()
                _, start, inner = stack.pop()
                record[""] = time.perf_counter() - start - inner
                if rep >= warmup:
                    for call, t in record.items():
                        samples.setdefault(call, []).append(t)
    finally:
        for h in handles:
            h.remove()
    return {call: max(0.0, statistics.median(ts)) * MICROSECONDS_PER_SECOND for call, ts in samples.items()}


def measured_work(scopes: Sequence[tuple[str, ...]], roofline: Sequence[float], times: dict[str, float]) -> list[float]:
    """Per-op work from :func:`call_times`: each call's exclusive time spread over
    the ops whose innermost timed call it is, in proportion to ``roofline``."""
    owner = [next((c for c in reversed(s) if c in times), "") for s in scopes]
    total: dict[str, float] = {}
    count: dict[str, int] = {}
    for o, w in zip(owner, roofline):
        total[o] = total.get(o, 0.0) + w
        count[o] = count.get(o, 0) + 1
    return [times.get(o, 0.0) * (w / total[o] if total[o] > 0 else 1.0 / count[o]) for o, w in zip(owner, roofline)]
