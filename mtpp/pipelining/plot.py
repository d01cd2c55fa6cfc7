"""The stage chart: one bar per pipeline stage, stacked by the cost terms of Eq. (3)
(input IO, work, overflow, output IO), the bottleneck stage outlined and labelled,
the lower bound as a dashed line.  Used by :meth:`PipelinePlan.plot` and by
``mtpp solve/certify --plot``.  matplotlib on an Agg canvas (no pyplot state)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mtpp.cost import BlockCosts

TERMS = (
    ("input_io", "input IO", "#9ecae1"),
    ("work", "work", "#3182bd"),
    ("overflow", "overflow", "#fd8d3c"),
    ("output_io", "output IO", "#a1d99b"),
)


def plot_stages(costs: BlockCosts, lower_bound: float | None, path: str, title: str = "", unit: str = "") -> None:
    """Write the chart of ``costs`` (one entry per stage) to ``path`` (the format
    follows the suffix: .png, .svg, .pdf)."""
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
