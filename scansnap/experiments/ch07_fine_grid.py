"""Chapter 7's extension of Figure 6: the entropy on a finer log-spaced grid (``fig-ch7-fine-grid``).

:data:`FINE` trains Syn-Medium with the authors' protocol (:class:`scansnap.sweep.GridConfig`) on a
7 x 7 grid of ``eta_Z`` in [0.25, 4] and ``eta_Y / eta_Z`` in [0.25, 16], one batched call per
dataset, and :func:`locate_minimum` asks where the entropy is least at each ``eta_Z``: at a fixed ratio
``eta_Y / eta_Z`` (as the paper reads its Figure 6, a threshold from the ratio condition of
Assumption 1(c)) or at a fixed ``eta_Y`` (as the book's corollary of the reconstructed Eqn 14
predicts). It records no verdict: the book's corollary is not a claim of the paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import figures, stats, sweep
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.ch07_syn_medium import entropy_table, panel_title
from scansnap.sweep import GridConfig, GridRun


def _geom(lo: float, hi: float, num: int) -> tuple[float, ...]:
    return tuple(round(float(v), 4) for v in np.geomspace(lo, hi, num))


@dataclass(frozen=True)
class FineGridConfig(GridConfig):
    """The grid of :class:`~scansnap.sweep.GridConfig` on 7 log-spaced ``eta_Z`` in [0.25, 4] and 7 ratios
    in [0.25, 16]; the book profile trains two datasets (``q = 3, 10``) with 3 seeds."""

    eta_Z: tuple[float, ...] = _geom(0.25, 4.0, 7)
    ratio: tuple[float, ...] = _geom(0.25, 16.0, 7)
    PRESETS = {"smoke": dict(num_query=(1,), eta_Z=(0.5, 1.0, 2.0), ratio=(0.5, 2.0, 8.0), seeds=(1,), steps=10,
                             batch=32), "book": dict(num_query=(3, 10), seeds=(1, 2, 3)), "paper": {}}
    NOT_GATED: ClassVar[dict[str, str]] = {
        "num_query": "no rule reads the finer grid (RULES is empty): it locates the threshold as context for C39, "
                     "and the page reports its slopes per dataset it ran",
        "seeds": "no rule reads the finer grid (RULES is empty): its slopes carry their standard errors over the "
                 "seeds it ran"}
    """The fields whose book and paper presets differ and that no rule reads (the grid judges no claim)."""


@dataclass(frozen=True)
class FineGridResult:
    """The finer grid: one :class:`~scansnap.sweep.GridRun` per ``num_query``."""

    config: FineGridConfig
    runs: tuple[GridRun, ...]


def run_fine_grid(c: FineGridConfig, progress: Progress | None = None) -> FineGridResult:
    """Train the grid, one batched call per dataset."""
    return FineGridResult(c, tuple(sweep.train_grid(q, c, progress)[0] for q in c.num_query))


@dataclass(frozen=True)
class MinimumLocation:
    """Where the mean entropy of one dataset is least, per ``eta_Z``.

    Attributes:
        num_query: the dataset.
        best_ratio: ``(nZ,)`` ratio of least mean entropy, refined by a parabola in ``log`` ratio
            (:func:`scansnap.stats.parabolic_argmin`).
        interior: ``(nZ,)`` whether the grid minimum lies inside the ratio grid (an edge is not resolved).
        slope, slope_se: least-squares slope of ``log(eta_Y at the minimum)`` against ``log eta_Z`` over the
            interior rows, and its standard error (nan with fewer than 3): 1 means a fixed ratio, 0 a fixed ``eta_Y``.
    """

    num_query: int
    best_ratio: np.ndarray
    interior: np.ndarray
    slope: float
    slope_se: float


def locate_minimum(result: FineGridResult) -> list[MinimumLocation]:
    """One :class:`MinimumLocation` per dataset (pure)."""
    c = result.config
    eta_Z, ratios = np.asarray(c.eta_Z), np.asarray(c.ratio)
    out = []
    for run in result.runs:
        grid = run.entropy.mean(-1)
        k = np.argmin(grid, axis=1)
        interior = (k > 0) & (k < len(ratios) - 1)
        best = stats.parabolic_argmin(grid, ratios) if len(ratios) >= 3 else ratios[k]
        slope = se = float("nan")
        if interior.sum() >= 3:
            slope, se = stats.loglog_slope(eta_Z[interior], best[interior] * eta_Z[interior])
        out.append(MinimumLocation(run.num_query, best, interior, slope, se))
    return out


def fine_table(result: FineGridResult) -> dict[str, np.ndarray]:
    """One row per (``num_query``, ``eta_Z``, ratio) (:func:`~scansnap.experiments.ch07_syn_medium.entropy_table`)."""
    return entropy_table(result.config, result.runs)


def _edges(v: np.ndarray) -> np.ndarray:
    """Cell edges of a log-spaced axis (geometric midpoints, extended half a step at both ends)."""
    u = np.log(v)
    return np.exp(np.concatenate([[1.5 * u[0] - 0.5 * u[1]], (u[:-1] + u[1:]) / 2, [1.5 * u[-1] - 0.5 * u[-2]]]))


def plot_fine_grid(result: FineGridResult) -> Figure:
    """Mean entropy per cell (``eta_Z`` against ratio), the ratio of least entropy per ``eta_Z`` (dots) and
    where the dots would lie at a fixed ``eta_Y`` (dashed, through the middle row)."""
    figures.set_style()
    c = result.config
    zs, rs = np.asarray(c.eta_Z), np.asarray(c.ratio)
    fig, axes = plt.subplots(1, len(c.num_query), figsize=(5.0 * len(c.num_query), 3.6), squeeze=False)
    for ax, run, loc in zip(axes[0], result.runs, locate_minimum(result), strict=True):
        mesh = ax.pcolormesh(_edges(rs), _edges(zs), run.entropy.mean(-1), cmap="viridis", shading="flat")
        fig.colorbar(mesh, ax=ax, label="entropy")
        ax.plot(loc.best_ratio, zs, "o", color="white", mec="k", ms=5, label=r"least entropy at each $\eta_Z$")
        mid = len(zs) // 2
        ax.plot(loc.best_ratio[mid] * zs[mid] / zs, zs, "--", color="white", lw=1,
                label=r"constant $\eta_Y$ (through the middle row)")
        ax.set(xscale="log", yscale="log", xlabel=r"$\eta_Y / \eta_Z$", ylabel=r"$\eta_Z$",
               title=panel_title(run.num_query), xlim=(_edges(rs)[0], _edges(rs)[-1]),
               ylim=(_edges(zs)[0], _edges(zs)[-1]))
        ax.set_xticks(rs, [f"{r:.3g}" for r in rs], fontsize="small")  # small, on wider panels: "0.25" and "0.5"
        # ran together at the former width
        ax.set_yticks(zs, [f"{z:.3g}" for z in zs])
        ax.minorticks_off()
        ax.grid(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=min(2, len(c.num_query)), fontsize="small", facecolor="0.85")
    return fig


FINE = Experiment(
    id="ch7-fine-grid", config=FineGridConfig, result=FineGridResult, run=run_fine_grid,
    work=lambda c: len(c.num_query) * c.steps,
    figures=(FigureSpec(
        id="fig-ch7-fine-grid", claims=("C39",), plot=plot_fine_grid, table=fine_table,
        caption="Extension of Figure 6: mean entropy of the attention over the distinct tokens on a log-spaced grid "
                "of eta_Z and eta_Y / eta_Z, with the ratio of least entropy per eta_Z. Syn-Medium, SGD with momentum "
                "from the uniform initialization (the run's protocol is in its provenance)."),),
)

EXPERIMENTS = [FINE]
RULES: list = []
