"""The training curves of a learned orderer as a figure (one panel per recorded series)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def plot_history(
    history: Sequence[dict[str, float]], path: str | os.PathLike[str], keys: Sequence[str], title: str = ""
) -> Path:
    """Write a PNG with ``history[i][key]`` against the epoch for each of ``keys``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [row.get("epoch", i + 1) for i, row in enumerate(history)]
    fig, axes = plt.subplots(len(keys), 1, figsize=(6, 2.2 * len(keys)), sharex=True, squeeze=False)
    for ax, key in zip(axes[:, 0], keys):
        ax.plot(epochs, [row.get(key, float("nan")) for row in history], marker=".")
        ax.set_ylabel(key.replace("_", " "))
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("epoch")
    if title:
        axes[0, 0].set_title(title)
    fig.tight_layout()
    target = Path(path)
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target
