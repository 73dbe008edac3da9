"""Chapter 2's second experiment: how far the paper's synthetic experiments are from the theory's assumptions
(C43, this book's own finding, not a claim of the paper).

:data:`ASSUMPTIONS` (``fig-ch2-assumptions``) trains Syn-Small with the authors' protocol (``T = 128``,
batch 128, ``eta_Y = eta_Z``, zero initialization) on sampled sequences and in the long-sequence limit,
with heavy-ball momentum and with plain SGD three ways: at the same rate, at ``eta / (1 - momentum)``,
and with the warm-up ``(1 - momentum^(t+1)) / (1 - momentum)`` that momentum applies to a constant
gradient (if momentum were only a larger, ramped-up step, the last would match it). It also measures
the overlaps ``E`` of the paper's datasets at their initial attention (Lemma 3's modification
``||E (I + E)^{-1}||_2`` against Lemma 17's bound), the random initialization of Syn-Medium, and the
bias of ``f~`` at ``T = 128``. :data:`RULE_C43` judges each assumption's gap as **training-sampled**
evidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import figures
from scansnap.experiments.assumptions_run import RUNS, AssumptionsConfig, AssumptionsResult, run_assumptions
from scansnap.experiments.base import Experiment, FigureSpec
from scansnap.verdicts import Rule, Verdict, at_least


def assumptions_table(r: AssumptionsResult) -> dict[str, np.ndarray]:
    """One row per step: the distinct mass of each optimizer, sampled (mean over seeds) and in the limit."""
    cols: dict[str, np.ndarray] = {"step": np.arange(r.config.steps + 1)}
    for i, name in enumerate(RUNS):
        cols[f"{name}_sampled"] = r.sampled[i].mean(0)
        cols[f"{name}_limit"] = r.population[i]
    return cols


def plot_assumptions(r: AssumptionsResult) -> Figure:
    """Left: distinct mass along training for each optimizer; right: Lemma 3's modification per dataset."""
    figures.set_style()
    c = r.config
    fig, (ax, ax_e) = plt.subplots(1, 2, figsize=(10.5, 3.9), gridspec_kw=dict(width_ratios=(1.25, 1)))
    labels = {"momentum": f"momentum {c.momentum:g}, $\\eta$ = {c.eta:g}", "warm-up": "plain, momentum's warm-up",
              "plain": f"plain, $\\eta$ = {c.eta:g}", "plain-fast": f"plain, $\\eta$ = {c.eta / (1 - c.momentum):g}"}
    step = np.arange(c.steps + 1)
    for i, name in enumerate(RUNS):
        ax.plot(step, r.sampled[i].mean(0), color=f"C{i}", label=labels[name])
        ax.plot(step, r.population[i], "--", color=f"C{i}", lw=1)
    ax.set(xlabel="SGD step", ylabel="distinct-token mass of class 1",
           title=f"Syn-Small: solid sampled (T = {c.T}, mean of {len(c.seeds)} seeds), dashed limit")
    ax.legend(fontsize="x-small")
    x, width = np.arange(len(r.datasets)), 0.27
    ax_e.bar(x - width, r.E_norm, width, label=r"$\|E\|_2$")
    ax_e.bar(x, r.modification, width, label=r"$\|E(I+E)^{-1}\|_2$: Lemma 3's change")
    ax_e.bar(x + width, np.where(np.isfinite(r.lemma17), r.lemma17, np.nan), width,
             label=r"Lemma 17's bound $\|E\|_2/(1-\|E\|_2)$")
    for xi in x[~np.isfinite(r.lemma17)]:
        ax_e.annotate("no bound", (xi + width, 0.12), ha="center", rotation=90, fontsize="xx-small", color="0.3")
    ax_e.axhline(1, color="0.5", lw=0.8)
    ax_e.set_xticks(x, [d.replace("Syn-Medium ", "Medium\n") for d in r.datasets], fontsize="x-small")
    ax_e.set(yscale="log", ylim=(0.1, 40), ylabel="size", title="overlaps at the initial attention")
    ax_e.legend(fontsize="x-small", loc="upper left")
    for a in (ax, ax_e):
        a.title.set_fontsize("small")
    fig.tight_layout()
    return fig


@dataclass(frozen=True)
class AssumptionGaps:
    """C43 on training evidence: how far the authors' protocol is from each assumption of the theory.

    Attributes:
        finite_T_low: the lower end of the 95% interval (over seeds) of ``|distinct mass, sampled T - limit|`` at
            the end, in units of the limit's movement over the whole run (negative where the interval holds 0).
        overlap: the largest ``||E (I+E)^-1||_2`` (Lemma 3's modification) over the paper's datasets at their
            initial attention.
        momentum_low: the largest, over the snapshots after step 0, lower end of the 95% interval (over seeds, same
            batches; negative where every interval holds 0) of ``|distinct mass, momentum - plain SGD with momentum's
            warm-up|``, in units of momentum's movement over the whole run.
        init_gap: Syn-Medium's random initialization: the largest relative change of ``f_n`` by ``Z(0)``, or the
            distance of ``Y(0)``'s first prediction from uniform (total variation), whichever is larger.
        finite_T_gap, momentum_gap: the same two gaps without the intervals (context).
    """

    finite_T_low: float
    overlap: float
    momentum_low: float
    init_gap: float
    finite_T_gap: float
    momentum_gap: float


def assumption_gaps(r: AssumptionsResult, null: bool = False) -> AssumptionGaps:
    """:class:`AssumptionGaps` at the end of the runs. ``null``: the control, arms that differ in nothing an assumption
    concerns: for the two training gaps, the momentum runs of one half of the seeds against those of the other
    (alternate seeds, paired in order: no finite-T or momentum gap between them, only the seeds' spread, read
    through the same intervals); overlap and initialization at the theory's own setting (``E = 0``, zero
    initialization: 0). Needs four seeds for the control (two pairs)."""
    S = r.sampled.shape[1]

    def low(d: np.ndarray) -> np.ndarray:  # lower end of the 95% interval of |mean over pairs| (negative: holds 0)
        if d.shape[0] < 2:
            raise ValueError(f"seeds: an interval needs at least two pairs of runs; got {d.shape[0]} (S = {S})")
        return np.abs(d.mean(0)) - 1.96 * d.std(0, ddof=1) / math.sqrt(d.shape[0])

    limit_moved = abs(r.population[0, -1] - r.population[0, 0])
    mom = r.sampled[0]  # (S, steps + 1)
    mom_moved = abs(mom.mean(0)[-1] - mom.mean(0)[0])
    if null:
        half = S // 2
        d_m = mom[0:2 * half:2] - mom[1:2 * half:2]  # (S // 2, steps + 1): alternate seeds, paired in order
        d_T = d_m[:, -1]
    else:
        d_T = mom[:, -1] - r.population[0, -1]
        d_m = r.sampled[0] - r.sampled[1]  # (S, steps + 1): paired by batches
    setting = not null  # the control: the theory's own setting (zero init, E = 0)
    return AssumptionGaps(
        finite_T_low=float(low(d_T[:, None])[0] / limit_moved),
        overlap=float(r.modification.max()) if setting else 0.0,
        momentum_low=float(low(d_m[:, 1:]).max() / mom_moved),
        init_gap=max(r.init_f_rel, r.init_pred_tv) if setting else 0.0,
        finite_T_gap=float(abs(d_T.mean()) / limit_moved), momentum_gap=float(np.abs(d_m.mean(0)).max() / mom_moved))


RULE_C43 = Rule("C43", "training-sampled", AssumptionGaps, (
    at_least("finite_T_low", "lower end of the 95% interval of |distinct mass, sampled T - long-sequence limit| after "
             "the protocol, relative to the limit's movement", 0.05, 0.02, required=False),
    at_least("overlap", "largest ||E (I+E)^-1||_2 (Lemma 3's modification) over the paper's datasets at their initial "
             "attention", 0.1, 0.05, required=False),
    at_least("momentum_low", "largest lower end of the 95% interval of |distinct mass, momentum - plain SGD with "
             "momentum's warm-up| along training, relative to momentum's movement", 0.05, 0.02, required=False),
    at_least("init_gap", "Syn-Medium's random init: largest relative change of f_n, or distance of the first "
             "prediction from uniform (total variation)", 0.05, 0.02, required=False),
), alternative="the experiments meet the theory's assumptions: every gap (finite T, overlap, momentum beyond a "
               "rescaled step, random initialization) below 2% of the effect it bears on",
    control="split-half seeds for the two training gaps: the momentum runs of alternate seeds against each other, "
            "arms with no finite-T or momentum gap between them, through the same intervals (the seeds' spread alone "
            "would reach the bars if the gaps were noise); the theory's own setting for overlap and initialization "
            "(E = 0, zero initialization: 0, measured before training, so no training null exists for them)",
    depends_on={"steps": "the two training gaps open over the authors' 100 SGD steps: a shorter run measures "
                         "another, earlier setting"},
    note="C43 is this book's own finding (listed beside the paper's claims, numbers in hand), "
         "not a claim of the paper. Each assumption is judged on its own: a gap of at least 5% of the effect it bears "
         "on (Lemma 3's modification: 10% of the update) makes the assumption hold only approximately, 2% (5%) "
         "partly; the claim holds in full when every gap does, in part when some do. Split-half seeds are the null "
         "of the two gaps training opens (issue 26: it was step 0, where both are 0 by construction; the lower ends "
         "are now kept negative where an interval holds 0, so the null is a measured number); overlap and "
         "initialization are measured before training, so their null is the theory's setting itself. Where a gap is "
         "far larger (a modification above 1), the assumption does not hold even approximately; the rule does not "
         "count that against the claim, the chapter reports it. The run depends on the authors' 100 steps.")


def assumptions_verdicts(r: AssumptionsResult) -> list[Verdict]:
    """C43 from the four gaps; the control is split-half seeds for the two training gaps and the theory's
    own setting for overlap and initialization."""
    c = r.config
    mean = r.sampled.mean(1)  # (R, steps + 1)
    ends = ", ".join(f"{name} {mean[i, -1]:.3f}" for i, name in enumerate(RUNS))
    details = (f"distinct mass of class 1 after {c.steps} steps, sampled: {ends} (limit, momentum: "
               f"{r.population[0, -1]:.3f}; start {mean[0, 0]:.3f}); ||E||_2 at the initial attention "
               + ", ".join(f"{d} {n:.2f}" for d, n in zip(r.datasets, r.E_norm, strict=True))
               + f"; Lemma 3's modification {r.modification.min():.2f}..{r.modification.max():.2f} (I + E stays "
               f"invertible; Lemma 17's bound needs ||E||_2 < 1); Syn-Small after training "
               f"{r.modification_trained:.2f}; at T = {c.T}: mean ||f - f_n||_inf {r.err_mean:.3f} vs P(common token) "
               f"{r.p_common:.3f} and a gap of {r.gap_distinct:.4f} between neighbouring distinct tokens, bias of f~ "
               f"{r.bias_rel:.0%} of the entry; |row sum of Y(0)| up to {r.init_rowsum:.2f}")
    return [RULE_C43.judge(assumption_gaps(r), c, control=assumption_gaps(r, null=True), details=details,
                           link=ASSUMPTIONS.link("ch2-assumptions"))]


ASSUMPTIONS = Experiment(
    id="ch2-assumptions", config=AssumptionsConfig, result=AssumptionsResult,
    run=run_assumptions, verdicts=assumptions_verdicts, work=lambda c: 6 * c.steps,  # 3 trainings x 2 limits
    figures=(FigureSpec(
        id="fig-ch2-assumptions",
        caption="The authors' Syn-Small protocol (their released run) against the theory's assumptions: class 1's "
                "attention mass on its distinct tokens along training with momentum and with plain SGD at the same "
                "rate, at eta/(1 - momentum) and with momentum's warm-up (sampled and in the long-sequence limit); "
                "and the size of Lemma 3's modification against Lemma 17's bound for the paper's datasets.",
        claims=("C43",), plot=plot_assumptions, table=assumptions_table),),
)

EXPERIMENTS = [ASSUMPTIONS]
RULES = [RULE_C43]
