"""Chapter 6's trained model: Theorem 4 held against ``scansnap.train`` over long horizons (``fig-ch6-trained``).

The family meets the theorem's assumptions (:func:`scansnap.theory.theorem4_family`: one query, ``K = 4`` classes,
one common token with ``S_0 = 0.1``, 10 distinct tokens each, ``M = 46``), trained from ``Y = Z = 0`` with plain SGD
(momentum 0: the theory's gradient flow, one step per unit of time) on a grid ``eta_Y = eta_Y0 q^i``,
``eta_Z = eta_Z0 q^j`` (``q = 2``) in ONE batched call: in the long-sequence limit (``limit="population"``) to
``steps`` (in the ``book`` profile over 100 ``t0`` of the fastest decoder), and with sampled sequences (``T = 128``)
to the shorter ``sampled_steps``. From the attention snapshots the logits are read back exactly
(:func:`scansnap.theory.logits_from_attention`) and ``B_n`` is measured as ``int z-dot_ml0 / f~_nl0^2``
(:func:`scansnap.theory.growth_bound_from_logits`). The same measurements are made on the exact Eqn 10 system
(:func:`scansnap.theory.integrate_symmetric`) and on Eqn 14 with the constants derived from Eqn 10 (no fitting).
Verdicts: **simulation** (the exact system) for C24-C31, **training-population** for C24-C32 and C34,
**training-sampled** for C24, C26 and C34 (:mod:`~scansnap.experiments.phase_rules`): claims of the theory, whose
training verdicts say whether Theorem 4 describes the trained model and name the premise a miss points to (Theorem
1's coupling of the decoder, C9: Eqn 13's dynamics), judged under C32. The controls are computed from the same run
(:func:`~scansnap.experiments.phase_regimes.phase_controls`; for C24 the one-constant reading ``a = b``; for C32 Eqn 13
at permuted rates, :func:`~scansnap.experiments.phase_magnitude.eqn13_permuted`). The paper's central claim P1 (scan
and snap seen in training) is judged on both runs (:mod:`~scansnap.experiments.scan_snap_rules`).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from scansnap import figures, theory
from scansnap._checks import check_int
from scansnap.experiments.base import Experiment, FigureSpec
from scansnap.experiments.phase_magnitude import (
    RULE_C24,
    RULE_C32_TRAINING,
    eqn13_in_training,
    eqn13_permuted,
    eqn14_magnitude,
    ratio_after_t0,
)
from scansnap.experiments.phase_regimes import phase_controls, phase_measures
from scansnap.experiments.phase_rules import judge, phase_rule
from scansnap.experiments.phase_training import Curves, TrainedConfig, TrainedResult, run_trained
from scansnap.experiments.scan_snap_rules import RULES_P1
from scansnap.verdicts import Verdict

_REGIMES = ("C25", "C26", "C27", "C28", "C29", "C30", "C31")
_JUDGED = {"simulation": _REGIMES, "training-population": (*_REGIMES, "C34"),
           "training-sampled": ("C26", "C34")}  # C27's slope needs 16 snap times: one sampled seed is noise there


def seed_mean(curves: Curves, n: int) -> Curves:
    """The mean over ``n`` seeds of curves whose configurations repeat the grid ``n`` times (seed-major)."""
    C = len(curves.eta_Y) // check_int("n", n, low=1)

    def mean(x: np.ndarray) -> np.ndarray:
        return x.reshape(x.shape[0], n, C).mean(axis=1)

    return Curves(curves.t, curves.eta_Y[:C], curves.eta_Z[:C], mean(curves.log_chi), mean(curves.B),
                  mean(curves.z_common), mean(curves.entropy), mean(curves.freeze))


def trained_summary(r: TrainedResult) -> dict[str, np.ndarray]:
    """Per configuration of the population run ``(C,)``: the rates, ``t0``, the snap times (trained, exact system,
    Eqn 14), the median over ``t >= t0`` of ``B_n`` measured / Eqn 14, ``K B_n / (-Delta z_c)`` at the horizon,
    Delta z_c measured / Eqn 13, the late exponents of ``B_n`` (trained, Eqn 14) and Theorem 1's cross
    coefficient of the trained decoder over the theorem's."""
    c, pop = r.config, r.population
    t0 = c.K * np.log(r.M) / pop.eta_Y
    ok = (pop.t > 0) & (pop.B > 0).all(axis=1)

    def late(B: np.ndarray) -> np.ndarray:
        return theory.local_exponent(pop.t[ok], B[ok])[-1]

    return {"eta_Y": pop.eta_Y, "eta_Z": pop.eta_Z, "t0": t0, "snap": theory.snap_time(pop.t[ok], pop.B[ok], r.a / r.b),
            "snap_exact": theory.snap_time(pop.t[ok], r.exact.B[ok], r.a / r.b),
            "snap_eqn14": np.array([theory.snap_time_limit(r.M, c.K, y) for y in pop.eta_Y]),
            "B_ratio": ratio_after_t0(pop, r.B_eqn14, c.K, r.M),
            "K_B_over_dz": c.K * pop.B[-1] / -pop.z_common[-1], "dz_ratio": pop.z_common[-1] / r.z_eqn13[-1],
            "late_exponent": late(pop.B), "late_exponent_eqn14": late(r.B_eqn14),
            "cross_ratio": r.cross_measured / r.cross_theorem}


def sampled_vs_population(r: TrainedResult) -> dict[str, np.ndarray]:
    """Per configuration ``(C,)``: the sampled run's (seed mean) ``ln chi_l0`` and ``Delta z_c`` at its last step over
    the population run's at the same step (interpolated in ``ln t``)."""
    pop, smp = r.population, seed_mean(r.sampled, len(r.config.seeds))
    at = np.full(len(pop.eta_Y), smp.t[-1])
    keep = pop.t > 0
    return {"log_chi": smp.log_chi[-1] / theory.value_at(pop.t[keep], pop.log_chi[keep], at),
            "z_common": smp.z_common[-1] / theory.value_at(pop.t[keep], pop.z_common[keep], at)}


def transition_fit(r: TrainedResult) -> tuple[float, float]:
    """The slope of ``ln t_snap`` against ``ln eta_Y`` (one intercept per ``eta_Z``) in the population run, and its
    standard error (:func:`scansnap.theory.transition_slope`); ``nan`` when a transition was not reached."""
    s = trained_summary(r)
    if not np.isfinite(s["snap"]).all():
        return math.nan, math.nan
    return theory.transition_slope(s["eta_Y"], s["eta_Z"], s["snap"])


def _phase(curves: Curves, pred: np.ndarray, r: TrainedResult, t_early: float | None, freeze: bool,
           control: bool) -> tuple:
    """Chapter 6's regime measures of ``curves`` (chi-bar = exp(2 B_n)) against Eqn 14 at the same times, and
    (``control``) their controls."""
    c = r.config
    args = (curves.eta_Y, curves.eta_Z, r.M, c.K)
    m = theory.measure_growth(curves.t, 2 * curves.B, curves.B, *args, t_early, r.a / r.b)
    ref = theory.measure_growth(curves.t, 2 * pred, pred, *args, t_early, r.a / r.b)
    drop = float((curves.freeze[-1] / curves.freeze.max(axis=0)).max()) if freeze else np.nan
    measures = phase_measures(m, c.n, c.n, r.b / r.a, reference=ref, freeze_drop=drop)
    t0 = c.K * np.log(r.M) / curves.eta_Y
    nulls = phase_controls(m, ref, curves.t, curves.B, curves.eta_Y, curves.eta_Z, c.n, c.n, r.b / r.a, t0, M=r.M,
                           K=c.K, t_early=t_early)
    return measures, nulls if control else None


def trained_verdicts(r: TrainedResult) -> list[Verdict]:
    """Simulation, training-population and training-sampled verdicts (controls for training)."""
    c, n, link, out = r.config, len(r.config.seeds), TRAINED.link(), []
    sets = {"simulation": (r.exact, r.B_eqn14, None, False),
            "training-population": (r.population, r.B_eqn14, c.t_early, True),
            "training-sampled": (seed_mean(r.sampled, n), r.B_eqn14_sampled[:, : c.n**2], None, True)}
    for ev, (curves, pred, t_early, freeze) in sets.items():
        training = ev != "simulation"
        measures, nulls = _phase(curves, pred, r, t_early, freeze, training)
        token = theory.measure_growth(curves.t, curves.log_chi, curves.B, curves.eta_Y, curves.eta_Z, r.M, c.K)
        details = (f"the dominant distinct token's own growth factor chi_l0: peak d ln chi_l0 / d ln t = "
                   f"{token.peak_chi_exponent.max():.3g} (chi-bar's: {measures.C25.peak_exponent:.3g}; b/a = "
                   f"{r.b / r.a:.3g})")
        mag = (eqn14_magnitude(curves, pred, c.K, r.M, r.b / r.a, one_constant=one) for one in (False, True))
        kb = np.median(c.K * curves.B[-1] / -curves.z_common[-1])
        out.append(RULE_C24[ev].judge(next(mag), c, control=next(mag) if training else None, scope=c.scope(ev),
                                      link=link, details=f"K B_n / (-Delta z_c) at the horizon: median {kb:.3f}"))
        gap = theory.scan_shortfall(curves.log_chi.max(), (curves.entropy[0] - curves.entropy).max())
        out += judge(_JUDGED[ev], ev, measures, c, control=nulls, scope=c.scope(ev), link=link, details=details,
                     too_small=gap if training else "")
    args = (r.population, r.z_eqn13, r.B_eqn14, c.K, r.M, r.cross_measured / r.cross_theorem)
    out.append(RULE_C32_TRAINING.judge(eqn13_in_training(*args), c, control=eqn13_permuted(*args), link=link,
                                       scope=c.scope("training-population")))
    for ev, run in (("training-population", r.p1_population), ("training-sampled", r.p1_sampled)):
        win = f"windows: steps {run.early[0]:g}-{run.early[1]:g} and {run.late[0]:g}-{run.late[1]:g}"
        out.append(RULES_P1[ev].judge(run.measures, c, control=run.control, scope=c.scope(ev), link=link, details=win))
    return out


def trained_table(r: TrainedResult) -> dict[str, np.ndarray]:
    """One row per (run, snapshot): population runs (``sampled = 0``) with the exact system and the predictions,
    then sampled runs (``sampled = 1``; no exact system: ``nan``)."""
    cols: dict[str, list[np.ndarray]] = {}
    for flag, cv, pred, exact in ((0, r.population, r.B_eqn14, r.exact), (1, r.sampled, r.B_eqn14_sampled, None)):
        S, C = cv.B.shape
        pad = np.vstack([cv.freeze, np.full((1, C), np.nan)])
        nan = np.full(S * C, np.nan)
        for key, val in (("sampled", np.full(S * C, flag)), ("eta_Y", np.tile(cv.eta_Y, S)),
                         ("eta_Z", np.tile(cv.eta_Z, S)), ("t", np.repeat(cv.t, C)), ("B_measured", cv.B.ravel()),
                         ("B_eqn14", pred.ravel()), ("B_exact", exact.B.ravel() if exact else nan),
                         ("log_chi_measured", cv.log_chi.ravel()),
                         ("log_chi_exact", exact.log_chi.ravel() if exact else nan),
                         ("z_common_measured", cv.z_common.ravel()),
                         ("z_common_eqn13", r.z_eqn13.ravel() if exact else nan), ("entropy", cv.entropy.ravel()),
                         ("freeze_rate", pad.ravel())):
            cols.setdefault(key, []).append(val)
    return {k: np.concatenate(v) for k, v in cols.items()}


def plot_trained(r: TrainedResult) -> Figure:
    """(a) ``B_n`` at the largest ``eta_Z``: trained, exact, Eqn 14; (b) measured / Eqn 14 against ``t / t0``;
    (c) transition time against ``eta_Y`` with ``t0``; (d) freeze rate of the attention."""
    figures.set_style()
    c, pop, smp = r.config, r.population, seed_mean(r.sampled, len(r.config.seeds))
    fig, ax = plt.subplots(2, 2, figsize=(10, 7))
    row = theory.grid_lines(c.n, c.n, "eta_Y")[-1]
    for k, j in enumerate(row):
        ax[0, 0].plot(pop.t[1:], pop.B[1:, j], color=f"C{k}", label=f"eta_Y = {pop.eta_Y[j]:g}")
        ax[0, 0].plot(pop.t[1:], r.B_eqn14[1:, j], "--", color=f"C{k}", lw=1)
        ax[0, 0].plot(pop.t[1:], r.exact.B[1:, j], ":", color=f"C{k}", lw=1)
        ax[1, 1].plot(pop.t[1:-1], pop.freeze[1:, j], color=f"C{k}")
        ax[1, 1].plot(smp.t[1:-1], smp.freeze[1:, j], color=f"C{k}", lw=0.6, alpha=0.6)
    ax[0, 0].set(xscale="log", yscale="log", xlabel="step t", ylabel="B_n", ylim=(1e-6, None),
                 title=f"(a) eta_Z = {pop.eta_Z[row[0]]:g}: trained,\nEqn 14 (--), exact Eqn 10 (:)")
    ax[0, 0].legend(fontsize="x-small")
    t0 = c.K * np.log(r.M) / pop.eta_Y
    for cv, pred, style in ((pop, r.B_eqn14, "-"), (smp, r.B_eqn14_sampled[:, : c.n**2], "--")):
        for j in range(len(t0)):
            keep = (cv.t > 0) & (cv.B[:, j] > 0)
            ax[0, 1].plot(cv.t[keep] / t0[j], cv.B[keep, j] / pred[keep, j], style, color=f"C{j // c.n}", lw=0.8)
    ax[0, 1].axhline(1.0, color="k", lw=0.8)
    ax[0, 1].set(xscale="log", xlabel="t / t0", ylabel="B_n measured / Eqn 14",
                 title="(b) population (solid), sampled (dashed);\ncolor: eta_Y")
    for cv, marker, name in ((pop, "o", "population"), (r.exact, "x", "exact Eqn 10"),
                             (smp, "^", "sampled (noise-limited)")):
        ok = (cv.t > 0) & (cv.B > 0).all(axis=1)
        snap = theory.snap_time(cv.t[ok], cv.B[ok], r.a / r.b)
        ax[1, 0].plot(cv.eta_Y, snap, marker, ms=5, mfc="none", label=name)
    grid = np.unique(pop.eta_Y)
    ax[1, 0].plot(grid, c.K * np.log(r.M) / grid, "k--", lw=1, label="t0 = K ln M / eta_Y")
    ax[1, 0].plot(grid, [theory.snap_time_limit(r.M, c.K, g) for g in grid], "k-", lw=1, label="Eqn 14")
    ax[1, 0].set(xscale="log", yscale="log", xlabel="eta_Y", ylabel="transition time (steps)", xticks=grid,
                 xticklabels=[f"{g:g}" for g in grid], title="(c) transition time against eta_Y")
    ax[1, 0].xaxis.set_minor_formatter(NullFormatter())
    ax[1, 0].legend(fontsize="x-small")
    ax[1, 1].set(xscale="log", yscale="log", xlabel="step t", ylabel="freeze rate (relative change per step)",
                 title="(d) population (thick), sampled (thin)")  # (a)-(d): the caption's panel letters
    fig.tight_layout()
    return fig


TRAINED = Experiment(
    id="ch6-trained", config=TrainedConfig, result=TrainedResult, run=run_trained,
    verdicts=trained_verdicts, work=lambda c: c.steps + c.sampled_steps,
    figures=(FigureSpec(
        id="fig-ch6-trained",
        caption="Theorem 4 against the trained Y/Z model (Theorem 4's family, SGD without momentum, zero "
                "initialization) on a grid of both learning rates: B_n measured in the long-sequence limit and "
                "with sampled sequences, against Eqn 14 with constants derived from Eqn 10 and against the exact "
                "Eqn 10 system; the measured transition time against eta_Y; and the freeze rate of the attention.",
        claims=("C24", "C25", "C26", "C27", "C28", "C29", "C30", "C31", "C32", "C34", "P1"), plot=plot_trained,
        table=trained_table),),
)

EXPERIMENTS = [TRAINED]
RULES = [*RULE_C24.values(), RULE_C32_TRAINING, *RULES_P1.values(),
         *[phase_rule(cl, ev) for ev, cls in _JUDGED.items() for cl in cls]]
