"""Syn-Small runs of Chapter 5 (Figures 4 and 5): every (setting, seed) trained in one batched call, class 1's
attention over its tokens 0-19 at every step, and what is read from it (the rank correlations of the distinct tokens'
gains and drops with ``P(l|n)``, C21 and C36; the steps to a loss level), with the table and figure of a set of
runs. Used by :mod:`scansnap.experiments.ch05_synsmall` (Figure 4) and :mod:`scansnap.experiments.ch05_adam`
(Figure 5)."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, metrics, stats, train
from scansnap.theory.scanning_measures import drop_steps

__all__ = ["DISTINCT", "IMAGE_STEPS", "P_DISTINCT", "TOKENS", "Runs", "at_step", "drop_rank_correlation",
           "final_rank_correlation", "gain_rank_correlation", "mean_finite", "plot_runs", "runs_table",
           "steps_to_loss", "train_runs"]

TOKENS = 20  # class 1's support in Syn-Small: common 0-9, distinct 10-19
DISTINCT = np.arange(10, 20)
P_DISTINCT = np.linspace(0.1, 1.0, 10)  # class 1's unnormalized P(l|n) on its distinct tokens
IMAGE_STEPS = (0, 2, 4, 6, 8, 10)  # the rows of the paper's Figure 4, plus the final step


@dataclass(frozen=True)
class Runs:
    """Syn-Small runs of Chapter 5 (Figures 4 and 5), one per (value, seed): ``R`` values, ``S`` seeds.

    Attributes:
        values: ``(R,)`` the varied setting (``eta_Y / eta_Z`` or a learning rate); seeds: ``(S,)``.
        attention: ``(R, S, steps + 1, 20)`` class 1's attention ``f_1`` over its tokens 0-19.
        loss: ``(R, S, steps)`` training loss before each update.
        entropy: ``(R, S, steps + 1)`` entropy of the attention over distinct tokens (mean over classes).
        common_mass: ``(R, S, steps + 1)`` class 1's attention mass on the common tokens.
    """

    values: np.ndarray
    seeds: np.ndarray
    attention: np.ndarray
    loss: np.ndarray
    entropy: np.ndarray
    common_mass: np.ndarray


def train_runs(values, eta_Y, eta_Z, seeds, steps, batch, T, optimizer, progress, classes=None,
               **opt) -> tuple[Runs, torch.Tensor]:
    """Every (value, seed) configuration of Figure 4 or 5 in one batched call (on Syn-Small, or ``classes`` whose
    class 1 holds tokens 0-19 as Syn-Small's does); also returns the full attention ``(steps + 1, R * S, K, M)``
    (configuration ``r * S + s``)."""
    classes, S = classes or data.syn_small(), len(seeds)
    h = train.train(classes, [e for e in eta_Y for _ in seeds], [e for e in eta_Z for _ in seeds],
                    seed=list(seeds) * len(values), steps=steps, batch=batch, T=T, optimizer=optimizer, init="zero",
                    snapshot_steps=range(steps + 1), progress=progress, **opt)
    R, f = len(values), h.attention  # (steps + 1, R * S, K, M)

    def per_run(x: torch.Tensor) -> np.ndarray:  # (steps + 1, R * S, ...) -> (R, S, steps + 1, ...)
        return x.transpose(0, 1).reshape(R, S, *x.shape[:1], *x.shape[2:]).numpy()

    runs = Runs(np.asarray(values, dtype=float), np.asarray(seeds), per_run(f[:, :, 0, :TOKENS]),
                h.loss.reshape(R, S, steps).numpy(), per_run(metrics.attention_entropy(f, classes)),
                per_run(metrics.token_mass(f, classes)["common"][..., 0]))
    return runs, f


def at_step(runs: Runs, k: int) -> Runs:
    """``runs`` cut after snapshot ``k`` (``k = 0``: the model before any update, the default control of Chapter 5's
    rules)."""
    return Runs(runs.values, runs.seeds, runs.attention[..., :k + 1, :], runs.loss[..., :k],
                runs.entropy[..., :k + 1], runs.common_mass[..., :k + 1])


def steps_to_loss(runs: Runs, level: float) -> np.ndarray:
    """``(R, S)`` the first step with training loss below ``level`` (nan if never; Figure 4's speed, C36)."""
    below = runs.loss < level
    if below.shape[-1] == 0:  # no update yet (the runs at step 0)
        return np.full(below.shape[:-1], np.nan)
    return np.where(below.any(-1), below.argmax(-1), np.nan)


def final_rank_correlation(runs: Runs) -> np.ndarray:
    """``(R, S)`` Spearman correlation of class 1's final distinct attention with ``P(l|n)`` (Chapter 5, C21)."""
    att = runs.attention[..., -1, 10:20]
    return np.array([[stats.spearman(a, P_DISTINCT) for a in row] for row in att])


def _orders(runs: Runs, P: np.ndarray | None) -> np.ndarray:
    """``(R, S, 10)`` the order each run is read against: ``P(l|n)``, or ``P`` (e.g. a shuffled order, C21's
    control)."""
    return np.broadcast_to(P_DISTINCT if P is None else P, (*runs.attention.shape[:2], 10))


def gain_rank_correlation(runs: Runs, P: np.ndarray | None = None) -> np.ndarray:
    """``(R, S)`` Spearman correlation of each distinct token's gain ``log f_l(end) / f_l(0)`` (its logit's rise, up
    to a constant) with ``P(l|n)`` (or ``P`` ``(R, S, 10)``): the change of the ordering, nan when nothing moved
    (Chapter 5: C36, P3)."""
    gain = np.log(runs.attention[..., -1, 10:20] / runs.attention[..., 0, 10:20])
    return np.array([[stats.spearman(g, p) for g, p in zip(row, prow, strict=True)]
                     for row, prow in zip(gain, _orders(runs, P), strict=True)])


def drop_rank_correlation(runs: Runs, tau: float, P: np.ndarray | None = None) -> np.ndarray:
    """``(R, S)`` Spearman correlation of each distinct token's drop step (:func:`drop_steps`) with ``P(l|n)`` (or
    ``P`` ``(R, S, 10)``; nan when no token dropped; Chapter 5: C21)."""
    sh = runs.attention[..., 10:20] / runs.attention[..., 10:20].sum(-1, keepdims=True)
    return np.array([[stats.spearman(drop_steps(a, tau), p) for a, p in zip(row, prow, strict=True)]
                     for row, prow in zip(sh, _orders(runs, P), strict=True)])


def mean_finite(x: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """Mean of the finite entries (nan where there is none), without a warning (Chapter 5's seed means)."""
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(x)
    n = ok.sum(axis)
    total = np.where(ok, x, 0.0).sum(axis)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan) if axis is not None else (total / n if n else np.nan)


def runs_table(runs: Runs, key: str) -> dict[str, np.ndarray]:
    """Figures 4 and 5's table, one row per (value, seed, step): loss (nan after the last step), entropy, common
    mass, class 1's attention over tokens 0-19 (``att_00`` .. ``att_19``)."""
    R, S, steps1, _ = runs.attention.shape
    loss = np.concatenate([runs.loss, np.full((R, S, 1), np.nan)], axis=-1)
    att = runs.attention.reshape(-1, TOKENS)
    return {key: np.repeat(runs.values, S * steps1), "seed": np.tile(np.repeat(runs.seeds, steps1), R),
            "step": np.tile(np.arange(steps1), R * S), "loss": loss.ravel(), "entropy": runs.entropy.ravel(),
            "common_mass": runs.common_mass.ravel(), **{f"att_{l:02d}": att[:, l] for l in range(TOKENS)}}


def plot_runs(runs: Runs, label: str) -> Figure:
    """Figures 4 and 5. Top: class 1's attention at steps 0, 2, .., 10 and the end (mean over seeds), one image per
    value.
    Bottom: loss and distinct-token entropy against the step (mean over seeds; band: range)."""
    figures.set_style()
    n, last = len(runs.values), runs.attention.shape[2] - 1
    fig = plt.figure(figsize=(max(10, 3 * n), 6.8), layout="constrained")
    grid = fig.add_gridspec(2, 2 * n, height_ratios=[1.1, 1])
    rows = [s for s in IMAGE_STEPS if s < last] + [last]
    images = runs.attention.mean(1)[:, rows]
    image_axes = []
    for i, v in enumerate(runs.values):
        ax = fig.add_subplot(grid[0, 2 * i: 2 * i + 2])
        shown = ax.imshow(images[i], aspect="auto", cmap="viridis", vmin=0, vmax=float(images.max()),
                          interpolation="nearest")
        ax.axvline(9.5, color="w", ls="--", lw=1)
        ax.set_yticks(range(len(rows)), [f"step {s}" if s != last else f"final ({last})" for s in rows]
                      if i == 0 else [], fontsize="small")
        ax.set_xticks([0, 5, 10, 15, 19])
        ax.set(xlabel="token", title=f"{label} = {v:g}")
        ax.grid(False)
        image_axes.append(ax)
    fig.colorbar(shown, ax=image_axes, shrink=0.9, pad=0.01, label="attention $f_{1l}$")
    fig.suptitle("class 1's attention $f_1 = c_1 / 1^T c_1$ (mean over seeds): tokens 0-9 common, "
                 "10-19 distinct (increasing P)", fontsize="medium")
    ax_loss, ax_ent = fig.add_subplot(grid[1, :n]), fig.add_subplot(grid[1, n:])
    for i, v in enumerate(runs.values):
        for ax, y, x in ((ax_loss, runs.loss[i], np.arange(last)), (ax_ent, runs.entropy[i], np.arange(last + 1))):
            ax.plot(x, y.mean(0), color=f"C{i}", label=f"{label} = {v:g}")
            ax.fill_between(x, y.min(0), y.max(0), color=f"C{i}", alpha=0.2)
    ax_loss.set(yscale="log", xlabel="step", ylabel="training loss", title="loss")
    ax_ent.axhline(np.log(10), color="k", ls=":", lw=1, label="ln 10 (uniform)")
    ax_ent.set(xlabel="step", ylabel="entropy (nats)", title="entropy of attention over distinct tokens")
    lo, hi = ax_ent.get_ylim()  # headroom above ln 10, so the reference line never lies on the frame
    ax_ent.set_ylim(lo, max(hi, np.log(10) + 0.05 * (np.log(10) - lo)))
    # one legend for both panels (the same series, plus the entropy panel's reference line), below them: inside
    # either panel it covered a curve's descent or the reference line it names
    fig.legend(*ax_ent.get_legend_handles_labels(), loc="outside lower center", ncol=n + 1, fontsize="small")
    return fig
