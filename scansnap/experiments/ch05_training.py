"""Chapter 5's Theorem 3 in training: the measures, nulls and rules shared with Figure 4 (C19, C20), Theorem 3 in
population gradient descent (C19, C20) and the initial value as a prior (C22).

* :func:`theorem3_runs` measures runs against Theorem 3 (:func:`scansnap.theory.scanning_measures.theorem3_check`)
  and against its null, **chi frozen at 1** (the relative gains held at ``r(0)``, no scanning), from the same
  snapshots: the control of the C19 and C20 training rules (:func:`eqn11_training_rule`,
  :func:`eqn12_training_rule`), since Eqn 11's deviation and Eqn 12's band are met trivially at step 0.
* :data:`GD` (``ch5-gd``, no figure): Syn-Small trained by gradient descent on the population loss (``T = inf``,
  no momentum, zero initialization) at ``eta_Z = 1`` and several ``eta_Y``: the closest a trainer comes to the
  theorem's setting. Judges C19 and C20 on **training-population** evidence.
* :data:`PRIOR` (``ch5-prior``, no figure): the Figure-4 protocol from the authors' random initialization
  (every entry of ``Y`` and ``Z`` uniform in ``+-1/sqrt(M)``): does the prior's token
  ``argmax P(l|n) exp(z_ml(0))`` gain the most, or the most frequent? Judges C22 on **training-sampled** evidence
  (at step 0 the prior's token is on top by definition, so the rule reads the gains, not the final ranking).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from scansnap import data, model, train
from scansnap.experiments.base import Experiment, Progress
from scansnap.params import Each, Fraction, Int, Positive, Real, Seeds, listed, param, seed_range
from scansnap.results import Config
from scansnap.theory.decoder import gamma, gram, xi
from scansnap.theory.scanning import dominant_token, dominant_token_bounds, growth_bound, relative_gain
from scansnap.theory.scanning_measures import (
    band_share,
    deviation_at_growth,
    eqn11_deviation,
    measured_rate,
    theorem3_check,
)
from scansnap.verdicts import Rule, Verdict, at_least, at_most

PREMISE_POPULATION = ("Theorem 1's back-propagated gradient (C9) under Assumption 1(c), eta_Y >> eta_Z (judged at the "
                      "largest eta_Y/eta_Z)")
PREMISE_SAMPLED = PREMISE_POPULATION + ", in the long-sequence limit without momentum (here T = 128, momentum 0.9)"
CONTROL_FROZEN = ("chi frozen at 1: the relative gains held at r(0) and chi_l0 = 1 (no scanning), against the same "
                  "run's snapshots and B_n")


@dataclass(frozen=True)
class Theorem3Runs:
    """:class:`~scansnap.theory.scanning_measures.Theorem3Check` of class 1, per run: ``(R, S)`` arrays; the
    ``null_*`` arrays are the same measures for the null "chi frozen at 1" (``CONTROL_FROZEN``)."""

    deviation_at_star: np.ndarray
    deviation_max: np.ndarray
    band_share_measured: np.ndarray
    band_share_theorem1: np.ndarray
    monotone_share: np.ndarray
    chi_end: np.ndarray
    null_deviation_at_star: np.ndarray
    null_band_measured: np.ndarray
    null_band_theorem1: np.ndarray


def frozen_null(f: np.ndarray, classes: data.SequenceClasses, n: int, *, eta_Y: float, eta_Z: float,
                momentum: float, chi_star: float) -> tuple[float, float, float]:
    """The null "chi frozen at 1" for one run ``f`` ``(S, K, M)``: Eqn 11's deviation ``|r(t) / r(0) - 1|`` when the
    run's ``chi_l0`` first reaches ``chi_star``, and the share of snapshots with ``chi = 1`` inside Eqn 12's band
    with the run's own ``B_n`` and with Theorem 1's (as :func:`theorem3_check` builds them)."""
    S, eff = f.shape[0], 1.0 / (1.0 - momentum)
    t, ft = np.arange(S, dtype=np.float64), f / np.linalg.norm(f, axis=-1, keepdims=True)
    xi_n = xi(gram(torch.as_tensor(ft).mT), classes.M).numpy()[:, n]
    B_th = growth_bound(t, gamma(t, classes.M, classes.K, eta_Y * eff), xi_n, eta_Z=eta_Z * eff, pi=1.0 / classes.K)
    probs, mask = classes.probs[n].numpy(), classes.distinct_mask()[n].numpy()
    D = np.flatnonzero(mask)
    l0 = int(D[np.argmax(probs[D])])
    chi, _ = eqn11_deviation(f[:, n], probs, mask, l0)
    r = np.stack([relative_gain(f[:, n], l0, int(l)) for l in D if l != l0])
    at_star, _ = deviation_at_growth(chi, np.abs(r / r[:, :1] - 1.0), chi_star)
    B_me = np.concatenate([[0.0], np.cumsum(measured_rate(f[:, n], probs, mask))])
    bands = [band_share(np.ones(S - 1), *(x[1:] for x in dominant_token_bounds(ft[0, n, l0], np.maximum(B, 0.0))))
             for B in (B_me, B_th)]
    return at_star, bands[0], bands[1]


def theorem3_runs(f: torch.Tensor, eta_Y: list[float], eta_Z: list[float], momentum: float, chi_star: float,
                  shape: tuple[int, int]) -> Theorem3Runs:
    """:func:`theorem3_check` of class 1 for every configuration of ``f`` ``(steps + 1, C, K, M)``, and its null."""
    classes = data.syn_small()
    checks = [theorem3_check(f[:, i], classes, 0, eta_Y=eta_Y[i], eta_Z=eta_Z[i], momentum=momentum,
                             chi_star=chi_star) for i in range(f.shape[1])]
    nulls = np.array([frozen_null(f[:, i].numpy(), classes, 0, eta_Y=eta_Y[i], eta_Z=eta_Z[i], momentum=momentum,
                                  chi_star=chi_star) for i in range(f.shape[1])]).T
    return Theorem3Runs(*(np.array([getattr(c, k) for c in checks]).reshape(shape) for k in
                          ("deviation_at_star", "deviation_max", "band_share_measured", "band_share_theorem1",
                           "monotone_share", "chi_end")), *(x.reshape(shape) for x in nulls))


@dataclass(frozen=True)
class Eqn11Training:
    """C19 in training: Eqn 11's deviation ``|r / (r(0) chi) - 1|`` (worst token) when ``chi_l0`` first reaches
    ``chi_star``, mean over seeds, at the largest ``eta_Y/eta_Z`` (deviation_theorem_setting) and where largest."""

    deviation_theorem_setting: float
    deviation_worst_ratio: float


@dataclass(frozen=True)
class Eqn12Training:
    """C20 in training, means over the runs of one ``eta_Y/eta_Z``: monotone_share (steps with ``f~_l0`` not
    decreasing), band_share_measured / band_share_theorem1 (snapshots with ``chi_l0`` in Eqn 12's band, ``B_n`` from
    the run's own rate / from Theorem 1)."""

    monotone_share: float
    band_share_measured: float
    band_share_theorem1: float


def eqn12_measures(th: Theorem3Runs, i: int, null: bool = False) -> Eqn12Training:
    """:class:`Eqn12Training` of row ``i`` of ``th``; ``null``: of "chi frozen at 1" (a frozen ``f~_l0`` never
    decreases, so its monotone share is 1)."""
    if null:
        return Eqn12Training(1.0, float(th.null_band_measured[i].mean()), float(th.null_band_theorem1[i].mean()))
    return Eqn12Training(float(th.monotone_share[i].mean()), float(th.band_share_measured[i].mean()),
                         float(th.band_share_theorem1[i].mean()))


def eqn11_training_rule(evidence: str) -> Rule:
    """C19 in training: the Eqn-11 deviation at ``chi_l0 = chi_star``, held to a tolerance."""
    return Rule("C19", evidence, Eqn11Training, (
        at_most("deviation_theorem_setting", "Eqn 11's relative deviation |r / (r(0) chi) - 1| (worst token) when "
                "chi_l0 first reaches 1.5, mean over seeds, at the largest eta_Y/eta_Z", 0.05, 0.25),
        at_most("deviation_worst_ratio", "the same at the eta_Y/eta_Z where it is largest", 0.05, 0.25,
                required=False),
    ), alternative="relative gains that do not grow with chi (r held near r(0)), or grow at another rate",
        control=CONTROL_FROZEN, premise=PREMISE_SAMPLED if evidence == "training-sampled" else PREMISE_POPULATION,
        note="At chi = 1.5 Eqn 11 predicts r to grow by 50%, so the null 'chi frozen at 1' deviates by about 0.5 "
             "(step 0 is no null: the deviation is 0 there by definition). A deviation of 0.05 leaves 90% of that "
             "change explained (verified), 0.25 half of it (partly). Judged where Assumption 1(c) (eta_Y >> eta_Z) "
             "is closest.")


def eqn12_training_rule(evidence: str) -> Rule:
    """C20 in training: monotonicity of f~_l0 and Eqn 12's band."""
    return Rule("C20", evidence, Eqn12Training, (
        at_least("monotone_share", "share of steps at which f~_l0 did not decrease (mean over runs, largest "
                 "eta_Y/eta_Z)", 0.95, 0.75),
        at_least("band_share_measured", "share of snapshots with chi_l0 inside Eqn 12's band, B_n the integral of "
                 "the run's own rate A_n (mean over runs, largest eta_Y/eta_Z)", 0.95, 0.75),
        at_least("band_share_theorem1", "the same with B_n = eta_Z int gamma pi_n xi_n from Theorem 1's gamma and "
                 "xi", 0.95, 0.75, required=False),
    ), alternative="a dominant token whose growth factor falls below Eqn 12's lower bound (no scanning) or above its "
                   "upper one, or whose attention falls",
        control=CONTROL_FROZEN, premise=PREMISE_SAMPLED if evidence == "training-sampled" else PREMISE_POPULATION,
        note="Eqn 12 is an inequality at all times: 95% of the snapshots verify, 75% partly. At step 0 the band is "
             "[1, 1] and chi = 1, so the control is chi frozen at 1 against the run's own B_n (it leaves the band "
             "as soon as B_n > 0; a frozen f~_l0 is trivially monotone, so the band carries the rule). The band "
             "with Theorem 1's B_n also tests the speed of Theorem 1's coefficients (judged under C9 and C15), so "
             "it is not required.")


@dataclass(frozen=True)
class GDConfig(Config):
    """Attributes: ratios: ``eta_Y / eta_Z`` at ``eta_Z``; steps: gradient-descent steps; chi_star: as in
    :class:`~scansnap.experiments.ch05_synsmall.Fig4Config`."""

    ratios: tuple[float, ...] = param((1.0, 3.0, 10.0), Each(Positive(), increasing=True), listed)
    eta_Z: float = param(1.0, Positive())
    steps: int = param(1000, Int(low=2))
    chi_star: float = param(1.5, Real(1, open="low"))
    PROTOCOL = ("Syn-Small, gradient descent on the population loss (T = inf, no momentum, zero initialization), "
                "{steps} steps, eta_Z = {eta_Z:g}, eta_Y/eta_Z in {ratios}")
    PRESETS = {"smoke": dict(steps=60), "book": dict(steps=300), "paper": {}}
    GATED: ClassVar[tuple[str, ...]] = ("steps",)
    """A run shorter than the paper preset's steps is labelled with the cut. C19 and C20 do not depend on it (Eqn 11
    is read where chi_l0 first reaches chi_star, early, within the book's 300 steps; Eqn 12's band at every snapshot
    of the run), so a shorter run checks the same statements over fewer times, which the label says."""


@dataclass(frozen=True)
class GDResult:
    """Attributes: config; theorem3: ``(ratios, 1)`` arrays of class 1's measures."""

    config: GDConfig
    theorem3: Theorem3Runs


def run_gd(config: GDConfig, progress: Progress | None = None) -> GDResult:
    c, classes = config, data.syn_small()
    eta_Y = [r * c.eta_Z for r in c.ratios]
    h = train.train(classes, eta_Y, c.eta_Z, steps=c.steps, limit="population", momentum=0.0, init="zero",
                    snapshot_steps=range(c.steps + 1), progress=progress)
    return GDResult(c, theorem3_runs(h.attention, eta_Y, [c.eta_Z] * len(eta_Y), 0.0, c.chi_star,
                                     (len(c.ratios), 1)))


RULE_C19_POPULATION = eqn11_training_rule("training-population")
RULE_C20_POPULATION = eqn12_training_rule("training-population")


def gd_verdicts(r: GDResult) -> list[Verdict]:
    c, th = r.config, r.theorem3
    dev, null = th.deviation_at_star[:, 0], th.null_deviation_at_star[:, 0]
    link = GD.link("theorem-3-in-training")
    return [
        RULE_C19_POPULATION.judge(Eqn11Training(float(dev[-1]), float(np.nanmax(dev))), c,
                                  control=Eqn11Training(float(null[-1]), float(np.nanmax(null))), link=link,
                                  details=f"by ratio: {', '.join(f'{v:.3f}' for v in dev)}; max over the run "
                                  f"{', '.join(f'{v:.3f}' for v in th.deviation_max[:, 0])}; chi frozen at 1: "
                                  f"{', '.join(f'{v:.3f}' for v in null)}"),
        RULE_C20_POPULATION.judge(eqn12_measures(th, -1), c, control=eqn12_measures(th, -1, null=True), link=link,
                                  details="in band with Theorem 1's B_n by ratio: "
                                  f"{', '.join(f'{v:.2f}' for v in th.band_share_theorem1[:, 0])}; with the measured "
                                  f"rate {', '.join(f'{v:.2f}' for v in th.band_share_measured[:, 0])}"),
    ]


GD = Experiment(id="ch5-gd", config=GDConfig, result=GDResult, run=run_gd, verdicts=gd_verdicts,
                work=lambda c: c.steps)


@dataclass(frozen=True)
class PriorConfig(Config):
    """Attributes: seeds (one run each, random initialization); steps, batch, T, momentum, eta: the Figure-4
    protocol at ``eta_Y = eta_Z = eta``."""

    seeds: tuple[int, ...] = param(tuple(range(1, 201)), Seeds(), seed_range)
    steps: int = param(100, Int(low=1))
    batch: int = param(128, Int(low=1))
    T: int = param(128, Int(low=2))
    momentum: float = param(0.9, Fraction())
    eta: float = param(1.0, Positive())
    PROTOCOL = ("Syn-Small, the Figure-4 protocol (SGD, momentum {momentum:g}, batch {batch}, T = {T}, {steps} steps, "
                "eta_Y = eta_Z = {eta:g}) from the authors' random initialization, {seeds}, both classes")
    PRESETS = {"smoke": dict(seeds=(1, 2), steps=12), "book": dict(seeds=tuple(range(1, 41))), "paper": {}}
    GATED: ClassVar[tuple[str, ...]] = ("seeds", "steps")
    """Fewer seeds (runs) or steps are labelled with the cut. C22 does not depend on them (it reads shares of runs,
    which fewer seeds estimate less precisely but without bias, and which token gains the most, settled within the
    Figure-4 protocol's 100 steps)."""


@dataclass(frozen=True)
class PriorResult:
    """Attributes: config; per (seed, class) run, ``(seeds * K,)``: prior, the prior's token ``argmax P(l|n)
    exp(z_ml(0))``; frequent, the most frequent distinct token; winner, the token on top at the end; start, end:
    ``(seeds * K, 10)`` the class's attention over its distinct tokens (in id order) at step 0 and at the end."""

    config: PriorConfig
    prior: np.ndarray
    frequent: np.ndarray
    winner: np.ndarray
    start: np.ndarray
    end: np.ndarray


def run_prior(config: PriorConfig, progress: Progress | None = None) -> PriorResult:
    c, classes = config, data.syn_small()
    h = train.train(classes, c.eta, c.eta, seed=list(c.seeds), steps=c.steps, batch=c.batch, T=c.T,
                    momentum=c.momentum, init="uniform", progress=progress)
    final = classes.population(h.Z).numpy()  # (seeds, K, M)
    rows, start, end = [], [], []
    for i, seed in enumerate(c.seeds):
        Z0 = model.init_params(classes.M, "uniform", torch.Generator().manual_seed(seed))[1]
        first = classes.population(Z0).numpy()
        for n in range(classes.K):
            D, P = classes.distinct(n).numpy(), classes.probs[n].numpy()
            rows.append((dominant_token(P, Z0.numpy()[classes.query[n]], D), int(D[np.argmax(P[D])]),
                         int(D[np.argmax(final[i, n, D])])))
            start.append(first[n, D])
            end.append(final[i, n, D])
    prior, frequent, winner = np.array(rows).T
    return PriorResult(c, prior, frequent, winner, np.array(start), np.array(end))


@dataclass(frozen=True)
class PriorGains:
    """C22 in training, over (seed, class) runs: prior_gains_most (share in which the prior's token gains the most,
    largest ``log f_l(end) / f_l(0)`` of the distinct tokens, strictly), prior_gains_most_where_differ (the same
    among runs where the prior's token is not the most frequent), prior_on_top (share in which it is on top at the
    end: context, 1 at step 0 by definition)."""

    prior_gains_most_where_differ: float
    prior_gains_most: float
    prior_on_top: float


def other_priors(r: PriorResult) -> np.ndarray:
    """``(seeds * K,)`` for each (seed, class) run, the prior's token of the same class under the next seed's
    initialization (the last seed takes the first's): a prior that did not start this run (C22's control)."""
    return np.roll(r.prior.reshape(len(r.config.seeds), -1), -1, axis=0).ravel()


def prior_gains(r: PriorResult, start: np.ndarray, end: np.ndarray, prior: np.ndarray | None = None) -> PriorGains:
    """:class:`PriorGains` from the distinct attention ``start`` and ``end`` ``(runs, 10)``, for the runs' own prior
    tokens or ``prior`` ``(runs,)`` (:func:`other_priors`: the control)."""
    classes = data.syn_small()
    prior = r.prior if prior is None else prior
    ids = np.array([classes.distinct(n).numpy() for _ in r.config.seeds for n in range(classes.K)])
    gain = np.log(end / start)
    top = gain.max(1, keepdims=True)
    strict = (gain == top).sum(1) == 1
    gainer = np.where(strict, ids[np.arange(len(ids)), gain.argmax(1)], -1)
    wins, differ = gainer == prior, prior != r.frequent
    on_top = ids[np.arange(len(ids)), end.argmax(1)] == prior
    return PriorGains(float(wins[differ].mean()) if differ.any() else float("nan"), float(wins.mean()),
                      float(on_top.mean()))


RULE_C22_SAMPLED = Rule("C22", "training-sampled", PriorGains, (
    at_least("prior_gains_most_where_differ", "share of runs in which the prior's token gains the most, among those "
             "where it differs from the most frequent token", 0.9, 0.5),
    at_least("prior_gains_most", "share of all (seed, class) runs in which the prior's token gains the most",
             0.9, 0.6),
), alternative="the initial logits play no role: the most frequent token gains the most (and wins) whatever the "
               "prior (the prior's token is on top at step 0 by definition, so being on top cannot tell)",
    premise=PREMISE_SAMPLED + "; the authors' random initialization also draws Y(0), where Theorem 1 has Y(0) = 0",
    control="the same runs read against another run's prior: each (seed, class) run against the prior's token of "
            "the same class under the next seed's initialization, which did not start it (if the initial logits "
            "played no role, a foreign prior would do as well: it agrees with the frequency order as often)",
    note="The claim names the winner, and the prior's token wins by gaining the most (Theorem 3: the rise of a "
         "distinct logit grows with its attention): it should in nearly every run (90%), and where the prior and "
         "the frequency order disagree it must gain the most most of the time (half is a coin toss, partly). Issue "
         "26: the control was the runs at step 0 (nothing gained: 0, 0 by construction).")


def prior_verdicts(r: PriorResult) -> list[Verdict]:
    differ, wins = r.prior != r.frequent, r.winner == r.prior
    return [RULE_C22_SAMPLED.judge(
        prior_gains(r, r.start, r.end), r.config, control=prior_gains(r, r.start, r.end, other_priors(r)),
        details=f"{int(wins.sum())} of {len(wins)} runs ended with the prior's token on top, "
                f"{int((r.winner == r.frequent).sum())} with the most frequent; they differ in {int(differ.sum())} "
                f"runs, where the prior's token ended on top {int(wins[differ].sum())} times",
        link=PRIOR.link("rem-scanning"))]


PRIOR = Experiment(id="ch5-prior", config=PriorConfig, result=PriorResult, run=run_prior,
                   verdicts=prior_verdicts, work=lambda c: c.steps)

EXPERIMENTS = [GD, PRIOR]
RULES = [RULE_C19_POPULATION, RULE_C20_POPULATION, RULE_C22_SAMPLED]
