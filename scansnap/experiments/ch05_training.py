"""Chapter 5's training runs beyond the paper's figures: Theorem 3 in population gradient descent (C19, C20) and
the initial value as a prior (C22).

* :data:`GD` (``ch5-gd``, no figure): Syn-Small trained by gradient descent on the population loss (``T = inf``,
  no momentum, zero initialization) at ``eta_Z = 1`` and several ``eta_Y``: the closest a trainer comes to the
  theorem's setting. Judges C19 and C20 on **training-population** evidence
  (:func:`scansnap.theory.scanning_measures.theorem3_check`, the same measure as the SGD runs of Figure 4).
* :data:`PRIOR` (``ch5-prior``, no figure): the Figure-4 protocol from the authors' random initialization
  (every entry of ``Y`` and ``Z`` uniform in ``+-1/sqrt(M)``): which distinct token ends on top, the prior's
  ``argmax P(l|n) exp(z_ml(0))`` or the most frequent? Judges C22 on **training-sampled** evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from scansnap import data, model, train
from scansnap._checks import check_int, check_positive, check_seeds
from scansnap.experiments.base import Experiment, Progress
from scansnap.experiments.ch05_synsmall import (
    CHAPTER,
    Theorem3Runs,
    eqn11_training_rule,
    eqn12_training_rule,
    theorem3_runs,
)
from scansnap.results import Config
from scansnap.theory.scanning import dominant_token
from scansnap.verdicts import Rule, Verdict, at_least


@dataclass(frozen=True)
class GDConfig(Config):
    """Attributes: ratios: ``eta_Y / eta_Z`` at ``eta_Z``; steps: gradient-descent steps; chi_star: as in
    :class:`~scansnap.experiments.ch05_synsmall.Fig4Config`."""

    ratios: tuple[float, ...] = (1.0, 3.0, 10.0)
    eta_Z: float = 1.0
    steps: int = 1000
    chi_star: float = 1.5
    PRESETS = {"smoke": dict(steps=60), "book": dict(steps=300), "paper": {}}

    def __post_init__(self) -> None:
        if not self.ratios or list(self.ratios) != sorted(set(self.ratios)):
            raise ValueError(f"ratios: must be increasing; got {self.ratios}")
        for r in self.ratios:
            check_positive("ratios", r)
        check_positive("eta_Z", self.eta_Z)
        check_int("steps", self.steps, low=2)
        if not self.chi_star > 1:
            raise ValueError(f"chi_star: must be > 1; got {self.chi_star}")


@dataclass(frozen=True)
class GDResult:
    """Attributes: config; theorem3: ``(ratios, 1)`` arrays of class 1's measures."""

    config: GDConfig
    theorem3: Theorem3Runs


def run_gd(config: GDConfig, progress: Progress | None = None) -> GDResult:
    c, classes = config, data.syn_small()
    eta_Y = [r * c.eta_Z for r in c.ratios]
    h = train.train(classes, eta_Y, c.eta_Z, steps=c.steps, limit="population", momentum=0.0, init="zero",
                    snapshot_steps=range(c.steps + 1), callback=progress)
    return GDResult(c, theorem3_runs(h.attention, eta_Y, [c.eta_Z] * len(eta_Y), 0.0, c.chi_star,
                                     (len(c.ratios), 1)))


RULE_C19_POPULATION = eqn11_training_rule("training-population")
RULE_C20_POPULATION = eqn12_training_rule("training-population")


def gd_verdicts(r: GDResult) -> list[Verdict]:
    c, th = r.config, r.theorem3
    protocol = (f"Syn-Small, gradient descent on the population loss (T = inf, no momentum, zero initialization), "
                f"{c.steps} steps, eta_Z = {c.eta_Z:g}, eta_Y/eta_Z in {list(c.ratios)}")
    dev = th.deviation_at_star[:, 0]
    link = f"{CHAPTER}.html#theorem-3-in-training"
    return [
        RULE_C19_POPULATION.judge({"deviation_theorem_setting": float(dev[-1]),
                                   "deviation_worst_ratio": float(np.nanmax(dev))}, protocol=protocol, link=link,
                                  details=f"by ratio: {', '.join(f'{v:.3f}' for v in dev)}; max over the run "
                                  f"{', '.join(f'{v:.3f}' for v in th.deviation_max[:, 0])}"),
        RULE_C20_POPULATION.judge({"monotone_share": float(th.monotone_share[-1, 0]),
                                   "band_share_measured": float(th.band_share_measured[-1, 0]),
                                   "band_share_theorem1": float(th.band_share_theorem1[-1, 0])},
                                  protocol=protocol, link=link, details="in band with Theorem 1's B_n by ratio: "
                                  f"{', '.join(f'{v:.2f}' for v in th.band_share_theorem1[:, 0])}; with the measured "
                                  f"rate {', '.join(f'{v:.2f}' for v in th.band_share_measured[:, 0])}"),
    ]


GD = Experiment(id="ch5-gd", chapter=CHAPTER, config=GDConfig, result=GDResult, run=run_gd, verdicts=gd_verdicts,
                work=lambda c: c.steps)


@dataclass(frozen=True)
class PriorConfig(Config):
    """Attributes: seeds (one run each, random initialization); steps, batch, T, momentum, eta: the Figure-4
    protocol at ``eta_Y = eta_Z = eta``."""

    seeds: tuple[int, ...] = tuple(range(1, 201))
    steps: int = 100
    batch: int = 128
    T: int = 128
    momentum: float = 0.9
    eta: float = 1.0
    PRESETS = {"smoke": dict(seeds=(1, 2), steps=12), "book": dict(seeds=tuple(range(1, 41))), "paper": {}}

    def __post_init__(self) -> None:
        check_seeds("seeds", self.seeds)
        check_int("steps", self.steps, low=1)
        check_int("batch", self.batch, low=1)
        check_int("T", self.T, low=2)
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum: must be in [0, 1); got {self.momentum}")
        check_positive("eta", self.eta)


@dataclass(frozen=True)
class PriorResult:
    """Attributes: config; prior, frequent, winner: ``(seeds * K,)`` per (seed, class) run: the prior's token
    ``argmax P(l|n) exp(z_ml(0))``, the most frequent distinct token, and the token on top at the end."""

    config: PriorConfig
    prior: np.ndarray
    frequent: np.ndarray
    winner: np.ndarray


def run_prior(config: PriorConfig, progress: Progress | None = None) -> PriorResult:
    c, classes = config, data.syn_small()
    h = train.train(classes, c.eta, c.eta, seed=list(c.seeds), steps=c.steps, batch=c.batch, T=c.T,
                    momentum=c.momentum, init="uniform", callback=progress)
    final = classes.population(h.Z).numpy()  # (seeds, K, M)
    rows = []
    for i, seed in enumerate(c.seeds):
        Z0 = model.init_params(classes.M, "uniform", torch.Generator().manual_seed(seed))[1].numpy()
        for n in range(classes.K):
            D, P = classes.distinct(n).numpy(), classes.probs[n].numpy()
            rows.append((dominant_token(P, Z0[classes.query[n]], D), int(D[np.argmax(P[D])]),
                         int(D[np.argmax(final[i, n, D])])))
    prior, frequent, winner = np.array(rows).T
    return PriorResult(c, prior, frequent, winner)


RULE_C22_SAMPLED = Rule("C22", "training-sampled", (
    at_least("prior_wins_where_differ", "share of runs in which the prior's token wins, among those where it differs "
             "from the most frequent token", 0.9, 0.5),
    at_least("prior_wins", "share of all (seed, class) runs in which the prior's token wins", 0.9, 0.6),
), note="The claim names the winner: the prior's token should win in nearly every run (90%), and where the prior "
        "and the frequency order disagree it must win most of the time (half is a coin toss, partly).")


def prior_verdicts(r: PriorResult) -> list[Verdict]:
    c = r.config
    differ = r.prior != r.frequent
    wins = r.winner == r.prior
    return [RULE_C22_SAMPLED.judge(
        {"prior_wins_where_differ": float(wins[differ].mean()) if differ.any() else float("nan"),
         "prior_wins": float(wins.mean())},
        protocol=(f"Syn-Small, the Figure-4 protocol (SGD, momentum {c.momentum:g}, batch {c.batch}, T = {c.T}, "
                  f"{c.steps} steps, eta_Y = eta_Z = {c.eta:g}) from the authors' random initialization, seeds "
                  f"{c.seeds[0]}-{c.seeds[-1]} ({len(c.seeds)}), both classes"),
        details=f"{int(wins.sum())} of {len(wins)} runs won by the prior's token, "
                f"{int((r.winner == r.frequent).sum())} by the most frequent; they differ in {int(differ.sum())} "
                f"runs, where the prior won {int(wins[differ].sum())}", link=f"{CHAPTER}.html#rem-scanning")]


PRIOR = Experiment(id="ch5-prior", chapter=CHAPTER, config=PriorConfig, result=PriorResult, run=run_prior,
                   verdicts=prior_verdicts, work=lambda c: c.steps)

EXPERIMENTS = [GD, PRIOR]
RULES = [RULE_C19_POPULATION, RULE_C20_POPULATION, RULE_C22_SAMPLED]
