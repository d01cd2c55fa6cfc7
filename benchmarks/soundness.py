"""Long soundness sweeps: fresh random small instances against the exact optimum
(rational arithmetic), every backend x every bound method, and the methods that need no
solver (the instances and the checks of ``tests/soundness``).

    python -m benchmarks.soundness --cases 20000 --jobs 2              # all backends, and "none"
    python -m benchmarks.soundness --cases 5000 --backends highs cpsat --seed 7
    python -m benchmarks.soundness --cases 20000 --backends none --families needle mixed

``none`` is a pseudo-backend: it runs only the backend-free check (simple bound, cut bound,
ideal DP, ``certify`` without MIPs) on every instance; ``placement`` and ``schedule`` check
``mtpp.place`` (both objectives, every method) and ``mtpp.schedule`` (every method) on
fresh tiny graphs of their own against exact brute force.  ``--families`` picks the instance
families (default all: classic, mixed, needle, zero), drawn in turn at random.

Prints, per backend, the instances checked, the unsound findings (a bound above the
optimum, a false "optimal", an exception), the safe-side ones (a proven-optimal bound
well below the optimum, a solver that calls a model infeasible) and the time; then the
same per backend and family, the unsound findings per method, and the first findings
in full.  Exits 1 if any is unsound.  Every instance is checked with the bound methods;
``--certify-every N`` also runs the whole ``certify`` (partition, hierarchy,
cross-check) on every N-th.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed

from benchmarks._common import git_commit
from tests.soundness.instances import (
    FAMILIES,
    MAX_N,
    NOT_TIGHT,
    check,
    check_combinatorial,
    make_case,
    make_instance,
)

BACKENDS = ("highs", "gurobi", "scip", "cpsat", "none", "placement", "schedule")
OTHER_PATHS = {"placement": "placement_findings", "schedule": "schedule_findings"}
"""Pseudo-backends for the other results: ``mtpp.place`` (both objectives, every method) and
``mtpp.schedule`` (every method) against exact brute force (``tests/soundness/*_checks.py``)."""


def method_of(finding: str) -> str:
    """The method a finding names (``highs: exact: ...`` -> ``exact``)."""
    m = re.match(r"[\w-]+: (raised \w+|[\w -]+?)(:| record|,)", finding)
    return m.group(1) if m else "?"


def sweep(args: tuple[str, int, int, int, tuple[str, ...], int]) -> tuple[str, dict[str, list], float]:
    """Check ``count`` instances seeded from ``seed`` on ``solver`` (``none``: the
    backend-free check); per family: instances and findings."""
    solver, seed, count, certify_every, families, max_n = args
    rng = random.Random(seed)
    t0 = time.perf_counter()
    if solver in OTHER_PATHS:
        from tests.soundness import placement_checks, schedule_checks

        module = placement_checks if solver == "placement" else schedule_checks
        findings = getattr(module, OTHER_PATHS[solver])
        found = [f"{solver}: {line}" for _ in range(count) for line in findings(rng.randrange(2**32))]
        return solver, {solver: [count, found]}, time.perf_counter() - t0
    per: dict[str, list] = {f: [0, []] for f in families}
    for i in range(count):
        family = rng.choice(families)
        case = make_case(make_instance(rng, family, max_n), family)
        if solver == "none":
            found = check_combinatorial(case)
        else:
            found = check(case, solver, with_certify=i % certify_every == 0)
        per[family][0] += 1
        per[family][1].extend(found)
    return solver, per, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=2000, help="instances per backend (default 2000)")
    ap.add_argument(
        "--backends",
        nargs="+",
        default=list(BACKENDS),
        choices=BACKENDS,
        help="'none' runs the backend-free check only",
    )
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    ap.add_argument("--max-n", type=int, default=MAX_N, help=f"most ops per instance (default {MAX_N})")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--seed", type=int, default=None, help="default: a fresh one (printed)")
    ap.add_argument("--certify-every", type=int, default=4)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    families = tuple(args.families)
    chunk = 250
    tasks = []  # round-robin over the backends, so that an interrupted sweep has covered all of them
    for c, start in enumerate(range(0, args.cases, chunk)):
        for b, solver in enumerate(args.backends):
            count = min(chunk, args.cases - start)
            tasks.append((solver, seed * 1_000_003 + b * 10_007 + c, count, args.certify_every, families, args.max_n))
    print(
        f"commit {git_commit()}  seed {seed}  {args.cases} instances per backend, families {' '.join(families)}, "
        f"n <= {args.max_n}, {args.jobs} jobs"
    )
    totals: dict[str, dict[str, list]] = {
        s: {s: [0, []]} if s in OTHER_PATHS else {f: [0, []] for f in families} for s in args.backends
    }
    secs: Counter[str] = Counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for future in as_completed([pool.submit(sweep, task) for task in tasks]):
            solver, per, took = future.result()
            secs[solver] += took
            for family, (count, bad) in per.items():
                totals[solver][family][0] += count
                totals[solver][family][1].extend(bad)
            checked = sum(c for c, _ in totals[solver].values())
            found = sum(len(b) for _, b in totals[solver].values())
            print(f"  {solver}: {checked} checked, {found} findings", flush=True)
            for line in [b for _, bad in per.values() for b in bad][:3]:
                print("   ", line[:600], flush=True)

    def row(label: str, count: int, bad: list[str], seconds: float | None = None) -> str:
        loose = sum(NOT_TIGHT in b for b in bad)
        tail = "" if seconds is None else f" {seconds / max(count, 1):>13.3f}"
        return f"{label:16} {count:>10} {len(bad) - loose:>8} {loose:>10}{tail}"

    print(f"\n{'backend':16} {'instances':>10} {'unsound':>8} {'not tight':>10} {'s / instance':>13}")
    for solver, per in totals.items():
        print(row(solver, sum(c for c, _ in per.values()), [b for _, bad in per.values() for b in bad], secs[solver]))
    print(f"\n{'backend / family':16} {'instances':>10} {'unsound':>8} {'not tight':>10}")
    for solver, per in totals.items():
        for family, (count, bad) in per.items():
            print(row(f"{solver} / {family}", count, bad))
    worst = [b for per in totals.values() for _, bad in per.values() for b in bad if NOT_TIGHT not in b]
    if worst:
        print(f"\n{'backend / method':32} {'unsound':>8}")
        by_method = Counter(f"{b.split(':')[0]} / {method_of(b)}" for b in worst)
        for key, count in sorted(by_method.items()):
            print(f"{key:32} {count:>8}")
        print()
    for line in worst[:10]:
        print(line)
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main())
