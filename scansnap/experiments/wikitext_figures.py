"""Figures of Chapter 8 (the paper's Figures 7 and 10, and the token study): pure ``plot(result)`` and the
``table(result)`` published with each figure. The results are those of
:mod:`scansnap.experiments.ch08_wikitext` and :mod:`scansnap.experiments.ch08_rates`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import figures, token_stats

if TYPE_CHECKING:
    from scansnap.experiments.ch08_rates import RatesResult
    from scansnap.experiments.ch08_wikitext import FreezeResult

__all__ = ["freeze_table", "plot_freeze", "plot_rates", "plot_tokens", "rates_table", "token_correlations",
           "tokens_table"]

LABELS = ("1 layer", "multi-layer (layer 1)", "1 layer, no pos. enc.")
_KEYS = ("one", "multi", "nope")
STAGES = ("init, pos. enc.", "trained, pos. enc.", "trained, no pos. enc.")


def freeze_table(r: FreezeResult) -> dict[str, np.ndarray]:
    """The data of ``fig-paper-7`` (Figure 7): one row per checkpoint: held-out entropy and loss, freeze rate since
    the previous checkpoint and mean training loss over the steps since then (nan at step 0), for each of the
    three runs."""
    steps = r.runs[0].steps
    out: dict[str, np.ndarray] = {"step": steps}
    for key, tr in zip(_KEYS, r.runs, strict=True):
        out[f"entropy_{key}"] = tr.entropy
        out[f"heldout_loss_{key}"] = tr.heldout_loss
        out[f"freeze_rate_{key}"] = np.concatenate([[np.nan], tr.freeze])
        out[f"train_loss_{key}"] = np.array([np.nan] + [tr.train_loss[a:b].mean() for a, b in zip(steps, steps[1:],
                                                                                                     strict=False)])
    return out


def plot_freeze(r: FreezeResult) -> Figure:
    """``fig-paper-7`` (Figure 7): maps of the probe window at the shown steps (one row per run), then entropy,
    freeze rate and loss."""
    figures.set_style()
    shown = list(r.config.shown)
    fig = plt.figure(figsize=(2.6 * max(len(shown), 3), 2.5 * 3 + 3.0))
    grid = fig.add_gridspec(4, 1, height_ratios=[1, 1, 1, 1.15], hspace=0.45)
    for row, (tr, label) in enumerate(zip(r.runs, LABELS, strict=True)):
        sub = grid[row].subgridspec(1, len(shown), wspace=0.08)
        for col, step in enumerate(shown):
            ax = fig.add_subplot(sub[col])
            ax.imshow(tr.probe_maps[int(np.flatnonzero(tr.steps == step)[0])], cmap="magma", vmin=0, vmax=1)
            ax.set(xticks=[], yticks=[])
            ax.grid(False)
            if row == 0:
                ax.set_title(f"step {step}")
            if col == 0:
                ax.set_ylabel(label, fontsize="small")
    bottom = grid[3].subgridspec(1, 3, wspace=0.45)
    d = freeze_table(r)
    axes = [fig.add_subplot(bottom[i]) for i in range(3)]
    for key, label in zip(_KEYS, LABELS, strict=True):
        axes[0].plot(d["step"], d[f"entropy_{key}"], marker=".", label=label)
        axes[1].plot(d["step"][1:], d[f"freeze_rate_{key}"][1:], marker=".", label=label)
        line, = axes[2].plot(d["step"], d[f"heldout_loss_{key}"], marker=".", label=f"{label}, held-out")
        axes[2].plot(d["step"][1:], d[f"train_loss_{key}"][1:], ls=":", color=line.get_color())
    axes[0].set(xlabel="SGD step", ylabel="nats", title="held-out attention entropy")
    axes[1].set(xlabel="SGD step", ylabel="relative change / step", yscale="log", title="freeze rate")
    axes[2].set(xlabel="SGD step", ylabel="cross-entropy", title="loss (dotted: training)")
    axes[0].legend(fontsize="x-small")
    return fig


def token_correlations(r: FreezeResult) -> dict[str, float]:
    """``fig-ch8-tokens``: Spearman's rho of the attention a token receives against its next-token entropy, its
    document frequency and its frequency, for each stage (``STAGES``: init and trained with positional encoding,
    trained without)."""
    t, out = r.tokens, {}
    for stage, received in zip(("init", "pe", "nope"), t.received, strict=True):
        out[f"rho_entropy_{stage}"] = token_stats.spearman(t.next_entropy, received)
        out[f"rho_docfreq_{stage}"] = token_stats.spearman(t.doc_freq, received)
        out[f"rho_frequency_{stage}"] = token_stats.spearman(t.frequency, received)
    return out


def tokens_table(r: FreezeResult) -> dict[str, np.ndarray]:
    """The data of ``fig-ch8-tokens``: one row per token of the study."""
    t = r.tokens
    return {"id": t.ids, "word": np.array(t.words), "next_entropy": t.next_entropy, "doc_freq": t.doc_freq,
            "frequency": t.frequency, "received_init": t.received[0], "received_pe": t.received[1],
            "received_nope": t.received[2]}


def plot_tokens(r: FreezeResult) -> Figure:
    """``fig-ch8-tokens``: received attention against next-token entropy, one panel per stage, with Spearman's
    rho."""
    figures.set_style()
    t, rho = r.tokens, token_correlations(r)
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.5), sharex=True)
    for ax, stage, key, received in zip(axes, STAGES, ("init", "pe", "nope"), t.received, strict=True):
        ax.scatter(t.next_entropy, received, s=4, alpha=0.4, c=np.log10(t.frequency), cmap="viridis")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set(yscale="log", xlabel="next-token entropy in the window (nats)",
               title=f"{stage}: rho = {rho[f'rho_entropy_{key}']:.2f}")
    axes[0].set_ylabel("attention received / uniform")
    fig.tight_layout()
    return fig


def rates_table(r: RatesResult) -> dict[str, np.ndarray]:
    """The data of ``fig-paper-10`` (Figure 10): one row per run: depth (1 or the multi-layer depth), learning
    rate, seed, final entropy and loss."""
    c, rows = r.config, []
    for depth, seeds, ent, loss in ((1, c.seeds, r.entropy_one, r.loss_one),
                                    (c.multi_layers, c.multi_seeds, r.entropy_multi, r.loss_multi)):
        rows += [(depth, lr, s, ent[i, j], loss[i, j]) for i, lr in enumerate(c.lrs) for j, s in enumerate(seeds)]
    cols = list(zip(*rows, strict=True))
    return {"layers": np.array(cols[0]), "lr": np.array(cols[1], dtype=float), "seed": np.array(cols[2]),
            "entropy": np.array(cols[3]), "heldout_loss": np.array(cols[4])}


def plot_rates(r: RatesResult) -> Figure:
    """``fig-paper-10`` (Figure 10): final held-out entropy against the learning rate (log axis), both depths."""
    figures.set_style()
    c = r.config
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for ent, label in ((r.entropy_one, "1 layer"), (r.entropy_multi,
                                         f"{c.multi_layers} layers (layer 1)")):
        line, = ax.plot(c.lrs, ent.mean(1), marker="o", label=label)
        for j in range(ent.shape[1]):
            ax.scatter(c.lrs, ent[:, j], s=12, color=line.get_color(), alpha=0.5)
    ax.set(xscale="log", xlabel="learning rate (SGD, constant)", ylabel="held-out attention entropy (nats)",
           title=f"after {c.steps} steps")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
