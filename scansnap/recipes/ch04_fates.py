"""Chapter 4's figures: the fates of contextual tokens (Theorem 2, Corollary 2, Eqn 10) in training."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import figures, profiles, train
from scansnap.recipes import Progress, Recipe
from scansnap.theory import fates

CHAPTER = "book/chapters/04-fates-of-tokens"
# short keys of the families of fates.example_families(), for column names
KEYS = {
    "one common token": "one",
    "Syn-Medium, one query": "synmed",
    "Syn-Small": "synsmall",
    "two common, asymmetric": "asym",
    "common to 2 of 3": "twoofthree",
    "weak overlap": "weak",
}
# the theorem's setting: gradient descent, eta_Y >> eta_Z (Assumption 1(c)); the paper's Sec. 8 protocol
# "equal": equal learning rates without momentum, to tell the two departures of the protocol apart
PROTOCOLS = {
    "theorem": dict(eta_Y=1.0, eta_Z=0.1, momentum=0.0),
    "equal": dict(eta_Y=1.0, eta_Z=1.0, momentum=0.0),
    "paper": dict(eta_Y=1.0, eta_Z=1.0, momentum=0.9),
}


def _seeds(profile: str) -> list[int]:
    return profiles.pick(smoke=[1], book=[1, 2, 3, 4, 5], paper=list(range(1, 11)), profile=profile)


def trajectories(classes, p: dict, limit: str, seeds: list[int], steps: int, progress: Progress | None = None
                 ) -> torch.Tensor:
    """Logits ``(C, steps + 1, M, M)`` at every step of ``train.train`` (one configuration per seed),
    read back from the attention snapshots (:func:`scansnap.theory.fates.logits_from_attention`)."""
    hist = train.train(classes, p["eta_Y"], p["eta_Z"], steps=steps, batch=p["batch"], T=p["T"], optimizer="sgd",
                       momentum=p["momentum"], init="zero", seed=seeds, limit=limit,
                       snapshot_steps=list(range(steps + 1)), callback=progress)
    return fates.logits_from_attention(hist.attention.transpose(0, 1), classes)


# ----------------------------------------------------------------------------------------------
# fig-ch4-fates: logit trajectories of four families
# ----------------------------------------------------------------------------------------------


def _fates_params(profile: str) -> dict:
    return dict(
        families=["one common token", "Syn-Medium, one query", "two common, asymmetric", "common to 2 of 3"],
        steps=profiles.pick(smoke=20, book=200, paper=1000, profile=profile),
        seeds=_seeds(profile), batch=128, T=128, **PROTOCOLS["theorem"],
    )


def _fates_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    """z_{m l}(t) of every contextual token of the (single) query: long-sequence limit and mean over seeds."""
    fams = fates.example_families()
    cols = {"step": np.arange(p["steps"] + 1)}
    for name in p["families"]:
        classes, key = fams[name], KEYS[name]
        m = int(classes.query[0])
        tokens = torch.nonzero(classes.support().any(0)).flatten().tolist()
        pop = trajectories(classes, p, "population", [0], p["steps"], progress)[0]
        smp = trajectories(classes, p, "sampled", p["seeds"], p["steps"], progress).mean(0)
        for l in tokens:
            cols[f"{key}_z{l}_population"] = pop[:, m, l].numpy()
            cols[f"{key}_z{l}_sampled"] = smp[:, m, l].numpy()
    return cols


def _fates_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    figures.set_style()
    fams = fates.example_families()
    n = len(p["families"])
    rows = (n + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(9, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, p["families"], strict=False):
        classes, key = fams[name], KEYS[name]
        common = set(classes.common().tolist())
        for col in sorted(c for c in d if c.startswith(f"{key}_z") and c.endswith("_population")):
            l = int(col.split("_z")[1].split("_")[0])
            color = "C3" if l in common else "C2"
            lw = 2.0 if l in common else 1.0
            ax.plot(d["step"], d[col], color=color, lw=lw)
            ax.plot(d["step"], d[col.replace("_population", "_sampled")], color=color, lw=0.8, ls="--")
        ax.axhline(0, color="0.5", lw=0.6)
        ax.set(title=name, xlabel="step", ylabel=r"$z_{ml}(t)$")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    handles = [plt.Line2D([], [], color="C2", label="distinct token"), plt.Line2D([], [], color="C3", lw=2,
               label="common token"), plt.Line2D([], [], color="0.3", label="long-sequence limit"),
               plt.Line2D([], [], color="0.3", ls="--", label=f"sampled, T={p['T']} (mean of {len(p['seeds'])})")]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize="small", bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


# ----------------------------------------------------------------------------------------------
# fig-ch4-violations: how often a logit moves against Theorem 2's sign
# ----------------------------------------------------------------------------------------------


def _violations_params(profile: str) -> dict:
    return dict(
        families=["one common token", "Syn-Small", "Syn-Medium, one query"],
        protocols={k: dict(v, steps=profiles.pick(smoke=20, book=200 if k == "theorem" else 100,
                                                  paper=1000 if k == "theorem" else 100, profile=profile))
                   for k, v in PROTOCOLS.items()},  # the paper's protocol runs 100 steps
        seeds=_seeds(profile), batch=128, T=128, tol=1e-12,
    )


def _violations_work(p: dict) -> int:
    return len(p["families"]) * 2 * sum(v["steps"] for v in p["protocols"].values())


def _violations_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    """Counts of logit moves per (family, protocol, limit), summed over seeds."""
    fams = fates.example_families()
    rows = []
    for name in p["families"]:
        classes = fams[name]
        for proto, q in p["protocols"].items():
            for limit, seeds in (("population", [0]), ("sampled", p["seeds"])):
                Z = trajectories(classes, dict(p, **q), limit, seeds, q["steps"], progress)
                counts = [fates.fate_counts(z, classes, tol=p["tol"]) for z in Z]
                d = np.sum([c.distinct for c in counts], axis=0)
                c = np.sum([c.common for c in counts], axis=0)
                rows.append((name, proto, limit, int(d.sum()), int(d[1]), int(d[2]), int(c.sum()), int(c[0]),
                             int(c[2]), min(x.min_distinct_move for x in counts),
                             max(x.max_common_move for x in counts)))
    keys = ["family", "protocol", "limit", "distinct_entries", "distinct_down", "distinct_still", "common_entries",
            "common_up", "common_still", "min_distinct_move", "max_common_move"]
    return {k: np.array([r[i] for r in rows]) for i, k in enumerate(keys)}


def _violations_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    figures.set_style()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    fams = list(dict.fromkeys(d["family"].tolist()))
    settings = list(dict.fromkeys(zip(d["protocol"].tolist(), d["limit"].tolist(), strict=True)))
    width = 0.8 / len(settings)
    for ax, (bad, total, title) in zip(axes, (("distinct_down", "distinct_entries", "distinct tokens moving down"),
                                              ("common_up", "common_entries", "common tokens moving up")),
                                       strict=True):
        for j, (proto, limit) in enumerate(settings):
            sel = [(d["protocol"] == proto) & (d["limit"] == limit) & (d["family"] == f) for f in fams]
            frac = [100 * d[bad][s].sum() / d[total][s].sum() for s in sel]
            x = np.arange(len(fams)) + (j - (len(settings) - 1) / 2) * width
            q = p["protocols"][proto]
            label = (f"$\\eta_Y$={q['eta_Y']:g}, $\\eta_Z$={q['eta_Z']:g}, momentum {q['momentum']:g}, "
                     f"{'T = inf' if limit == 'population' else 'T = ' + str(p['T'])}")
            bars = ax.bar(x, frac, width, label=label, color=f"C{j}")
            ax.bar_label(bars, fmt="%.0f", fontsize="xx-small")
        ax.set_xticks(np.arange(len(fams)), [f.replace(", ", ",\n") for f in fams], fontsize="small")
        ax.set(title=title, ylabel="% of (step, class, token) entries")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize="x-small",
               bbox_to_anchor=(0.5, -0.01))
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


# ----------------------------------------------------------------------------------------------
# fig-ch4-eqn10: Eqn 10 against the exact population gradient along training
# ----------------------------------------------------------------------------------------------


def _eqn10_params(profile: str) -> dict:
    return dict(
        families=["weak overlap", "one common token", "Syn-Small"],
        checkpoints=profiles.pick(smoke=[1, 3, 10], book=[1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300],
                                  paper=[1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000], profile=profile),
        batch=128, T=128, **PROTOCOLS["theorem"],
    )


def _eqn10_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    """At each checkpoint t of long-sequence training: the exact z-velocity against Eqn 10 with Theorem 1's
    coefficients (gamma(t) of Lemma 6) and against Eqn 10 with the coefficients of the measured g_n."""
    fams = fates.example_families()
    out: dict[str, list] = {k: [] for k in ("family", "step", "cosine", "scale", "rel_err_theorem1",
                                            "rel_err_measured_coeffs", "g_off_span")}
    for name in p["families"]:
        classes = fams[name]
        rows = torch.unique(classes.query)
        for t in p["checkpoints"]:
            h = train.train(classes, p["eta_Y"], p["eta_Z"], steps=t, optimizer="sgd", momentum=p["momentum"],
                            init="zero", seed=0, limit="population", snapshot_steps=[t], callback=progress)
            Y, Z = h.Y[0], h.Z[0]
            actual = fates.population_zdot(classes, Y, Z, p["eta_Z"])[rows].flatten()
            gamma = fates.speed_gamma_at(float(t), classes.M, classes.K, p["eta_Y"])
            pred = fates.eqn10_zdot(classes, Z, gamma, p["eta_Z"])[rows].flatten()
            A, off = fates.span_coefficients(fates.unit_scores(classes, Z), fates.class_gradients(classes, Y, Z))
            fit = fates.eqn10_zdot(classes, Z, 1.0, p["eta_Z"], beta=-A)[rows].flatten()
            out["family"].append(name)
            out["step"].append(t)
            out["cosine"].append(float(actual @ pred / (actual.norm() * pred.norm())))
            out["scale"].append(float(actual @ pred / (pred @ pred)))
            out["rel_err_theorem1"].append(float((actual - pred).norm() / actual.norm()))
            out["rel_err_measured_coeffs"].append(float((actual - fit).norm() / actual.norm()))
            out["g_off_span"].append(float(off))
    return {k: np.array(v) for k, v in out.items()}


def _eqn10_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    figures.set_style()
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    for i, name in enumerate(p["families"]):
        s = d["family"] == name
        kw = dict(marker="o", ms=3, color=f"C{i}", label=name)
        axes[0].plot(d["step"][s], d["cosine"][s], **kw)
        axes[1].plot(d["step"][s], d["scale"][s], **kw)
        axes[2].plot(d["step"][s], d["rel_err_measured_coeffs"][s], **kw)
    axes[0].set(xscale="log", xlabel="step", ylabel="cosine", title="direction: exact vs Eqn 10")
    axes[1].axhline(1, color="0.5", lw=0.6)
    axes[1].set(xscale="log", yscale="log", xlabel="step", ylabel="exact / Eqn 10",
                title="magnitude (projection)")
    axes[2].set(xscale="log", yscale="log", xlabel="step", ylabel="relative error",
                title="Eqn 10 with the measured $g_n$ coefficients")
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    return fig


RECIPES = [
    Recipe(
        id="fig-ch4-fates",
        chapter=CHAPTER,
        caption="Attention logits z_ml(t) of every contextual token in training (gradient descent, eta_Y = 1, "
                "eta_Z = 0.1, zero initialization), in the long-sequence limit (solid) and with sampled "
                "sequences (dashed, mean over seeds), for four families: one common token (Theorem 2), "
                "Syn-Medium with one query (Corollary 2), and two asymmetric families outside the theorems.",
        claims=("C16", "C17", "C18"),
        params=_fates_params,
        work=lambda p: len(p["families"]) * 2 * p["steps"],
        compute=_fates_compute,
        plot=_fates_plot,
    ),
    Recipe(
        id="fig-ch4-violations",
        chapter=CHAPTER,
        caption="How often a logit moves against Theorem 2's sign between consecutive steps: distinct tokens "
                "moving down and common tokens moving up, in the theorem's setting (gradient descent, "
                "eta_Y = 1 >> eta_Z = 0.1), with equal learning rates (eta_Y = eta_Z = 1) and with the paper's "
                "protocol (equal learning rates and momentum 0.9), in the long-sequence limit and with sampled "
                "sequences.",
        claims=("C16", "C17", "C18"),
        params=_violations_params,
        work=_violations_work,
        compute=_violations_compute,
        plot=_violations_plot,
    ),
    Recipe(
        id="fig-ch4-eqn10",
        chapter=CHAPTER,
        caption="Eqn 10 against the exact population gradient of Z along long-sequence training (gradient "
                "descent, eta_Y = 1, eta_Z = 0.1): cosine and magnitude ratio with Theorem 1's coefficients, "
                "and the relative error of Eqn 10 with the coefficients of the measured back-propagated gradient.",
        claims=("C15",),
        params=_eqn10_params,
        work=lambda p: len(p["families"]) * sum(p["checkpoints"]),
        compute=_eqn10_compute,
        plot=_eqn10_plot,
    ),
]
