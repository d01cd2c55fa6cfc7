"""Independent, seeded calls spread over processes, results in call order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

R = TypeVar("R")


def ordered_map(fn: Callable[..., R], calls: Sequence[tuple[Any, ...]], jobs: int = 1) -> list[R]:
    """``[fn(*args) for args in calls]``, over ``jobs`` processes (joblib) when more than
    one and there is more than one call; the results are those of one process when
    every call is deterministic (the training loops seed each one)."""
    if jobs > 1 and len(calls) > 1:
        from joblib import Parallel, delayed

        return list(Parallel(n_jobs=min(jobs, len(calls)))(delayed(fn)(*args) for args in calls))
    return [fn(*args) for args in calls]
