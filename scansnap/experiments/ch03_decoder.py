"""Chapter 3's experiments on the margin and the overlaps: Lemmas 5-7 (Figure 8), Lemma 3 and Theorem 1(a) on
families of inputs, Lemma 10.

* :data:`FIG8` (``fig-paper-8``): the paper's Figure 8, the discrete margin ``h_s`` of Lemma 5 against the
  continuous solution of Lemma 6 for several ``(M, eta_Y)``, with Lemma 7's bound; judges C8 (**derivation**:
  a closed form checked against ``solve_ivp`` and the recursion).
* :data:`FAMILIES`: random families of inputs with ``||E||_2 < 1`` (the reconstructed Assumption 2) and the
  "star" family: Lemma 3's identities and the size of its modification (C6), and the sign of Theorem 1(a)'s
  ``xi`` (C10), both **derivation** (closed forms evaluated on many inputs).
* :data:`LEMMA10`: Monte Carlo of the class counts against Lemma 10's Hoeffding radius (C14, **simulation**).

Chapter 3's decoder dynamics are in :mod:`scansnap.experiments.ch03_theorem1` and
:mod:`scansnap.experiments.ch03_gamma`.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import figures, theory, train
from scansnap._checks import check_int
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.results import Config
from scansnap.theory import decoder as dec
from scansnap.verdicts import Rule, Verdict, at_least, at_most

CHAPTER = "book/chapters/03-decoder-dynamics"
PAGE = f"{CHAPTER}.html"

# ------------------------------------------------------------------------------------------------
# fig-paper-8: Lemmas 5-7 (C8)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fig8Config(Config):
    """Figure 8: ``pairs`` of ``(M, eta_Y)``, ``steps`` class visits, about ``points`` log-spaced points plotted."""

    pairs: tuple[tuple[int, float], ...] = ((50, 0.7), (200, 0.1), (1000, 1.0), (10, 3.0))
    steps: int = 200000
    points: int = 300
    PRESETS = {"smoke": dict(steps=2000, points=60), "book": dict(steps=20000, points=200), "paper": {}}

    def __post_init__(self) -> None:
        for M, eta in self.pairs:
            check_int("pairs: M", M, low=2)
            if not 0 < eta <= 4 * (M - 1) / M:
                raise ValueError(f"pairs: eta must be in (0, 4 (M-1)/M] (Lemma 7); got {eta} for M = {M}")
        check_int("steps", self.steps, low=10)
        check_int("points", self.points, low=3)


@dataclass(frozen=True)
class Fig8Result:
    """Lemma 5's ``h_s`` against Lemma 6's ``h(s)``; ``P`` pairs, ``n`` plotted visits ``s``.

    Attributes:
        config: the configuration; s: ``(n,)`` the plotted visits (0 first).
        h_discrete, h_continuous, gap: ``(P, n)`` ``h_s``, ``h(s)`` and ``h_s - h(s)``.
        gap_max, gap_min: ``(P, n)`` running max and min of the gap over every visit up to ``s``.
        ivp_error: ``(P,)`` max ``|closed form - solve_ivp|``; implicit: ``(P,)`` max relative residual of Eqn 45.
        below: ``(P,)`` ``max(0, -min gap)`` (Lemma 7: 0); over: ``(P,)`` max of gap minus Lemma 7's bound
            ``eta/M - eta/(exp(M h(s)) + M - 1)`` (<= 0); ratio_end: ``(P,)`` ``h_s / h(s) - 1`` at the end.
    """

    config: Fig8Config
    s: np.ndarray
    h_discrete: np.ndarray
    h_continuous: np.ndarray
    gap: np.ndarray
    gap_max: np.ndarray
    gap_min: np.ndarray
    ivp_error: np.ndarray
    implicit: np.ndarray
    below: np.ndarray
    over: np.ndarray
    ratio_end: np.ndarray


def run_fig8(c: Fig8Config, progress: Progress | None = None) -> Fig8Result:
    """Every visit ``0..steps`` of every pair: the recursion, the closed form and ``solve_ivp``."""
    s_all = np.arange(c.steps + 1, dtype=np.float64)
    grid = np.array([0, *[t for t in train.log_steps(c.steps, c.points) if t > 0]])
    rows: dict[str, list] = {k: [] for k in Fig8Result.__dataclass_fields__ if k not in ("config", "s")}
    for M, eta in c.pairs:
        hd, hc = dec.lemma5_h(c.steps, M, eta), dec.lemma6_h(s_all, M, eta)
        gap = hd - hc
        bound = eta / M - eta / (np.exp(M * hc) + M - 1)
        implicit = np.abs(np.expm1(M * hc) / M + (M - 1) * hc - eta * s_all) / np.maximum(eta * s_all, 1)
        for key, value in (("h_discrete", hd[grid]), ("h_continuous", hc[grid]), ("gap", gap[grid]),
                           ("gap_max", np.maximum.accumulate(gap)[grid]), ("gap_min", np.minimum.accumulate(gap)[grid]),
                           ("ivp_error", np.abs(hc - dec.lemma6_h_ivp(s_all, M, eta)).max()),
                           ("implicit", implicit.max()), ("below", max(0.0, -gap.min())),
                           ("over", (gap - bound).max()), ("ratio_end", hd[-1] / hc[-1] - 1)):
            rows[key].append(value)
        if progress is not None:
            progress(1)
    return Fig8Result(config=c, s=grid.astype(np.float64), **{k: np.array(v) for k, v in rows.items()})


def fig8_table(r: Fig8Result) -> dict[str, np.ndarray]:
    """One row per (pair, plotted visit)."""
    P, n = r.h_discrete.shape
    pair = np.repeat(np.arange(P), n)
    return {"M": np.array([m for m, _ in r.config.pairs])[pair], "eta": np.array([e for _, e in r.config.pairs])[pair],
            "s": np.tile(r.s, P), **{k: getattr(r, k).reshape(-1) for k in
                                      ("h_discrete", "h_continuous", "gap", "gap_max", "gap_min")}}


def plot_fig8(r: Fig8Result) -> Figure:
    """Left: ``h_s`` (circles) and ``h(s)`` (lines); right: the gap against the bound ``eta / M``."""
    figures.set_style()
    fig, (ax_h, ax_gap) = plt.subplots(1, 2, figsize=(10, 3.8))
    s = r.s
    for i, (M, eta) in enumerate(r.config.pairs):
        color, label = f"C{i}", f"M={M}, $\\eta_Y$={eta:g}"
        ax_h.plot(s[1:], r.h_continuous[i, 1:], color=color, label=f"{label}: $h(s)$ (Lemma 6)")
        ax_h.plot(s[1::8], r.h_discrete[i, 1::8], "o", ms=3, color=color, mfc="none")
        ax_gap.plot(s[1:], r.gap[i, 1:], color=color, label=label)
        ax_gap.axhline(eta / M, color=color, ls=":", lw=1)
    ax_h.set(xscale="log", yscale="log", xlabel="class visits $s$", ylabel="margin $h$",
             title="discrete $h_s$ (circles, Lemma 5) vs continuous $h(s)$ (lines)")
    ax_gap.set(xscale="log", yscale="log", xlabel="class visits $s$", ylabel="$h_s - h(s)$",
               title="gap (dotted: the bound $\\eta_Y / M$)")
    for ax in (ax_h, ax_gap):
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    return fig


RULE_C8 = Rule("C8", "derivation", (
    at_most("ivp_error", "max |Lemma 6's closed form - solve_ivp of its ODE|", 1e-9, 1e-6),
    at_most("implicit_residual", "max relative residual of Eqn 45 at the closed form", 1e-13, 1e-9),
    at_most("below", "how far h_s falls below h(s) (Lemma 7: never)", 1e-12, 1e-9),
    at_most("over_bound", "max of h_s - h(s) minus the bound eta/M - eta/(exp(M h) + M - 1)", 1e-12, 1e-9),
    at_most("ratio_end", "h_s / h(s) - 1 at the last visit (Lemma 7: -> 0)", 1e-3, 1e-2),
), note="Lemma 7's explicit bound is the one proved in the chapter (the paper's constant is lost).")


def fig8_verdicts(r: Fig8Result) -> list[Verdict]:
    """C8 from every pair of Figure 8."""
    c = r.config
    numbers = {"ivp_error": float(r.ivp_error.max()), "implicit_residual": float(r.implicit.max()),
               "below": float(r.below.max()), "over_bound": float(r.over.max()),
               "ratio_end": float(np.abs(r.ratio_end).max()), "largest_gap": float(r.gap_max[:, -1].max())}
    protocol = f"(M, eta_Y) in {list(c.pairs)}, every visit s = 0..{c.steps}; solve_ivp DOP853 (rtol 1e-12)"
    return [RULE_C8.judge(numbers, protocol=protocol, link=f"{PAGE}#fig-paper-8")]


FIG8 = Experiment(
    id="ch3-fig8", chapter=CHAPTER, config=Fig8Config, result=Fig8Result, run=run_fig8, verdicts=fig8_verdicts,
    work=lambda c: len(c.pairs),
    figures=(FigureSpec(
        id="fig-paper-8",
        caption="Paper Figure 8 re-made: the discrete per-class margin h_s of Lemma 5 (h_{s+1} = h_s + "
                "eta_Y/(exp(M h_s) + M - 1)) against the continuous solution (exp(M h) - 1)/M + (M - 1) h = "
                "eta_Y s of Lemma 6, for several (M, eta_Y), and their gap against the bound eta_Y / M.",
        claims=("C7", "C8"), plot=plot_fig8, table=fig8_table),),
)

# ------------------------------------------------------------------------------------------------
# Lemma 3 and Theorem 1(a) on families of inputs (C6, C10)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FamiliesConfig(Config):
    """Random families with ``||E||_2 < 1`` (:func:`scansnap.theory.random_inputs`) and the star family
    (:func:`scansnap.theory.star_inputs` with these ``leaves``, ``overlap``, ``weak``)."""

    families: int = 20000
    seed: int = 0
    leaves: int = 5
    overlap: float = 0.3
    weak: float = 0.001
    PRESETS = {"smoke": dict(families=200), "book": dict(families=2000), "paper": {}}

    def __post_init__(self) -> None:
        check_int("families", self.families, low=1)
        check_int("seed", self.seed, low=0)
        check_int("leaves", self.leaves, low=1)


@dataclass(frozen=True)
class FamiliesResult:
    """What the families measured.

    Attributes:
        identity_error: max ``|W-update of Eqn 26 - e_k e_k^T|`` (Lemma 3: 0).
        bound_ratio: max over families and classes of the modification's size over its bound.
        overlapping: families in which some class overlaps another; xi_min: the smallest ``xi`` of an
            overlapping class among them; xi_failing: families with some overlapping class at ``xi <= 0``.
        rowsum_half, rowsum_half_failing: the same count restricted to families whose rows of ``E`` sum to at
            most 1/2 (where ``xi > 0`` is proved), and how many of them fail.
        star_norm, star_rowsum, star_E01, star_xi: the star family's ``||E||_2``, largest row sum of ``E``,
            the weak class's overlap and its ``xi``.
    """

    config: FamiliesConfig
    identity_error: float
    bound_ratio: float
    overlapping: int
    xi_min: float
    xi_failing: int
    rowsum_half: int
    rowsum_half_failing: int
    star_norm: float
    star_rowsum: float
    star_E01: float
    star_xi: float


def run_families(c: FamiliesConfig, progress: Progress | None = None) -> FamiliesResult:
    """Draw families until ``c.families`` satisfy ``||E||_2 < 1``; check Lemma 3 and ``xi`` on each."""
    rng = np.random.default_rng(c.seed)
    identity = ratio = 0.0
    overlapping = failing = half = half_failing = 0
    xi_min = np.inf
    kept = 0
    while kept < c.families:
        F = theory.random_inputs(rng)
        ev = np.linalg.eigvalsh(dec.gram(F))
        if not (ev.max() < 1 and ev.min() > -1 + 1e-6):
            continue
        kept += 1
        E = dec.gram(F)
        W_dir = dec.reparameterize(F @ np.linalg.inv(F.T @ F), F)  # Eqn 26's update of each class, in W
        identity = max(identity, float(np.abs(W_dir - np.eye(*W_dir.shape)).max()))
        change, bound = theory.update_change(F)
        ratio = max(ratio, float(change.max() / bound) if bound > 0 else 0.0)
        x = dec.xi(E, F.shape[0] + 2 * F.shape[1])  # M: contextual tokens + one query and one next token per class
        on = E.sum(1) > 0
        if on.any():
            overlapping += 1
            xi_min = min(xi_min, float(x[on].min()))
            bad = bool((x[on] <= 0).any())
            failing += bad
            if E.sum(1).max() <= 0.5:
                half += 1
                half_failing += bad
        if progress is not None and kept % max(1, c.families // 10) == 0:
            progress(1)
    star = theory.star_inputs(c.leaves, c.overlap, c.weak)
    classes = dec.classes_from_inputs(star)  # a realizable family: P(l | n) proportional to the columns
    E_star = dec.gram(dec.unit_inputs(classes)[0])
    return FamiliesResult(config=c, identity_error=identity, bound_ratio=ratio, overlapping=overlapping,
                          xi_min=float(xi_min), xi_failing=failing, rowsum_half=half, rowsum_half_failing=half_failing,
                          star_norm=float(np.linalg.norm(E_star, 2)), star_rowsum=float(E_star.sum(1).max()),
                          star_E01=float(E_star[0, 1]), star_xi=float(dec.xi(E_star, classes.M)[0]))


RULE_C6 = Rule("C6", "derivation", (
    at_most("identity_error", "max |W-update of Eqn 26 - e_k e_k^T| over the families", 1e-10, 1e-6),
    at_most("bound_ratio", "largest size of the modification over its bound sqrt(1+||E||) ||E|| / (1-||E||)", 1.0),
    at_least("families", "random families with ||E||_2 < 1", 100, 10),
), note="sympy proves the reparameterization in the chapter; this checks the library's Lemma 3 on many inputs.")
RULE_C10 = Rule("C10", "derivation", (
    at_least("random_share", "share of random families (||E||_2 < 1) with xi > 0 on every overlapping class",
             0.999, 0.95),
    at_most("rowsum_half_failures", "families whose rows of E sum to <= 1/2 with some xi <= 0 (proved: none)", 0),
    at_least("star_xi", "xi of the weakly attached class of the star family (||E||_2 < 1)", 0.0, required=False),
), note="The star family satisfies the reconstructed Assumption 2 (||E||_2 < 1) and has xi < 0: it refutes "
        "Theorem 1(a) under that reading only. The paper's own eigenvalue bounds are lost and may exclude it, so a "
        "negative xi there keeps the claim below verified without refuting the paper.")


def families_verdicts(r: FamiliesResult) -> list[Verdict]:
    """C6 and C10 (derivation) from the families."""
    c = r.config
    protocol = (f"{c.families} random families (K = 2..8 classes, K+3..40 tokens, random supports and weights in "
                f"[0.05, 1], kept when ||E||_2 < 1; seed {c.seed}) and a star family ({c.leaves} leaves at overlap "
                f"{c.overlap}, one class at {c.weak})")
    c6 = RULE_C6.judge({"identity_error": r.identity_error, "bound_ratio": r.bound_ratio, "families": c.families},
                       protocol=protocol, link=f"{PAGE}#lemma-3")
    share = 1 - r.xi_failing / max(r.overlapping, 1)
    c10 = RULE_C10.judge({"random_share": share, "rowsum_half_failures": r.rowsum_half_failing, "star_xi": r.star_xi,
                          "xi_min_random": r.xi_min, "star_norm": r.star_norm}, protocol=protocol,
                         details=f"{r.overlapping} random families with overlaps (smallest xi {r.xi_min:.1e}), "
                                 f"{r.rowsum_half} with row sums <= 1/2; star family: ||E||_2 = {r.star_norm:.2f}, "
                                 f"largest row sum {r.star_rowsum:.2f}, E_01 = {r.star_E01:.4f}, xi_0 = "
                                 f"{r.star_xi:.1e}", link=f"{PAGE}#thm-1")
    return [c6, c10]


FAMILIES = Experiment(id="ch3-families", chapter=CHAPTER, config=FamiliesConfig, result=FamiliesResult,
                      run=run_families, verdicts=families_verdicts, work=lambda c: 10)

# ------------------------------------------------------------------------------------------------
# Lemma 10 (C14)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lemma10Config(Config):
    """``runs`` Monte Carlo runs of ``t`` uniform draws among ``K`` classes; ``delta`` the failure probability."""

    runs: int = 200000
    t: int = 1000
    K: int = 10
    delta: float = 0.05
    seed: int = 0
    PRESETS = {"smoke": dict(runs=2000), "book": dict(runs=50000), "paper": {}}

    def __post_init__(self) -> None:
        check_int("runs", self.runs, low=1)
        check_int("t", self.t, low=1)
        check_int("K", self.K, low=1)
        if not 0 < self.delta < 1:
            raise ValueError(f"delta: must be a failure probability in (0, 1); got {self.delta!r}")
        check_int("seed", self.seed, low=0)


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


RULE_C14 = Rule("C14", "simulation", (
    at_most("beyond_ratio", "share of runs beyond the radius, in units of delta", 1.0, 2.0),
    at_least("runs", "Monte Carlo runs", 1000, 100),
), note="sympy derives the radius in the chapter.")


def lemma10_verdicts(r: Lemma10Result) -> list[Verdict]:
    """C14 from the Monte Carlo."""
    c = r.config
    return [RULE_C14.judge({"beyond_ratio": r.beyond / c.delta, "runs": c.runs, "radius": r.radius},
                           protocol=f"{c.runs} runs of t = {c.t} uniform draws among K = {c.K} classes, delta = "
                                    f"{c.delta}, seed {c.seed}",
                           details=f"largest deviation {r.largest:.0f}, 95% quantile {r.q95:.0f}",
                           link=f"{PAGE}#lemma-10")]


LEMMA10 = Experiment(id="ch3-lemma10", chapter=CHAPTER, config=Lemma10Config, result=Lemma10Result,
                     run=run_lemma10, verdicts=lemma10_verdicts)

EXPERIMENTS = [FIG8, FAMILIES, LEMMA10]
RULES = [RULE_C6, RULE_C8, RULE_C10, RULE_C14]
