"""Random small MTPP instances for the soundness tests and ``benchmarks/soundness.py``,
the check of every bound method on one backend against the exact optimum, and the
backend-free check of the combinatorial methods (simple, cut, ideal DP, certify without
MIPs).

Families (:data:`FAMILIES`), all with bandwidth ``B`` in {0.5, 0.7, 1, 3}, finite memory
in about a third of the instances (chosen to bind: a share of the parameters, with a
reserve in a third of those) and node ids shuffled (strings or ints, never in index
order):

* ``classic``: ``n <= 7``, one weight scale per graph in ``1e-3 .. 1e12``, weights with 0
  to 6 decimals, a few zeros;
* ``mixed``: every weight's scale drawn on its own in ``1e-3 .. 1e15``, so one graph
  mixes them all;
* ``needle``: ops of weight ~1e-3 with a few decimals, plus one zero-work op whose output
  tensor is ``1e6 .. 1e15`` (its consumers can all sit with it), or one op whose
  ``size_param`` is that large with the memory just above it (the overflow is then a
  small difference of huge sums), or both;
* ``zero``: ordinary ops with zero-cost leaves (sources with one consumer, sinks with one
  producer: no work, no parameters) and a chain of zero-work ops;
* ``views``: ordinary ops with the patterns of every presolve rule
  (:mod:`heuristics.partition.presolve`), each drawn on both sides of its size test: a
  zero-work op between two ops whose tensor is larger or smaller than its input(s), one
  that is the only consumer of its producer, empty-tensor ops whose producers and
  consumers are some op's or not quite, dangling outputs with several producers;
  parameters on zero-work ops, sometimes with a memory that no block can overflow.

``n <= 12`` (mostly ``n <= 8``), with at most :data:`MAX_IDEALS` down-sets, so that the
exact oracle :func:`tests.oracle.exact_optimum` (rational arithmetic) stays fast.
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from mtpp import Graph, Problem, evaluate
from tests.oracle import ExactCosts, down_sets, exact_optimum

SCALES = (1e-3, 1.0, 1e3, 1e6, 1e9, 1e12)
MIXED_SCALES = (1e-3, 1e-2, 1.0, 1e3, 1e6, 1e9, 1e12, 1e15)
BANDWIDTHS = (0.5, 0.7, 1.0, 3.0)
FAMILIES = ("classic", "mixed", "needle", "zero", "views")
METHODS = ("bottleneck", "guess", "exact")
MAX_N = 12
MAX_IDEALS = 512  # the oracle's pairs of down-sets stay below ~10^5: well under 0.1 s at n = 12
REL = Fraction(1, 10**9)  # a bound may exceed OPT only by float rounding of OPT itself
TIGHT = Fraction(1, 10**5)  # a proven-optimal exact bound lies within this (relative) of OPT
OPTIMAL = Fraction(1, 10**6)  # a certificate called optimal has its UB within this (relative) of OPT
NOT_TIGHT = "not tight"  # marks a safe-side finding: a proven-optimal bound well below OPT, or no bound


@dataclass(frozen=True)
class Case:
    problem: Problem
    opt: Fraction  # exact (tests.oracle.exact_optimum)
    family: str = ""
    costs: ExactCosts | None = field(default=None, compare=False, repr=False)

    def exact_bottleneck(self, assignment) -> Fraction:
        """The exact cost of a partition (block per node index)."""
        costs = self.costs if self.costs is not None else ExactCosts(self.problem)
        return costs.bottleneck([int(b) for b in assignment])

    def describe(self) -> str:
        p = self.problem
        return (
            f"[{self.family or '?'}] n={p.graph.n} m={p.graph.m} k={p.k} B={p.bandwidth} M={p.memory!r} "
            f"R={p.reserve!r} OPT={float(self.opt)!r} graph={p.graph.to_json()}"
        )


def make_case(problem: Problem, family: str = "") -> Case:
    """A :class:`Case` with its exact optimum."""
    return Case(problem, exact_optimum(problem), family, ExactCosts(problem))


# ---------------------------------------------------------------- instances
def make_instance(rng: random.Random, family: str | None = None, max_n: int = MAX_N) -> Problem:
    """One random instance of ``family`` (module docstring; default: one drawn from
    :data:`FAMILIES`) from a seeded ``random.Random``, with at most ``max_n`` ops."""
    family = rng.choice(FAMILIES) if family is None else family
    build = {"classic": _classic, "mixed": _mixed, "needle": _needle, "zero": _zero, "views": _views}[family]
    return build(rng, max(3, max_n))


def _size(rng: random.Random, max_n: int, low: int = 1) -> int:
    """Mostly ``n <= 8``; one in five up to ``max_n``."""
    if max_n > 8 and rng.random() < 0.2:
        return rng.randint(9, max_n)
    return rng.randint(low, min(8, max_n))


def _edges(rng: random.Random, n: int, density: float) -> list[tuple[int, int]]:
    """Random edges ``i -> j`` with ``i < j`` (indices are topological until :func:`_finish`)."""
    return [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < density]


def _decimal(rng: random.Random, scale: float, places: tuple[int, ...] = (0, 1, 3, 6)) -> float:
    return round(rng.uniform(0, 10), rng.choice(places)) * scale


def _classic(rng: random.Random, max_n: int) -> Problem:
    n = rng.randint(1, min(7, max_n))
    edges = _edges(rng, n, rng.choice([0.2, 0.45, 0.7]))
    scale = rng.choice(SCALES)

    def weight() -> float:
        return 0.0 if rng.random() < 0.15 else _decimal(rng, scale)

    work, param, out = ([weight() for _ in range(n)] for _ in range(3))
    return _finish(rng, work, param, out, edges)


def _mixed(rng: random.Random, max_n: int) -> Problem:
    n = _size(rng, max_n)
    edges = _edges(rng, n, rng.choice([0.1, 0.25, 0.45, 0.7]))

    def weight() -> float:
        return 0.0 if rng.random() < 0.15 else _decimal(rng, rng.choice(MIXED_SCALES))

    work, param, out = ([weight() for _ in range(n)] for _ in range(3))
    return _finish(rng, work, param, out, edges)


def _huge(rng: random.Random) -> float:
    return round(rng.uniform(1, 10), rng.choice([0, 2, 5])) * 10.0 ** rng.randint(6, 14)


def _needle(rng: random.Random, max_n: int) -> Problem:
    n = _size(rng, max_n, low=2)
    edges = set(_edges(rng, n, rng.choice([0.1, 0.25, 0.45, 0.7])))

    def tiny() -> float:
        return 0.0 if rng.random() < 0.1 else _decimal(rng, 1e-3, (2, 3, 4, 5))

    work, param, out = ([tiny() for _ in range(n)] for _ in range(3))
    kind = rng.choice(["tensor", "tensor", "param", "both"])
    memory = None
    if kind in ("tensor", "both"):  # a zero-work op with a huge output, consumed by 1..3 later ops
        h = rng.randrange(n - 1)
        work[h], out[h] = 0.0, _huge(rng)
        if rng.random() < 0.7:
            param[h] = 0.0
        edges -= {(h, j) for j in range(h + 1, n)}
        edges |= {(h, j) for j in rng.sample(range(h + 1, n), min(n - h - 1, rng.randint(1, 3)))}
    if kind in ("param", "both"):  # a huge parameter, the memory just above it: the overflow is a small difference
        v = rng.randrange(n)
        param[v] = _huge(rng)
        rest = sum(param) - param[v]
        memory = param[v] + rest * rng.choice([0.0, 0.3, 0.6, 1.0])
    return _finish(rng, work, param, out, sorted(edges), memory=memory)


def _zero(rng: random.Random, max_n: int) -> Problem:
    n = _size(rng, max_n, low=3)
    scale = rng.choice(SCALES)

    def weight() -> float:
        return 0.0 if rng.random() < 0.1 else _decimal(rng, scale)

    leaves = rng.randint(1, max(1, n // 3))
    sources = rng.randint(0, leaves)
    core = n - leaves
    edges = {(sources + i, sources + j) for i, j in _edges(rng, core, rng.choice([0.15, 0.3, 0.5, 0.7]))}
    work, param, out = ([weight() for _ in range(n)] for _ in range(3))
    first = sources
    if core >= 2:  # a chain of zero-work ops inside the core
        length = rng.randint(2, min(4, core))
        first = sources + rng.randint(0, core - length)
        for v in range(first, first + length):
            work[v] = 0.0
            if rng.random() < 0.5:
                param[v] = 0.0
            if v > first:
                edges.add((v - 1, v))
    for s in range(sources):  # zero-cost sources, one consumer each (often in the chain)
        work[s] = param[s] = 0.0
        edges.add((s, first if rng.random() < 0.5 else rng.randrange(sources, sources + core)))
    for t in range(sources + core, n):  # zero-cost sinks, one producer each
        work[t] = param[t] = 0.0
        if rng.random() < 0.5:
            out[t] = 0.0
        edges.add((rng.randrange(sources, sources + core), t))
    leaf = set(range(sources)) | set(range(sources + core, n))
    return _finish(rng, work, param, out, sorted(edges), keep=leaf)


def _views(rng: random.Random, max_n: int) -> Problem:
    core = rng.randint(2, 5)
    scale = rng.choice(SCALES)

    def weight() -> float:
        return 0.0 if rng.random() < 0.1 else _decimal(rng, scale)

    work, param, out = ([weight() for _ in range(core)] for _ in range(3))
    edges = set(_edges(rng, core, rng.choice([0.2, 0.4, 0.7])))
    before = {j: {i for i, jj in edges if jj == j} for j in range(core)}  # core preds, core succs
    after = {i: {j for ii, j in edges if ii == i} for i in range(core)}
    added: set[int] = set()

    def node(w: float, p: float, o: float) -> int:
        work.append(w)
        param.append(p)
        out.append(o)
        added.add(len(work) - 1)
        return len(work) - 1

    def zero_param() -> float:
        return 0.0 if rng.random() < 0.7 else _decimal(rng, scale)

    while len(work) < max_n - 1 and (len(added) < 2 or rng.random() < 0.6):
        kind = rng.choice(["forward", "backward", "twin", "dangling"])
        u, v = sorted(rng.sample(range(core), 2))
        if kind == "forward":  # u (and maybe more) -> s -> v, s's tensor larger or smaller than its inputs
            s = node(0.0, zero_param(), out[u] * rng.choice([0.5, 1.0, 1.0, 2.0]))
            edges |= {(u, s), (s, v)}
            if rng.random() < 0.3 and u > 0:
                edges.add((rng.randrange(u), s))
        elif kind == "backward":  # a fresh op whose only consumer is s, s feeding later core ops
            t = node(weight(), weight(), weight())
            s = node(0.0, zero_param(), out[t] * rng.choice([0.5, 1.0, 2.0]))
            edges |= {(i, t) for i in range(u) if rng.random() < 0.5} | {(t, s)}
            edges |= {(s, j) for j in range(u, core) if rng.random() < 0.5}
        elif kind == "twin":  # an op x's producers and consumers, or nearly
            x = rng.randrange(core)
            preds = {i for i in before[x] if rng.random() < 0.7} | ({x} if rng.random() < 0.5 else set())
            succs = {j for j in after[x] if rng.random() < 0.7}
            if rng.random() < 0.2:  # not quite a twin
                succs |= {j for j in range(x + 1, core) if j not in after[x]}
            s = node(0.0, zero_param(), 0.0 if rng.random() < 0.8 else weight())
            edges |= {(i, s) for i in preds} | {(s, j) for j in succs}
        else:  # a dangling output read from several producers
            s = node(0.0, zero_param(), weight())
            edges |= {(i, s) for i in rng.sample(range(core), rng.randint(1, min(3, core)))}
    order = _topological(len(work), edges)
    place = {v: t for t, v in enumerate(order)}
    memory = None
    if rng.random() < 0.25 and sum(param) > 0:  # finite, but no block can overflow
        memory = sum(param) * rng.choice([1.0, 1.5])
    return _finish(
        rng,
        [work[v] for v in order],
        [param[v] for v in order],
        [out[v] for v in order],
        sorted((place[i], place[j]) for i, j in edges),
        memory=memory,
        keep={place[v] for v in added},
    )


def _topological(n: int, edges: set[tuple[int, int]]) -> list[int]:
    indeg = [0] * n
    for _, j in edges:
        indeg[j] += 1
    ready = [v for v in range(n) if indeg[v] == 0]
    order = []
    while ready:
        v = ready.pop()
        order.append(v)
        for i, j in sorted(edges):
            if i == v:
                indeg[j] -= 1
                if indeg[j] == 0:
                    ready.append(j)
    assert len(order) == n
    return order


def _finish(
    rng: random.Random,
    work: list[float],
    param: list[float],
    out: list[float],
    edges: list[tuple[int, int]],
    memory: float | None = None,
    keep: Collection[int] = (),
) -> Problem:
    """Thin the down-sets to :data:`MAX_IDEALS` (extra edges ``i -> j``, ``i < j``,
    never at the nodes in ``keep``), relabel the nodes in a random order, draw the ids,
    ``k``, ``B`` and the memory (``memory``: a given memory, with or without a reserve)."""
    n = len(work)
    edges = set(edges)
    free = [(i, j) for i in range(n) for j in range(i + 1, n) if i not in keep and j not in keep]
    rng.shuffle(free)
    while free and _count(n, edges) > MAX_IDEALS:
        edges.update(free[:2])
        del free[:2]
    perm = list(range(n))
    rng.shuffle(perm)  # topological index t becomes node index perm[t]
    place = [0] * n
    for t, v in enumerate(perm):
        place[v] = t
    work, param, out = ([w[place[v]] for v in range(n)] for w in (work, param, out))
    labels = rng.sample(range(100), n)
    ids = [f"v{x}" for x in labels] if rng.random() < 0.5 else labels
    graph = Graph.from_arrays(work, param, out, [(perm[i], perm[j]) for i, j in sorted(edges)], ids=ids)
    k = rng.randint(1, 4) if rng.random() < 0.85 else rng.randint(5, 8)
    bandwidth = rng.choice(BANDWIDTHS)
    if memory is None and rng.random() < 0.35:
        total = sum(param)
        memory = total * rng.choice([0.3, 0.6, 1.0]) if total > 0 else max(max(out), 1e-3)
    if memory is None or memory <= 0:
        return Problem(graph, k, bandwidth=bandwidth)
    if rng.random() < 1 / 3:  # a reserve R >= M - R, so that M - R is exact in floats (Sterbenz)
        reserve = memory * rng.choice([1.0, 1.5, 3.0])
        return Problem(graph, k, bandwidth=bandwidth, memory=memory + reserve, reserve=reserve)
    return Problem(graph, k, bandwidth=bandwidth, memory=memory)


def _count(n: int, edges: set[tuple[int, int]]) -> int:
    pred = [0] * n
    for i, j in edges:
        pred[j] |= 1 << i
    found = down_sets(pred, MAX_IDEALS)
    return MAX_IDEALS + 1 if found is None else len(found)


@st.composite
def cases(draw: st.DrawFn, families: tuple[str, ...] = FAMILIES, max_n: int = MAX_N) -> Case:
    """A hypothesis strategy of :class:`Case` (fresh random instances each run)."""
    family = draw(st.sampled_from(families))
    problem = make_instance(random.Random(draw(st.integers(0, 2**64 - 1))), family, max_n)
    return make_case(problem, family)


# ---------------------------------------------------------------- comparisons with the exact OPT
def exceeds(x: float, opt: Fraction, rel: Fraction = REL) -> bool:
    """``x > opt (1 + rel)``, exactly (``nan`` counts as exceeding)."""
    if not math.isfinite(x):
        return not x < 0
    return Fraction(x) > opt * (1 + rel)


def below(x: float, opt: Fraction, rel: Fraction = REL, err: float = 0.0) -> bool:
    """``x + err < opt (1 - rel)``, exactly (``nan`` counts as below)."""
    if not (math.isfinite(x) and math.isfinite(err)):
        return not x + err > 0
    return Fraction(x) + Fraction(err) < opt * (1 - rel)


def _check_partition(case: Case, who: str, assignment, claimed: float | None = None) -> list[str]:
    """A partition a method returned, re-evaluated by ``mtpp.core.evaluate``: its float cost
    within the evaluator's stated rounding bound of the exact cost (and of the
    ``claimed`` cost), never below OPT beyond that bound."""
    p, opt = case.problem, case.opt
    ev = evaluate(p, assignment)  # raises on a cyclic quotient or a missing node
    err = getattr(ev, "rounding", 0.0)
    exact = case.exact_bottleneck(ev.assignment)
    bad = []
    if below(ev.bottleneck, opt, err=err):
        bad.append(f"{who}: partition at {ev.bottleneck!r} (rounding {err:.3g}) beats OPT")
    if abs(Fraction(ev.bottleneck) - exact) > Fraction(err) + exact * REL:
        bad.append(
            f"evaluate: {ev.bottleneck!r} for {who}'s partition, exact {float(exact)!r}: "
            f"off by more than its rounding bound {err:.3g}"
        )
    if claimed is not None and not math.isclose(ev.upper_bound, claimed, rel_tol=1e-12, abs_tol=0.0):
        bad.append(f"{who}: its partition does not re-evaluate to its UB {claimed!r} ({ev.upper_bound!r})")
    if claimed is not None and Fraction(claimed) < exact:
        bad.append(f"{who}: UB {claimed!r} is below its partition's exact cost {float(exact)!r}")
    return bad


def _check_certificate(case: Case, cert) -> list[str]:
    """A certificate against OPT: LB (and every record's bound) at most OPT; UB the
    re-evaluated cost of its own partition, not below OPT (beyond the evaluator's
    rounding bound); "optimal" only with UB and its partition's exact cost within
    :data:`OPTIMAL` of OPT."""
    p, opt = case.problem, case.opt
    bad = []
    if exceeds(cert.lower_bound, opt):
        bad.append(f"certify: LB {cert.lower_bound!r} > OPT ({cert.lower_bound_method})")
    for record in cert.bounds:
        if record.bound is not None and exceeds(record.bound, opt) and record.method != cert.lower_bound_method:
            bad.append(f"certify: {record.method} record bound {record.bound!r} > OPT ({record.status})")
        if "internal error" in record.message:
            bad.append(f"certify: {record.method} raised: {record.message}")
    bad += [f"certify: {note}" for note in getattr(cert, "notes", []) if "internal error" in note]
    a = [cert.assignment[str(nid)] for nid in p.graph.ids]
    bad += _check_partition(case, "certify", a, claimed=cert.upper_bound)
    exact = case.exact_bottleneck(a)
    if cert.optimal and (exceeds(cert.upper_bound, opt, OPTIMAL) or exact > opt * (1 + OPTIMAL)):
        bad.append(
            f"certify: claims optimal at UB {cert.upper_bound!r}, its partition costs {float(exact)!r} "
            f"(LB {cert.lower_bound!r}, {cert.lower_bound_method})"
        )
    return bad


PIGEONHOLE_MIPS = 4
"""Weightings the pigeonhole bound tries per fuzz case: its two fixed ones and two updates
(or, seeded, its two fixed ones, the seed and one update)."""


def check(case: Case, solver: str, time_limit: float = 20.0, with_certify: bool = True) -> list[str]:
    """Every bound method of :mod:`formulations` on ``solver``, as ``certify`` calls it
    (upper bound of a Kahn partition, warm start for the exact MIP; the pigeonhole bound
    with :data:`PIGEONHOLE_MIPS` weightings), then (with
    ``with_certify``) ``certify`` itself; the list of violations (empty when all is sound):

    * a bound above OPT (beyond float rounding of OPT, relative ``1e-9``);
    * an exact MIP proven optimal whose bound is not OPT (to a relative ``TIGHT``: the
      solver's safety margin may hold it a little below), or a method whose solver
      called its model infeasible (``InfeasibleFormulationError``, a declared failure
      that gives no bound): both safe-side, marked ``NOT_TIGHT``;
    * an incumbent that beats OPT, or whose re-evaluated cost is off its exact cost by
      more than the evaluator's rounding bound (:func:`_check_partition`);
    * a certificate whose LB (or any record's bound) exceeds OPT, whose UB is not its
      partition's re-evaluated cost or lies below OPT beyond the rounding bound, or that
      claims optimality with its UB or its partition's exact cost above ``OPT (1 + 1e-6)``;
    * any exception other than a licence refusal."""
    from formulations.bounds import solve_bound
    from formulations.errors import InfeasibleFormulationError
    from formulations.pigeonhole import pigeonhole_bound
    from mtpp.engine.certify import certify
    from mtpp.partitioner import partition
    from solvers.errors import SolverLicenseError

    p, opt = case.problem, case.opt
    bad: list[str] = []
    try:
        sol = partition(p, orderer="kahn")
        for method in METHODS:
            try:
                res = solve_bound(
                    p,
                    method,
                    solver=solver,
                    time_limit=time_limit,
                    upper_bound=sol.bottleneck,
                    warm_start=sol.evaluation.assignment if method == "exact" else None,
                )
            except InfeasibleFormulationError as exc:  # a declared solver failure, no bound: the safe side
                bad.append(f"{method}: no bound, the solver failed ({NOT_TIGHT}): {exc}")
                continue
            if exceeds(res.bound, opt):
                bad.append(f"{method}: bound {res.bound!r} > OPT")
            if method == "exact" and res.status.value == "optimal" and below(res.bound, opt, TIGHT):
                bad.append(f"exact: proven optimal at {res.bound!r} < OPT ({NOT_TIGHT})")
            if res.assignment is not None:
                bad += _check_partition(case, f"{method} incumbent", res.assignment)
        try:
            half = pigeonhole_bound(p, solver=solver, time_limit=time_limit, max_mips=PIGEONHOLE_MIPS // 2)
            pigeon = pigeonhole_bound(  # resumed, as certify's pigeonhole_resume_phase does
                p, solver=solver, time_limit=time_limit, max_mips=PIGEONHOLE_MIPS, resume=half.updates
            )
            found = pigeon.updates.best_weights if pigeon.updates is not None else None
            seeded = (
                pigeonhole_bound(  # seeded, as certify seeds a larger k (here: another weighting)
                    p, solver=solver, time_limit=time_limit, max_mips=PIGEONHOLE_MIPS, seed=found[::-1]
                )
                if found is not None
                else pigeon
            )
        except InfeasibleFormulationError as exc:
            bad.append(f"pigeonhole: no bound, the solver failed ({NOT_TIGHT}): {exc}")
        else:
            for res, call in ((half, ""), (pigeon, ", resumed"), (seeded, ", seeded")):
                if res.bound is not None and exceeds(res.bound, opt):
                    bad.append(f"pigeonhole{call}: bound {res.bound!r} > OPT")
        if with_certify:
            bad += _check_certificate(case, certify(p, solver=solver, time_limit=time_limit, orderer="kahn"))
    except SolverLicenseError:
        return []
    except Exception as exc:  # anything else is a defect to report
        bad.append(f"raised {type(exc).__name__}: {exc}")
    return [f"{solver}: {b} | {case.describe()}" for b in bad]


REACH_SECONDS = 0.2
"""The reach bound's time limit per fuzz case: both of its bisections finish within it on most
cases, and without it shaving made the four combinatorial chunks take 2-3 min each."""


def check_combinatorial(case: Case) -> list[str]:
    """The methods that need no solver, against OPT; the list of violations:

    * the simple bound of a Kahn partition, the cut, crossing, clique or reach bound (bisecting up
      to the Kahn partition's cost, with shaving, for ``REACH_SECONDS``) above OPT; the Kahn
      partition below OPT or off its exact cost beyond the evaluator's rounding bound;
    * the ideal DP (with the Kahn bottleneck as its upper bound): its claimed bound
      (``lower_bound`` where the result carries one, else ``value`` when ``optimal`` or
      ``bound_reached``, the upper bound when ``no_improvement``) above OPT; ``optimal``
      with ``value`` below OPT by more than its rounding and ``TIGHT`` (``NOT_TIGHT``,
      safe side); its partition as the Kahn one;
    * ``certify`` with every combinatorial bound (:data:`mtpp.core.records.COMBINATORIAL_METHODS`)
      and the Kahn orderer (no MIP): as in :func:`check`;
    * any exception."""
    from heuristics.partition.ideal_dp import ideal_dp
    from mtpp.bounds.clique import clique_lower_bounds
    from mtpp.bounds.crossing import crossing_lower_bounds
    from mtpp.bounds.cut import cut_lower_bound
    from mtpp.bounds.reach import reach_lower_bound
    from mtpp.core.records import COMBINATORIAL_METHODS
    from mtpp.engine.certify import certify
    from mtpp.partitioner import partition

    p, opt = case.problem, case.opt
    bad: list[str] = []
    try:
        sol = partition(p, orderer="kahn")
        if exceeds(sol.lower_bound, opt):
            bad.append(f"simple: bound {sol.lower_bound!r} > OPT")
        bad += _check_partition(case, "kahn partition", sol.evaluation.assignment, claimed=sol.bottleneck)
        cut = cut_lower_bound(p)[0]
        if exceeds(cut, opt):
            bad.append(f"cut: bound {cut!r} > OPT")
        clique = clique_lower_bounds(p, [p.k]).bounds.get(p.k, 0.0)
        if exceeds(clique, opt):
            bad.append(f"clique: bound {clique!r} > OPT")
        crossing = crossing_lower_bounds(p, [p.k]).bounds[p.k]
        if exceeds(crossing, opt):
            bad.append(f"crossing: bound {crossing!r} > OPT")
        reach = reach_lower_bound(p, 0.0, sol.bottleneck, time_limit=REACH_SECONDS).bound
        if reach is not None and exceeds(reach, opt):
            bad.append(f"reach: bound {reach!r} > OPT")
        bad += _check_ideal_dp(case, ideal_dp(p, upper_bound=sol.bottleneck), sol.bottleneck)
        bad += check_presolve(case)
        bad += _check_certificate(case, certify(p, bounds=COMBINATORIAL_METHODS, orderer="kahn"))
    except Exception as exc:  # any exception is a defect to report
        bad.append(f"raised {type(exc).__name__}: {exc}")
    return [f"combinatorial: {b} | {case.describe()}" for b in bad]


def check_presolve(case: Case) -> list[str]:
    """Each presolve rule alone, and all of them: the reduced graph's exact optimum
    is OPT, and the lifts of the Kahn partition and of the reduced graph's optimal
    partition (brute force, where small) are valid partitions of the original of the same exact
    cost.  The list of violations."""
    from heuristics.partition.presolve import RULES, presolve
    from mtpp.partitioner import partition
    from tests.oracle import brute_force_optimum

    bad = []
    for rules in [*((rule,) for rule in RULES), RULES]:
        pre = presolve(case.problem, rules)
        if not pre.reduced:
            continue
        reduced = make_case(pre.problem)
        if reduced.opt != case.opt:
            bad.append(f"presolve {list(rules)}: reduced OPT {float(reduced.opt)!r} != OPT ({pre.removed})")
        found = [partition(pre.problem, orderer="kahn", presolve=False).evaluation.assignment]
        if pre.problem.k**pre.problem.graph.n <= 2000:
            found.append(np.asarray(brute_force_optimum(pre.problem)[1]))
        for a in found:
            lifted = pre.lift(a)
            try:
                evaluate(case.problem, lifted)  # raises on an invalid partition
            except Exception as exc:
                bad.append(f"presolve {list(rules)}: lifted partition invalid: {exc}")
                continue
            if case.exact_bottleneck(lifted) != reduced.exact_bottleneck(a):
                bad.append(f"presolve {list(rules)}: the lift changes the cost of {a.tolist()}")
    return bad


def _check_ideal_dp(case: Case, res, upper_bound: float) -> list[str]:
    opt = case.opt
    bad = []
    claimed = getattr(res, "lower_bound", None)  # a proven bound, where the result carries one
    if claimed is None:
        claimed = {"optimal": res.value, "bound_reached": res.value, "no_improvement": upper_bound}.get(res.status)
    if claimed is not None and exceeds(claimed, opt):
        bad.append(f"ideal-dp: {res.status}, bound {claimed!r} > OPT (value {res.value!r}, UB {upper_bound!r})")
    rounding = getattr(res, "rounding", 0.0)  # |computed - true| <= rel c + rounding for each block cost
    if res.status == "optimal" and res.value is not None and below(res.value * (1 + 1e-12), opt, TIGHT, rounding):
        bad.append(f"ideal-dp: optimal at value {res.value!r} (rounding {rounding:.3g}) < OPT ({NOT_TIGHT})")
    if res.assignment is not None:
        bad += _check_partition(case, "ideal-dp", res.assignment)
    return bad
