"""Chapter 5's figures: Theorem 3's scanning in the Eqn-10 dynamics, and the paper's Figures 4 and 5
(Syn-Small trained with SGD at several ``eta_Y / eta_Z``, and with Adam at several learning rates).

Figures 4 and 5 share one table layout: one row per (configuration, seed, step) with the loss, the
distinct-token entropy (the metric of the paper's Fig. 6), the common-token mass of the first class,
and the first class's attention ``f_n = c_n / 1^T c_n`` (Lemma 2) over its tokens 0-19 (common 0-9,
distinct 10-19), columns ``att_00`` .. ``att_19``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, metrics, profiles, theory, train
from scansnap.recipes import Progress, Recipe

CHAPTER = "book/chapters/05-scanning"
TOKENS = 20  # class 1's support in Syn-Small: common 0-9, distinct 10-19
IMAGE_STEPS = [0, 2, 4, 6, 8, 10]  # the rows of the paper's Figure 4, plus the final step


# ----------------------------------------------------------------------------------------------
# Theorem 3 in the Eqn-10 dynamics
# ----------------------------------------------------------------------------------------------


def _scanning_params(profile: str) -> dict:
    return dict(
        eta_Y=1.0, eta_Z=1.0,
        t_max=profiles.pick(smoke=1e3, book=1e5, paper=1e6, profile=profile),
        points=profiles.pick(smoke=40, book=200, paper=400, profile=profile),
        tau=0.8,
    )


def _scanning_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    """Eqn 10 on Syn-Small from ``Z(0) = 0``: class 1's distinct shares, ``chi_l0`` and its Eqn-12 bounds."""
    classes = data.syn_small()
    t = np.concatenate([[0.0], np.geomspace(0.1, p["t_max"], p["points"])])
    run = theory.integrate_eqn10(classes, p["eta_Y"], p["eta_Z"], t)
    D = classes.distinct(0).numpy()
    l0 = int(D[np.argmax(classes.probs[0, D].numpy())])
    ft, z = run.ft[:, 0], run.logits[:, 0]
    f = ft / ft.sum(-1, keepdims=True)  # l1-normalized: the attention f_n
    chi = theory.growth_factor(z[:, l0], z[0, l0])
    lower, upper = theory.dominant_token_bounds(ft[0, l0], run.B[:, 0])
    err = np.zeros(len(t))
    for l in D:  # Eqn 11 for every ordered pair of distinct tokens
        for lp in np.setdiff1d(D, [l]):
            r = theory.relative_gain(ft, int(l), int(lp))
            pred = r[0] * theory.growth_factor(z[:, l], z[0, l])
            err = np.maximum(err, np.abs(r - pred) / np.abs(pred))
    if progress is not None:
        progress(1)
    cols = {"t": t}
    share = f[:, D] / f[:, D].sum(-1, keepdims=True)
    cols |= {f"share_{l}": share[:, i] for i, l in enumerate(D)}
    cols |= {"common_mass": f[:, classes.common().numpy()].sum(-1), "chi": chi, "chi_lower": lower,
             "chi_upper": upper, "B": run.B[:, 0], "rate": run.rate[:, 0], "ft_dominant": ft[:, l0],
             "eqn11_rel_error": err}
    return cols


def _scanning_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    figures.set_style()
    fig, (ax_s, ax_c) = plt.subplots(1, 2, figsize=(11, 3.8))
    t = d["t"][1:]
    names = sorted(k for k in d if k.startswith("share_"))
    colors = plt.cm.viridis(np.linspace(0, 0.95, len(names)))
    for name, color in zip(names, colors, strict=True):
        ax_s.plot(t, d[name][1:], color=color, label=name.removeprefix("share_"))
        steps = theory.drop_steps(d[name][:, None], p["tau"])[0]
        if steps < len(d["t"]):
            ax_s.plot(d["t"][steps], d[name][steps], "o", color=color, ms=4)
    ax_s.set(xscale="log", yscale="log", xlabel="step t (Eqn 10)", ylabel="share among distinct tokens",
             title=f"class 1's distinct tokens (dots: share < {p['tau']} x initial)")
    ax_s.legend(title="token", fontsize="x-small", loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax_c.plot(t, d["chi"][1:], color="C0", label=r"$\chi_{l_0}$ (dominant token 19)")
    ax_c.fill_between(t, d["chi_lower"][1:], d["chi_upper"][1:], color="C0", alpha=0.15,
                      label=r"Eqn 12: $[e^{2\tilde f^2_{l_0}(0) B_n}, e^{2 B_n}]$")
    ax_c.set(xscale="log", yscale="log", xlabel="step t (Eqn 10)", ylabel="growth factor",
             title="growth factor and its bounds")
    ax_c.legend(fontsize="small")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------
# Figures 4 and 5: Syn-Small training runs
# ----------------------------------------------------------------------------------------------


def _seeds(profile: str) -> list[int]:
    return profiles.pick(smoke=[1], book=[1, 2, 3, 4, 5], paper=list(range(1, 11)), profile=profile)


def _fig4_params(profile: str) -> dict:
    return dict(
        steps=profiles.pick(smoke=12, book=100, paper=100, profile=profile), seeds=_seeds(profile),
        ratios=[1, 2, 5, 10], eta_Z=1.0, batch=128, T=128, optimizer="sgd", momentum=0.9, init="zero",
    )


def _fig5_params(profile: str) -> dict:
    return dict(
        steps=profiles.pick(smoke=12, book=100, paper=100, profile=profile), seeds=_seeds(profile),
        lrs=profiles.pick(smoke=[0.1, 1.0], book=[0.03, 0.1, 0.3, 1.0], paper=[0.01, 0.03, 0.1, 0.3, 1.0],
                          profile=profile),
        batch=128, T=128, optimizer="adam", betas=[0.9, 0.999], init="zero",
    )


def _runs(p: dict, key: str, values: list[float], eta_Y: list[float], eta_Z: list[float],
          progress: Progress | None) -> dict[str, np.ndarray]:
    """Train every (value, seed) configuration in one batched call; one table row per (value, seed, step)."""
    classes = data.syn_small()
    seeds = p["seeds"]
    S = len(seeds)
    opt = dict(momentum=p["momentum"]) if p["optimizer"] == "sgd" else dict(betas=tuple(p["betas"]))
    h = train.train(classes, [e for e in eta_Y for _ in seeds], [e for e in eta_Z for _ in seeds],
                    seed=seeds * len(values), steps=p["steps"], batch=p["batch"], T=p["T"],
                    optimizer=p["optimizer"], init=p["init"], snapshot_steps=range(p["steps"] + 1),
                    callback=progress, **opt)
    f = h.attention  # (steps + 1, C, K, M)
    entropy = metrics.attention_entropy(f, classes, per_class=True)  # (steps + 1, C, K)
    common = metrics.token_mass(f, classes)["common"][..., 0]  # (steps + 1, C)
    loss = torch.cat([h.loss, torch.full((h.loss.shape[0], 1), float("nan"), dtype=h.loss.dtype)], dim=1)
    steps = np.arange(p["steps"] + 1)
    C = len(values) * S
    cols = {
        key: np.repeat(np.repeat(np.asarray(values, dtype=float), S), len(steps)),
        "eta_Y": np.repeat(h.eta_Y.numpy(), len(steps)),
        "eta_Z": np.repeat(h.eta_Z.numpy(), len(steps)),
        "seed": np.repeat(h.seeds.numpy(), len(steps)),
        "step": np.tile(steps, C),
        "loss": loss.numpy().reshape(-1),
        "entropy": entropy.mean(-1).T.numpy().reshape(-1),
        "entropy_class1": entropy[..., 0].T.numpy().reshape(-1),
        "common_mass": common.T.numpy().reshape(-1),
    }
    att = f[:, :, 0, :TOKENS].permute(1, 0, 2).reshape(-1, TOKENS).numpy()  # (C * (steps + 1), 20)
    cols |= {f"att_{l:02d}": att[:, l] for l in range(TOKENS)}
    return cols


def table_attention(d: dict[str, np.ndarray], key: str, value: float) -> np.ndarray:
    """Class 1's attention over tokens 0-19 from a Figure 4/5 table: ``(seeds, steps + 1, 20)`` for one ``value``."""
    rows = d[key] == value
    seeds = np.unique(d["seed"][rows])
    att = np.stack([d[f"att_{l:02d}"][rows] for l in range(TOKENS)], axis=-1)
    return att.reshape(len(seeds), -1, TOKENS)


def table_column(d: dict[str, np.ndarray], key: str, value: float, column: str) -> np.ndarray:
    """One column of a Figure 4/5 table as ``(seeds, steps + 1)`` for one ``value``."""
    rows = d[key] == value
    return d[column][rows].reshape(len(np.unique(d["seed"][rows])), -1)


def _fig4_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    return _runs(p, "ratio", p["ratios"], [r * p["eta_Z"] for r in p["ratios"]], [p["eta_Z"]] * len(p["ratios"]),
                 progress)


def _fig5_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    return _runs(p, "lr", p["lrs"], p["lrs"], p["lrs"], progress)


def _plot_runs(d: dict[str, np.ndarray], p: dict, key: str, values: list[float], label: str) -> Figure:
    """Top: class 1's attention at steps 0, 2, .., 10 and the end (mean over seeds), one image per value.
    Bottom: loss and distinct-token entropy against the step (mean over seeds; band: range)."""
    figures.set_style()
    n = len(values)
    fig = plt.figure(figsize=(max(10, 3 * n), 6.8), layout="constrained")
    grid = fig.add_gridspec(2, 2 * n, height_ratios=[1.1, 1])
    last = p["steps"]
    rows = [s for s in IMAGE_STEPS if s < last] + [last]
    images = [table_attention(d, key, v).mean(0)[rows] for v in values]
    vmax = max(float(im.max()) for im in images)
    image_axes = []
    for i, (v, im) in enumerate(zip(values, images, strict=True)):
        ax = fig.add_subplot(grid[0, 2 * i : 2 * i + 2])
        shown = ax.imshow(im, aspect="auto", cmap="viridis", vmin=0, vmax=vmax, interpolation="nearest")
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
    ax_loss = fig.add_subplot(grid[1, :n])
    ax_ent = fig.add_subplot(grid[1, n:])
    steps = np.arange(last + 1)
    for i, v in enumerate(values):
        loss = table_column(d, key, v, "loss")[:, :-1]
        ax_loss.plot(steps[:-1], loss.mean(0), color=f"C{i}", label=f"{label} = {v:g}")
        ax_loss.fill_between(steps[:-1], loss.min(0), loss.max(0), color=f"C{i}", alpha=0.2)
        ent = table_column(d, key, v, "entropy")
        ax_ent.plot(steps, ent.mean(0), color=f"C{i}", label=f"{label} = {v:g}")
        ax_ent.fill_between(steps, ent.min(0), ent.max(0), color=f"C{i}", alpha=0.2)
    ax_loss.set(yscale="log", xlabel="step", ylabel="training loss", title="loss")
    ax_ent.axhline(np.log(10), color="k", ls=":", lw=1, label="ln 10 (uniform)")
    ax_ent.set(xlabel="step", ylabel="entropy (nats)", title="entropy of attention over distinct tokens")
    ax_loss.legend(fontsize="small")
    ax_ent.legend(fontsize="small")
    return fig


def _fig4_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    return _plot_runs(d, p, "ratio", p["ratios"], r"$\eta_Y/\eta_Z$")


def _fig5_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    return _plot_runs(d, p, "lr", p["lrs"], "Adam lr")


RECIPES = [
    Recipe(
        id="fig-ch5-scanning",
        chapter=CHAPTER,
        caption="Theorem 3 in the Eqn-10 dynamics of Syn-Small (eta_Y = eta_Z = 1, Z(0) = 0): the shares of "
                "class 1's distinct tokens fall in order of increasing P(l|n) (scanning), and the dominant "
                "token's growth factor stays within the bounds of Eqn 12.",
        claims=("C19", "C20", "C21"),
        params=_scanning_params,
        work=lambda p: 1,
        compute=_scanning_compute,
        plot=_scanning_plot,
    ),
    Recipe(
        id="fig-paper-4",
        chapter=CHAPTER,
        caption="Paper Figure 4 re-made: Syn-Small trained with SGD (momentum 0.9, batch 128, T = 128, zero "
                "initialization, eta_Z = 1) at eta_Y / eta_Z in {1, 2, 5, 10}: class 1's attention over its "
                "common and distinct tokens at steps 0-10 and at the end, the loss, and the entropy of the "
                "attention over distinct tokens.",
        claims=("C35", "C36"),
        params=_fig4_params,
        work=lambda p: p["steps"],
        compute=_fig4_compute,
        plot=_fig4_plot,
    ),
    Recipe(
        id="fig-paper-5",
        chapter=CHAPTER,
        caption="Paper Figure 5 re-made: Syn-Small trained with Adam (one learning rate for Y and Z; batch 128, "
                "T = 128, zero initialization) at several learning rates: class 1's attention, the loss, and "
                "the entropy over distinct tokens.",
        claims=("C37",),
        params=_fig5_params,
        work=lambda p: p["steps"],
        compute=_fig5_compute,
        plot=_fig5_plot,
    ),
]
