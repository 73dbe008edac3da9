"""Chapter 7's figures: Syn-Medium, the sparsity of the attention against both learning rates.

The paper's Figures 6, 11 and 12 come from one sweep, the authors' released setting: ``syn_medium(q)``
for ``q`` (``num_query``) in {1, 3, 5, 10}, ``eta_Z`` in {0.5, 1, 2, 3}, ``eta_Y / eta_Z`` in
{1, 2, 5, 10}, seeds 1-10, 100 SGD steps (momentum 0.9, no weight decay), batch 128, ``T = 128``,
l2-normalized attention output, no residual, the ``"uniform"`` initialization. Each dataset is trained
by ONE batched :func:`scansnap.train.train` call over all its (``eta_Z``, ratio, seed) configurations.
The sweep is computed once per process and shared by the three figures (:func:`sweep` caches it by
its parameters). ``fig-ch7-fine-grid`` repeats the entropy measurement on a finer log-spaced grid.

Training runs in float32 (the precision of the authors' runs; half the time of float64) on one
intra-op thread: the numbers do not depend on the machine's thread setting, and on a shared 2-core
machine one thread is the faster choice.

The analysis helpers (:func:`eta_Z_trend`, :func:`ratio_threshold`, :func:`recall_ordering`,
:func:`argmin_ratio`) turn the per-seed entropies and the recall curves into the counts the
chapter's verdicts quote.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from scipy.stats import spearmanr

from scansnap import data, figures, metrics, profiles, train
from scansnap._threads import one_thread
from scansnap.recipes import Progress, Recipe

CHAPTER = "book/chapters/07-syn-medium"
PAPER_NUM_QUERY = [1, 3, 5, 10]
PAPER_ETA_Z = [0.5, 1.0, 2.0, 3.0]
PAPER_RATIOS = [1.0, 2.0, 5.0, 10.0]
PAPER_SEEDS = list(range(1, 11))
SWEEP_KEYS = ("num_query", "eta_Z", "ratio", "seeds", "steps", "batch", "T", "momentum", "init", "dtype")


# ------------------------------------------------------------------------------------------------
# The batched sweep
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepRun:
    """One dataset's batched run, indexed ``[eta_Z, ratio, seed]``.

    Attributes:
        num_query: the dataset ``syn_medium(num_query)``.
        eta_Z, ratio, seeds: the axes, ``(nZ,)``, ``(nR,)``, ``(nS,)``.
        entropy: ``(nZ, nR, nS)`` entropy of ``c_n`` over the distinct tokens, mean over ``n``, after the last step.
        entropy_init: ``(nZ, nR, nS)`` the same at step 0.
        loss: ``(nZ, nR, nS)`` training loss of the last step.
        attention: ``(nZ, nR, nS, K, M)`` float64 final ``f_n = c_n / 1^T c_n`` (Lemma 2).
    """

    num_query: int
    eta_Z: np.ndarray
    ratio: np.ndarray
    seeds: np.ndarray
    entropy: np.ndarray
    entropy_init: np.ndarray
    loss: np.ndarray
    attention: torch.Tensor

    @property
    def classes(self) -> data.SequenceClasses:
        """The dataset."""
        return data.syn_medium(self.num_query)


def configurations(eta_Z: list[float], ratio: list[float], seeds: list[int]) -> dict[str, torch.Tensor]:
    """Every (``eta_Z``, ratio, seed), flattened in that order (seed fastest).

    Returns:
        ``eta_Y`` (``eta_Z * ratio``), ``eta_Z`` and ``seed``, each ``(C,)``.
    """
    z, r, s = np.meshgrid(np.asarray(eta_Z, float), np.asarray(ratio, float), np.asarray(seeds), indexing="ij")
    return {"eta_Y": torch.tensor((z * r).ravel()), "eta_Z": torch.tensor(z.ravel()),
            "seed": torch.tensor(s.ravel(), dtype=torch.long)}




def run_dataset(num_query: int, p: dict, progress: Progress | None = None) -> SweepRun:
    """Train every configuration of ``p`` on ``syn_medium(num_query)`` in one :func:`~scansnap.train.train` call."""
    classes = data.syn_medium(num_query)
    cfg = configurations(p["eta_Z"], p["ratio"], p["seeds"])
    shape = (len(p["eta_Z"]), len(p["ratio"]), len(p["seeds"]))
    with one_thread():
        hist = train.train(
            classes, cfg["eta_Y"], cfg["eta_Z"], seed=cfg["seed"], steps=p["steps"], batch=p["batch"], T=p["T"],
            optimizer="sgd", momentum=p["momentum"], init=p["init"], limit="sampled",
            snapshot_steps=[0, p["steps"]], dtype=getattr(torch, p["dtype"]), callback=progress,
        )
    f0, f = hist.attention[0].double(), hist.attention[-1].double()
    return SweepRun(
        num_query=num_query, eta_Z=np.asarray(p["eta_Z"], float), ratio=np.asarray(p["ratio"], float),
        seeds=np.asarray(p["seeds"]),
        entropy=metrics.attention_entropy(f, classes).numpy().reshape(shape),
        entropy_init=metrics.attention_entropy(f0, classes).numpy().reshape(shape),
        loss=hist.loss[:, -1].double().numpy().reshape(shape),
        attention=f.reshape(*shape, classes.K, classes.M),
    )


_CACHE: dict[str, dict[int, SweepRun]] = {}


def sweep(p: dict, progress: Progress | None = None) -> dict[int, SweepRun]:
    """The batched sweep of ``p`` (its :data:`SWEEP_KEYS`), one :class:`SweepRun` per ``num_query``.

    Computed once per process for given parameters (Figures 6, 11 and 12 share it); a later call
    with the same parameters returns the same object without training (and without progress calls).
    """
    key = json.dumps({k: p[k] for k in SWEEP_KEYS}, sort_keys=True)
    if key not in _CACHE:
        runs = {q: run_dataset(q, p, progress) for q in p["num_query"]}
        _CACHE.clear()  # keep one sweep: they are large
        _CACHE[key] = runs
    return _CACHE[key]


def _training(profile: str) -> dict:
    return dict(steps=profiles.pick(smoke=10, book=100, paper=100, profile=profile),
                batch=profiles.pick(smoke=32, book=128, paper=128, profile=profile),
                T=128, momentum=0.9, init="uniform", dtype="float32")


def _paper_params(profile: str) -> dict:
    return dict(
        num_query=profiles.pick(smoke=[1, 3], book=PAPER_NUM_QUERY, paper=PAPER_NUM_QUERY, profile=profile),
        eta_Z=profiles.pick(smoke=[0.5, 2.0], book=PAPER_ETA_Z, paper=PAPER_ETA_Z, profile=profile),
        ratio=profiles.pick(smoke=[1.0, 5.0], book=PAPER_RATIOS, paper=PAPER_RATIOS, profile=profile),
        seeds=profiles.pick(smoke=[1, 2], book=PAPER_SEEDS, paper=PAPER_SEEDS, profile=profile),
        **_training(profile),
    )


def _recall_params(profile: str) -> dict:
    return dict(_paper_params(profile), threshold_max=0.5,
                threshold_num=profiles.pick(smoke=26, book=101, paper=101, profile=profile))


def thresholds(p: dict) -> np.ndarray:
    """The threshold grid ``linspace(0, threshold_max, threshold_num)`` of Figures 11-12."""
    return np.linspace(0.0, p["threshold_max"], p["threshold_num"])


def _fine_params(profile: str) -> dict:
    return dict(
        num_query=profiles.pick(smoke=[1], book=[3, 10], paper=PAPER_NUM_QUERY, profile=profile),
        eta_Z=profiles.pick(smoke=[0.5, 1.0, 2.0], book=_geom(0.25, 4.0, 7), paper=_geom(0.25, 4.0, 7),
                            profile=profile),
        ratio=profiles.pick(smoke=[0.5, 2.0, 8.0], book=_geom(0.25, 16.0, 7), paper=_geom(0.25, 16.0, 7),
                            profile=profile),
        seeds=profiles.pick(smoke=[1], book=[1, 2, 3], paper=PAPER_SEEDS, profile=profile),
        **_training(profile),
    )


def _geom(lo: float, hi: float, num: int) -> list[float]:
    return [round(float(v), 4) for v in np.geomspace(lo, hi, num)]


def _work(p: dict) -> int:
    return len(p["num_query"]) * p["steps"]


# ------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------


def entropy_table(runs: dict[int, SweepRun]) -> dict[str, np.ndarray]:
    """One row per (``num_query``, ``eta_Z``, ratio): mean and std (ddof 1) over seeds, number of seeds."""
    cols: dict[str, list] = {k: [] for k in ("num_query", "eta_Z", "ratio", "eta_Y", "entropy_mean", "entropy_std",
                                             "seeds", "entropy_init_mean", "loss_final_mean")}
    for q, run in runs.items():
        nS = len(run.seeds)
        for i, z in enumerate(run.eta_Z):
            for j, r in enumerate(run.ratio):
                h = run.entropy[i, j]
                for key, value in (("num_query", q), ("eta_Z", z), ("ratio", r), ("eta_Y", z * r),
                                   ("entropy_mean", h.mean()), ("entropy_std", h.std(ddof=1) if nS > 1 else 0.0),
                                   ("seeds", nS), ("entropy_init_mean", run.entropy_init[i, j].mean()),
                                   ("loss_final_mean", run.loss[i, j].mean())):
                    cols[key].append(value)
    return {k: np.asarray(v) for k, v in cols.items()}


def recall_curves(run: SweepRun, taus: np.ndarray, renormalize: bool = False) -> np.ndarray:
    """``(nZ, nR, nS, S)`` recall of the distinct tokens against the thresholds ``taus`` (Appendix G)."""
    r = metrics.recall_at_threshold(run.attention, run.classes, torch.tensor(taus), renormalize=renormalize)
    return r.numpy()


def recall_table(runs: dict[int, SweepRun], taus: np.ndarray) -> dict[str, np.ndarray]:
    """One row per (``num_query``, ``eta_Z``, ratio, threshold): recall mean and std over seeds, and the
    mean recall of the renormalized distinct attention."""
    cols: dict[str, list] = {k: [] for k in ("num_query", "eta_Z", "ratio", "eta_Y", "threshold", "recall_mean",
                                             "recall_std", "recall_renormalized_mean")}
    for q, run in runs.items():
        raw, renorm = recall_curves(run, taus), recall_curves(run, taus, renormalize=True)
        nS = len(run.seeds)
        for i, z in enumerate(run.eta_Z):
            for j, r in enumerate(run.ratio):
                mean, std = raw[i, j].mean(0), raw[i, j].std(0, ddof=1) if nS > 1 else np.zeros(len(taus))
                cols["num_query"] += [q] * len(taus)
                cols["eta_Z"] += [z] * len(taus)
                cols["ratio"] += [r] * len(taus)
                cols["eta_Y"] += [z * r] * len(taus)
                cols["threshold"] += list(taus)
                cols["recall_mean"] += list(mean)
                cols["recall_std"] += list(std)
                cols["recall_renormalized_mean"] += list(renorm[i, j].mean(0))
    return {k: np.asarray(v) for k, v in cols.items()}


def cell_grid(table: dict[str, np.ndarray], value: str) -> tuple[dict[int, np.ndarray], np.ndarray, np.ndarray]:
    """``{num_query: (nZ, nR) array of value}`` and the sorted ``eta_Z``, ratio axes of a per-cell table."""
    zs, rs = np.unique(table["eta_Z"]), np.unique(table["ratio"])
    out = {}
    for q in np.unique(table["num_query"]):
        grid = np.full((len(zs), len(rs)), np.nan)
        sel = table["num_query"] == q
        for z, r, v in zip(table["eta_Z"][sel], table["ratio"][sel], table[value][sel], strict=True):
            grid[np.searchsorted(zs, z), np.searchsorted(rs, r)] = v
        out[int(q)] = grid
    return out, zs, rs


# ------------------------------------------------------------------------------------------------
# Analysis for the verdicts
# ------------------------------------------------------------------------------------------------


def _paired_t(a: np.ndarray, b: np.ndarray) -> float:
    """Paired t statistic of ``b - a`` over seeds (same seed: same initialization and batches)."""
    d = b - a
    if len(d) < 2:
        return float("nan")
    sd, mean = d.std(ddof=1), d.mean()
    if sd == 0:
        return 0.0 if mean == 0 else float(np.copysign(np.inf, mean))
    return float(mean / (sd / np.sqrt(len(d))))


def eta_Z_trend(runs: dict[int, SweepRun]) -> dict:
    """Claim C38: at each (``num_query``, ratio), does the mean entropy decrease as ``eta_Z`` grows?

    Returns counts: ``rows`` / ``rows_holding`` (strictly decreasing over the whole ``eta_Z`` axis),
    ``pairs`` / ``pairs_decreasing`` (consecutive ``eta_Z``) / ``pairs_significant`` (paired t < -2
    over seeds), and ``failures``: the rows that do not hold, as ``(num_query, ratio)``.
    """
    out = dict(rows=0, rows_holding=0, pairs=0, pairs_decreasing=0, pairs_significant=0, failures=[])
    for q, run in runs.items():
        mean = run.entropy.mean(-1)
        for j, r in enumerate(run.ratio):
            steps = np.diff(mean[:, j])
            out["rows"] += 1
            out["rows_holding"] += bool((steps < 0).all())
            if not (steps < 0).all():
                out["failures"].append((q, float(r)))
            for i in range(len(run.eta_Z) - 1):
                out["pairs"] += 1
                out["pairs_decreasing"] += bool(steps[i] < 0)
                out["pairs_significant"] += _paired_t(run.entropy[i, j], run.entropy[i + 1, j]) < -2
    return out


def ratio_threshold(runs: dict[int, SweepRun]) -> dict:
    """Claim C39: at fixed (``num_query``, ``eta_Z``), does the entropy rise with the ratio past a threshold?

    Per row the argmin of the mean entropy over the ratios; the threshold ``rho*`` is the most common
    argmin (the smallest on a tie). A row holds when its mean entropy strictly increases over every
    ratio ``>= rho*``. Returns ``threshold``, ``argmin`` (``{num_query: [argmin ratio per eta_Z]}``),
    ``rows`` / ``rows_holding``, ``pairs`` / ``pairs_rising`` / ``pairs_significant`` (paired t > 2)
    over consecutive ratios ``>= rho*``, and ``failures`` as ``(num_query, eta_Z)``.
    """
    argmin = {q: [float(run.ratio[k]) for k in run.entropy.mean(-1).argmin(axis=1)] for q, run in runs.items()}
    counts = Counter(r for v in argmin.values() for r in v)
    top = max(counts.values())
    rho = min(r for r, c in counts.items() if c == top)
    out = dict(threshold=rho, argmin=argmin, rows=0, rows_holding=0, pairs=0, pairs_rising=0, pairs_significant=0,
               failures=[])
    for q, run in runs.items():
        mean = run.entropy.mean(-1)
        past = np.nonzero(run.ratio >= rho)[0]
        for i, z in enumerate(run.eta_Z):
            steps = np.diff(mean[i, past])
            out["rows"] += 1
            out["rows_holding"] += bool((steps > 0).all())
            if not (steps > 0).all():
                out["failures"].append((q, float(z)))
            for a, b in zip(past[:-1], past[1:], strict=True):
                out["pairs"] += 1
                out["pairs_rising"] += bool(mean[i, b] > mean[i, a])
                out["pairs_significant"] += _paired_t(run.entropy[i, a], run.entropy[i, b]) > 2
    return out


def recall_ordering(runs: dict[int, SweepRun], taus: np.ndarray, threshold: float, renormalize: bool = False) -> dict:
    """Claim C42: are the recall curves ordered as the paper says, and as the entropies of Figure 6?

    The descent of a mean recall curve is summarized by its reach (:func:`scansnap.metrics.recall_reach`
    at level ``1 / |G_DT(n)|``): the threshold up to which one distinct token per class is kept on
    average; a sparser attention has a larger reach. Groups of Figure 11 fix (``num_query``,
    ``eta_Z``) and vary the ratio; groups of Figure 12 fix (``num_query``, ratio) and vary ``eta_Z``.

    Returns counts over groups: ``fig11_paper`` (reach strictly decreasing in the ratio: smaller
    ``eta_Y``, sparser), ``fig11_past`` (the same over ratios ``>= threshold``), ``fig12_paper``
    (reach strictly increasing in ``eta_Z``), ``consistent`` (the reach orders the curves exactly as
    the mean entropy does, reversed), with the group totals, the mean Spearman correlation of reach
    with minus the entropy, and ``reach`` (``{num_query: (nZ, nR)}``).
    """
    out = dict(fig11_paper=0, fig11_past=0, fig11_groups=0, fig12_paper=0, fig12_groups=0, consistent=0, groups=0,
               spearman=[], reach={})
    for q, run in runs.items():
        level = 1.0 / int(run.classes.distinct_mask()[0].sum())
        reach = metrics.recall_reach(recall_curves(run, taus, renormalize).mean(2), taus, level)
        out["reach"][q] = reach
        mean = run.entropy.mean(-1)
        past = run.ratio >= threshold
        for i in range(len(run.eta_Z)):
            out["fig11_groups"] += 1
            out["fig11_paper"] += bool((np.diff(reach[i]) < 0).all())
            out["fig11_past"] += bool((np.diff(reach[i, past]) < 0).all())
        for j in range(len(run.ratio)):
            out["fig12_groups"] += 1
            out["fig12_paper"] += bool((np.diff(reach[:, j]) > 0).all())
        for rea, ent in [(reach[i], mean[i]) for i in range(len(run.eta_Z))] + \
                        [(reach[:, j], mean[:, j]) for j in range(len(run.ratio))]:
            out["groups"] += 1
            out["consistent"] += bool((np.argsort(rea) == np.argsort(-ent)).all())
            if len(rea) > 2:
                out["spearman"].append(float(spearmanr(rea, -ent).statistic))
    out["spearman_mean"] = float(np.mean(out["spearman"])) if out["spearman"] else float("nan")
    return out


def argmin_ratio(grid: np.ndarray, ratios: np.ndarray) -> np.ndarray:
    """Per row of ``grid`` ``(nZ, nR)`` the ratio of least entropy, refined by a parabola in ``log(ratio)``
    through the grid minimum and its two neighbours (the grid value itself at an edge)."""
    x = np.log(np.asarray(ratios, float))
    out = np.empty(grid.shape[0])
    for i, row in enumerate(grid):
        k = int(np.argmin(row))
        if k in (0, len(row) - 1):
            out[i] = x[k]
            continue
        (x0, x1, x2), (y0, y1, y2) = x[k - 1:k + 2], row[k - 1:k + 2]
        denom = (x0 - x1) * (x0 - x2) * (x1 - x2)
        A = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / denom
        B = (x2**2 * (y0 - y1) + x1**2 * (y2 - y0) + x0**2 * (y1 - y2)) / denom
        out[i] = -B / (2 * A) if A > 0 else x[k]
    return np.exp(out)


def threshold_scaling(grid: np.ndarray, eta_Z: np.ndarray, ratios: np.ndarray) -> dict:
    """Is the least entropy at a fixed ratio ``eta_Y / eta_Z`` or at a fixed ``eta_Y``?

    Fits ``log(eta_Y at least entropy) = s log(eta_Z) + c`` by least squares over the rows whose
    minimum is inside the ratio grid (:func:`argmin_ratio`; a minimum at an edge is not resolved):
    ``s = 1`` means a fixed ratio, ``s = 0`` a fixed ``eta_Y`` (what Eqn 14 predicts).

    Returns:
        ``best_ratio`` ``(nZ,)``, ``interior`` ``(nZ,)`` bool, ``slope`` and its standard error ``slope_se``
        (nan with fewer than 3 interior rows).
    """
    best = argmin_ratio(grid, ratios)
    k = np.argmin(grid, axis=1)
    interior = (k > 0) & (k < grid.shape[1] - 1)
    out = dict(best_ratio=best, interior=interior, slope=float("nan"), slope_se=float("nan"))
    if interior.sum() >= 3:
        x, y = np.log(np.asarray(eta_Z, float)[interior]), np.log(best[interior] * np.asarray(eta_Z, float)[interior])
        slope, intercept = np.polyfit(x, y, 1)
        resid = y - (slope * x + intercept)
        out["slope"] = float(slope)
        out["slope_se"] = float(np.sqrt(resid @ resid / (len(x) - 2) / ((x - x.mean()) @ (x - x.mean()))))
    return out


# ------------------------------------------------------------------------------------------------
# Figures
# ------------------------------------------------------------------------------------------------


def _fig6_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    return entropy_table(sweep(p, progress))


def _panel_title(q: int) -> str:
    return f"q = {q} queries: K = {2 * q}, M = {data.syn_medium(q).M}"


def _fig6_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    figures.set_style()
    qs = np.unique(d["num_query"])
    fig, axes = plt.subplots(1, len(qs), figsize=(3.2 * len(qs), 3.3), sharey=True, squeeze=False)
    for ax, q in zip(axes[0], qs, strict=True):
        for k, z in enumerate(np.unique(d["eta_Z"])):
            sel = (d["num_query"] == q) & (d["eta_Z"] == z)
            ax.errorbar(d["ratio"][sel], d["entropy_mean"][sel], d["entropy_std"][sel], color=f"C{k}", marker="o",
                        ms=3, capsize=2, label=rf"$\eta_Z = {z:g}$")
        ax.axvline(1, color="k", ls="--", lw=0.5)
        ax.set(xscale="log", xlabel=r"$\eta_Y / \eta_Z$", title=_panel_title(int(q)))
        ax.set_xticks(np.unique(d["ratio"]), [f"{r:g}" for r in np.unique(d["ratio"])])
        ax.minorticks_off()
    axes[0, 0].set_ylabel("entropy of $c_n$ over distinct tokens")
    axes[0, 0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def _recall_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    return recall_table(sweep(p, progress), thresholds(p))


def _recall_plot(d: dict[str, np.ndarray], p: dict, vary: str) -> Figure:
    """A grid of panels, one row per ``num_query``; columns fix the other learning-rate axis; lines vary ``vary``."""
    figures.set_style()
    fixed = "ratio" if vary == "eta_Z" else "eta_Z"
    qs, cols, lines = np.unique(d["num_query"]), np.unique(d[fixed]), np.unique(d[vary])
    fig, axes = plt.subplots(len(qs), len(cols), figsize=(2.6 * len(cols), 2.1 * len(qs)), sharey=True,
                             squeeze=False)
    label = {"eta_Z": r"\eta_Z", "ratio": r"\eta_Y / \eta_Z"}
    colors = plt.get_cmap("viridis")(np.linspace(0.0, 0.85, len(lines)))
    for a, q in enumerate(qs):
        in_row = (d["num_query"] == q) & (d["recall_mean"] >= 0.01)  # the row's axis ends where every curve is ~0
        xmax = min(p["threshold_max"], 1.1 * d["threshold"][in_row].max()) if in_row.any() else p["threshold_max"]
        for b, c in enumerate(cols):
            ax = axes[a, b]
            for k, v in enumerate(lines):
                sel = (d["num_query"] == q) & (d[fixed] == c) & (d[vary] == v)
                ax.plot(d["threshold"][sel], d["recall_mean"][sel], color=colors[k], lw=1.2,
                        label=rf"${label[vary]} = {v:g}$")
            ax.set_xlim(0, xmax)
            ax.set_title(rf"$q = {q}$, ${label[fixed]} = {c:g}$", fontsize="small")
            if a == len(qs) - 1:
                ax.set_xlabel("threshold")
            if b == 0:
                ax.set_ylabel("recall")
    axes[0, -1].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def _fine_compute(p: dict, progress: Progress | None = None) -> dict[str, np.ndarray]:
    return entropy_table({q: run_dataset(q, p, progress) for q in p["num_query"]})


def _fine_plot(d: dict[str, np.ndarray], p: dict) -> Figure:
    figures.set_style()
    grids, zs, rs = cell_grid(d, "entropy_mean")
    fig, axes = plt.subplots(1, len(grids), figsize=(4.2 * len(grids), 3.6), squeeze=False)
    edges = lambda v: np.exp(np.concatenate([[1.5 * np.log(v[0]) - 0.5 * np.log(v[1])],  # noqa: E731
                                             (np.log(v[:-1]) + np.log(v[1:])) / 2,
                                             [1.5 * np.log(v[-1]) - 0.5 * np.log(v[-2])]]))
    for ax, (q, grid) in zip(axes[0], grids.items(), strict=True):
        mesh = ax.pcolormesh(edges(rs), edges(zs), grid, cmap="viridis", shading="flat")
        fig.colorbar(mesh, ax=ax, label="entropy")
        best = argmin_ratio(grid, rs)
        ax.plot(best, zs, "o", color="white", mec="k", ms=5, label=r"least entropy at each $\eta_Z$")
        mid = len(zs) // 2
        ax.plot(best[mid] * zs[mid] / zs, zs, "--", color="white", lw=1,
                label=r"constant $\eta_Y$ (through the middle row)")
        ax.set(xscale="log", yscale="log", xlabel=r"$\eta_Y / \eta_Z$", ylabel=r"$\eta_Z$", title=_panel_title(q),
               xlim=(edges(rs)[0], edges(rs)[-1]), ylim=(edges(zs)[0], edges(zs)[-1]))
        ax.set_xticks(rs, [f"{r:.3g}" for r in rs])
        ax.set_yticks(zs, [f"{z:.3g}" for z in zs])
        ax.minorticks_off()
        ax.grid(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize="small", facecolor="0.85")
    return fig


_SWEEP_TEXT = ("Syn-Medium (num_query query tokens, 2 next tokens each, 10 common and 10 distinct tokens per "
               "next token), 100 SGD steps (momentum 0.9), batch 128, T = 128, uniform initialization")

RECIPES = [
    Recipe(
        id="fig-paper-6",
        chapter=CHAPTER,
        caption=f"Paper Figure 6: entropy of the attention c_n over the distinct tokens (mean over next tokens) "
                f"after training, against eta_Y / eta_Z, one line per eta_Z; mean and standard deviation over "
                f"seeds. {_SWEEP_TEXT}.",
        claims=("C38", "C39"),
        params=_paper_params,
        work=_work,
        compute=_fig6_compute,
        plot=_fig6_plot,
    ),
    Recipe(
        id="fig-paper-11",
        chapter=CHAPTER,
        caption=f"Paper Figure 11: recall of the distinct tokens against the attention threshold (Appendix G), "
                f"mean over seeds; lines vary eta_Y / eta_Z at fixed eta_Z (columns). {_SWEEP_TEXT}.",
        claims=("C42",),
        params=_recall_params,
        work=_work,
        compute=_recall_compute,
        plot=lambda d, p: _recall_plot(d, p, vary="ratio"),
    ),
    Recipe(
        id="fig-paper-12",
        chapter=CHAPTER,
        caption=f"Paper Figure 12: recall of the distinct tokens against the attention threshold (Appendix G), "
                f"mean over seeds; lines vary eta_Z at fixed eta_Y / eta_Z (columns). {_SWEEP_TEXT}.",
        claims=("C42",),
        params=_recall_params,
        work=_work,
        compute=_recall_compute,
        plot=lambda d, p: _recall_plot(d, p, vary="eta_Z"),
    ),
    Recipe(
        id="fig-ch7-fine-grid",
        chapter=CHAPTER,
        caption="Extension of Figure 6: mean entropy of the attention over the distinct tokens on a log-spaced "
                "7 x 7 grid of eta_Z and eta_Y / eta_Z (book profile: fewer datasets and seeds), with the ratio "
                f"of least entropy per eta_Z. {_SWEEP_TEXT}.",
        claims=("C39",),
        params=_fine_params,
        work=_work,
        compute=_fine_compute,
        plot=_fine_plot,
    ),
]
