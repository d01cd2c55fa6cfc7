"""Exact MTPP by dynamic programming over the ideal lattice (Tarnawski et al.,
"Efficient Algorithms for Device Placement of DNN Graph Operators", NeurIPS 2020,
Section 3, here with the cost of Eq. 1-3 of the MTPP paper).

Every acyclic k-partition is a chain of ideals ``{} = I_0 <= ... <= I_k = V``
(blocks ``I_j \\ I_{j-1}``, empty blocks allowed) and every chain is one
(:mod:`heuristics.partition.ideals`), so

    dp[0, {}] = 0,   dp[j, I] = min(dp[j-1, I], min_{J < I ideal} max(dp[j-1, J], f(I \\ J)))

gives ``OPT(k) = dp[k, V]``.  Ideals are numbered so that subsets come first;
the DP relaxes forward: when ``J`` is reached its row is final, and a depth-first
search over the cover edges of the lattice visits every ideal ``I >= J`` once
(a stamp per ``J``), growing ``S = I \\ J`` one node at a time.  With ``J`` and
``I`` ideals, a tensor enters ``S`` only from ``J`` and leaves ``S`` only to
``V \\ I``, so

    f(S) = work(I) - work(J) + overflow(param(I) - param(J))
           + (boundary(I) + sum_{u in J, u -> S} size(u) ([u has a consumer in S]
                                                     - [u has a consumer outside I])) / B

where ``boundary`` is the size of the tensors leaving an ideal: the sum runs over
the tensors crossing out of ``J`` and is updated in ``O(deg(v))`` per step from a
count of each such tensor's consumers in ``S``.

Pruning, all exact (``U`` = the best of a known upper bound and ``dp[k, V]``):

* ``f(S) >= work(S)`` and work only grows along the search, so the search from
  ``J`` stops where ``work(I \\ J) > U``, and pairs with ``f(S) > U`` are dropped:
  a chain using one has value ``> U >= OPT``;
* every block of a chain of value ``<= U`` has work ``<= U``, so ``J`` reached with
  ``j`` blocks is only extended if ``work(V \\ J) <= (k - j) U`` (and likewise
  ``I`` is only recorded at ``j + 1`` if ``work(V \\ I) <= (k - j - 1) U``);
* once ``dp[k, V]`` reaches a known lower bound, the chain found is optimal.

Peak-aware costs (``Problem.peak_aware``) are priced here *without* the activation
peak: ``peak(S) >= 0`` only raises ``f``, so the value is then a lower bound on the
optimum (and the partition is re-priced by the evaluator).

Rounding (:mod:`mtpp.rounding`).  ``work``, ``size_param`` and ``boundary`` of the
ideals and the running tensor sum ``x`` are compensated sums, and every difference
``x(I) - x(J)`` is taken on the pairs, so no cancellation of a huge tensor against
itself survives.  A block cost ``c`` is computed as ``c' = w + ovf + io / B`` from at
most four such sums of at most ``m = n + |E| + 4`` updates each, a plain sum of the
non-negative input tensors, and a handful of final roundings, whence

    |c' - c| <= rel c + err,    rel = gamma(n + |E| + 16),
    err = 6 (dd(m, W) + (dd(m, S) + dd(m, P)) / B) + 2u (P + |M - R|) / B

with ``dd = dd_error``, ``W = sum work``, ``P = sum size_param``, ``S = 4 sum size_out
(outdeg + 1)`` the largest magnitudes any partial sum reaches (the ``P``, ``M - R``
term only with finite memory: the overflow subtracts the budget from the block's
parameters).  Every pruning test compares ``c'`` with ``U (1 + rel) + err``, so it
drops only pairs whose *true* cost exceeds ``U``; the DP's value ``v'`` (a min-max of
computed costs over the chains kept) therefore proves ``OPT >= (v' - err) / (1 +
rel)`` (:func:`mtpp.rounding.lower_by`), which :attr:`IdealDpResult.lower_bound`
reports.  On ordinary data ``err`` is about ``1e-25`` of the total weight; a graph
whose magnitudes make it exceed the optimality tolerance gets the bound it proves
and no claim of optimality.

Time ``O(sum_J |{I >= J : work(I \\ J) <= U}| (deg + k))``, memory ``O(N k)``
for ``N`` ideals; the search for one ``J`` runs in compiled code and the time limit
is checked between chunks of ``J``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from heuristics.bitsets import has
from heuristics.partition.ideals import DEFAULT_MAX_IDEALS, IdealLattice, enumerate_ideals
from heuristics.partition.segments import overflow
from mtpp.problem import Problem
from mtpp.rounding import UNIT, dd_add, dd_diff, dd_error, dd_value, gamma, lower_by

SLACK = 1e-9  # relative slack of the first pass's target (the known lower bound)
MAX_TABLE = 20_000_000  # entries of the (k + 1) x N table, 12 bytes each: at most 240 MB
CHUNK_SECONDS = 0.25  # roughly how often the time limit is checked
LB_PASS_GAP = 0.05  # the lower-bound pass runs only if UB exceeds LB by more: else it costs about a full pass


@dataclass(frozen=True)
class IdealDpResult:
    """How the DP ended and what it found.

    ``status``: ``optimal`` (every chain was searched: ``value`` is the optimum,
    or the relaxed optimum for peak-aware costs), ``bound_reached`` (a chain of
    value ``<= lower_bound`` was found: optimal as well), ``no_improvement`` (no
    chain beats ``upper_bound``: the optimum is ``upper_bound``), ``too_wide``
    (more ideals than the cap, or a table too large), ``time_limit``.
    ``value`` is the DP's optimum where the status says it is known;
    ``assignment`` the chain's partition (block per node index) when one was
    found.  ``lower_bound`` is what the run proves: ``value`` lowered by the
    rounding error bound (``rounding`` absolute, module docstring) for
    ``optimal``, the upper bound itself for ``no_improvement`` (every chain's true
    value exceeds it), at most the known lower bound for ``bound_reached``."""

    status: str
    value: float | None
    assignment: np.ndarray | None
    ideals: int | None
    wall_time: float
    message: str = ""
    lower_bound: float | None = None
    rounding: float = 0.0


def rounding_margin(problem: Problem) -> tuple[float, float]:
    """``(rel, err)`` with ``|c' - c| <= rel c + err`` for every block cost ``c'`` the
    DP computes (module docstring)."""
    g = problem.graph
    inv_b = (1.0 / problem.bandwidth) * (1.0 + 4.0 * UNIT)
    m = g.n + g.m + 4
    params = float(g.size_param.sum())
    sizes = 4.0 * float(np.dot(g.size_out, np.diff(g.succ_ptr) + 1.0))
    err = 6.0 * (dd_error(m, float(g.work.sum())) + (dd_error(m, sizes) + dd_error(m, params)) * inv_b)
    if math.isfinite(problem.param_budget):
        err += 2.0 * UNIT * (params + abs(problem.param_budget)) * inv_b
    return gamma(g.n + g.m + 16), err * (1.0 + 1e-6)


@njit(cache=True)
def dp_chunk(
    first,
    stop,
    k,
    ub,
    lb_stop,
    dp,
    arg,
    bits,
    work,
    param,
    boundary,
    work_lo,
    param_lo,
    boundary_lo,
    cover_ptr,
    cover_node,
    cover_to,
    pred_ptr,
    pred_idx,
    succ_ptr,
    succ_idx,
    size_out,
    budget,
    inv_b,
    rel,
    err,
    visit,
    cnt,
    nout,
    st_s,
    st_e,
    st_v,
    st_x,
    st_xl,
    st_in,
    steps_j,
    deadline_steps,
):
    """Relax the pairs of ideals ``J`` in ``first..stop-1``; returns the next ``J``
    to process (``stop`` when done, or earlier after ``deadline_steps`` search
    steps) and whether ``dp[k, V]`` reached ``lb_stop``.  Every test against the
    bound ``U`` compares with ``U (1 + rel) + err`` (module docstring)."""
    last = work.shape[0] - 1
    steps = 0
    for jj in range(first, stop):
        for j in range(1, k + 1):  # an empty block: j - 1 blocks suffice for J
            if dp[j - 1, jj] < dp[j, jj]:
                dp[j, jj] = dp[j - 1, jj]
                arg[j, jj] = jj
        best = dp[k, last]
        if best <= lb_stop:
            return jj, True
        u = min(ub, best)
        u_slack = u * (1.0 + rel) + err
        jlo = 0
        while jlo < k and dp[jlo, jj] > u_slack:
            jlo += 1
        rem = dd_diff(work[last], work_lo[last], work[jj], work_lo[jj])
        jhi = k - 1
        while jhi >= jlo and (k - jhi) * u_slack < rem:
            jhi -= 1
        if jlo > jhi or jj == last:
            continue
        if jlo == k - 1:  # only V - J can follow: it takes every tensor leaving J and sends none
            p_rest = dd_diff(param[last], param_lo[last], param[jj], param_lo[jj])
            cost = rem + overflow(p_rest, budget, inv_b) + dd_value(boundary[jj], boundary_lo[jj]) * inv_b
            val = dp[jlo, jj] if dp[jlo, jj] > cost else cost
            if val < dp[k, last] and cost <= u_slack:
                dp[k, last] = val
                arg[k, last] = jj
            continue
        n_steps = 0  # the j where dp[., J] drops: between them the row is flat
        for j in range(jlo, jhi + 1):
            if j == jlo or dp[j, jj] < dp[j - 1, jj]:
                steps_j[n_steps] = j
                n_steps += 1
        stamp = jj + 1
        visit[jj] = stamp
        top = 0
        st_s[0] = jj
        st_e[0] = cover_ptr[jj]
        st_v[0] = -1
        st_x[0] = -boundary[jj]
        st_xl[0] = -boundary_lo[jj]
        st_in[0] = 0.0
        while top >= 0:
            s = st_s[top]
            e = st_e[top]
            if e == cover_ptr[s + 1]:
                if top > 0:
                    v = st_v[top]
                    for a in range(pred_ptr[v], pred_ptr[v + 1]):
                        p = pred_idx[a]
                        if has(bits, jj, p):
                            cnt[p] -= 1
                top -= 1
                continue
            st_e[top] = e + 1
            c = cover_to[e]
            if visit[c] == stamp:
                continue
            visit[c] = stamp  # every test below depends on (J, c) only, so c needs one look
            w = dd_diff(work[c], work_lo[c], work[jj], work_lo[jj])
            if w > u_slack:
                continue
            v = cover_node[e]
            x = st_x[top]
            xl = st_xl[top]
            x_in = st_in[top]
            for a in range(pred_ptr[v], pred_ptr[v + 1]):
                p = pred_idx[a]
                if has(bits, jj, p):
                    before = cnt[p]
                    if before == 0:
                        outside = 0
                        for b in range(succ_ptr[p], succ_ptr[p + 1]):
                            if has(bits, jj, succ_idx[b]) == 0:
                                outside += 1
                        nout[p] = outside
                    after = before + 1
                    # size(p) ([cnt > 0] - [cnt < nout]) before and after
                    old = (1.0 if before > 0 else 0.0) - (1.0 if before < nout[p] else 0.0)
                    new = 1.0 - (1.0 if after < nout[p] else 0.0)
                    x, xl = dd_add(x, xl, size_out[p] * (new - old))
                    if before == 0:
                        x_in += size_out[p]
                    cnt[p] = after
            ovf = overflow(dd_diff(param[c], param_lo[c], param[jj], param_lo[jj]), budget, inv_b)
            if w + ovf + x_in * inv_b > u_slack:  # grows with I: no superset of c can do better
                for a in range(pred_ptr[v], pred_ptr[v + 1]):
                    p = pred_idx[a]
                    if has(bits, jj, p):
                        cnt[p] -= 1
                continue
            steps += 1
            top += 1
            st_s[top] = c
            st_e[top] = cover_ptr[c]
            st_v[top] = v
            st_x[top] = x
            st_xl[top] = xl
            st_in[top] = x_in
            cost = w + ovf + dd_diff(boundary[c], boundary_lo[c], -x, -xl) * inv_b
            if cost > u_slack:
                continue
            rem_c = dd_diff(work[last], work_lo[last], work[c], work_lo[c])
            # relaxing at each drop of J's row suffices: the empty-block step
            # carries dp[j + 1, c] on to larger j when c is processed
            for t in range(n_steps):
                j = steps_j[t]
                if (k - j - 1) * u_slack < rem_c:
                    break
                val = dp[j, jj] if dp[j, jj] > cost else cost
                if val < dp[j + 1, c]:
                    dp[j + 1, c] = val
                    arg[j + 1, c] = jj
                    if c == last and j + 1 == k and val < u:
                        u = val
                        u_slack = u * (1.0 + rel) + err
                if dp[j, jj] <= cost:
                    break
        if steps >= deadline_steps:
            return jj + 1, False
    return stop, False


def chain_assignment(lattice: IdealLattice, arg: np.ndarray, k: int, n: int) -> np.ndarray:
    """Walk ``arg`` back from ``(k, V)``: the block of each node (chain position
    ``j`` is block ``j - 1``)."""
    a = np.full(n, -1, dtype=np.int64)
    ideal, j = lattice.count - 1, k
    while j > 0:
        prev = int(arg[j, ideal])
        if prev != ideal:
            inside = np.zeros(n, dtype=bool)
            inside[lattice.members(ideal)] = True
            inside[lattice.members(prev)] = False
            a[inside] = j - 1
        ideal, j = prev, j - 1
    return a


def ideal_dp(
    problem: Problem,
    *,
    upper_bound: float = math.inf,
    lower_bound: float = 0.0,
    lattice: IdealLattice | None = None,
    max_ideals: int = DEFAULT_MAX_IDEALS,
    time_limit: float | None = None,
) -> IdealDpResult:
    """The optimum of ``problem`` over all chains of ideals (see the module
    docstring), searched below ``upper_bound`` (the value of a known partition).
    With a proven ``lower_bound`` well below ``upper_bound`` a first, cheaper pass
    looks only for a chain of value ``<= lower_bound`` (every block's work is then
    at most the bound); if there is one it is optimal.  Pass ``lattice`` to share
    one enumeration across several ``k``.  The bound the run proves, rounding
    included, is :attr:`IdealDpResult.lower_bound`."""
    start = time.perf_counter()
    g, k = problem.graph, problem.k
    if lattice is None:
        lattice = enumerate_ideals(g, max_ideals)
    if lattice is None:
        return IdealDpResult(
            "too_wide",
            None,
            None,
            None,
            time.perf_counter() - start,
            f"more than {max_ideals} ideals (the graph is too wide for the ideal DP)",
        )
    count = lattice.count
    if (k + 1) * count > MAX_TABLE:
        return IdealDpResult(
            "too_wide",
            None,
            None,
            count,
            time.perf_counter() - start,
            f"{count} ideals x {k + 1} rows exceed the DP table cap of {MAX_TABLE}",
        )
    deadline = None if time_limit is None else start + time_limit
    rel, err = rounding_margin(problem)
    lb = float(lower_bound) * (1.0 + SLACK)
    passes = [(lb, True)] if 0.0 < lb * (1.0 + LB_PASS_GAP) < upper_bound else []
    passes.append((float(upper_bound), False))
    for cap, first in passes:
        run = _run_pass(problem, lattice, cap, lb, rel, err, deadline)
        if run is None:
            return IdealDpResult(
                "time_limit",
                None,
                None,
                count,
                time.perf_counter() - start,
                "the time limit ran out before every chain was searched",
                rounding=err,
            )
        dp, arg, reached = run
        value = float(dp[k, count - 1])
        if math.isfinite(value):
            proven = lower_by(value, rel, err)
            if first or reached:
                status, proven = "bound_reached", min(proven, float(lower_bound))
            else:
                status = "optimal"
            return IdealDpResult(
                status,
                value,
                chain_assignment(lattice, arg, k, g.n),
                count,
                time.perf_counter() - start,
                lower_bound=proven,
                rounding=err,
            )
    return IdealDpResult(
        "no_improvement",
        None,
        None,
        count,
        time.perf_counter() - start,
        "no chain beats the upper bound",
        lower_bound=float(upper_bound),
        rounding=err,
    )


def _run_pass(
    problem: Problem, lattice: IdealLattice, cap: float, lb: float, rel: float, err: float, deadline: float | None
) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """One DP pass with every block value capped at ``cap``; ``None`` past the
    deadline.  Returns the table, the choices and whether ``lb`` was reached."""
    g, k, count = problem.graph, problem.k, lattice.count
    dp = np.full((k + 1, count), np.inf)
    dp[0, 0] = 0.0
    arg = np.full((k + 1, count), -1, dtype=np.int32)
    visit = np.zeros(count, dtype=np.int64)
    cnt = np.zeros(g.n, dtype=np.int64)
    nout = np.zeros(g.n, dtype=np.int64)
    depth = g.n + 2
    st_s, st_e, st_v = (np.zeros(depth, dtype=np.int64) for _ in range(3))
    st_x, st_xl, st_in = np.zeros(depth), np.zeros(depth), np.zeros(depth)
    steps_j = np.zeros(k + 1, dtype=np.int64)
    steps = 200_000
    nxt, reached = 0, False
    while nxt < count and not reached:
        if deadline is not None and time.perf_counter() > deadline:
            return None
        t0 = time.perf_counter()
        nxt, reached = dp_chunk(
            nxt,
            count,
            k,
            cap,
            lb,
            dp,
            arg,
            lattice.bits,
            lattice.work,
            lattice.param,
            lattice.boundary,
            lattice.work_lo,
            lattice.param_lo,
            lattice.boundary_lo,
            lattice.cover_ptr,
            lattice.cover_node,
            lattice.cover_to,
            g.pred_ptr,
            g.pred_idx,
            g.succ_ptr,
            g.succ_idx,
            g.size_out,
            problem.param_budget,
            1.0 / problem.bandwidth,
            rel,
            err,
            visit,
            cnt,
            nout,
            st_s,
            st_e,
            st_v,
            st_x,
            st_xl,
            st_in,
            steps_j,
            steps,
        )
        elapsed = time.perf_counter() - t0
        steps = int(min(max(steps * CHUNK_SECONDS / max(elapsed, 1e-3), 10_000), 50_000_000))
    return dp, arg, reached
