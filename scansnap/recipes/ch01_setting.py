"""Chapter 1's figure: Syn-Small trained with SGD, sampled and in the long-sequence limit."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, metrics, profiles, train
from scansnap.recipes import Progress, Recipe


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


RECIPES = [
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
