"""The stage chart: one bar per pipeline stage, stacked by the cost terms of Eq. (3)
(input IO, work, overflow, output IO), the bottleneck stage outlined and labelled,
the lower bound as a dashed line.  Used by :meth:`PipelinePlan.plot` and by
``mtpp solve/certify --plot``.  matplotlib on an Agg canvas (no pyplot state)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mtpp.core.cost import BlockCosts
from mtpp.core.errors import InvalidParameterError

TERMS = (
    ("input_io", "input IO", "#9ecae1"),
    ("work", "work", "#3182bd"),
    ("overflow", "overflow", "#fd8d3c"),
    ("output_io", "output IO", "#a1d99b"),
)


#: The suffixes the chart can be written as (matplotlib's Agg canvas, no LaTeX needed).
FORMATS = ("png", "svg", "svgz", "pdf", "eps", "ps", "jpg", "jpeg", "tif", "tiff")


def check_plot_path(path: str) -> str:
    """``path`` if its suffix names a format of :data:`FORMATS`; else raise
    :class:`InvalidParameterError` (checked before any work: the command line calls it
    first)."""
    suffix = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    if suffix not in FORMATS:
        given = f"'.{suffix}'" if suffix else "no suffix"
        raise InvalidParameterError(
            f"{path}: unknown plot format ({given}); the suffix picks it: {', '.join('.' + f for f in FORMATS)}"
        )
    return path


def plot_stages(costs: BlockCosts, lower_bound: float | None, path: str, title: str = "", unit: str = "") -> None:
    """Write the chart of ``costs`` (one entry per stage) to ``path`` (the format
    follows the suffix, one of :data:`FORMATS`: .png, .svg, .pdf, ...)."""
    check_plot_path(path)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    total = costs.total
    k = total.size
    fig = Figure(figsize=(max(6.5, 0.6 * k + 4.5), 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax: Any = fig.add_subplot()
    x = np.arange(k)
    bottom = np.zeros(k)
    for field, label, color in TERMS:
        values = np.asarray(getattr(costs, field), dtype=np.float64)
        if field == "overflow" and not values.any():
            continue
        ax.bar(x, values, bottom=bottom, color=color, label=label, width=0.7)
        bottom += values
    worst = int(np.argmax(total)) if k else 0
    if k:
        ax.bar([worst], [total[worst]], fill=False, edgecolor="#d62728", linewidth=2.0, width=0.7)
        ax.annotate(
            f"bottleneck {total[worst]:.4g}",
            (worst, total[worst]),
            xytext=(0, 4),
            textcoords="offset points",
            ha="center",
            color="#d62728",
            fontsize=8,
        )
    if lower_bound is not None and np.isfinite(lower_bound):
        ax.axhline(lower_bound, color="black", linestyle="--", linewidth=1.2, label=f"lower bound {lower_bound:.4g}")
    ax.set_xticks(x, [str(i) for i in range(k)])
    ax.set_xlabel("stage")
    ax.set_ylabel(f"cost ({unit})" if unit else "cost")
    ax.set_ylim(0, max(float(total.max()) if k else 1.0, lower_bound or 0.0) * 1.15)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if title:
        ax.set_title(title, fontsize=10)
    fig.savefig(path, dpi=120)
