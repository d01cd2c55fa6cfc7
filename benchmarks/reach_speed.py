"""Speed of the reach bound's compiled sweep step (``mtpp/bounds/reach_sweeps.py``) against the
Python loop it replaced, kept here as the yardstick: the same sweeps and shaving tests on
the same thresholds, in one process, with the sets each step returns compared.  Then
shaving that tries each op's window from its ends (``_Sweeps._ends``) against trying every
block of it, as it did before (``--shave``, graphs of at most 250 ops); and a whole shaving
search with the refusals each op keeps (``mtpp.bounds.reach_sweeps.Refusals``) against one without
them (same graphs).

    python benchmarks/reach_speed.py                 # layered graphs of 250 and 500 ops, k = 4 and 8
    python benchmarks/reach_speed.py --n 250 --ks 8

For each graph and k: the sweeps' bound (``reach_lower_bound(..., shave=False)``), then
``refutes`` at 0.9, 1.0 and 1.03 times it and ``shaves`` at 1.03 times it (the last only
where ``--shave``), timed with each step; the printed ratio is reference / compiled.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np

import mtpp
from mtpp import reach_step
from mtpp.bounds.hull_cuts import reach
from mtpp.bounds.reach import ReachBound, _Sweeps, _window, reach_lower_bound
from mtpp.core.cost import overflow_cost
from mtpp.partitioner import partition


class ReferenceSweeps(_Sweeps):
    """The sweeps with the step as it was before it was compiled (one numpy expression per
    op tested, one :class:`mtpp.bounds.hull_cuts.HullCuts` call per cut)."""

    def _level(
        self, threshold: float, back: bool, prev: np.ndarray, forced: np.ndarray, banned: np.ndarray
    ) -> np.ndarray | None:
        g, n = self.g, self.n
        ptr, idx = (g.succ_ptr, g.succ_idx) if back else (g.pred_ptr, g.pred_idx)
        order = self.order[::-1] if back else self.order

        def hull(ops: np.ndarray) -> np.ndarray:
            at = np.flatnonzero(ops)
            return reach(g.succ_ptr, g.succ_idx, at, n) & reach(g.pred_ptr, g.pred_idx, at, n)

        def fits(block: np.ndarray) -> bool:
            if (block & banned).any():
                return False
            crossing = np.zeros(n, dtype=np.bool_)
            crossing[g.edge_src[block[g.edge_src] != block[g.edge_dst]]] = True
            over = overflow_cost(self.problem, g.size_param[block].sum())
            cost = g.work[block].sum() + self.io[crossing].sum() + over
            return bool(cost <= threshold) or self.cut(np.flatnonzero(block), np.flatnonzero(banned)) <= threshold

        if forced.any() and not fits(hull(forced)):
            return None
        cur = prev.copy()
        for v in order[~prev[order] & ~banned[order]]:
            if not cur[idx[ptr[v] : ptr[v + 1]]].all():
                continue
            ops = reach(ptr, idx, np.array([v]), n) & ~prev
            if forced.any():
                ops = hull(ops | forced)
            if fits(ops):
                cur[v] = True
        return cur


class EveryBlockSweeps(_Sweeps):
    """Shaving as it was before it tried windows from their ends: every block of each op's
    window, the window kept from the first to the last block that stands."""

    def _ends(
        self, threshold: float, k: int, v: int, first: int, last: int, up: list[np.ndarray], down: list[np.ndarray]
    ) -> tuple[int, int] | None:
        stand = [
            t for t in range(first, last + 1) if self.fixpoint(threshold, k, *_window(v, t, t, k, up, down)) is not None
        ]
        return (stand[0], stand[-1]) if stand else None


def timed(sweeps: _Sweeps, tests: list[tuple[str, float]], k: int) -> tuple[float, list[bool]]:
    t0 = time.perf_counter()
    answers = [getattr(sweeps, test)(threshold, k) for test, threshold in tests]
    return time.perf_counter() - t0, answers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[250, 500])
    ap.add_argument("--ks", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--seed", type=int, default=8201, help="graph seed (never used by the tests)")
    ap.add_argument("--shave", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args()
    print(f"mtpp at {Path(mtpp.__file__).parent}; layered graphs, seed {args.seed}")
    print(f"{'n':>5} {'k':>3} {'bound':>10} {'reference s':>12} {'compiled s':>11} {'ratio':>6}  same answers")
    for n in args.n:
        g = mtpp.layered_graph(n, seed=args.seed)
        for k in args.ks:
            problem = mtpp.Problem(g, k)
            upper = float(g.work.sum() + 2 * g.size_out.sum())
            bound = reach_lower_bound(problem, 0.0, upper, shave=False).bound or upper / k
            tests = [("refutes", f * bound) for f in (0.9, 1.0, 1.03)]
            if args.shave and n <= 250:
                tests.append(("shaves", 1.03 * bound))
            compiled, got = timed(_Sweeps(problem, np.inf), tests, k)  # compiled first: its warm-up counts
            reference, want = timed(ReferenceSweeps(problem, np.inf), tests, k)
            ratio = reference / compiled
            print(f"{n:>5} {k:>3} {bound:>10.6g} {reference:>12.2f} {compiled:>11.2f} {ratio:>6.1f}  {got == want}")
    if not args.shave:
        return
    print("\nshaving at 1.1 and 1.25 times the sweeps' bound: every block of each window against its ends")
    print(f"{'n':>5} {'k':>3} {'bound':>10} {'every block s':>14} {'ends s':>7} {'ratio':>6}  same answers")
    for n, k, problem in small_problems(args):
        upper = float(problem.graph.work.sum() + 2 * problem.graph.size_out.sum())
        bound = reach_lower_bound(problem, 0.0, upper, shave=False).bound or upper / k
        tests = [("shaves", f * bound) for f in (1.1, 1.25)]
        ends, got = timed(_Sweeps(problem, np.inf), tests, k)
        every, want = timed(EveryBlockSweeps(problem, np.inf), tests, k)
        print(f"{n:>5} {k:>3} {bound:>10.6g} {every:>14.2f} {ends:>7.2f} {every / ends:>6.2f}  {got == want}")
    print("\nshaving's search from the sweeps' bound to a partition's cost: kept refusals against none")
    print(f"{'n':>5} {'k':>3} {'bound':>10} {'none s':>7} {'kept s':>7} {'ratio':>6} {'spared':>7}  same bound")
    for n, k, problem in small_problems(args):
        upper = partition(problem, orderer="kahn").bottleneck
        lower = reach_lower_bound(problem, 0.0, upper, shave=False).bound or 0.0
        kept = searched(problem, lower, upper, reach_step.REFUSAL_SLOTS)
        none = searched(problem, lower, upper, 0)
        times = f"{none.wall_time:>7.2f} {kept.wall_time:>7.2f} {none.wall_time / kept.wall_time:>6.2f}"
        print(f"{n:>5} {k:>3} {kept.bound or 0:>10.6g} {times} {kept.spared:>7}  {kept.bound == none.bound}")


def small_problems(args: argparse.Namespace) -> Iterator[tuple[int, int, mtpp.Problem]]:
    """``(n, k, problem)`` for the graphs of at most 250 ops and each k (shaving's tables)."""
    for n in [n for n in args.n if n <= 250]:
        g = mtpp.layered_graph(n, seed=args.seed)
        for k in args.ks:
            yield n, k, mtpp.Problem(g, k)


def searched(problem: mtpp.Problem, lower: float, upper: float, slots: int) -> ReachBound:
    """Shaving's search (no time limit) with ``slots`` refusals kept per op."""
    was, reach_step.REFUSAL_SLOTS = reach_step.REFUSAL_SLOTS, slots
    try:
        return reach_lower_bound(problem, lower, upper, sweeps_first=False)
    finally:
        reach_step.REFUSAL_SLOTS = was


if __name__ == "__main__":
    main()
