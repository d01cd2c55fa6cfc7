"""The result of :func:`mtpp.certify`: a :class:`Certificate` holds the best partition
found (re-checked by :func:`mtpp.evaluate`) and every lower bound proven for it, one
:class:`~mtpp.core.records.BoundRecord` per method (``docs/bounds.md`` says what each
proves).  The optimum lies in ``[lower_bound, upper_bound]``.

``optimal`` means ``LB >= (1 - OPTIMALITY_TOLERANCE) UB``, the upper bound being the
partition's cost rounded up by the evaluator's bound on its rounding error
(:attr:`mtpp.Evaluation.upper_bound`): the partition is within a relative ``5e-7`` of
the optimum.  Every exact method's bound is already lowered by its own rounding error
(:mod:`mtpp.core.rounding`): where that margin is too large for a proof (a graph mixing
huge and tiny magnitudes), the certificate reports the bound it can prove, not
"optimal", and a note says why.  A bound above the re-checked upper bound is a failed
method (:func:`mtpp.core.records.checked`).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr

from heuristics.partition.presolve import Presolved
from mtpp.core.errors import InvalidParameterError
from mtpp.core.evaluate import Evaluation, evaluate
from mtpp.core.problem import Problem
from mtpp.core.records import BoundRecord, PresolveRecord, checked, closes
from mtpp.core.result import FieldsEqual, Result, ResultStatus, Step
from mtpp.engine.call import Run
from mtpp.results_schema import BoundDocument, CertificateDocument, document_gap, graph_fields, partition_fields


class Certificate(FieldsEqual, Result, BaseModel):
    """A partition (upper bound) and the lower bounds proven for it: a
    :class:`mtpp.core.result.Result`.

    The optimum lies in ``[lower_bound, upper_bound]``; ``ratio`` is their quotient,
    ``gap`` is ``(UB - LB) / UB`` and ``gap_percent`` the same in percent.
    ``optimal`` is true when the gap is within ``OPTIMALITY_TOLERANCE`` (relative).
    ``order`` lists node ids (as strings).  ``steps`` are the partition search and the
    bound records; ``notes`` say how the bounds were obtained, and record any
    disagreement between proofs.  ``to_json()`` is the ``mtpp-certificate`` document
    (its partition re-checked on the problem certify was given); ``model_dump_json()``
    the raw fields.
    """

    model_config = ConfigDict(frozen=True)
    _problem: Problem | None = PrivateAttr(default=None)

    mtpp_version: str
    graph: str | None
    n: int
    m: int
    k: int
    bandwidth: float
    memory: float | None
    reserve: float
    peak_aware: bool
    machine: str | None = None
    """The machine whose bandwidth or memory priced it (the graph's recorded machine or a
    device asked for, :mod:`mtpp.core.machine`); ``None``: figures given by hand, or the
    defaults."""
    upper_bound: float
    partition_source: str
    assignment: dict[str, int]
    order: list[str]
    block_costs: list[float]
    bounds: list[BoundRecord]
    lower_bound: float
    lower_bound_method: str
    ratio: float
    gap_percent: float
    optimal: bool
    wall_time: float
    notes: list[str]
    presolve: PresolveRecord | None = None
    """What presolve removed (``None``: presolve was off)."""

    def bound(self, method: str) -> BoundRecord | None:
        """The record of ``method``, if it was computed."""
        return next((b for b in self.bounds if b.method == method), None)

    @property
    def status(self) -> ResultStatus:
        """``optimal`` when proven, ``time_limit`` when a bound method was stopped by
        its time limit or the budget, else ``feasible``."""
        if self.optimal:
            return ResultStatus.OPTIMAL
        stopped = any(b.status in ("time_limit", "interrupted") for b in self.bounds)
        return ResultStatus.TIME_LIMIT if stopped else ResultStatus.FEASIBLE

    @property
    def steps(self) -> tuple[Step, ...]:
        """The partition (upper bound) and every bound record, in the order run."""
        found = Step(self.partition_source, ResultStatus.FEASIBLE, self.upper_bound, None, 0.0, "upper bound")
        return (
            found,
            *(Step(b.method, ResultStatus(b.status), None, b.bound, b.wall_time, b.message) for b in self.bounds),
        )

    def evaluation(self, problem: Problem) -> tuple[Evaluation, np.ndarray]:
        """The certificate's partition re-checked by :func:`mtpp.evaluate` on ``problem``,
        and its run order as node indices."""
        g = problem.graph
        by_str = {str(i): i for i in g.ids}
        order = np.array([g.index(by_str[v]) for v in self.order], dtype=np.int64)
        return evaluate(problem, {by_str[v]: b for v, b in self.assignment.items()}, order), order

    def document(self, problem: Problem) -> CertificateDocument:
        """The ``mtpp-certificate`` document for ``problem``: the partition is re-checked by
        :func:`mtpp.evaluate` here, which also gives the blocks' cost terms."""
        ev, order = self.evaluation(problem)
        bounds = [BoundDocument(**{f: getattr(r, f) for f in BoundDocument.model_fields}) for r in self.bounds]
        return CertificateDocument(
            **graph_fields(problem.graph),
            **partition_fields(problem, ev, order),
            upper_bound=self.upper_bound,
            lower_bound=self.lower_bound,
            lower_bound_method=self.lower_bound_method,
            gap=document_gap(self.upper_bound, self.lower_bound),
            optimal=self.optimal,
            wall_time=self.wall_time,
            partition_source=self.partition_source,
            bounds=bounds,
            notes=list(self.notes),
            presolve=self.presolve,
        )

    def _document(self) -> Any:
        if self._problem is None:
            raise InvalidParameterError(
                "this certificate was not made by certify() in this process: build its document with "
                "cert.document(problem)"
            )
        return self.document(self._problem)


def build_certificate(run: Run, start: float, pre: Presolved | None, k: int | None) -> Certificate:
    """The certificate of ``k`` (one of the ks ``run`` answers; ``None``: the problem's
    own), its partition lifted to the original graph (and re-checked there) when
    presolve reduced it."""
    import mtpp

    problem, best_eval, best_order, notes = run.problem, run.best_eval, run.best_order, list(run.notes)
    if pre is not None and pre.reduced:
        best_order = pre.lift_order(best_order)
        asked = problem.requested_k if k is None else k  # the k asked for (the reduced graph may be smaller)
        problem = replace(pre.original, k=asked)
        best_eval = evaluate(problem, pre.lift(best_eval.assignment), best_order if problem.peak_aware else None)
        notes.append(pre.summary())
    ub = best_eval.upper_bound  # the exact cost rounded up (mtpp.core.result.upper_rounded)
    records = [checked(r, ub) for r in run.records]  # a better partition may expose a bad bound
    proven = [r for r in records if r.bound is not None]
    top = max(proven, key=lambda r: r.bound or 0.0)
    lb = float(top.bound or 0.0)
    g = problem.graph
    ratio = 1.0 if ub == 0 else lb / ub
    cert = Certificate(
        mtpp_version=mtpp.__version__,
        graph=g.name,
        n=g.n,
        m=g.m,
        k=problem.k,
        bandwidth=problem.bandwidth,
        memory=None if math.isinf(problem.memory) else problem.memory,
        reserve=problem.reserve,
        peak_aware=problem.peak_aware,
        machine=None if problem.machine is None else problem.machine.name,
        upper_bound=ub,
        partition_source=run.source,
        assignment={str(g.ids[i]): int(b) for i, b in enumerate(best_eval.assignment.tolist())},
        order=[str(g.ids[i]) for i in best_order.tolist()],
        block_costs=[float(c) for c in best_eval.block_costs],
        bounds=records,
        lower_bound=lb,
        lower_bound_method=top.method if top.from_k is None else f"{top.method} (from k={top.from_k})",
        ratio=ratio,
        gap_percent=0.0 if ub == 0 else 100.0 * (ub - lb) / ub,
        optimal=closes(lb, ub),
        wall_time=time.perf_counter() - start,
        notes=notes,
        presolve=None if pre is None else PresolveRecord(**pre.record(), ideals_after=_ideals(records)),
    )
    cert._problem = problem
    return cert


def _ideals(records: list[BoundRecord]) -> int | None:
    """The ideals the DP enumerated on the (reduced) graph, where it counted them."""
    return next((r.ideals for r in records if r.method == "ideal-dp" and r.ideals is not None), None)
