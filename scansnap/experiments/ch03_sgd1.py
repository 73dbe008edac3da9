"""Chapter 3's experiment in Theorem 1's own setting: batch size 1, a random class at every step.

Theorem 1 (through Lemmas 10-12) is about SGD with batch size 1 and uniformly sampled classes, so that
class ``k`` is visited ``N_k(t) = t/K + O(sqrt t)`` times. :data:`SGD1` (``fig-ch3-sgd1``) trains ``Y`` of the
package's model (Lemma 1's gradient, :func:`scansnap.theory.sgd_decoder_sampled`) with ``Z = 0`` frozen, in
the long-sequence limit, on the weak family's own vocabulary, one random class order per seed, and next to
it the full population batch (every class at ``eta / K`` per step, what the other checks of the chapter use).
Its verdicts judge C9, C10 and C11 as **training-population** evidence: does Theorem 1 describe the trained
decoder? Their control is the null :data:`CONTROL_HELD` (at step 0 ``Y = 0`` and ``gamma = 0``, where the ratios
are undefined), and a miss points to the premise each rule names.

:data:`LEMMA10`: Monte Carlo of the class counts against Lemma 10's Hoeffding radius (C14, **simulation**).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import figures, stats
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.ch03_theorem1 import (
    C9_ALTERNATIVE,
    C9_NOTE,
    Theorem1Fit,
    XiShare,
    c9_criteria,
)
from scansnap.experiments.sgd1_run import SGD1Config, SGD1Result, run_sgd1
from scansnap.params import Int, Real, param
from scansnap.results import Config
from scansnap.theory import decoder as dec
from scansnap.theory import decoder_sgd as sim
from scansnap.verdicts import Rule, Verdict, at_least, at_most

CONTROL_HELD = ("the decoder held after its first update: the run's snapshot at t = 1 (the first with a gradient; at "
                "step 0 Y = 0 and gamma = 0) used for every t, a decoder that stops learning (no speed control, no "
                "growth of the coefficients), measured against the same predictions")
PREMISE_T1 = ("Assumption 2 (weak overlap): Theorem 1 is exact for Lemma 3's modified update (Eqn 26), which the true "
              "update of the trained decoder follows only up to O(||E||)")


def sgd1_table(r: SGD1Result) -> dict[str, np.ndarray]:
    """One row per snapshot: seed means (and ranges) of batch size 1, and the full batch."""
    cols = {"t": r.t, "t_over_t0": r.t / r.t0}
    for key in ("gamma_ratio", "residual", "iota", "beta"):
        values = getattr(r, key)
        cols[f"{key}_batch1_mean"] = values.mean(0)
        cols[f"{key}_batch1_min"], cols[f"{key}_batch1_max"] = values.min(0), values.max(0)
        cols[f"{key}_full"] = getattr(r, f"full_{key}")
    return cols


def plot_sgd1(r: SGD1Result) -> Figure:
    """Left: measured ``gamma`` over ``gamma(t)``; right: measured ``iota`` and ``beta`` over the theorem's."""
    figures.set_style()
    x = r.t / r.t0
    fig, (ax_g, ax_c) = plt.subplots(1, 2, figsize=(10.5, 3.9))
    ax_g.fill_between(x, r.gamma_ratio.min(0), r.gamma_ratio.max(0), color="C0", alpha=0.25, lw=0)
    ax_g.plot(x, r.gamma_ratio.mean(0), color="C0", label=f"batch size 1, random order ({len(r.config.seeds)} seeds)")
    ax_g.plot(x, r.full_gamma_ratio, "--", color="C1", label="full batch")
    ax_g.set(xscale="log", xlabel="$t / t_0$", ylabel=r"$\gamma$ measured / $\gamma(t)$", ylim=(0.5, 1.5),
             title=r"Theorem 1's $\gamma(t)$")
    for key, color, th in (("iota", "C2", r.iota_th), ("beta", "C3", r.beta_th)):
        values = getattr(r, key) / th
        ax_c.fill_between(x, values.min(0), values.max(0), color=color, alpha=0.25, lw=0)
        ax_c.plot(x, values.mean(0), color=color, label=f"$\\{key}$, batch size 1")
        ax_c.plot(x, getattr(r, f"full_{key}") / th, "--", color=color, label=f"$\\{key}$, full batch")
    ax_c.axhline(1, color="k", lw=0.8)
    ax_c.set(xscale="log", yscale="log", xlabel="$t / t_0$", ylabel="measured / Theorem 1",
             title=r"coefficients $\iota$, $\beta$ (class means)")
    for ax in (ax_g, ax_c):
        ax.axvline(1, color="0.6", lw=0.8)
        ax.legend(fontsize="x-small")
        ax.title.set_fontsize("small")
    fig.tight_layout()
    return fig


@dataclass(frozen=True)
class RegimeFits:
    """C11 in training, over seeds: early_far, late_far: ``|mean - 1| + 1.96 se`` of the per-seed early log-log slope
    of gamma and of the late fit ``A / (K / eta)`` (the far end of their 95% intervals); early_slope, late_fit: the
    means (context)."""

    early_far: float
    late_far: float
    early_slope: float
    late_fit: float


def _far(values: np.ndarray, target: float = 1.0) -> tuple[float, float]:
    """``(|mean - target| + 1.96 se, mean)`` over the first axis (se 0 with one value; nan without values)."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return math.nan, math.nan
    se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0
    return float(abs(v.mean() - target) + 1.96 * se), float(v.mean())


RULE_C9_SGD1 = Rule("C9", "training-population", Theorem1Fit, c9_criteria(", mean over seeds: far end of its 95% "
                                                                        "interval"),
                    alternative=C9_ALTERNATIVE, control=CONTROL_HELD, premise=PREMISE_T1, note=C9_NOTE)
RULE_C10_SGD1 = Rule("C10", "training-population", XiShare, (
    at_least("xi_positive_share", "share of (seed, step, class) with measured xi > 0", 0.99, 0.9),
), alternative="xi <= 0 for an overlapping class: the trained decoder's gradient would push its distinct logits down",
    control=CONTROL_HELD, premise=PREMISE_T1,
    note="Read from t >= min_visits K. The held control fails mostly because after one update only the visited class "
         "has a decoder row (the others' xi is 0 up to round-off); the sign itself is set early (xi ~ beta E with "
         "beta >= 1/M), so this rule shows that training keeps xi positive, not that it makes it so.")
RULE_C11_SGD1 = Rule("C11", "training-population", RegimeFits, (
    at_most("early_far", "|log-log slope of the measured gamma - 1| for t <= early_to t_0 (mean over seeds: far end "
            "of its 95% interval)", 0.05, 0.15),
    at_most("late_far", "|A / (K / eta) - 1| of gamma t = A ln(M eta t / K) fitted for t >= late_from t_0 (mean over "
            "seeds: far end of its 95% interval)", 0.05, 0.15),
), alternative="another growth or decay of gamma (a constant gamma: slope 0; the late form without M in the log: A "
               "about half of K / eta at 100 t_0)",
    control=CONTROL_HELD,
    premise="Lemma 10's visit counts (N_k = t/K + O(sqrt t)) and " + PREMISE_T1)


def _held(values: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """A coefficient ``(C, S[, K])`` (coordinates over gamma(t)) of the decoder held at the first snapshot: its first
    value times ``factor = gamma(t_first) / gamma(t)`` ``(S,)``."""
    return values[:, :1] * (factor[:, None] if values.ndim == 3 else factor)


def sgd1_measures(r: SGD1Result, held: bool = False) -> tuple[Theorem1Fit, XiShare, RegimeFits]:
    """The C9, C10, C11 measures of the runs, or (``held``) of the control :data:`CONTROL_HELD`."""
    c = r.config
    settled = r.t >= c.min_visits * c.K
    if held:
        gamma_t = dec.gamma(r.t, r.M, c.K, c.eta)
        factor = gamma_t[0] / gamma_t
        gamma, ratio = np.repeat(r.gamma[:, :1], len(r.t), 1), r.gamma[:, :1] / gamma_t
        iota, beta, xi = _held(r.iota, factor), _held(r.beta, factor), _held(r.xi, factor)
        residual = np.repeat(r.residual[:, :1], len(r.t), 1)
    else:
        gamma, ratio, iota, beta, xi, residual = r.gamma, r.gamma_ratio, r.iota, r.beta, r.xi, r.residual
    S = ratio.shape[0]
    se = lambda x: x.std(0, ddof=1) / math.sqrt(S) if S > 1 else np.zeros(x.shape[1:])  # noqa: E731
    iota_rel = iota[:, settled] / r.iota_th
    fit = Theorem1Fit(float((np.abs(ratio.mean(0) - 1) + 1.96 * se(ratio)).max()),
                      float((np.abs(iota_rel.mean(0) - 1) + 1.96 * se(iota_rel)).max()),
                      float(residual[:, settled].max() / r.E_norm), float(abs(beta.mean(0)[-1] / r.beta_th - 1)),
                      float(beta.mean(0)[-1]), r.beta_th)
    share = XiShare(float((xi[:, settled] > 0).mean()), float(xi[:, settled].min()))
    fits = np.array([sim.regime_fits(r.t, g, r.M, c.K, c.eta, c.early_to, c.late_from) for g in gamma])
    (early_far, early), (late_far, late) = _far(fits[:, 0]), _far(fits[:, 1])
    return fit, share, RegimeFits(early_far, late_far, early, late)


def sgd1_verdicts(r: SGD1Result) -> list[Verdict]:
    """C9, C10, C11 on the batch-size-1 runs (seed means), each against the decoder held after its first update."""
    c = r.config
    settled = r.t >= c.min_visits * c.K
    early, late = r.t <= c.early_to * r.t0, r.t >= c.late_from * r.t0
    beta = r.beta.mean(0)[settled]
    details = (f"||E||_2 = {r.E_norm:.3f}, M = {r.M}; full batch: gamma / gamma(t) in [{r.full_gamma_ratio.min():.3f}, "
               f"{r.full_gamma_ratio.max():.3f}], beta {r.full_beta[-1]:.4f}; batch size 1: beta {beta[-1]:.4f} vs the "
               f"theorem's {r.beta_th:.4f} (1/M = {1 / r.M:.4f}); t_0 = {r.t0:.1f}; {int(early.sum())} early and "
               f"{int(late.sum())} late steps")
    link = SGD1.link("thm-1-sgd1")
    runs, nulls = sgd1_measures(r), sgd1_measures(r, held=True)
    return [
        RULE_C9_SGD1.judge(runs[0], c, control=nulls[0], details=details, link=link),
        RULE_C10_SGD1.judge(runs[1], c, control=nulls[1], link=link,
                            details=f"measured xi {r.xi[:, settled].min():.2e}..{r.xi[:, settled].max():.2e} vs the "
                                    f"theorem's {r.xi_th.mean():.2e}"),
        RULE_C11_SGD1.judge(runs[2], c, control=nulls[2], link=link,
                            details=f"early slope {runs[2].early_slope:.4f}, late A/(K/eta) = {runs[2].late_fit:.4f} "
                                    "(means over seeds)"),
    ]


SGD1 = Experiment(
    id="ch3-sgd1", config=SGD1Config, result=SGD1Result, run=run_sgd1, verdicts=sgd1_verdicts,
    work=lambda c: 2,
    figures=(FigureSpec(
        id="fig-ch3-sgd1",
        caption="Theorem 1 in its own setting: SGD on Y with batch size 1 and a random class at every step (weak "
                "family, Z = 0 frozen, several seeds: mean and range), against the full batch: the measured gamma "
                "over Theorem 1's gamma(t), and the measured coefficients iota and beta over the theorem's.",
        claims=("C9", "C10", "C11"), plot=plot_sgd1, table=sgd1_table),),
)

# ------------------------------------------------------------------------------------------------
# Lemma 10 (C14)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lemma10Config(Config):
    """``runs`` Monte Carlo runs of ``t`` uniform draws among ``K`` classes; ``delta`` the failure probability."""

    runs: int = param(200000, Int(low=1))
    t: int = param(1000, Int(low=1))
    K: int = param(10, Int(low=1))
    delta: float = param(0.05, Real(0, 1, open="both"))
    seed: int = param(0, Int(low=0))
    PROTOCOL = "{runs} runs of t = {t} uniform draws among K = {K} classes, delta = {delta}, seed {seed}"
    PRESETS = {"smoke": dict(runs=2000), "book": dict(runs=50000), "paper": {}}
    NOT_GATED = {"runs": "a simulation's sample size: C14's rule counts the Monte Carlo runs itself (the share "
                         "outside Lemma 10's radius, with its interval)"}


@dataclass(frozen=True)
class Lemma10Result:
    """radius: Lemma 10's radius; beyond: share of runs with ``max_k |N_k - t/K|`` above it; largest, q95: the
    largest and the 95% quantile of that deviation."""

    config: Lemma10Config
    radius: float
    beyond: float
    largest: float
    q95: float


def run_lemma10(c: Lemma10Config, progress: Progress | None = None) -> Lemma10Result:
    """Multinomial class counts against the radius."""
    counts = np.random.default_rng(c.seed).multinomial(c.t, [1 / c.K] * c.K, size=c.runs)
    deviation = np.abs(counts - c.t / c.K).max(1)
    radius = dec.hoeffding_count_radius(c.t, c.K, c.delta)
    return Lemma10Result(c, radius, float((deviation > radius).mean()), float(deviation.max()),
                         float(np.quantile(deviation, 0.95)))


@dataclass(frozen=True)
class Lemma10Measures:
    """C14 on simulation evidence. beyond_upper: the upper end of the 95% (Wilson) interval of the share of runs
    with ``max_k |N_k - t/K|`` beyond Lemma 10's radius, in units of delta; runs: how many; radius_over_mean
    (context): the radius over ``t/K``; beyond: the share itself (context)."""

    beyond_upper: float
    runs: int
    radius_over_mean: float
    beyond: float


RULE_C14 = Rule("C14", "simulation", Lemma10Measures, (
    at_most("beyond_upper", "upper end of the 95% interval of the share of runs beyond the radius, in units of delta",
            1.0, 2.0),
    at_least("runs", "Monte Carlo runs", 1000, 100),
), alternative="counts that leave t/K by more than the Hoeffding radius more often than delta (no concentration at "
               "that rate)",
    note="sympy derives the radius in the chapter. The share is read at the upper end of its 95% interval.")


def lemma10_verdicts(r: Lemma10Result) -> list[Verdict]:
    """C14 from the Monte Carlo."""
    c = r.config
    hits = int(round(r.beyond * c.runs))
    m = Lemma10Measures(stats.wilson_interval(hits, c.runs)[1] / c.delta, c.runs, r.radius / (c.t / c.K), r.beyond)
    return [RULE_C14.judge(m, c, details=f"radius {r.radius:.1f}; largest deviation {r.largest:.0f}, 95% quantile "
                                         f"{r.q95:.0f}", link=LEMMA10.link("lemma-10"))]


LEMMA10 = Experiment(id="ch3-lemma10", config=Lemma10Config, result=Lemma10Result,
                     run=run_lemma10, verdicts=lemma10_verdicts)

EXPERIMENTS = [SGD1, LEMMA10]
RULES = [RULE_C9_SGD1, RULE_C10_SGD1, RULE_C11_SGD1, RULE_C14]
