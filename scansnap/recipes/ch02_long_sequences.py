"""Chapter 2's figure: sampled attention against its long-sequence limit (Lemma 2) and Lemma 18's bound."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, profiles, theory
from scansnap.model import token_counts
from scansnap.recipes import Progress, Recipe

_CHUNK = 1000  # sequences drawn per call of the sampler (bounds memory at large T; fixes the random stream)


def _concentration_params(profile: str) -> dict:
    top = profiles.pick(smoke=10, book=12, paper=14, profile=profile)
    return dict(
        dataset="syn-small",
        T=[2**k for k in range(4, top + 1)],
        samples=profiles.pick(smoke=400, book=4000, paper=20000, profile=profile),
        sigmas=[0.0, 0.5, 1.0],
        delta=0.05,
        seed=1,
        z_seed=0,
    )


def random_logits(M: int, sigmas: list[float], z_seed: int) -> list[torch.Tensor]:
    """One ``(M, M)`` float64 ``Z`` per scale: ``sigma * G`` with one standard normal ``G`` drawn from ``z_seed``.

    Every scale shares ``G``, so ``sigma = 0`` is ``Z = 0`` and the cases differ only in spread.
    """
    G = torch.randn(M, M, generator=torch.Generator().manual_seed(z_seed), dtype=torch.float64)
    return [float(s) * G for s in sigmas]


def _sample_counts(
    classes: data.SequenceClasses, T: int, samples: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token counts ``(samples, M)`` and classes ``(samples,)`` of fresh sequences, drawn ``_CHUNK`` at a time."""
    counts, classes_of = [], []
    for start in range(0, samples, _CHUNK):
        x, n = classes.sample(min(_CHUNK, samples - start), T, gen)
        counts.append(token_counts(x[:, :-1], classes.M))
        classes_of.append(n)
    return torch.cat(counts), torch.cat(classes_of)


def _concentration_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    """Per (scale of Z, class, T): the distance of sampled ``f`` from ``population(Z)``, its bound, violations."""
    classes = data.syn_small()
    Zs = random_logits(classes.M, p["sigmas"], p["z_seed"])
    gen = torch.Generator().manual_seed(p["seed"])
    support = classes.support().sum(dim=1)
    rows: dict[str, list[float]] = {k: [] for k in (
        "sigma", "cls", "T", "samples", "err_mean", "err_q", "err_max", "bound", "violations",
        "freq_radius", "freq_violations", "unit_mean", "rms_ratio_lo", "rms_ratio_hi")}
    for T in p["T"]:
        counts, n = _sample_counts(classes, T, p["samples"], gen)
        for sigma, Z in zip(p["sigmas"], Zs, strict=True):
            errors = {k: v.numpy() for k, v in theory.limit_errors(classes, Z, counts, n).items()}
            bound = theory.concentration_bound(classes, Z, T, p["delta"]).numpy()
            std = theory.linearized_std(classes, Z).numpy()
            for k in range(classes.K):
                mine = (n == k).numpy()
                err, freq = errors["f"][mine], errors["freq"][mine]
                radius = theory.hoeffding_radius(T, int(support[k]), p["delta"])
                on = classes.support()[k].numpy()
                rms = np.sqrt(np.mean(errors["dev"][mine][:, on] ** 2, axis=0))
                ratio = rms * np.sqrt(T - 1) / std[k, on]
                for key, value in (
                    ("sigma", sigma), ("cls", k), ("T", T), ("samples", mine.sum()),
                    ("err_mean", err.mean()), ("err_q", np.quantile(err, 1 - p["delta"])), ("err_max", err.max()),
                    ("bound", bound[k]), ("violations", (err > bound[k]).sum()), ("freq_radius", radius),
                    ("freq_violations", (freq > radius).sum()),
                    ("unit_mean", errors["f_unit"][mine].mean()),
                    ("rms_ratio_lo", ratio.min()), ("rms_ratio_hi", ratio.max()),
                ):
                    rows[key].append(float(value))
        if progress is not None:
            progress(1)
    return {k: np.array(v, dtype=np.int64 if k in ("cls", "T", "samples", "violations", "freq_violations")
                        else np.float64) for k, v in rows.items()}


def _concentration_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    from matplotlib.lines import Line2D

    figures.set_style()
    fig, (ax_f, ax_u) = plt.subplots(1, 2, figsize=(9.5, 4.3))
    first = d["cls"] == 0
    colors = []
    for i, sigma in enumerate(p["sigmas"]):
        sel = first & (d["sigma"] == sigma)
        T = d["T"][sel]
        ax_f.plot(T, d["err_mean"][sel], "o-", color=f"C{i}")
        ax_f.plot(T, d["err_q"][sel], "^:", color=f"C{i}", ms=4)
        ax_f.plot(T, d["bound"][sel], "--", color=f"C{i}", lw=2.2, alpha=0.6)
        ax_u.plot(T, d["unit_mean"][sel], "o-", color=f"C{i}")
        label = "Z = 0" if sigma == 0 else f"Z ~ N(0, {sigma:g}²)"
        colors.append(Line2D([], [], color=f"C{i}", marker="o", label=label))
    for ax, key in ((ax_f, "err_mean"), (ax_u, "unit_mean")):
        sel = first & (d["sigma"] == p["sigmas"][0])
        T = d["T"][sel].astype(float)
        ax.plot(T, 0.6 * d[key][sel][-1] * np.sqrt(T[-1] / T), color="0.3", lw=1, ls=(0, (1, 2)))
        ax.set(yscale="log", xlabel="sequence length T")
        ax.set_xscale("log", base=2)
    ax_f.axhline(1.0, color="0.6", lw=0.8)
    ax_f.annotate("1: a sup-norm distance never exceeds it", (d["T"].min(), 1.0), xytext=(0, 3),
                  textcoords="offset points", fontsize="x-small", color="0.4")
    ax_f.set(ylim=(0.5 * d["err_mean"].min(), 3.0), ylabel=r"$\|f - f_n\|_\infty$",
             title=r"attended histogram $f = X^\top b_T$ (class 1)")
    ax_u.set(ylabel=r"$\|\tilde f - \tilde f_n\|_\infty$ (mean)",
             title=r"normalized $\tilde f = f / \|f\|_2$ (class 1)")
    styles = [Line2D([], [], color="k", marker="o", label="mean over sequences"),
              Line2D([], [], color="k", marker="^", ms=4, ls=":", label=f"{1 - p['delta']:.0%} quantile"),
              Line2D([], [], color="k", ls="--", lw=2.2, alpha=0.6,
                     label=f"Lemma 18 bound (prob. {1 - p['delta']:.0%})"),
              Line2D([], [], color="0.3", lw=1, ls=(0, (1, 2)), label=r"guide $\propto T^{-1/2}$")]
    fig.legend(handles=colors + styles, loc="lower center", ncol=4, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    return fig


RECIPES = [
    Recipe(
        id="fig-ch2-concentration",
        chapter="book/chapters/02-long-sequences",
        caption="Distance of the sampled attention f = X^T b_T (Syn-Small, class 1) from its long-sequence limit "
                "f_n = c_n / 1^T c_n against T, at Z = 0 and two random Z: mean and 95% quantile of the sup-norm "
                "error, Lemma 18's 95% bound, a 1/sqrt(T) guide; right: the same for f~ = f / ||f||.",
        claims=("C4", "C43"),
        params=_concentration_params,
        work=lambda p: len(p["T"]),
        compute=_concentration_compute,
        plot=_concentration_plot,
    ),
]
