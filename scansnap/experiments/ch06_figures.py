"""The paper's Figures 3 and 9 re-made from Theorem 4 with the constants Chapter 6 derives (C25-C31 and C34).

This book chooses the parameters (``K = 10``, ``eta_Z = 0.5``, vocabulary
``M`` near 1000) in a family that meets the theorem's assumptions (:func:`scansnap.theory.theorem4_family`:
one query, one common token with ``S_0 = f~_nc(0)^2 = 0.1``, 98 distinct tokens per class, so ``M = 992``), with
Eqn 13's constants matched to Eqn 10 (:func:`scansnap.theory.eqn13_constants`, ``b / a = 1 / (K (1 - S_0))``).

* :data:`FIG3` (``fig-paper-3``): the growth-factor bound ``chi-bar = exp(2 B_n)`` against ``t`` for several
  ``eta_Y`` at fixed ``eta_Z``, with the derived constants and, for comparison, the one-constant reading
  ``a = b`` of the paper's statement; the exact Eqn 10 system beside Eqn 14; ``t0 = K ln M / eta_Y`` and the
  measured transition (:func:`scansnap.theory.snap_time`) marked. Judges C25, C26, C27, C29 and C34 on
  **derivation** (Eqn 14), and C34 (the paper's numerical simulation of Figure 3) on **simulation** (the exact
  Eqn 10 system).
* :data:`FIG9` (``fig-paper-9``): ``B_n`` on a 4 x 4 grid of rates (factor 2 in each), shown along a line of
  fixed ratio and a line of fixed ``eta_Z``. Judges C28, C30, C31.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, ScalarFormatter

from scansnap import figures, theory
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.ch06_phase_transition import FamilyConfig
from scansnap.experiments.phase_regimes import phase_measures
from scansnap.experiments.phase_rules import judge, phase_rule
from scansnap.params import Each, Int, Positive, Real, listed, param
from scansnap.verdicts import Verdict


@dataclass(frozen=True)
class Fig3Config(FamilyConfig):
    """:class:`~scansnap.experiments.ch06_phase_transition.FamilyConfig` plus ``eta_Z`` and the ``eta_Y`` values."""

    t_min: float = 0.1
    eta_Z: float = param(0.5, Positive())
    eta_Y: tuple[float, ...] = param((0.5, 1.0, 2.0, 5.0), Each(Positive(), min_len=2, increasing=True), listed)
    PROTOCOL = ("Eqn 14 with a, b matched to Eqn 10, and the exact Eqn 10 system (solve_ivp), in Theorem 4's family: K "
                "= {K}, {num_distinct} distinct tokens, S0 = {S0}; eta_Z = {eta_Z:g}, eta_Y in {eta_Y}; t in "
                "[{t_min:g}, {t_max:g}], {points} log-spaced steps")
    PRESETS = FamilyConfig.PRESETS


@dataclass(frozen=True)
class Fig3Result:
    """Eqn 14 with the derived constants (``B``), with ``a = b`` (``B_single``) and the exact system
    (``B_exact``), each ``(len(eta_Y), points)`` at steps ``t``; ``t0``, ``snap``, ``snap_single`` and
    ``snap_exact`` are ``(len(eta_Y),)``."""

    config: Fig3Config
    t: np.ndarray
    B: np.ndarray
    B_single: np.ndarray
    B_exact: np.ndarray
    t0: np.ndarray
    snap: np.ndarray
    snap_single: np.ndarray
    snap_exact: np.ndarray
    a: float
    b: float
    M: int


def run_fig3(config: Fig3Config, progress: Progress | None = None) -> Fig3Result:
    """Eqn 14 (both readings) and the exact system for each ``eta_Y``."""
    c, fam = config, config.family()
    k, t = theory.eqn13_constants(fam), c.times()
    B, single, exact = [], [], []
    for eY in c.eta_Y:
        B.append(theory.eqn14_at(t, fam.M, fam.K, eY, c.eta_Z, k.a, k.b))
        single.append(theory.eqn14_at(t, fam.M, fam.K, eY, c.eta_Z, k.a, k.a))
        exact.append(theory.integrate_symmetric(fam, eY, c.eta_Z, np.concatenate([[0.0], t])).B[1:])
        if progress is not None:
            progress(1)
    B, single, exact = np.array(B), np.array(single), np.array(exact)
    t0 = np.array([theory.decoder.transition_time(fam.M, fam.K, eY) for eY in c.eta_Y])
    snaps = [theory.snap_time(t, x.T, ab) for x, ab in ((B, k.a / k.b), (single, 1.0), (exact, k.a / k.b))]
    return Fig3Result(c, t, B, single, exact, t0, *snaps, k.a, k.b, fam.M)


def fig3_table(r: Fig3Result) -> dict[str, np.ndarray]:
    """One row per (eta_Y, step): the three growth-factor bounds and the rate's t0 and measured snap time."""
    n, S = r.B.shape
    rep = lambda v: np.repeat(np.asarray(v), S)  # noqa: E731
    return {"eta_Y": rep(r.config.eta_Y), "t": np.tile(r.t, n), "chi_bar_derived": np.exp(2 * r.B).ravel(),
            "chi_bar_one_constant": np.exp(2 * r.B_single).ravel(), "chi_bar_exact": np.exp(2 * r.B_exact).ravel(),
            "t0": rep(r.t0), "snap_derived": rep(r.snap), "snap_one_constant": rep(r.snap_single),
            "snap_exact": rep(r.snap_exact)}


def _mark(ax, t: np.ndarray, y: np.ndarray, at: float, style: str, color: str) -> None:
    if np.isfinite(at):
        ax.plot([at], [np.interp(np.log(at), np.log(t), y)], style, color=color, ms=6,
                mfc="none" if style == "^" else color)


def plot_fig3(r: Fig3Result) -> Figure:
    """Two log-log panels of ``chi-bar`` against ``t``: the derived constants (exact system dashed), and ``a = b``."""
    figures.set_style()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    panels = ((r.B, r.snap, f"derived constants (b/a = {r.b / r.a:.3f})"), (r.B_single, r.snap_single,
                                                                               "one constant (a = b)"))
    for ax, (B, snap, title) in zip(axes, panels, strict=True):
        for i, eY in enumerate(r.config.eta_Y):
            color, y = f"C{i}", np.exp(2 * B[i])
            ax.plot(r.t, y, color=color, label=f"eta_Y = {eY:g}")
            if B is r.B:
                ax.plot(r.t, np.exp(2 * r.B_exact[i]), "--", color=color, lw=1)
            _mark(ax, r.t, y, r.t0[i], "^", color)
            _mark(ax, r.t, y, snap[i], "o", color)
        ax.set(xscale="log", yscale="log", xlabel="step t", ylabel="growth-factor bound exp(2 B_n)", title=title)
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
    axes[0].legend(fontsize="small", title=f"eta_Z = {r.config.eta_Z:g}", title_fontsize="small")
    fig.tight_layout()
    return fig


FIG3_DERIVATION = ("C25", "C26", "C27", "C29", "C34")
FIG3_SIMULATION = ("C34",)


def fig3_verdicts(r: Fig3Result) -> list[Verdict]:
    """C25, C26, C27, C29, C34 on derivation evidence (Eqn 14 with the derived constants), C34 on simulation
    evidence (the exact Eqn 10 system: Figure 3 is the paper's numerical simulation)."""
    c = r.config
    eY, eZ = np.array(c.eta_Y), np.full(len(c.eta_Y), c.eta_Z)
    m, m_exact = (theory.measure_growth(r.t, 2 * B.T, B.T, eY, eZ, r.M, c.K, a_over_b=r.a / r.b)
                  for B in (r.B, r.B_exact))
    scope = f"M = {r.M}, a = {r.a:.4g}, b = {r.b:.4g}"
    details = "snap / t0 = " + ", ".join(f"{s / t:.2f}" for s, t in zip(r.snap, r.t0, strict=True))
    exact = "exact system's snap / t0 = " + ", ".join(f"{s / t:.2f}" for s, t in zip(r.snap_exact, r.t0, strict=True))
    return (judge(FIG3_DERIVATION, "derivation", phase_measures(m, len(c.eta_Y), 1, r.b / r.a), c,
                  scope=f"Eqn 14; {scope}", link=FIG3.link(), details=details)
            + judge(FIG3_SIMULATION, "simulation", phase_measures(m_exact, len(c.eta_Y), 1, r.b / r.a, reference=m),
                    c, scope=f"the exact Eqn 10 system; {scope}", link=FIG3.link(), details=exact))


FIG3 = Experiment(
    id="ch6-fig3", config=Fig3Config, result=Fig3Result, run=run_fig3, verdicts=fig3_verdicts,
    work=lambda c: len(c.eta_Y),
    figures=(FigureSpec(
        id="fig-paper-3",
        caption="Figure 3 of the paper, re-made from Theorem 4: the growth-factor bound exp(2 B_n) against the "
                "step for several decoder learning rates at fixed eta_Z, with Eqn 13's constants derived from "
                "Eqn 10 (left; dashed: the exact Eqn 10 system) and with one constant for both (right); "
                "triangles: t0 = K ln M / eta_Y; circles: the measured transition.",
        claims=FIG3_DERIVATION, plot=plot_fig3, table=fig3_table),),
)


@dataclass(frozen=True)
class Fig9Config(FamilyConfig):
    """A grid ``eta_Y = eta_Y0 q^i``, ``eta_Z = eta_Z0 q^j`` (``i, j < n``) on the family of Figure 3."""

    t_min: float = 0.1
    eta_Y0: float = param(0.5, Positive())
    eta_Z0: float = param(0.125, Positive())
    factor: float = param(2.0, Real(1, open="low"))
    n: int = param(4, Int(low=2))
    PROTOCOL = ("Eqn 14 with a, b matched to Eqn 10 in Theorem 4's family (K = {K}, {num_distinct} distinct tokens, S0 "
                "= {S0}) on the grid eta_Y = {eta_Y0:g} x {factor:g}^i, eta_Z = {eta_Z0:g} x {factor:g}^j, i, j < {n}; "
                "t in [{t_min:g}, {t_max:g}], {points} log-spaced steps")
    PRESETS = FamilyConfig.PRESETS

    def grid(self) -> tuple[np.ndarray, np.ndarray]:
        """``(eta_Y, eta_Z)``, each ``(n * n,)``, row-major (``eta_Y`` by row)."""
        return theory.rate_grid(self.eta_Y0, self.eta_Z0, self.factor, self.n)


@dataclass(frozen=True)
class Fig9Result:
    """``B`` ``(n * n, points)`` of Eqn 14 at steps ``t`` on the grid ``eta_Y``, ``eta_Z``; ``t0`` ``(n * n,)``."""

    config: Fig9Config
    t: np.ndarray
    eta_Y: np.ndarray
    eta_Z: np.ndarray
    B: np.ndarray
    t0: np.ndarray
    a: float
    b: float
    M: int


def run_fig9(config: Fig9Config, progress: Progress | None = None) -> Fig9Result:
    """Eqn 14 with the derived constants on the grid."""
    fam, (eY, eZ) = config.family(), config.grid()
    k, t = theory.eqn13_constants(fam), config.times()
    B = np.array([theory.eqn14_at(t, fam.M, fam.K, y, z, k.a, k.b) for y, z in zip(eY, eZ, strict=True)])
    if progress is not None:
        progress(1)
    t0 = fam.K * np.log(fam.M) / eY
    return Fig9Result(config, t, eY, eZ, B, t0, k.a, k.b, fam.M)


def _fig9_lines(r: Fig9Result) -> tuple[list[int], list[int]]:
    """The main diagonal (fixed ratio eta_Z0 / eta_Y0) and the row of the largest eta_Z (fixed eta_Z)."""
    n = r.config.n
    return max(theory.grid_lines(n, n, "scale"), key=len), theory.grid_lines(n, n, "eta_Y")[n - 1]


def fig9_table(r: Fig9Result) -> dict[str, np.ndarray]:
    """One row per (configuration, step)."""
    C, S = r.B.shape
    return {"eta_Y": np.repeat(r.eta_Y, S), "eta_Z": np.repeat(r.eta_Z, S), "t": np.tile(r.t, C), "B": r.B.ravel(),
            "t0": np.repeat(r.t0, S)}


def plot_fig9(r: Fig9Result) -> Figure:
    """``B_n`` against ``t`` along a line of fixed ratio (left) and of fixed ``eta_Z`` (right); markers at ``t0``."""
    figures.set_style()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, line, title in zip(axes, _fig9_lines(r), ("fixed ratio eta_Z / eta_Y", "fixed eta_Z"), strict=True):
        for k, c in enumerate(line):
            ax.plot(r.t, r.B[c], color=f"C{k}", label=f"eta_Y = {r.eta_Y[c]:g}, eta_Z = {r.eta_Z[c]:g}")
            _mark(ax, r.t, r.B[c], r.t0[c], "o", f"C{k}")
        ax.set(xscale="log", xlabel="step t", title=title)
        ax.legend(fontsize="x-small")
    axes[0].set_ylabel("growth-factor bound B_n (Eqn 14)")
    fig.tight_layout()
    return fig


def fig9_verdicts(r: Fig9Result) -> list[Verdict]:
    """C28, C30, C31 on derivation evidence."""
    c = r.config
    m = theory.measure_growth(r.t, 2 * r.B.T, r.B.T, r.eta_Y, r.eta_Z, r.M, c.K, a_over_b=r.a / r.b)
    exact_t0 = [theory.eqn14_at(t0, r.M, c.K, y, z, r.a, r.b) for t0, y, z in zip(r.t0, r.eta_Y, r.eta_Z, strict=True)]
    m = dataclasses.replace(m, B_t0=np.array(exact_t0, dtype=float))  # Eqn 14 at t0 itself, not interpolated
    return judge(("C28", "C30", "C31"), "derivation", phase_measures(m, c.n, c.n, r.b / r.a), c,
                 scope=f"M = {r.M}, a = {r.a:.4g}, b = {r.b:.4g}", link=FIG9.link())


FIG9 = Experiment(
    id="ch6-fig9", config=Fig9Config, result=Fig9Result, run=run_fig9, verdicts=fig9_verdicts,
    work=lambda c: 1,
    figures=(FigureSpec(
        id="fig-paper-9",
        caption="Figure 9 of the paper, re-made from Theorem 4 with the derived constants: B_n against the step "
                "for learning-rate pairs at a fixed ratio eta_Z / eta_Y (left) and at a fixed eta_Z (right); "
                "circles mark each pair's t0 = K ln M / eta_Y.",
        claims=("C28", "C30", "C31"), plot=plot_fig9, table=fig9_table),),
)

EXPERIMENTS = [FIG3, FIG9]
RULES = [*[phase_rule(c, "derivation") for c in ("C25", "C26", "C27", "C28", "C29", "C30", "C31", "C34")],
         *[phase_rule(c, "simulation") for c in FIG3_SIMULATION]]
