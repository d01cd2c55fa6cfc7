"""Long soundness sweeps: fresh random tiny instances against brute force, every backend
x every bound method (the instances and the check of ``tests/soundness``).

    python benchmarks/soundness.py --cases 20000 --jobs 2              # all backends
    python benchmarks/soundness.py --cases 5000 --backends highs cpsat --seed 7

Prints, per backend, the instances checked, the unsound findings (a bound above the
optimum, a false "optimal", an exception), the safe-side ones (a proven-optimal exact
bound well below the optimum) and the time; the first findings in full.  Exits 1 if
any is unsound.  Every instance is checked with the bound methods; ``--certify-every N`` also
runs the whole ``certify`` (partition, hierarchy, cross-check) on every N-th.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.peak_memory import git_commit  # noqa: E402
from tests.oracle import down_set_optimum  # noqa: E402
from tests.soundness.instances import NOT_TIGHT, Case, check, make_instance  # noqa: E402

BACKENDS = ("highs", "gurobi", "scip", "cpsat")


def sweep(args: tuple[str, int, int, int]) -> tuple[str, int, list[str], float]:
    """Check ``count`` instances seeded from ``seed`` on ``solver``."""
    solver, seed, count, certify_every = args
    rng = random.Random(seed)
    t0 = time.perf_counter()
    bad: list[str] = []
    for i in range(count):
        problem = make_instance(rng)
        bad.extend(check(Case(problem, down_set_optimum(problem)), solver, with_certify=i % certify_every == 0))
    return solver, count, bad, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=2000, help="instances per backend (default 2000)")
    ap.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--seed", type=int, default=None, help="default: a fresh one (printed)")
    ap.add_argument("--certify-every", type=int, default=4)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    chunk = 250
    tasks = []  # round-robin over the backends, so that an interrupted sweep has covered all of them
    for c, start in enumerate(range(0, args.cases, chunk)):
        for b, solver in enumerate(args.backends):
            count = min(chunk, args.cases - start)
            tasks.append((solver, seed * 1_000_003 + b * 10_007 + c, count, args.certify_every))
    print(f"commit {git_commit()}  seed {seed}  {args.cases} instances per backend, {args.jobs} jobs")
    totals: dict[str, list] = {s: [0, [], 0.0] for s in args.backends}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for future in as_completed([pool.submit(sweep, task) for task in tasks]):
            solver, count, bad, secs = future.result()
            t = totals[solver]
            t[0] += count
            t[1].extend(bad)
            t[2] += secs
            print(f"  {solver}: {t[0]} checked, {len(t[1])} violations", flush=True)
            for line in bad[:3]:
                print("   ", line, flush=True)
    print(f"{'backend':8} {'instances':>10} {'unsound':>8} {'not tight':>10} {'s / instance':>13}")
    for solver, (count, bad, secs) in totals.items():
        loose = sum(NOT_TIGHT in b for b in bad)
        print(f"{solver:8} {count:>10} {len(bad) - loose:>8} {loose:>10} {secs / max(count, 1):>13.3f}")
    worst = [b for _, bad, _ in totals.values() for b in bad if NOT_TIGHT not in b]
    for line in worst[:10]:
        print(line)
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main())
