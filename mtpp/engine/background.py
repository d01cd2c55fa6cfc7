"""Annealing on a second core while a budgeted :func:`mtpp.certify` proves bounds.

A budgeted certify call runs its phases one after another on one core: the solvers get
``threads=1``.  HiGHS, CP-SAT, Gurobi and SCIP (``optimizeNogil``) release the
interpreter lock while they solve, and so do the compiled kernels of the bounds and the
search (reach, hull cuts, crossing, SliceGraph), so on a machine with a spare core the
partition search can go on beside them from the end of the ideal DP (which proves tiny
and narrow graphs at once) to the last bound.  :class:`BackgroundAnnealer` is that
search: a thread that gives one cooling cycle at a time
(:func:`heuristics.partition.anneal.anneal_partition`, compiled without the interpreter
lock; short cycles on small graphs, :data:`CYCLE_MOVES_PER_OP_CUBED`) to the open k whose
best partition lies furthest from its bound (relative gap ``1 - LB/UB``), the gap halved
for every cycle in a row that found nothing better there (:data:`STALL_DECAY`), a new seed
per cycle.  After a cycle that found nothing better, the next one at that k restarts from a
fresh partition (:func:`heuristics.partition.anneal.spread_start`: a random topological
order cut into ``k`` segments of equal work) instead of its best, and the one after from its
best again: every cycle from the best partition restarts from the same local optimum, and
where the best partition is one block (input/output dominates) annealing from it cannot
move.  A better partition is re-checked by :func:`mtpp.evaluate` and adopted at its k and every larger k, as the
foreground annealing does (:class:`mtpp.engine.partitions.Anneal`).  Its report lines
wait in a queue until the main thread reports next (:meth:`BackgroundAnnealer.relay`): a
solve points file descriptor 1 at ``/dev/null`` (:mod:`solvers.quiet`), and a line
printed from this thread meanwhile would be lost.

Only upper bounds move here: a lower bound never depends on what this thread finds, and a
lower upper bound only lets a k close earlier.  :meth:`BackgroundAnnealer.stop` ends the
current cycle within one chunk of moves (milliseconds) and joins the thread, so the
certificate is built from a settled state.  It runs only where it costs the bounds
nothing: a budgeted call (an unbudgeted one stays deterministic), whose partitions may be
improved (``fill_budget``), on a process with more usable cores than the solver threads
and parallel jobs take (:func:`spare_cores`).

The solvers and kernels must release the interpreter lock for this to pay: where they
held it, the thread starved (``docs/decisions.md``).
"""

from __future__ import annotations

import collections
import os
import threading

from heuristics.partition.anneal import CYCLE_MOVES, CYCLE_SECONDS, anneal_partition, spread_start
from mtpp.core.records import closes
from mtpp.engine.call import MIN_RUN_SECONDS, QUICK_ORDERER, Call, Run, share_annealed
from mtpp.engine.method import ALL_KS, Method

STALL_DECAY = 0.5
"""A k's claim on the next cycle is its relative gap times this to the power of its cycles
in a row without a better partition: the widest gaps get most cycles, and a k where the
cycles stall gives way to the others."""
CYCLE_MOVES_PER_OP_CUBED = 8
"""A cycle is at most this many moves per op cubed (and at most
:data:`heuristics.partition.anneal.CYCLE_SECONDS`): a small graph gets many short cycles,
hence many fresh starts; from 128 ops up the cycle is its two seconds (``docs/decisions.md``)."""
STOP_MARGIN = 0.5
"""Seconds before the budget's end at which the thread stops, leaving the foreground its last phases."""


def usable_cores() -> int:
    """Cores this process may run on (its affinity where the platform says, else ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def spare_cores(threads: int, n_jobs: int) -> int:
    """Cores left when the solver's ``threads`` in each of ``n_jobs`` processes have theirs."""
    return max(0, usable_cores() - threads * n_jobs)


class BackgroundAnnealer:
    """The annealing thread of a budgeted certify call (module docstring): ``start()`` it
    once the first partitions are in, ``stop()`` it before the certificates are built."""

    def __init__(self, call: Call, seed: int = 0) -> None:
        self.call = call
        self.runs = call.runs
        self.left = call.left
        self.say = call.budget.say
        self._lines: collections.deque[str] = collections.deque()
        self.seed = seed
        self.cycles = 0
        self.improved = 0
        self._stalls: dict[int, int] = {}  # per k, cycles in a row without a better partition
        self._skip: set[int] = set()  # ks annealing cannot take (peak-aware, too many cells)
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="mtpp-background-anneal", daemon=True)
        self._error: BaseException | None = None

    def start(self) -> BackgroundAnnealer:
        """Start the thread, once its kernels are compiled (or loaded from numba's cache) here,
        on one move and one fresh start of the first open k: a compile holds the interpreter
        lock for seconds, and from the thread it starved the foreground (``docs/decisions.md``).
        A failure here is reported as one in the thread."""
        runs = self._open()
        try:
            if runs:
                spread_start(runs[0].problem, self.seed)
                anneal_partition(runs[0].problem, runs[0].best_eval.assignment, moves=1)
        except Exception as exc:  # stop() reports it, as a failure in the thread
            self._error = exc
            return self
        self._thread.start()
        return self

    def stop(self) -> None:
        """Halt the thread within one chunk of moves and wait for it.  Should it have
        failed, every k gets a note saying so and keeps what it has: the partitions it
        adopted were re-checked, and the bounds never depended on it."""
        self._halt.set()
        if self._thread.ident is not None:
            self._thread.join()
        self._flush()
        if self._error is not None:
            note = f"background annealing stopped by an error: {type(self._error).__name__}: {self._error}"
            for run in self.runs:
                run.notes.append(note)
            self.say(note)

    def relay(self, line: str) -> None:
        """The main thread's report: this thread's waiting lines first, then ``line``."""
        self._flush()
        self.say(line)

    def _flush(self) -> None:
        while self._lines:
            self.say(self._lines.popleft())

    def _open(self) -> list[Run]:
        return [r for r in self.runs if r.problem.k not in self._skip and not closes(r.lb, r.ub_hi)]

    def _claim(self, run: Run) -> float:
        """``run``'s claim on the next cycle (:data:`STALL_DECAY`)."""
        gap = 1.0 - run.lb / run.ub if run.ub > 0 else 0.0
        return gap * STALL_DECAY ** self._stalls.get(run.problem.k, 0)

    def _loop(self) -> None:
        try:
            while not self._halt.is_set():
                runs = self._open()
                cycle = min(CYCLE_SECONDS, self.left() - STOP_MARGIN)
                if not runs or cycle < MIN_RUN_SECONDS:
                    return
                self._cycle(max(runs, key=self._claim), cycle)  # ties: the smallest k
        except Exception as exc:  # stop() reports it: the call goes on without this thread
            self._error = exc

    def _cycle(self, run: Run, seconds: float) -> None:
        problem = run.problem
        self.cycles += 1
        seed = self.seed + 7919 * self.cycles
        restart = self._stalls.get(problem.k, 0) % 2 == 1
        start = spread_start(problem, seed) if restart else run.best_eval.assignment
        moves = CYCLE_MOVES_PER_OP_CUBED * problem.graph.n**3
        res = anneal_partition(
            problem,
            start,
            time_limit=seconds,
            seed=seed,
            moves=moves if moves < CYCLE_MOVES else None,  # larger graphs: cycles of CYCLE_SECONDS
            stop_at=run.lb,
            halt=self._halt,
        )
        if res is None:
            self._skip.add(problem.k)
            return
        if res.bottleneck < run.ub and share_annealed(
            self.call, run, res, "annealing in the background", self._lines.append
        ):
            self.improved += 1
            self._stalls[problem.k] = 0
        else:
            self._stalls[problem.k] = self._stalls.get(problem.k, 0) + 1

    def summary(self) -> str:
        return f"background annealing: {self.cycles} cycles, {self.improved} better partitions"


class BackgroundStart(Method):
    """From the end of the ideal DP (which proves tiny and narrow graphs at once) to the
    end of the bounds, a budgeted call that may improve its partitions anneals on a spare
    core (:class:`BackgroundAnnealer`): the solvers and the compiled kernels release the
    interpreter lock."""

    name = "background annealing"
    scope = ALL_KS
    needs = "a budget and fill_budget, an orderer other than kahn, a core the solver threads leave spare"
    share = f"a spare core while the bounds run; it stops {STOP_MARGIN:g} s before the budget's end"
    skipped = f"without a spare core or with less than {MIN_RUN_SECONDS + STOP_MARGIN:g} s left"

    def wanted(self, call: Call) -> bool:
        o = call.options
        return call.budgeted and o.fill_budget and o.orderer != QUICK_ORDERER

    def run(self, call: Call) -> None:
        o = call.options
        if spare_cores(o.threads, o.n_jobs) < 1 or call.left() < MIN_RUN_SECONDS + STOP_MARGIN:
            return
        call.relay = BackgroundAnnealer(call, o.seed + 2).start()


class BackgroundStop(Method):
    """The end of the background annealing: its thread stops within one chunk of moves and
    its report lines are flushed, so the last methods and the certificates see a settled
    state."""

    name = "background annealing, stopped"
    scope = ALL_KS
    needs = "background annealing running"
    share = "none"
    skipped = "when it did not run"

    def wanted(self, call: Call) -> bool:
        return call.relay is not None

    def run(self, call: Call) -> None:
        stop_background(call)


def stop_background(call: Call) -> None:
    """Stop the call's background annealer, if one runs, and report its summary."""
    annealer, call.relay = call.relay, None
    if annealer is not None:
        annealer.stop()
        call.say(annealer.summary())
