"""Random tiny MTPP instances for the soundness tests and ``benchmarks/soundness.py``,
and the check of every bound method on one backend against the exact optimum.

Instances: ``n <= 7`` ops, ``k <= 4``, weights with 0 to 6 decimals at scales
``1e-3 .. 1e12``, bandwidth ``B`` in {0.5, 0.7, 1, 3}, finite memory with a reserve in
about a third, node ids shuffled (strings or ints, never in index order).  The truth
is :func:`tests.oracle.down_set_optimum`, written from the definitions.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from hypothesis import strategies as st

from mtpp import Graph, Problem, evaluate
from tests.oracle import down_set_optimum

SCALES = (1e-3, 1.0, 1e3, 1e6, 1e9, 1e12)
BANDWIDTHS = (0.5, 0.7, 1.0, 3.0)
METHODS = ("bottleneck", "guess", "exact")
REL = 1e-9  # a bound may exceed OPT only by float rounding of OPT itself
TIGHT = 1e-5  # a proven-optimal exact bound lies within this (relative) of OPT
NOT_TIGHT = "not tight"  # marks a safe-side finding: a proven-optimal exact bound well below OPT


@dataclass(frozen=True)
class Case:
    problem: Problem
    opt: float

    def describe(self) -> str:
        p = self.problem
        return (f"n={p.graph.n} m={p.graph.m} k={p.k} B={p.bandwidth} M={p.memory} R={p.reserve} "
                f"OPT={self.opt!r} graph={p.graph.to_json()}")  # fmt: skip


def make_instance(rng: random.Random) -> Problem:
    """One random instance (module docstring) from a seeded ``random.Random``."""
    n = rng.randint(1, 7)
    order = list(range(n))
    rng.shuffle(order)
    density = rng.choice([0.2, 0.45, 0.7])
    edges = [(order[i], order[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < density]
    scale = rng.choice(SCALES)

    def weight() -> float:
        if rng.random() < 0.15:
            return 0.0
        return round(rng.uniform(0, 10), rng.choice([0, 1, 3, 6])) * scale

    work, param, out = ([weight() for _ in range(n)] for _ in range(3))
    kind = rng.choice(["str", "int"])
    labels = rng.sample(range(100), n)
    ids = [f"v{x}" for x in labels] if kind == "str" else labels
    graph = Graph.from_arrays(work, param, out, edges, ids=ids)
    k = rng.randint(1, 4)
    bandwidth = rng.choice(BANDWIDTHS)
    if rng.random() < 0.35:
        memory = max(scale, sum(param) * rng.choice([0.3, 0.6]))
        return Problem(graph, k, bandwidth=bandwidth, memory=memory, reserve=memory * rng.choice([0.0, 0.5]))
    return Problem(graph, k, bandwidth=bandwidth)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A hypothesis strategy of :class:`Case` (fresh random instances each run)."""
    problem = make_instance(random.Random(draw(st.integers(0, 2**64 - 1))))
    return Case(problem, down_set_optimum(problem))


def check(case: Case, solver: str, time_limit: float = 20.0, with_certify: bool = True) -> list[str]:
    """Every bound method of :mod:`formulations` on ``solver``, as ``certify`` calls it
    (upper bound of a Kahn partition, warm start for the exact MIP), then (with
    ``with_certify``) ``certify`` itself; the list of violations (empty when all is sound):

    * a bound above OPT (beyond float rounding of OPT, relative ``1e-9``);
    * an exact MIP proven optimal whose bound is not OPT (to a relative ``TIGHT``: the
      solver's safety margin may hold it a little below);
    * an exact incumbent that does not re-evaluate, or beats OPT;
    * a certificate whose LB exceeds OPT, whose UB is below OPT or not re-checked, or
      that claims optimality with ``UB > OPT (1 + 1e-6)``;
    * any exception other than a licence refusal."""
    from formulations.bounds import solve_bound
    from mtpp.certificate import certify
    from mtpp.partitioner import partition
    from solvers.errors import SolverLicenseError

    p, opt = case.problem, case.opt
    bad: list[str] = []
    tol = REL * abs(opt)
    try:
        sol = partition(p, orderer="kahn")
        for method in METHODS:
            res = solve_bound(p, method, solver=solver, time_limit=time_limit, upper_bound=sol.bottleneck,
                              warm_start=sol.evaluation.assignment if method == "exact" else None)  # fmt: skip
            if res.bound > opt + tol:
                bad.append(f"{method}: bound {res.bound!r} > OPT")
            if method == "exact" and res.status.value == "optimal" and res.bound < opt * (1 - TIGHT):
                bad.append(f"exact: proven optimal at {res.bound!r} < OPT ({NOT_TIGHT})")
            if res.assignment is not None:
                value = evaluate(p, res.assignment).bottleneck
                if value < opt - tol:
                    bad.append(f"{method}: incumbent {value!r} beats OPT")
        if not with_certify:
            return [f"{solver}: {b} | {case.describe()}" for b in bad]
        cert = certify(p, solver=solver, time_limit=time_limit, orderer="kahn")
        if cert.lower_bound > opt + tol:
            bad.append(f"certify: LB {cert.lower_bound!r} > OPT ({cert.lower_bound_method})")
        if cert.upper_bound < opt - tol:
            bad.append(f"certify: UB {cert.upper_bound!r} < OPT")
        if cert.optimal and cert.upper_bound > opt * (1 + 1e-6):
            bad.append(f"certify: claims optimal at UB {cert.upper_bound!r}")
        a = {nid: cert.assignment[str(nid)] for nid in p.graph.ids}
        if not math.isclose(evaluate(p, a).bottleneck, cert.upper_bound, rel_tol=1e-12, abs_tol=0.0):
            bad.append("certify: its partition does not re-evaluate to its UB")
    except SolverLicenseError:
        return []
    except Exception as exc:  # anything else is a defect to report
        bad.append(f"raised {type(exc).__name__}: {exc}")
    return [f"{solver}: {b} | {case.describe()}" for b in bad]
