"""Figure 7 of the paper and the token study of Chapter 8: the token study's data (:class:`TokenStudy`), and pure
plots and tables of the runs' trajectories (:class:`scansnap.lm_train.Trajectory`) and of the token study.

The experiments :data:`scansnap.experiments.ch08_wikitext.FREEZE` (and ``FREEZE_DEEP``) and
:data:`scansnap.experiments.ch08_nope.FREEZE_NOPE` make these figures from their results; this module reads only the
pieces of them (trajectories, shown steps, the token study), so that it imports no experiment module.
Figure 10's plot lives with its experiment, :mod:`scansnap.experiments.ch08_rates`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import figures, stats
from scansnap.experiments.wikitext_freeze import drift_ratio
from scansnap.lm_train import Trajectory

__all__ = ["TokenStudy", "drift_ratios", "freeze_table", "plot_freeze", "plot_tokens", "token_correlations",
           "tokens_table"]

STAGES = ("init, pos. enc.", "trained, pos. enc.", "trained, no pos. enc.")


@dataclass(frozen=True)
class TokenStudy:
    """Attention received by key tokens against how common they are (Chapter 8, beyond the paper:
    ``fig-ch8-tokens``). ``N`` tokens
    (every token with ``pairs`` sampled next tokens and ``min_pairs`` attention pairs in each run, ``<unk>`` apart).

    Attributes:
        ids: ``(N,)`` token ids; words: ``(N,)`` the words.
        next_entropy: ``(N,)`` next-token entropy (nats) in the training text
            (:func:`scansnap.token_stats.next_token_entropy`); doc_freq: ``(N,)`` share of training lines
            holding the token; frequency: ``(N,)`` its share of the training tokens.
        received: ``(3, N)`` attention received relative to uniform on held-out windows
            (:func:`scansnap.token_stats.received_attention`): 1-layer with positional encoding at
            initialization, the same model trained, and the 1-layer model without positional encoding trained.
        unk_frequency: ``<unk>``'s share of the training tokens (nan without an ``<unk>`` word). ``<unk>`` stands
            for every word outside the vocabulary, so it is no single token and is kept out of the ``N``; its
            numbers are reported beside them.
        unk_next_entropy: its next-token entropy (nats; nan when it has too few pairs).
        unk_entropy_rank: share of the ``N`` tokens whose next-token entropy is below ``<unk>``'s.
        unk_received: ``(3,)`` the attention it receives, at the three stages of ``received``.
    """

    ids: np.ndarray
    words: tuple[str, ...]
    next_entropy: np.ndarray
    doc_freq: np.ndarray
    frequency: np.ndarray
    received: np.ndarray
    unk_frequency: float
    unk_next_entropy: float
    unk_entropy_rank: float
    unk_received: np.ndarray


def drift_ratios(tr: Trajectory) -> np.ndarray:
    """``(C,)`` :func:`~scansnap.experiments.wikitext_freeze.drift_ratio` at every checkpoint (nan before ``W``): the
    freeze panel of Figure 7 (``fig-paper-7``)."""
    return np.array([drift_ratio(tr, i) for i in range(len(tr.steps))])


def freeze_table(runs: Sequence[Trajectory], seeds: Sequence[int]) -> dict[str, np.ndarray]:
    """The data of ``fig-paper-7`` (Figure 7): one row per seed and checkpoint: held-out entropy and loss, the drift
    ratio (drift over the window / random-walk floor of the jitter; nan before the first window), attention on the
    diagonal and on ``<unk>``, the freeze rate since the previous checkpoint and the mean training loss over the
    steps since then (nan at step 0)."""
    cols: dict[str, list] = {k: [] for k in ("seed", "step", "entropy", "heldout_loss", "drift_ratio", "diagonal",
                                             "unk", "freeze_rate", "train_loss")}
    for seed, tr in zip(seeds, runs, strict=True):
        steps = tr.steps
        cols["seed"].append(np.full(len(steps), seed))
        cols["step"].append(steps)
        cols["entropy"].append(tr.entropy)
        cols["heldout_loss"].append(tr.heldout_loss)
        cols["drift_ratio"].append(drift_ratios(tr))
        cols["diagonal"].append(tr.diagonal)
        cols["unk"].append(tr.unk)
        cols["freeze_rate"].append(np.concatenate([[np.nan], tr.freeze]))
        cols["train_loss"].append(np.array([np.nan] + [tr.train_loss[a:b].mean()
                                                       for a, b in zip(steps, steps[1:], strict=False)]))
    return {k: np.concatenate(v) for k, v in cols.items()}


def plot_freeze(runs: Sequence[Trajectory], shown: Sequence[int]) -> Figure:
    """``fig-paper-7`` (Figure 7): maps of the held-out and of the training window at the ``shown`` checkpoint steps
    (first seed), then, for every seed, held-out entropy, drift ratio, held-out loss and the attention on the
    diagonal and on ``<unk>``."""
    figures.set_style()
    shown = list(shown)
    fig = plt.figure(figsize=(2.6 * max(len(shown), 4), 2.5 * 2 + 3.4), layout="constrained")
    grid = fig.add_gridspec(3, 1, height_ratios=[1, 1, 1.35])
    first = runs[0]
    for row, (maps, label) in enumerate(((first.probe_maps, "held-out window"), (first.train_maps, "training window"))):
        sub = grid[row].subgridspec(1, len(shown))
        for col, step in enumerate(shown):
            ax = fig.add_subplot(sub[col])
            ax.imshow(maps[int(np.flatnonzero(first.steps == step)[0])], cmap="magma", vmin=0, vmax=1)
            ax.set(xticks=[], yticks=[])
            ax.grid(False)
            if row == 0:
                ax.set_title(f"step {step}")
            if col == 0:
                ax.set_ylabel(label, fontsize="small")
    bottom = grid[2].subgridspec(1, 4)
    axes = [fig.add_subplot(bottom[i]) for i in range(4)]
    for k, tr in enumerate(runs):
        color = f"C{k}"
        axes[0].plot(tr.steps, tr.entropy, marker=".", color=color, label=f"seed {k + 1}")
        axes[1].plot(tr.steps, drift_ratios(tr), marker=".", color=color)
        axes[2].plot(tr.steps, tr.heldout_loss, marker=".", color=color)
        axes[3].plot(tr.steps, tr.diagonal, color=color)
        axes[3].plot(tr.steps, tr.unk, ls=":", color=color)
    axes[1].axhline(1.0, color="grey", lw=0.8, ls="--")
    axes[0].set(xlabel="SGD step", ylabel="nats", title="held-out attention\nentropy")
    axes[1].set(xlabel="SGD step", ylabel="drift / random-walk\nfloor", title=f"drift over {first.window}\nsteps")
    figures.log_axis(axes[1], "y")
    axes[2].set(xlabel="SGD step", ylabel="cross-entropy", title="held-out loss")
    axes[3].set(xlabel="SGD step", ylabel="attention", title="on diagonal (solid),\n<unk> (dotted)")
    axes[0].legend(fontsize="x-small")
    return fig


def token_correlations(t: TokenStudy) -> dict[str, float]:
    """``fig-ch8-tokens``: Spearman's rho of the attention a token receives against its next-token entropy, its
    document frequency and its frequency, for each stage (``STAGES``: init and trained with positional encoding,
    trained without)."""
    out = {}
    for stage, received in zip(("init", "pe", "nope"), t.received, strict=True):
        out[f"rho_entropy_{stage}"] = stats.spearman(t.next_entropy, received)
        out[f"rho_docfreq_{stage}"] = stats.spearman(t.doc_freq, received)
        out[f"rho_frequency_{stage}"] = stats.spearman(t.frequency, received)
    return out


def sign_finding(rho: dict[str, float], n: int) -> str:
    """In words, the sign of Spearman's rho against next-token entropy after training, with and without positional
    encoding (``rho`` from :func:`token_correlations` over ``n`` tokens), against this book's reading of the theory
    (negative); a rho within ``1.96 / sqrt(n - 1)`` of 0 (its 95% band under no correlation) is not told apart
    from 0."""
    band = 1.96 / np.sqrt(max(n - 1, 1))

    def said(key: str, name: str) -> str:
        v = rho[key]
        sign = ("indistinguishable from 0" if abs(v) < band else "negative, the sign this book expects" if v < 0
                else "positive: the sign this book expects is not observed")
        return f"{name} it is {sign} (rho = {v:+.2f}, 95% band ±{band:.2f})"
    return (f"{said('rho_entropy_pe', 'with positional encoding')}; "
            f"{said('rho_entropy_nope', 'without it')}")


def tokens_table(t: TokenStudy) -> dict[str, np.ndarray]:
    """The data of ``fig-ch8-tokens``: one row per token of the study."""
    return {"id": t.ids, "word": np.array(t.words), "next_entropy": t.next_entropy, "doc_freq": t.doc_freq,
            "frequency": t.frequency, "received_init": t.received[0], "received_pe": t.received[1],
            "received_nope": t.received[2]}


def plot_tokens(t: TokenStudy) -> Figure:
    """``fig-ch8-tokens``: received attention against next-token entropy, one panel per stage, with Spearman's
    rho."""
    figures.set_style()
    rho = token_correlations(t)
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.7), sharex=True, layout="constrained")
    for ax, stage, key, received in zip(axes, STAGES, ("init", "pe", "nope"), t.received, strict=True):
        ax.scatter(t.next_entropy, received, s=4, alpha=0.4, c=np.log10(t.frequency), cmap="viridis")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        if np.isfinite(t.unk_next_entropy) and np.isfinite(t.unk_received).all():
            ax.scatter([t.unk_next_entropy], [t.unk_received[STAGES.index(stage)]], marker="*", s=80, color="C3",
                       label="<unk> (not in rho)")
        ax.set_title(f"{stage}: rho = {rho[f'rho_entropy_{key}']:.2f}")
        figures.log_axis(ax, "y")
    axes[0].set_ylabel("attention received / uniform")
    fig.supxlabel("next-token entropy in the window (nats)", fontsize="medium")
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize="x-small")
    return fig
