"""Chapter 7's sweep: Syn-Medium, the sparsity of the attention against both learning rates
(the paper's Figures 6, 11 and 12; claims C38, C39, C42).

:data:`SWEEP` is the authors' released sweep: ``syn_medium(q)`` for ``q`` in {1, 3, 5, 10}, ``eta_Z`` in
{0.5, 1, 2, 3}, ``eta_Y / eta_Z`` in {1, 2, 5, 10}, seeds 1-10, with their protocol
(:class:`scansnap.sweep.GridConfig`). ONE run makes the three figures: each dataset is trained by one
batched call over all its configurations (:func:`scansnap.sweep.train_grid`), then the entropy of
Figure 6 and two recall curves per run are measured: the paper's (Appendix G: every attention entry of
sampled sequences, :func:`scansnap.metrics.entry_recall_at_threshold`) and the book's earlier one on
``f_n`` (:func:`scansnap.metrics.recall_at_threshold`), after the last step and at step 0.
:func:`sweep_verdicts` judges C38, C39 and C42 on **training-sampled** evidence with the rules of
:mod:`scansnap.experiments.syn_medium_rules`; the statistics come from :mod:`scansnap.stats`. Each rule is
also judged on its control, the same measures on the same runs with their learning rates permuted across runs
(:func:`permuted`: what a random assignment of rates to runs gives). A run below the authors' sweep
(``SweepConfig.GATED``) labels its verdicts with the cuts; one with fewer steps is inconclusive either way (the
rules' ``depends_on``). The finer grid of the chapter is :mod:`scansnap.experiments.ch07_fine_grid`.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import data, figures, metrics, stats
from scansnap.experiments.base import Experiment, FigureSpec
from scansnap.experiments.syn_medium_rules import (
    RULE_C38,
    RULE_C39,
    RULE_C42,
    EtaZTrend,
    RatioTrend,
    RecallOrder,
    permuted_cells,
)
from scansnap.experiments.syn_medium_run import SweepConfig, SweepResult, SweepRun, run_sweep
from scansnap.sweep import GridConfig, GridRun
from scansnap.verdicts import Verdict


def permuted(result: SweepResult) -> SweepResult:
    """The same runs with their learning rates permuted across runs (per dataset and seed,
    :func:`~scansnap.experiments.syn_medium_rules.permuted_cells`): the control of the rules."""
    runs = tuple(SweepRun(r.num_query, *permuted_cells((r.entropy, r.entropy_init, r.loss, r.recall_entry, r.recall_fn,
                                                        r.recall_entry_init, r.recall_fn_init), r.num_query))
                 for r in result.runs)
    return SweepResult(result.config, runs)


# ------------------------------------------------------------------------------------------------
# Analysis (statistics from scansnap.stats) and verdicts
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepAnalysis:
    """The numbers behind C38, C39 and C42.

    Attributes:
        eta_Z_trend: entropy along ``eta_Z`` at each (dataset, ratio) row, direction down (C38).
        threshold: the ratio of least mean entropy most common over the (dataset, ``eta_Z``) rows.
        argmin: ``{num_query: (nZ,) ratio of least mean entropy per eta_Z}``.
        near_threshold: rows whose least entropy is within one grid step of ``threshold``.
        ratio_trend: entropy along the ratios ``>= threshold`` at each (dataset, ``eta_Z``) row, up (C39).
        level: recall level of the reach (``1 / |G_DT(n)|``).
        reach: ``{num_query: (nZ, nR)}`` threshold where the mean per-entry recall curve falls below ``level``.
        fig12_rows, fig12_rising: (dataset, ratio) rows; those whose reach rises at every ``eta_Z`` step.
        fig11_rows, fig11_falling: (dataset, ``eta_Z``) rows; those whose reach falls at every ratio step
            from ``threshold`` on.
        fig11_falling_all: the same over all ratios (below the threshold Figure 6 also falls).
        spearman: ``{num_query: rank correlation of reach with minus the mean entropy over the cells}``.
        spearman_fn: the same for the reach of the book's recall on ``f_n``.
    """

    eta_Z_trend: stats.TrendSummary
    threshold: float
    argmin: dict[int, np.ndarray]
    near_threshold: int
    ratio_trend: stats.TrendSummary
    level: float
    reach: dict[int, np.ndarray]
    fig12_rows: int
    fig12_rising: int
    fig11_rows: int
    fig11_falling: int
    fig11_falling_all: int
    spearman: dict[int, float]
    spearman_fn: dict[int, float]


def _reach(curves: np.ndarray, taus: np.ndarray, level: float) -> np.ndarray:
    return metrics.recall_reach(curves.mean(axis=2), taus, level)


def _monotone(rows: list[np.ndarray], sign: float) -> int:
    return sum(bool(len(r) > 1 and (sign * np.diff(r) > 0).all()) for r in rows)


def analyze(result: SweepResult) -> SweepAnalysis:
    """Trend counts, the threshold ratio, and the recall reach of every cell (pure)."""
    c, ratios = result.config, np.asarray(result.config.ratio)
    runs = result.runs
    eta_Z_trend = stats.trend_summary([r.entropy[:, j] for r in runs for j in range(len(ratios))], "down")
    threshold, at = stats.modal_argmin(np.concatenate([r.entropy.mean(-1) for r in runs]), ratios)
    step = np.abs(np.searchsorted(ratios, at) - np.searchsorted(ratios, threshold))
    past = ratios >= threshold
    ratio_trend = stats.trend_summary([r.entropy[i, past] for r in runs for i in range(len(c.eta_Z))], "up")
    level = 1.0 / int(data.syn_medium(runs[0].num_query).distinct_mask()[0].sum())
    reach = {r.num_query: _reach(r.recall_entry, c.entry_thresholds(), level) for r in runs}
    reach_fn = {r.num_query: _reach(r.recall_fn, c.fn_thresholds(), level) for r in runs}
    fig12 = [reach[r.num_query][:, j] for r in runs for j in range(len(ratios))]
    fig11 = [reach[r.num_query][i] for r in runs for i in range(len(c.eta_Z))]

    def rank(x: dict[int, np.ndarray]) -> dict[int, float]:
        out = {}
        for r in runs:
            a, b = x[r.num_query].ravel(), -r.entropy.mean(-1).ravel()
            ok = np.isfinite(a)
            out[r.num_query] = stats.spearman(a[ok], b[ok]) if ok.sum() >= 3 else float("nan")
        return out

    return SweepAnalysis(
        eta_Z_trend=eta_Z_trend, threshold=threshold,
        argmin={r.num_query: at[k * len(c.eta_Z):(k + 1) * len(c.eta_Z)] for k, r in enumerate(runs)},
        near_threshold=int((step <= 1).sum()), ratio_trend=ratio_trend, level=level, reach=reach,
        fig12_rows=len(fig12), fig12_rising=_monotone(fig12, 1.0), fig11_rows=len(fig11),
        fig11_falling=_monotone([x[past] for x in fig11], -1.0), fig11_falling_all=_monotone(fig11, -1.0),
        spearman=rank(reach), spearman_fn=rank(reach_fn))


def _mean(values: dict[int, float]) -> float:
    """Mean of the finite values (nan when none is finite)."""
    v = np.array(list(values.values()), dtype=float)
    return float(v[np.isfinite(v)].mean()) if np.isfinite(v).any() else float("nan")


def measures(a: SweepAnalysis) -> tuple[EtaZTrend, RatioTrend, RecallOrder]:
    """The measures of C38, C39 and C42 from an analysis (:func:`analyze`)."""
    e, r = a.eta_Z_trend, a.ratio_trend
    return (EtaZTrend(e.share_rows, e.share_significant, e.median_effect, e.rows, e.steps, e.steps_along),
            RatioTrend(r.share_rows, r.share_significant, r.median_effect, a.near_threshold / r.rows, a.threshold,
                       r.rows, r.steps, r.steps_along),
            RecallOrder(a.fig12_rising / a.fig12_rows, a.fig11_falling / a.fig11_rows, _mean(a.spearman),
                        a.fig11_falling_all / a.fig11_rows, _mean(a.spearman_fn)))


def sweep_verdicts(result: SweepResult) -> list[Verdict]:
    """C38, C39 and C42 from the sweep (training-sampled evidence), each against the same runs with their learning
    rates permuted (:func:`permuted`)."""
    c, a = result.config, analyze(result)
    m, m0 = measures(a), measures(analyze(permuted(result)))
    argmin = "; ".join(f"q={q}: {np.round(v, 3).tolist()}" for q, v in a.argmin.items())
    link6, link11 = SWEEP.link("fig-paper-6"), SWEEP.link("fig-paper-11")
    return [RULE_C38.judge(m[0], c, control=m0[0], link=link6),
            RULE_C39.judge(m[1], c, control=m0[1], details=f"ratio of least entropy per eta_Z: {argmin}", link=link6),
            RULE_C42.judge(m[2], c, control=m0[2], link=link11)]


# ------------------------------------------------------------------------------------------------
# Tables and figures
# ------------------------------------------------------------------------------------------------


def _cells(c: GridConfig, runs: tuple[GridRun, ...]):
    """Every (run, i, j, num_query, eta_Z, ratio) cell, in table order."""
    for run in runs:
        for i, z in enumerate(c.eta_Z):
            for j, r in enumerate(c.ratio):
                yield run, i, j, run.num_query, z, r


def entropy_table(c: GridConfig, runs: tuple[GridRun, ...]) -> dict[str, np.ndarray]:
    """One row per (``num_query``, ``eta_Z``, ratio): entropy mean and std (ddof 1) over seeds, seeds, the
    mean entropy at step 0 and the mean final loss."""
    nS = len(c.seeds)
    rows = [(q, z, r, z * r, run.entropy[i, j].mean(), run.entropy[i, j].std(ddof=1) if nS > 1 else 0.0, nS,
             run.entropy_init[i, j].mean(), run.loss[i, j].mean()) for run, i, j, q, z, r in _cells(c, runs)]
    names = ("num_query", "eta_Z", "ratio", "eta_Y", "entropy_mean", "entropy_std", "seeds", "entropy_init_mean",
             "loss_final_mean")
    return {k: np.asarray(v) for k, v in zip(names, zip(*rows, strict=True), strict=True)}


def fig6_table(result: SweepResult) -> dict[str, np.ndarray]:
    """The data of Figure 6 (:func:`entropy_table`)."""
    return entropy_table(result.config, result.runs)


def recall_table(result: SweepResult) -> dict[str, np.ndarray]:
    """One row per (``num_query``, ``eta_Z``, ratio, threshold): the paper's recall (mean and std over seeds)
    on its thresholds, and the mean recall of ``f_n`` on its own thresholds."""
    c = result.config
    taus, taus_fn, R = c.entry_thresholds(), c.fn_thresholds(), c.thresholds
    cols: dict[str, list] = {k: [] for k in ("num_query", "eta_Z", "ratio", "eta_Y", "threshold", "recall_mean",
                                             "recall_std", "threshold_fn", "recall_fn_mean")}
    for run, i, j, q, z, r in _cells(c, result.runs):
        e, fn = run.recall_entry[i, j], run.recall_fn[i, j]
        for key, v in (("num_query", [q] * R), ("eta_Z", [z] * R), ("ratio", [r] * R), ("eta_Y", [z * r] * R),
                       ("threshold", taus), ("recall_mean", e.mean(0)),
                       ("recall_std", e.std(0, ddof=1) if e.shape[0] > 1 else np.zeros(R)),
                       ("threshold_fn", taus_fn), ("recall_fn_mean", fn.mean(0))):
            cols[key] += list(v)
    return {k: np.asarray(v) for k, v in cols.items()}


def panel_title(q: int) -> str:
    """``"q = 3 queries: K = 6, M = 79"``."""
    return f"q = {q} queries: K = {2 * q}, M = {data.syn_medium(q).M}"


def plot_fig6(result: SweepResult) -> Figure:
    """Entropy against ``eta_Y / eta_Z``, one line per ``eta_Z``, one panel per dataset (error bars: std)."""
    figures.set_style()
    d, c = fig6_table(result), result.config
    fig, axes = plt.subplots(1, len(c.num_query), figsize=(3.2 * len(c.num_query), 3.6), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, q in zip(axes[0], c.num_query, strict=True):
        for k, z in enumerate(c.eta_Z):
            sel = (d["num_query"] == q) & (d["eta_Z"] == z)
            ax.errorbar(d["ratio"][sel], d["entropy_mean"][sel], d["entropy_std"][sel], color=f"C{k}", marker="o",
                        ms=3, capsize=2, label=rf"$\eta_Z = {z:g}$")
        ax.axvline(1, color="k", ls="--", lw=0.5)
        ax.set(xscale="log", xlabel=r"$\eta_Y / \eta_Z$", title=panel_title(q))
        ax.set_xticks(c.ratio, [f"{r:g}" for r in c.ratio])
        ax.minorticks_off()
    axes[0, 0].set_ylabel("entropy of $c_n$ over distinct tokens")
    # below the panels: inside the first one it covered the lower ends of error bars
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncol=len(c.eta_Z),
               fontsize="small")
    return fig


def plot_recall(result: SweepResult, vary: str) -> Figure:
    """The paper's recall curves (mean over seeds): one row of panels per dataset; columns fix the other
    learning-rate axis; lines vary ``vary`` (``"ratio"``: Figure 11, ``"eta_Z"``: Figure 12)."""
    figures.set_style()
    c, d = result.config, recall_table(result)
    fixed = "ratio" if vary == "eta_Z" else "eta_Z"
    cols, lines = getattr(c, fixed), getattr(c, vary)
    fig, axes = plt.subplots(len(c.num_query), len(cols), figsize=(2.6 * len(cols), 2.1 * len(c.num_query)),
                             sharey=True, squeeze=False)
    label = {"eta_Z": r"\eta_Z", "ratio": r"\eta_Y / \eta_Z"}
    colors = plt.get_cmap("viridis")(np.linspace(0.0, 0.85, len(lines)))
    for a, q in enumerate(c.num_query):
        in_row = (d["num_query"] == q) & (d["recall_mean"] >= 0.01)  # the row's axis ends where every curve is ~0
        xmax = min(c.entry_threshold_max, 1.1 * d["threshold"][in_row].max()) if in_row.any() else None
        for b, v_fixed in enumerate(cols):
            ax = axes[a, b]
            for k, v in enumerate(lines):
                sel = (d["num_query"] == q) & (d[fixed] == v_fixed) & (d[vary] == v)
                ax.plot(d["threshold"][sel], d["recall_mean"][sel], color=colors[k], lw=1.2,
                        label=rf"${label[vary]} = {v:g}$")
            ax.set_xlim(0, xmax)
            ax.set_title(rf"$q = {q}$, ${label[fixed]} = {v_fixed:g}$", fontsize="small")
            ax.set_xlabel("threshold" if a == len(c.num_query) - 1 else "")
            ax.set_ylabel("recall" if b == 0 else "")
    axes[0, -1].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


_PROTOCOL_TEXT = ("Syn-Medium (q query tokens, 2 next tokens each, 10 common and 10 distinct tokens per next token), "
                  "SGD with momentum from the uniform initialization (the run's protocol is in its provenance)")
_RECALL_TEXT = ("recall of the distinct tokens against a threshold on the attention entries (the query's softmax "
                "value on each position of sampled sequences, Appendix G), mean over seeds")

SWEEP = Experiment(
    id="ch7-sweep", config=SweepConfig, result=SweepResult, run=run_sweep,
    verdicts=sweep_verdicts, work=lambda c: len(c.num_query) * c.steps,
    figures=(
        FigureSpec(id="fig-paper-6", claims=("C38", "C39"), plot=plot_fig6, table=fig6_table,
                   caption="Paper Figure 6: entropy of the attention c_n over the distinct tokens (mean over next "
                           "tokens) after training, against eta_Y / eta_Z, one line per eta_Z; mean and standard "
                           f"deviation over seeds. {_PROTOCOL_TEXT}."),
        FigureSpec(id="fig-paper-11", claims=("C42",), plot=lambda r: plot_recall(r, "ratio"), table=recall_table,
                   caption=f"Paper Figure 11: {_RECALL_TEXT}; lines vary eta_Y / eta_Z at fixed eta_Z (columns). "
                           f"{_PROTOCOL_TEXT}."),
        FigureSpec(id="fig-paper-12", claims=("C42",), plot=lambda r: plot_recall(r, "eta_Z"), table=recall_table,
                   caption=f"Paper Figure 12: {_RECALL_TEXT}; lines vary eta_Z at fixed eta_Y / eta_Z (columns). "
                           f"{_PROTOCOL_TEXT}."),
    ),
)

EXPERIMENTS = [SWEEP]
RULES = [RULE_C38, RULE_C39, RULE_C42]
