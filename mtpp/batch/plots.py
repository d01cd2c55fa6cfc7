"""Figures from a results store (matplotlib, Agg; PNG and SVG).

* :func:`runtime_figure` (the paper's Figures 4-5): running time of SliceGraph and of
  each MIP bound against graph size (nodes), one panel per k, log-log axes, one shared
  y-axis; a dashed line marks each MIP time limit.  The time is the method's own
  (``method_time``: the orderer search and slicing; the MIP solve; for ``guess`` all
  its sub-MIPs together).  ``simple`` takes microseconds and is left out.
* :func:`ratio_figure`: ``LB / best UB`` by k for each bound method: one faint dot per
  instance and the geometric mean as a line (the numbers of
  :func:`mtpp.batch.report.bound_table`).

Nothing here touches pyplot's global state: figures are built on an Agg canvas.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtpp.batch.report import GOOD, best_upper_bounds, geomean
from mtpp.batch.store import Record
from mtpp.batch.tasks import BOUND_METHODS, SOLVER_METHODS, orderer_of
from mtpp.core.errors import InvalidParameterError

IMAGE_FORMATS = ("png", "svg")
COLORS = {
    "simple": "#7f7f7f",
    "cut": "#8c564b",
    "crossing": "#e377c2",
    "clique": "#bcbd22",
    "reach": "#17becf",
    "ideal-dp": "#9467bd",
    "pigeonhole": "#1f77b4",
    "bottleneck": "#ff7f0e",
    "guess": "#2ca02c",
    "exact": "#d62728",
}
SLICEGRAPH_COLORS = ("#1f77b4", "#17becf", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#393b79")
MARKERS = {"bottleneck": "s", "guess": "^", "exact": "D"}
MIN_TIME = 1e-4  # seconds: the floor of the log axis


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, out: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    paths = []
    for fmt in formats:
        path = out / f"{stem}.{fmt}"
        fig.savefig(path, dpi=150 if fmt == "png" else None)
        paths.append(path)
    return paths


def _series_label(method: str) -> str:
    orderer = orderer_of(method)
    return f"SliceGraph ({orderer})" if orderer is not None else method


def _plain_log_ticks(axis: Any) -> None:
    """Label a log axis with plain numbers (50, 100, 200) rather than 5 x 10^1."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def runtime_figure(records: Sequence[Record]) -> Any:
    """Figure 4/5: method time against graph size, one log-log panel per k."""
    ks = sorted({r.k for r in records})
    runs = [
        r
        for r in records
        if (r.method in SOLVER_METHODS or orderer_of(r.method) is not None)
        and r.status in GOOD
        and r.method_time is not None
        and r.method_status != "skipped"
    ]
    orderers = sorted({r.method for r in runs if orderer_of(r.method) is not None})
    colors = {m: SLICEGRAPH_COLORS[i % len(SLICEGRAPH_COLORS)] for i, m in enumerate(orderers)} | COLORS
    series = [*orderers, *(m for m in SOLVER_METHODS if any(r.method == m for r in runs))]
    limits = sorted({float(json.loads(r.settings)["time_limit"]) for r in runs if r.method in SOLVER_METHODS})
    cols = min(3, max(1, len(ks)))
    rows = max(1, math.ceil(len(ks) / cols))
    fig = _figure(4.2 * cols, 3.4 * rows + 0.5)
    axes = fig.subplots(rows, cols, sharey=True, squeeze=False)
    by_k: dict[int, list[Record]] = defaultdict(list)
    for r in runs:
        by_k[r.k].append(r)
    for i, ax in enumerate(axes.flat):
        if i >= len(ks):
            ax.set_visible(False)
            continue
        k = ks[i]
        for m in series:
            pts = [(r.n, max(float(r.method_time or 0.0), MIN_TIME)) for r in by_k[k] if r.method == m]
            if pts:
                xs, ys = zip(*pts)
                ax.scatter(
                    xs,
                    ys,
                    s=16,
                    alpha=0.75,
                    color=colors[m],
                    marker=MARKERS.get(m, "o"),
                    label=_series_label(m),
                    edgecolors="none",
                )
        for tl in limits:
            ax.axhline(tl, color="black", lw=0.8, ls="--", alpha=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax.xaxis)
        ax.set_title(f"k = {k}")
        ax.set_xlabel("graph size (nodes)")
        ax.grid(True, which="major", alpha=0.3)
        if i % cols == 0:
            ax.set_ylabel("running time (s)")
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if limits:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="black", lw=0.8, ls="--"))
        labels.append("MIP time limit")
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 5), frameon=False)
    fig.suptitle("Running time of SliceGraph and the MIP lower bounds")
    return fig


def ratio_figure(records: Sequence[Record]) -> Any:
    """LB / best UB by k: per-instance dots and the geometric mean per bound method."""
    best = best_upper_bounds(records)
    ks = sorted({r.k for r in records})
    fig = _figure(6.4, 4.2)
    ax = fig.add_subplot()
    methods = [m for m in BOUND_METHODS if any(r.method == m for r in records)]
    for j, m in enumerate(methods):
        per: dict[tuple[str, int], float] = {}
        for r in records:
            inst = (r.graph_hash, r.k)
            if r.method == m and r.status in GOOD and r.bound is not None and inst in best:
                ratio = 1.0 if best[inst] == 0 else r.bound / best[inst]
                per[inst] = max(per.get(inst, -math.inf), ratio)
        if not per:
            continue
        shift = (j - (len(methods) - 1) / 2) * 0.07  # side by side, so the dots of the methods do not hide
        xs = [math.log2(k) + shift for (_, k) in per]
        ax.scatter(xs, list(per.values()), s=12, alpha=0.35, color=COLORS[m], edgecolors="none")
        line_k = [k for k in ks if any(kk == k for _, kk in per)]
        means = [geomean([v for (_, kk), v in per.items() if kk == k]) for k in line_k]
        ax.plot([math.log2(k) for k in line_k], means, marker="o", color=COLORS[m], label=f"{m} (geometric mean)")
    ax.set_xticks([math.log2(k) for k in ks], [str(k) for k in ks])
    ax.set_xlabel("k (pipeline stages)")
    ax.set_ylabel("LB / best UB")
    ax.set_ylim(0, 1.05)
    ax.axhline(1.0, color="black", lw=0.6, alpha=0.5)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", frameon=True, framealpha=0.8)
    ax.set_title("Lower bounds relative to the best partition found")
    return fig


def plot(records: Sequence[Record], out: str | os.PathLike[str], formats: Sequence[str] = IMAGE_FORMATS) -> list[Path]:
    """Write ``runtime.{png,svg}`` and ``lb_ub.{png,svg}`` into ``out``; the paths."""
    bad = [f for f in formats if f not in IMAGE_FORMATS]
    if bad or not formats:
        raise InvalidParameterError(f"image formats must be among {', '.join(IMAGE_FORMATS)}, got {list(formats)}")
    if not records:
        raise InvalidParameterError("the store has no results to plot")
    directory = Path(out)
    if directory.exists() and not directory.is_dir():
        raise InvalidParameterError(f"--out {directory} exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    paths = _save(runtime_figure(records), directory, "runtime", formats)
    paths += _save(ratio_figure(records), directory, "lb_ub", formats)
    return paths
