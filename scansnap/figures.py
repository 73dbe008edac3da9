"""One plot style for the whole book."""

from __future__ import annotations

import matplotlib as mpl
import seaborn as sns

__all__ = ["PALETTE", "set_style"]

PALETTE = "colorblind"


def set_style() -> None:
    """Apply the book's seaborn style (white grid, colorblind palette, 150 dpi figures)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    mpl.rcParams.update({"figure.dpi": 150, "savefig.dpi": 150, "figure.figsize": (8, 3.4),
                         "axes.titlesize": "medium", "svg.hashsalt": "scansnap"})
