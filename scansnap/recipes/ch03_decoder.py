"""Chapter 3's figures: the decoder's dynamics with the attention frozen (Lemmas 5-7, Theorem 1, Remark 1).

* ``fig-paper-8``: the paper's Figure 8, the discrete margin ``h_s`` of Lemma 5 against the continuous
  solution of Lemma 6, for several ``(M, eta_Y)``.
* ``fig-ch3-gamma``: Theorem 1's speed-control coefficient ``gamma(t)`` measured along SGD on ``Y``,
  against the formula and its two regimes, for several ``eta_Y``.
* ``fig-ch3-correlated``: what changes when Assumption 2 fails (equal overlaps ``rho`` up to 0.95).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import data, figures, profiles
from scansnap.recipes import Progress, Recipe
from scansnap.theory import decoder as dec

CHAPTER = "book/chapters/03-decoder-dynamics"


def log_grid(steps: int, num: int) -> list[int]:
    """About ``num`` log-spaced integers in ``[1, steps]``, always including 1 and ``steps``."""
    return sorted({1, steps, *np.unique(np.round(np.geomspace(1, steps, num)).astype(int)).tolist()})


def pair_name(M: int, eta: float) -> str:
    """Column suffix of one ``(M, eta_Y)`` pair of Figure 8, e.g. ``M50_eta0.7``."""
    return f"M{M}_eta{eta:g}"


def measure_gamma(F: np.ndarray, targets: np.ndarray, M: int, Ys: np.ndarray) -> dict[str, np.ndarray]:
    """Along a trajectory ``Ys`` ``(S, d, M)``: the class-mean Theorem-1 factor ``gamma`` of the
    back-propagated gradient, the class-mean relative residual off Theorem 1's direction, and the
    class-mean ``1 - alpha_k[n_k]``; each ``(S,)``."""
    gam, res, miss = [], [], []
    for Y in Ys:
        parts = dec.decompose_gradient(dec.backprop_gradient(Y, F, targets), F, M)
        gam.append(parts["gamma"].mean())
        res.append(parts["residual"].mean())
        logits = F.T @ Y
        logits -= logits.max(1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(1, keepdims=True)
        miss.append(1 - p[np.arange(len(targets)), targets].mean())
    return {"gamma": np.array(gam), "residual": np.array(res), "miss": np.array(miss)}


def support_rows(F: np.ndarray) -> np.ndarray:
    """``F`` without its zero rows: ``Y``'s other rows never move from 0 under Eqn 7 (nor Eqn 26)."""
    return F[np.abs(F).sum(1) > 0]


# --------------------------------------------------------------------------------------------------
# Figure 8


def _fig8_params(profile: str) -> dict:
    return dict(
        pairs=[[50, 0.7], [200, 0.1], [1000, 1.0], [10, 3.0]],
        steps=profiles.pick(smoke=2000, book=20000, paper=200000, profile=profile),
        points=profiles.pick(smoke=60, book=200, paper=300, profile=profile),
    )


def _fig8_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    steps = p["steps"]
    s_all = np.arange(steps + 1, dtype=np.float64)
    grid = np.array([0, *log_grid(steps, p["points"])])
    cols: dict[str, np.ndarray] = {"s": grid}
    for M, eta in p["pairs"]:
        hd = dec.lemma5_h(steps, int(M), float(eta))
        hc = dec.lemma6_h(s_all, int(M), float(eta))
        gap = hd - hc
        key = pair_name(int(M), float(eta))
        cols[f"h_discrete_{key}"] = hd[grid]
        cols[f"h_continuous_{key}"] = hc[grid]
        cols[f"gap_{key}"] = gap[grid]
        cols[f"gap_running_max_{key}"] = np.maximum.accumulate(gap)[grid]
        cols[f"gap_running_min_{key}"] = np.minimum.accumulate(gap)[grid]
        if progress is not None:
            progress(1)
    return cols


def _fig8_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    figures.set_style()
    fig, (ax_h, ax_gap) = plt.subplots(1, 2, figsize=(10, 3.8))
    s = d["s"]
    for i, (M, eta) in enumerate(p["pairs"]):
        key, color = pair_name(int(M), float(eta)), f"C{i}"
        label = f"M={int(M)}, $\\eta_Y$={float(eta):g}"
        ax_h.plot(s[1:], d[f"h_continuous_{key}"][1:], color=color, label=f"{label}: $h(s)$ (Lemma 6)")
        ax_h.plot(s[1::8], d[f"h_discrete_{key}"][1::8], "o", ms=3, color=color, mfc="none")
        ax_gap.plot(s[1:], d[f"gap_{key}"][1:], color=color, label=label)
        ax_gap.axhline(float(eta) / int(M), color=color, ls=":", lw=1)
    ax_h.set(xscale="log", yscale="log", xlabel="class visits $s$", ylabel="margin $h$",
             title="discrete $h_s$ (circles, Lemma 5) vs continuous $h(s)$ (lines)")
    ax_h.legend(fontsize="x-small")
    ax_gap.set(xscale="log", yscale="log", xlabel="class visits $s$", ylabel="$h_s - h(s)$",
               title="gap (dotted: the bound $\\eta_Y / M$)")
    ax_gap.legend(fontsize="x-small")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------------
# gamma(t) for several eta_Y


def _gamma_params(profile: str) -> dict:
    return dict(
        K=4, M=1000, num_distinct=10, common_weight=0.5,
        etas=[0.1, 0.3, 1.0, 3.0],
        steps=profiles.pick(smoke=300, book=20000, paper=100000, profile=profile),
        points=profiles.pick(smoke=20, book=60, paper=100, profile=profile),
    )


def weak_family(p: dict) -> data.SequenceClasses:
    """The weakly correlated family of the chapter: ``K`` classes, one query each, one common token of
    weight ``common_weight`` and ``num_distinct`` distinct tokens each."""
    return data.sequence_classes(num_query=p["K"], next_per_query=1, num_common=1, num_distinct=p["num_distinct"],
                                 common_weight=p["common_weight"])


def _gamma_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    F, targets = dec.unit_inputs(weak_family(p))
    F = support_rows(F)
    K, M, steps = p["K"], p["M"], p["steps"]
    grid = log_grid(steps, p["points"])
    t = np.array(grid, dtype=np.float64)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("eta", "t", "gamma_measured", "residual", "gamma_theory",
                                                         "gamma_early", "gamma_late", "t0")}
    for eta in p["etas"]:
        Ys = dec.sgd_decoder(F, targets, M, float(eta), steps, grid)
        meas = measure_gamma(F, targets, M, Ys)
        cols["eta"].append(np.full(len(t), float(eta)))
        cols["t"].append(t)
        cols["gamma_measured"].append(meas["gamma"])
        cols["residual"].append(meas["residual"])
        cols["gamma_theory"].append(dec.gamma(t, M, K, float(eta)))
        cols["gamma_early"].append(dec.gamma_early(t, K, float(eta)))
        cols["gamma_late"].append(dec.gamma_late(t, M, K, float(eta)))
        cols["t0"].append(np.full(len(t), dec.transition_time(M, K, float(eta))))
        if progress is not None:
            progress(1)
    return {k: np.concatenate(v) for k, v in cols.items()}


def _gamma_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    figures.set_style()
    fig, (ax, ax_r) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, eta in enumerate(p["etas"]):
        sel, color = d["eta"] == float(eta), f"C{i}"
        t, t0 = d["t"][sel], d["t0"][sel][0]
        ax.plot(t, d["gamma_theory"][sel], color=color, label=f"$\\eta_Y$={float(eta):g}")
        ax.plot(t, d["gamma_measured"][sel], "o", ms=3.5, color=color, mfc="none")
        early, late = t <= t0, t >= 10 * t0
        ax.plot(t[early], d["gamma_early"][sel][early], "--", color="k", lw=0.8)
        ax.plot(t[late], d["gamma_late"][sel][late], ":", color="k", lw=1.2)
        ax.axvline(t0, color=color, lw=0.8, alpha=0.7)
        x = t / t0
        ax_r.plot(x, d["gamma_measured"][sel] / d["gamma_early"][sel], "--", color=color)
        ax_r.plot(x, d["gamma_measured"][sel] / d["gamma_late"][sel], ":", color=color, lw=1.5)
    ax.set(xscale="log", yscale="log", xlabel="SGD step $t$", ylabel="$\\gamma(t)$", ylim=(1e-4, 20),
           title="lines: formula; circles: measured along SGD on Y;\nblack dashed: $\\eta_Y t/K$; black dotted: "
                 "$K\\ln(M\\eta_Y t/K)/(\\eta_Y t)$; vertical: $t_0$")
    ax.legend(fontsize="x-small", loc="lower left")
    ax_r.axhline(1, color="k", lw=0.8)
    ax_r.axvspan(1, 10, color="0.85", alpha=0.5, lw=0)
    ax_r.set(xscale="log", yscale="log", xlabel="$t / t_0$, $t_0 = K \\ln M / \\eta_Y$", ylim=(0.1, 10),
             ylabel="measured $\\gamma$ / asymptote",
             title="regimes: dashed $\\gamma/(\\eta_Y t/K)$, dotted $\\gamma/$late form\n"
                   f"(K={p['K']}, M={p['M']}; shaded: $t_0 < t < 10 t_0$)")
    for a in (ax, ax_r):
        a.title.set_fontsize("small")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------------
# Assumption 2 fails: equal overlaps rho


def _corr_params(profile: str) -> dict:
    return dict(
        K=4, M=1000, eta=1.0, rhos=[0.0, 0.2, 0.5, 0.8, 0.95],
        steps=profiles.pick(smoke=300, book=20000, paper=100000, profile=profile),
        points=profiles.pick(smoke=20, book=50, paper=80, profile=profile),
    )


def _corr_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    K, M, eta, steps = p["K"], p["M"], float(p["eta"]), p["steps"]
    grid = log_grid(steps, p["points"])
    t = np.array(grid, dtype=np.float64)
    h = dec.lemma5_h(steps, M, eta / K)[grid]  # the exact Lemma-5 margin of full-batch SGD (eta/K per step)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("rho", "t", "gamma_measured", "gamma_theory",
                                                         "g_error", "miss", "eta_effective")}
    for rho in p["rhos"]:
        F, targets = dec.unit_inputs(dec.equal_overlap_classes(K, float(rho)))
        F = support_rows(F)
        Ys = dec.sgd_decoder(F, targets, M, eta, steps, grid)
        meas = measure_gamma(F, targets, M, Ys)
        gam_th = dec.gamma_of_h(h, M)
        D = np.linalg.solve(np.eye(K) + dec.gram(F), np.eye(K) - 1.0 / M)  # column k: Theorem 1's direction
        err = []
        for Y, g_th in zip(Ys, gam_th, strict=True):
            g = dec.backprop_gradient(Y, F, targets)  # (K, d)
            pred = g_th * (F @ D).T
            err.append((np.linalg.norm(g - pred, axis=1) / np.linalg.norm(g, axis=1)).mean())
        cols["rho"].append(np.full(len(t), float(rho)))
        cols["t"].append(t)
        cols["gamma_measured"].append(meas["gamma"])
        cols["gamma_theory"].append(gam_th)
        cols["g_error"].append(np.array(err))
        cols["miss"].append(meas["miss"])
        # Corollary 1: 1 - alpha ~ (1 - 1/M) K / (eta t); the eta that this late form implies
        cols["eta_effective"].append((1 - 1 / M) * K / (t * meas["miss"]))
        if progress is not None:
            progress(1)
    return {k: np.concatenate(v) for k, v in cols.items()}


def _corr_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    figures.set_style()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.9))
    ax_g, ax_e, ax_eta = axes
    for i, rho in enumerate(p["rhos"]):
        sel, color = d["rho"] == float(rho), f"C{i}"
        t = d["t"][sel]
        label = f"$\\rho$={float(rho):g}"
        ax_g.plot(t, d["gamma_measured"][sel], color=color, label=label)
        ax_e.plot(t, d["g_error"][sel], color=color, label=label)
        late_t = t >= dec.transition_time(p["M"], p["K"], float(p["eta"]))  # Corollary 1's form is a late one
        ax_eta.plot(t[late_t], d["eta_effective"][sel][late_t] / float(p["eta"]), color=color, label=label)
        ax_eta.axhline(1 - float(rho), color=color, ls=":", lw=1)
        late = dec.remark1_effective_rate(p["K"], p["M"], float(p["eta"]), float(rho)) / float(p["eta"])
        ax_eta.axhline(late, color=color, ls="--", lw=1)
    first = d["rho"] == float(p["rhos"][0])
    ax_g.plot(d["t"][first], d["gamma_theory"][first], "k--", lw=1.2, label="Theorem 1 ($E$-free)")
    ax_g.set(xscale="log", yscale="log", xlabel="SGD step $t$", ylabel="measured $\\gamma$",
             title="$\\gamma$ measured along SGD on Y", ylim=(1e-4, 30))
    ax_e.set(xscale="log", xlabel="SGD step $t$", ylim=(0, None),
             ylabel="$\\|g - \\hat g\\| / \\|g\\|$", title="relative error of Theorem 1's gradient $\\hat g$")
    ax_eta.set(xscale="log", yscale="log", xlabel="SGD step $t$", ylabel="$\\eta_{\\rm eff} / \\eta_Y$",
               title="effective rate from $1-\\alpha$, $t \\geq t_0$\n(dotted: $1-\\rho$; dashed: late limit)")
    for ax in axes:
        ax.legend(fontsize="x-small")
        ax.title.set_fontsize("small")
    fig.tight_layout()
    return fig


RECIPES = [
    Recipe(
        id="fig-paper-8",
        chapter=CHAPTER,
        caption="Paper Figure 8 re-made: the discrete per-class margin h_s of Lemma 5 (h_{s+1} = h_s + "
                "eta_Y/(exp(M h_s) + M - 1)) against the continuous solution (exp(M h) - 1)/M + (M - 1) h = "
                "eta_Y s of Lemma 6, for several (M, eta_Y), and their gap against the bound eta_Y / M.",
        claims=("C7", "C8"),
        params=_fig8_params,
        work=lambda p: len(p["pairs"]),
        compute=_fig8_compute,
        plot=_fig8_plot,
    ),
    Recipe(
        id="fig-ch3-gamma",
        chapter=CHAPTER,
        caption="Theorem 1's speed-control coefficient gamma(t) measured along SGD on Y (weakly correlated "
                "inputs, K = 4, M = 1000) for several eta_Y, against M^2 h/(exp(M h) + M - 1) with h = h(t/K), "
                "the early regime eta_Y t/K and the late regime K ln(M eta_Y t/K)/(eta_Y t).",
        claims=("C9", "C11", "C13"),
        params=_gamma_params,
        work=lambda p: len(p["etas"]),
        compute=_gamma_compute,
        plot=_gamma_plot,
    ),
    Recipe(
        id="fig-ch3-correlated",
        chapter=CHAPTER,
        caption="When Assumption 2 fails: SGD on Y with equal overlaps rho between K = 4 classes (M = 1000). "
                "The measured gamma leaves Theorem 1's curve, Theorem 1's gradient is off, and the effective "
                "learning rate implied by 1 - alpha tends to eta_Y (1 - rho) A (1 - 1/M)/(A - 1) with "
                "A = K + (M - K)(1 - rho)/(1 + rho (M - 1)), not to Remark 1's eta_Y (1 - rho).",
        claims=("C9", "C12"),
        params=_corr_params,
        work=lambda p: len(p["rhos"]),
        compute=_corr_compute,
        plot=_corr_plot,
    ),
]
