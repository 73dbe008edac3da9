"""The book's figures as recipes: default parameters per profile, the computation, the plot.

A chapter and the command line run the same recipe (``python -m scansnap reproduce <id>``), so the
figure a reader sees and the one a citer re-makes come from one piece of code. Each recipe's
``compute`` returns the plotted numbers as equal-length columns (saved as CSV).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, metrics, profiles, train
from scansnap._checks import check_choice

__all__ = ["RECIPES", "Recipe", "Result", "defaults", "get", "run"]

Progress = Callable[[int], None]


@dataclass(frozen=True)
class Recipe:
    """How to make one figure.

    Attributes:
        id: the stable figure id (file names and anchor).
        chapter: the book page (docname) that shows it.
        caption: what the figure shows, one or two sentences.
        claims: ids of the claims it supports.
        params: profile -> default parameters.
        work: parameters -> number of progress units (for a progress bar).
        compute: (parameters, progress) -> columns.
        plot: (columns, parameters) -> figure.
    """

    id: str
    chapter: str
    caption: str
    claims: tuple[str, ...]
    params: Callable[[str], dict]
    work: Callable[[dict], int]
    compute: Callable[[dict, Progress | None], dict[str, np.ndarray]]
    plot: Callable[[dict[str, np.ndarray], dict], Figure]


@dataclass
class Result:
    """A made figure: the matplotlib figure, its columns, and its provenance record."""

    fig: Figure
    data: dict[str, np.ndarray]
    record: figures.FigureRecord


# --- Chapter 1: Syn-Small trained with SGD ------------------------------------------------------

def _synsmall_params(profile: str) -> dict:
    return dict(
        steps=profiles.pick(smoke=10, book=100, paper=100, profile=profile),
        seeds=profiles.pick(smoke=[1, 2], book=[1, 2, 3, 4, 5], paper=list(range(1, 11)), profile=profile),
        batch=128, T=128, eta_Y=1.0, eta_Z=1.0, momentum=0.9, init="zero",
    )


def _synsmall_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    """Sampled runs (one per seed) and one long-sequence-limit run; attention mass of class 1."""
    classes = data.syn_small()
    steps = p["steps"]
    every = list(range(steps + 1))
    kw = dict(steps=steps, batch=p["batch"], T=p["T"], optimizer="sgd", momentum=p["momentum"],
              init=p["init"], snapshot_steps=every, callback=progress)
    sampled = train.train(classes, p["eta_Y"], p["eta_Z"], seed=p["seeds"], limit="sampled", **kw)
    limit = train.train(classes, p["eta_Y"], p["eta_Z"], seed=0, limit="population", **kw)
    ms, ml = metrics.token_mass(sampled.attention, classes), metrics.token_mass(limit.attention, classes)
    pad = torch.full((len(p["seeds"]), 1), float("nan"), dtype=sampled.loss.dtype)
    loss_s = torch.cat([sampled.loss, pad], dim=1)  # loss at step t is before update t; none after the last
    loss_l = torch.cat([limit.loss[0], pad[0]])
    return {
        "step": np.array(every),
        "loss_sampled_mean": loss_s.mean(0).numpy(),
        "loss_sampled_min": loss_s.min(0).values.numpy(),
        "loss_sampled_max": loss_s.max(0).values.numpy(),
        "loss_limit": loss_l.numpy(),
        "common_mass_sampled": ms["common"][:, :, 0].mean(1).numpy(),
        "distinct_mass_sampled": ms["distinct"][:, :, 0].mean(1).numpy(),
        "common_mass_limit": ml["common"][:, 0, 0].numpy(),
        "distinct_mass_limit": ml["distinct"][:, 0, 0].numpy(),
    }


def _synsmall_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    figures.set_style()
    fig, (ax_loss, ax_mass) = plt.subplots(1, 2, figsize=(9, 3.4))
    step = d["step"]
    ax_loss.plot(step, d["loss_sampled_mean"], label=f"sampled, T={p['T']} (mean of {len(p['seeds'])} seeds)")
    ax_loss.fill_between(step, d["loss_sampled_min"], d["loss_sampled_max"], alpha=0.25)
    ax_loss.plot(step, d["loss_limit"], "--", label="long-sequence limit")
    ax_loss.set(yscale="log", xlabel="SGD step", ylabel="cross-entropy loss", title="loss")
    ax_loss.legend(fontsize="small")
    for key, color in (("distinct", "C2"), ("common", "C3")):
        ax_mass.plot(step, d[f"{key}_mass_sampled"], color=color, label=f"{key}, sampled")
        ax_mass.plot(step, d[f"{key}_mass_limit"], "--", color=color, label=f"{key}, limit")
    ax_mass.set(xlabel="SGD step", ylabel="attention mass of class 1", title="attention on token groups",
                ylim=(0, 1))
    ax_mass.legend(fontsize="small")
    fig.tight_layout()
    return fig


RECIPES: dict[str, Recipe] = {
    r.id: r
    for r in [
        Recipe(
            id="fig-ch1-synsmall",
            chapter="book/chapters/01-setting",
            caption="Syn-Small trained with SGD (momentum 0.9, eta_Y = eta_Z = 1, zero initialization): the "
                    "training loss, and the attention mass of the first class on its distinct and on the common "
                    "tokens, with sampled sequences (T = 128) and in the long-sequence limit.",
            claims=(),
            params=_synsmall_params,
            work=lambda p: 2 * p["steps"],
            compute=_synsmall_compute,
            plot=_synsmall_plot,
        ),
    ]
}


def get(fig_id: str) -> Recipe:
    """The recipe of figure ``fig_id``."""
    check_choice("figure id", fig_id, sorted(RECIPES))
    return RECIPES[fig_id]


def defaults(fig_id: str, profile: str | None = None) -> dict:
    """Default parameters of figure ``fig_id`` for ``profile`` (default: the active profile)."""
    return get(fig_id).params(profiles.current() if profile is None else check_choice("profile", profile,
                                                                                          profiles.PROFILES))


def run(
    fig_id: str,
    params: dict | None = None,
    *,
    profile: str | None = None,
    out: Path | None = None,
    progress: Progress | None = None,
) -> Result:
    """Compute, plot and save figure ``fig_id`` (PNG, SVG, CSV, provenance) under ``out/figures``.

    Args:
        fig_id: a key of :data:`RECIPES`.
        params: parameters (default :func:`defaults` for ``profile``).
        profile: ``smoke``, ``book`` or ``paper`` (default: the active profile).
        out: artifacts folder (default ``$SCANSNAP_ARTIFACTS`` or ``_extra``).
        progress: called once per unit of work (``recipe.work(params)`` units in all).
    """
    recipe = get(fig_id)
    profile = profiles.current() if profile is None else check_choice("profile", profile, profiles.PROFILES)
    params = defaults(fig_id, profile) if params is None else params
    start = time.perf_counter()
    columns = recipe.compute(params, progress)
    wall = time.perf_counter() - start
    fig = recipe.plot(columns, params)
    record = figures.save(fig, recipe.id, columns, params, caption=recipe.caption, chapter=recipe.chapter,
                          claims=recipe.claims, wall_time_s=wall, profile=profile, out=out)
    return Result(fig=fig, data=columns, record=record)
