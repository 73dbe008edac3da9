"""Chapter 3's experiment in Theorem 1's own setting: batch size 1, a random class at every step.

Theorem 1 (through Lemmas 10-12) is about SGD with batch size 1 and uniformly sampled classes, so that
class ``k`` is visited ``N_k(t) = t/K + O(sqrt t)`` times. :data:`SGD1` (``fig-ch3-sgd1``) trains ``Y`` of the
package's model (Lemma 1's gradient, :func:`scansnap.theory.sgd_decoder_sampled`) with ``Z = 0`` frozen, in
the long-sequence limit, on the weak family's own vocabulary, one random class order per seed, and next to
it the full population batch (every class at ``eta / K`` per step, what the other checks of the chapter use).
Its verdicts judge C9, C10 and C11 as **training-population** evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import figures, train
from scansnap._checks import check_int, check_seeds
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.ch03_theorem1 import C9_CRITERIA, C9_NOTE, _check_family, weak_family
from scansnap.results import Config
from scansnap.theory import decoder as dec
from scansnap.theory import decoder_sgd as sim
from scansnap.verdicts import Rule, Verdict, at_least, at_most

CHAPTER = "book/chapters/03-decoder-dynamics"


@dataclass(frozen=True)
class SGD1Config(Config):
    """Batch size 1 on the weak family (``K`` classes; ``M`` = its vocabulary), ``eta`` per sample, ``steps``
    with ``points`` log-spaced snapshots, one random class order per seed. The direction and the coefficients
    are judged from ``t >= min_visits * K`` (each class seen about ``min_visits`` times); the regimes of
    ``gamma`` on ``t <= early_to * t_0`` and ``t >= late_from * t_0``."""

    K: int = 4
    num_distinct: int = 10
    common_weight: float = 0.5
    eta: float = 0.3
    steps: int = 50000
    points: int = 60
    seeds: tuple[int, ...] = tuple(range(1, 9))
    min_visits: int = 10
    early_to: float = 0.1
    late_from: float = 100.0
    PRESETS = {"smoke": dict(steps=2000, points=40, seeds=(1, 2), late_from=30.0),
               "book": dict(steps=20000, seeds=(1, 2, 3, 4, 5, 6)), "paper": {}}

    def __post_init__(self) -> None:
        _check_family(self.K, self.num_distinct, self.common_weight, self.eta)
        check_int("steps", self.steps, low=10)
        check_int("points", self.points, low=3)
        check_seeds("seeds", self.seeds)
        check_int("min_visits", self.min_visits, low=1)
        if not 0 < self.early_to < 1 or not self.late_from >= 10:
            raise ValueError(f"early_to, late_from: need 0 < early_to < 1 and late_from >= 10; got "
                             f"{self.early_to}, {self.late_from}")


@dataclass(frozen=True)
class SGD1Result:
    """Theorem 1 measured along batch-size-1 SGD (``C`` seeds) and full-batch SGD; ``S`` snapshots.

    Attributes:
        t: ``(S,)`` steps; M: the vocabulary; E_norm: ``||E||_2``; t0: ``K ln M / eta``.
        gamma_ratio: ``(C, S)`` class-mean fitted ``gamma`` over Theorem 1's ``gamma(t)``; gamma: ``(C, S)`` the
            class-mean fitted ``gamma``.
        residual: ``(C, S)`` largest residual off Theorem 1's direction; iota, beta: ``(C, S)`` class means of the
            measured coefficients (over ``gamma(t)``); xi: ``(C, S, K)``; visits_min: ``(C, S)`` fewest visits.
        full_gamma_ratio, full_residual, full_iota, full_beta: ``(S,)`` the same for the full batch.
        iota_th, beta_th: the theorem's class means; xi_th: ``(K,)``.
    """

    config: SGD1Config
    t: np.ndarray
    M: int
    E_norm: float
    t0: float
    gamma: np.ndarray
    gamma_ratio: np.ndarray
    residual: np.ndarray
    iota: np.ndarray
    beta: np.ndarray
    xi: np.ndarray
    visits_min: np.ndarray
    full_gamma_ratio: np.ndarray
    full_residual: np.ndarray
    full_iota: np.ndarray
    full_beta: np.ndarray
    iota_th: float
    beta_th: float
    xi_th: np.ndarray


def run_sgd1(c: SGD1Config, progress: Progress | None = None) -> SGD1Result:
    """Every seed's batch-size-1 run (stacked), and one full-batch run, measured at the snapshots."""
    classes = weak_family(c.K, c.num_distinct, c.common_weight)
    F_full, targets = dec.unit_inputs(classes)
    rows = sim.support_rows(F_full)
    F, M = F_full[rows], classes.M
    E = dec.gram(F)
    grid = [s for s in train.log_steps(c.steps, c.points) if s > 0]
    t = np.array(grid, dtype=np.float64)
    gamma_t = dec.gamma(t, M, c.K, c.eta)
    run = sim.sgd_decoder_sampled(classes, c.eta, c.steps, grid, c.seeds)
    if progress is not None:
        progress(1)
    per_seed = []
    for i in range(len(c.seeds)):
        m = sim.measure_gradients(run.Y[:, i][:, rows], F, targets, M)
        iota, beta, xi = m.coefficients(gamma_t, E)
        per_seed.append((m.gamma.mean(1), m.residual.max(1), iota.mean(1), beta.sum((1, 2)) / (c.K * (c.K - 1)), xi))
    full = sim.measure_gradients(sim.sgd_decoder_model(classes, c.eta, c.steps, grid)[:, rows], F, targets, M)
    f_iota, f_beta, _ = full.coefficients(gamma_t, E)
    iota_th, beta_th = dec.theorem1_coefficients(E, M)
    if progress is not None:
        progress(1)
    stack = [np.stack([p[j] for p in per_seed]) for j in range(5)]
    return SGD1Result(
        config=c, t=t, M=M, E_norm=float(np.linalg.norm(E, 2)), t0=dec.transition_time(M, c.K, c.eta),
        gamma=stack[0], gamma_ratio=stack[0] / gamma_t, residual=stack[1], iota=stack[2], beta=stack[3], xi=stack[4],
        visits_min=run.visits.min(-1).T, full_gamma_ratio=full.gamma.mean(1) / gamma_t,
        full_residual=full.residual.max(1), full_iota=f_iota.mean(1),
        full_beta=f_beta.sum((1, 2)) / (c.K * (c.K - 1)), iota_th=float(iota_th.mean()),
        beta_th=float(beta_th.sum() / (c.K * (c.K - 1))), xi_th=dec.xi(E, M))


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


RULE_C9_SGD1 = Rule("C9", "training-population", C9_CRITERIA, note=C9_NOTE)
RULE_C10_SGD1 = Rule("C10", "training-population", (
    at_least("xi_positive_share", "share of (seed, step, class) with measured xi > 0", 0.99, 0.9),
))
RULE_C11_SGD1 = Rule("C11", "training-population", (
    at_most("early_slope_error", "|log-log slope of the measured gamma - 1| for t <= early_to t_0", 0.05, 0.15),
    at_most("late_fit_error", "|A / (K / eta) - 1| of gamma t = A ln(M eta t / K) fitted for t >= late_from t_0",
            0.05, 0.15),
))


def sgd1_verdicts(r: SGD1Result) -> list[Verdict]:
    """C9, C10, C11 on the batch-size-1 runs (seed means)."""
    c = r.config
    settled = r.t >= c.min_visits * c.K
    mean = r.gamma.mean(0)
    early, late = r.t <= c.early_to * r.t0, r.t >= c.late_from * r.t0
    slope, fit = sim.regime_fits(r.t, mean, r.M, c.K, c.eta, c.early_to, c.late_from)
    protocol = (f"SGD on Y of the model, batch size 1, a uniformly random class per step (seeds {list(c.seeds)}), "
                f"Z = 0 frozen, T = inf; {c.K} classes with one common token of weight {c.common_weight} "
                f"(||E||_2 = {r.E_norm:.3f}), M = {r.M} (the family's vocabulary), eta_Y = {c.eta}, {c.steps} steps; "
                f"coefficients from t >= {c.min_visits * c.K}")
    beta = r.beta.mean(0)[settled]
    details = (f"full batch: gamma / gamma(t) in [{r.full_gamma_ratio.min():.3f}, {r.full_gamma_ratio.max():.3f}], "
               f"beta {r.full_beta[-1]:.4f}; batch size 1: beta {beta[-1]:.4f} vs the theorem's {r.beta_th:.4f} "
               f"(1/M = {1 / r.M:.4f}); t_0 = {r.t0:.1f}; {int(early.sum())} early and {int(late.sum())} late steps")
    link = f"{CHAPTER}.html#thm-1-sgd1"
    return [
        RULE_C9_SGD1.judge({"gamma_error": float(np.abs(r.gamma_ratio.mean(0) - 1).max()),
                            "iota_error": float(np.abs(r.iota.mean(0)[settled] / r.iota_th - 1).max()),
                            "residual_over_E": float(r.residual[:, settled].max() / r.E_norm),
                            "beta_error": float(abs(beta[-1] / r.beta_th - 1)), "beta_measured": float(beta[-1]),
                            "beta_theorem": r.beta_th}, protocol=protocol, details=details, link=link),
        RULE_C10_SGD1.judge({"xi_positive_share": float((r.xi[:, settled] > 0).mean())}, protocol=protocol, link=link,
                            details=f"measured xi {r.xi[:, settled].min():.2e}..{r.xi[:, settled].max():.2e} vs the "
                                    f"theorem's {r.xi_th.mean():.2e}"),
        RULE_C11_SGD1.judge({"early_slope_error": abs(slope - 1), "late_fit_error": abs(fit - 1)}, protocol=protocol,
                            details=f"early slope {slope:.4f}, late A/(K/eta) = {fit:.4f}", link=link),
    ]


SGD1 = Experiment(
    id="ch3-sgd1", chapter=CHAPTER, config=SGD1Config, result=SGD1Result, run=run_sgd1, verdicts=sgd1_verdicts,
    work=lambda c: 2,
    figures=(FigureSpec(
        id="fig-ch3-sgd1",
        caption="Theorem 1 in its own setting: SGD on Y with batch size 1 and a random class at every step (weak "
                "family, Z = 0 frozen, several seeds: mean and range), against the full batch: the measured gamma "
                "over Theorem 1's gamma(t), and the measured coefficients iota and beta over the theorem's.",
        claims=("C9", "C10", "C11"), plot=plot_sgd1, table=sgd1_table),),
)

EXPERIMENTS = [SGD1]
RULES = [RULE_C9_SGD1, RULE_C10_SGD1, RULE_C11_SGD1]
