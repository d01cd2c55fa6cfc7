"""Tables from a results store, in the forms of the MTPP paper's Tables 1-3.

* :func:`bound_table` (Tables 1 and 3): per bound method and k, the geometric mean
  over graphs of ``LB / best UB``.  ``LB`` is what the task proved (for a bound method:
  the certificate's lower bound, the best of ``simple`` and that method); ``best UB``
  is the smallest re-checked partition value stored for that ``(graph, k)`` by any
  task (SliceGraph with any orderer, any certificate's partition or exact incumbent).
  The paper divides by its best BRKGA partition instead.  A bound proven at a larger k
  of the same graph counts at a smaller one (OPT does not increase with k); a note
  counts the cells that took such a bound (``from_k``).
* :func:`orderer_table` (Table 2): per orderer and k, the geometric mean of
  ``SliceGraph UB / simple LB`` (lower is better).
* :func:`counts_table`: per method and k, the number of instances, of each status
  (``time_limit`` = the MIP stopped at its time limit, with a valid bound;
  ``timeout`` = killed by the hard guard) and the mean and max running time.
* :func:`failures_table`: the first failed tasks (``error``, ``crashed``,
  ``timeout``) with their messages, so a failed batch says why.

Only tasks that ended ``ok`` or ``time_limit`` enter the means.  When several stored
tasks give one cell the same instance (other seeds or orderers for the UB), the best
(largest) lower bound, or smallest UB, is used.  :func:`render` writes markdown, csv
or latex.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mtpp.batch.store import Record
from mtpp.batch.tasks import BOUND_METHODS, FAILED, OK, STATUSES, TABLE2_ORDERERS, TIME_LIMIT, orderer_of
from mtpp.core.errors import InvalidParameterError

FORMATS = ("markdown", "csv", "latex")
GOOD = (OK, TIME_LIMIT)

Instance = tuple[str, int]  # (graph hash, k)


@dataclass(frozen=True)
class Table:
    """A table with typed cells: ``rows[i][0]`` is the row label, ``None`` is an empty
    cell; ``formats[j]`` formats the numbers of column ``j`` for markdown and latex."""

    name: str
    title: str
    header: list[str]
    rows: list[list[Any]]
    formats: list[str]
    notes: list[str] = field(default_factory=list)

    def cell(self, row: str, column: str) -> Any:
        """The value in the row labelled ``row`` and the column headed ``column``."""
        j = self.header.index(column)
        for r in self.rows:
            if r[0] == row:
                return r[j]
        raise KeyError(row)


def geomean(xs: Sequence[float]) -> float:
    """Geometric mean; 0 if any value is 0 (a bound of 0 proves nothing)."""
    if not xs:
        raise ValueError("geometric mean of no values")
    if any(x <= 0 for x in xs):
        return 0.0
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def best_upper_bounds(records: Iterable[Record]) -> dict[Instance, float]:
    """The smallest stored upper bound of each ``(graph hash, k)``."""
    best: dict[Instance, float] = {}
    for r in records:
        if r.ub is not None and r.status in GOOD:
            key = (r.graph_hash, r.k)
            best[key] = min(best.get(key, math.inf), r.ub)
    return best


def _ks(records: Sequence[Record]) -> list[int]:
    return sorted({r.k for r in records})


def _time_limit(r: Record) -> float | None:
    value = json.loads(r.settings).get("time_limit")
    return None if value is None else float(value)


def _labels(records: Sequence[Record]) -> dict[str, str]:
    """Row label per task key: the method, plus the solver / time limit when the
    store holds more than one of them for the MIP methods."""
    mips = [r for r in records if r.solver != "-"]
    solvers = {r.solver for r in mips}
    limits = {_time_limit(r) for r in mips}
    labels = {}
    for r in records:
        extra = []
        if r.solver != "-" and len(solvers) > 1:
            extra.append(r.solver)
        if r.solver != "-" and len(limits) > 1:
            extra.append(f"{_time_limit(r):g} s")
        labels[r.task_key] = r.method + (f" [{', '.join(extra)}]" if extra else "")
    return labels


def _row_order(labels: Iterable[str], order: Sequence[str]) -> list[str]:
    def key(label: str) -> tuple[int, str]:
        base = label.split(" [")[0]
        base = base.split(":")[0] if base not in order else base
        return (order.index(base) if base in order else len(order), label)

    return sorted(set(labels), key=key)


def bound_table(records: Sequence[Record]) -> Table:
    """Tables 1 / 3: geometric mean of ``LB / best UB`` by bound method and k."""
    best = best_upper_bounds(records)
    labels = _labels(records)
    ks = _ks(records)
    proven: dict[str, dict[Instance, float]] = defaultdict(dict)  # raw bounds by method label
    for r in records:
        if r.method in BOUND_METHODS and r.status in GOOD and r.bound is not None:
            label, inst = labels[r.task_key], (r.graph_hash, r.k)
            proven[label][inst] = max(proven[label].get(inst, -math.inf), r.bound)
    cells: dict[str, dict[Instance, float]] = defaultdict(dict)
    from_k: dict[str, int] = defaultdict(int)  # cells whose bound was proven at a larger k
    for label, bounds in proven.items():
        for inst, ub in best.items():
            # OPT(k) does not increase with k: a bound proven at k' >= k holds at k
            shared = [b for (g, k), b in bounds.items() if g == inst[0] and k >= inst[1]]
            if shared:
                cells[label][inst] = 1.0 if ub == 0 else max(shared) / ub
                if max(shared) > bounds.get(inst, -math.inf):
                    from_k[label] += 1
    rows = []
    for label in _row_order(cells, BOUND_METHODS):
        row: list[Any] = [label]
        for k in ks:
            got = [v for (_, kk), v in cells[label].items() if kk == k]
            row.append(geomean(got) if got else None)
        rows.append(row)
    graphs = len({g for g, _ in best})
    counts = [f"{label} {from_k[label]} of {len(cells[label])}" for label in _row_order(from_k, BOUND_METHODS)]
    from_k_note = ["cells with a bound from a larger k (from_k): " + ", ".join(counts)] if counts else []
    return Table(
        name="bounds",
        title="LB / best UB, geometric mean over graphs (Tables 1 and 3)",
        header=["method", *[f"k={k}" for k in ks]],
        rows=rows,
        formats=["{}", *["{:.4f}" for _ in ks]],
        notes=[
            f"{graphs} graphs; best UB = the smallest re-checked partition value stored for the (graph, k); "
            "a bound method's LB is the best of simple and that method, at this k or any larger k of the "
            "same graph (OPT does not increase with k)",
            *from_k_note,
        ],
    )


def orderer_table(records: Sequence[Record]) -> Table:
    """Table 2: geometric mean of ``SliceGraph UB / simple LB`` by orderer and k."""
    ks = _ks(records)
    cells: dict[str, dict[Instance, float]] = defaultdict(dict)
    for r in records:
        name = orderer_of(r.method)
        if name is None or r.status not in GOOD or r.ub is None or r.bound is None or r.bound <= 0:
            continue
        inst = (r.graph_hash, r.k)
        cells[name][inst] = min(cells[name].get(inst, math.inf), r.ub / r.bound)
    rows = []
    for name in _row_order(cells, TABLE2_ORDERERS):
        row: list[Any] = [name]
        for k in ks:
            got = [v for (_, kk), v in cells[name].items() if kk == k]
            row.append(geomean(got) if got else None)
        rows.append(row)
    return Table(
        name="orderers",
        title="SliceGraph UB / simple LB, geometric mean over graphs (Table 2; lower is better)",
        header=["orderer", *[f"k={k}" for k in ks]],
        rows=rows,
        formats=["{}", *["{:.3f}" for _ in ks]],
    )


def counts_table(records: Sequence[Record]) -> Table:
    """Instances, statuses and running times by method and k."""
    labels = _labels(records)
    groups: dict[tuple[str, int], list[Record]] = defaultdict(list)
    for r in records:
        groups[(labels[r.task_key], r.k)].append(r)
    order = ("slicegraph", *BOUND_METHODS)
    rows = []
    for label in _row_order({label for label, _ in groups}, order):
        for k in sorted(k for lab, k in groups if lab == label):
            rs = groups[(label, k)]
            times = [r.method_time for r in rs if r.status in GOOD and r.method_time is not None]
            rows.append(
                [
                    label,
                    k,
                    len(rs),
                    *[sum(r.status == s for r in rs) for s in STATUSES],
                    sum(times) / len(times) if times else None,
                    max(times) if times else None,
                ]
            )
    return Table(
        name="counts",
        title="Instances, statuses and method running times (seconds)",
        header=["method", "k", "instances", *STATUSES, "mean s", "max s"],
        rows=rows,
        formats=["{}", "{}", "{}", *["{}" for _ in STATUSES], "{:.3g}", "{:.3g}"],
        notes=[
            "time_limit: the method stopped at its time limit (its bound is still proven); "
            f"{', '.join(FAILED)}: no result (timeout = killed by the hard wall-clock guard)"
        ],
    )


FAILURES_SHOWN = 10


def failures_table(records: Sequence[Record], limit: int = FAILURES_SHOWN) -> Table:
    """The first ``limit`` failed tasks (by graph, k, method) with status and message."""
    labels = _labels(records)
    failed = [r for r in records if r.status in FAILED]
    rows = [
        [r.graph, r.k, labels[r.task_key], r.status, " ".join((r.message or "").split())[:200]] for r in failed[:limit]
    ]
    more = [f"{len(failed) - limit} more failed task(s) are in the store"] if len(failed) > limit else []
    return Table(
        name="failures",
        title=f"Failed tasks ({len(failed)}; rerun with --retry-failed)",
        header=["graph", "k", "method", "status", "message"],
        rows=rows,
        formats=["{}"] * 5,
        notes=more,
    )


def tables(records: Sequence[Record]) -> list[Table]:
    """The bound, orderer, counts and failures tables (those with rows)."""
    tabs = (bound_table(records), orderer_table(records), counts_table(records), failures_table(records))
    return [t for t in tabs if t.rows]


# --------------------------------------------------------------------------- rendering


def _text(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return fmt.format(value)


def _markdown(t: Table) -> str:
    cells = [t.header] + [[_text(v, f) for v, f in zip(row, t.formats)] for row in t.rows]
    widths = [max(len(r[j]) for r in cells) for j in range(len(t.header))]

    def line(r: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if j else "-" * (w + 2) for j, w in enumerate(widths)) + "|"
    out = [f"### {t.title}", "", line(cells[0]), rule, *map(line, cells[1:])]
    if t.notes:
        out += ["", *t.notes]
    return "\n".join(out)


def _csv(t: Table) -> str:
    buf = io.StringIO()
    buf.write(f"# {t.title}\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(t.header)
    for row in t.rows:
        w.writerow(["" if v is None else repr(v) if isinstance(v, float) else v for v in row])
    return buf.getvalue().rstrip("\n")


_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _tex(text: str) -> str:
    return "".join(_LATEX_ESCAPES.get(c, c) for c in text)


def _latex(t: Table) -> str:
    spec = "l" + "r" * (len(t.header) - 1)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        f"\\caption{{{_tex(t.title)}}}",
        f"\\label{{tab:mtpp-{t.name}}}",
        f"\\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(_tex(h) for h in t.header) + r" \\",
        r"\midrule",
    ]
    for row in t.rows:
        lines.append(" & ".join(_tex(_text(v, f)) for v, f in zip(row, t.formats)) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    lines += [f"% {note}" for note in t.notes]
    return "\n".join(lines)


def render(tabs: Sequence[Table], fmt: str = "markdown") -> str:
    """The tables as one markdown, csv (one block per table) or latex (booktabs) text."""
    if fmt not in FORMATS:
        raise InvalidParameterError(f"unknown table format {fmt!r}; choose from {', '.join(FORMATS)}")
    one = {"markdown": _markdown, "csv": _csv, "latex": _latex}[fmt]
    return "\n\n".join(one(t) for t in tabs) + "\n"
