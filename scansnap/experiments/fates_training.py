"""Chapter 4's training runs (C16-C18): the families of :func:`scansnap.theory.families.example_families` trained
under three protocols, each in the long-sequence limit and with sampled sequences, and the logits read back from
the attention; what makes the run of :data:`scansnap.experiments.ch04_fates.TRAINING` (its verdicts, tables and
figures are in :mod:`scansnap.experiments.ch04_fates`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from scansnap import train
from scansnap._checks import check_choice, check_int, check_positive
from scansnap.experiments.base import Progress
from scansnap.params import Int, Positive, Seeds, param
from scansnap.results import Config
from scansnap.theory.families import example_families
from scansnap.theory.fates import fate_counts, logits_from_attention

__all__ = ["LIMITS", "FamilyLogits", "Protocol", "TrainingConfig", "TrainingResult", "default_protocols",
           "run_training", "training_work"]

LIMITS = ("population", "sampled")  # T = inf (Lemma 2), and sampled sequences of length T


@dataclass(frozen=True)
class Protocol:
    """One way of training in Chapter 4 (Theorem 2's setting or another): learning rates, momentum, number of steps
    (gradient descent: ``momentum = 0``)."""

    name: str
    eta_Y: float
    eta_Z: float
    momentum: float
    steps: int

    def __post_init__(self) -> None:
        check_positive(f"{self.name}: eta_Y", self.eta_Y)
        check_positive(f"{self.name}: eta_Z", self.eta_Z)
        if not 0 <= self.momentum < 1:
            raise ValueError(f"{self.name}: momentum: must be in [0, 1); got {self.momentum}")
        check_int(f"{self.name}: steps", self.steps, low=2)

    def label(self) -> str:
        return f"$\\eta_Y$={self.eta_Y:g}, $\\eta_Z$={self.eta_Z:g}, momentum {self.momentum:g}"


def default_protocols(theorem_steps: int, other_steps: int) -> tuple[Protocol, ...]:
    """The theorem's setting, equal learning rates, and the authors' released protocol (their Figure 4 run: equal
    rates, momentum 0.9, 100 steps; Sec. 8 of the paper says only SGD with momentum "until convergence")."""
    return (Protocol("theorem", 1.0, 0.1, 0.0, theorem_steps), Protocol("equal", 1.0, 1.0, 0.0, other_steps),
            Protocol("paper", 1.0, 1.0, 0.9, other_steps))


@dataclass(frozen=True)
class TrainingConfig(Config):
    """Chapter 4's training runs of Theorem 2 and Corollary 2 (C16-C18).

    Attributes:
        shown: families whose logits ``fig-ch4-fates`` shows (theorem's setting only).
        counted: families whose moves are counted under every protocol (``fig-ch4-violations``).
        protocols: the protocols; the one named ``"theorem"`` is the theorem's setting.
        seeds: sampled runs (one per seed); batch, T: sequences per step and their length.
        tol: a logit move with ``|dz| <= tol`` counts as still.
    """

    shown: tuple[str, ...] = ("one common token", "Syn-Medium, one query", "two common, asymmetric",
                              "common to 2 of 3")
    counted: tuple[str, ...] = ("one common token", "Syn-Small", "Syn-Medium, one query")
    protocols: tuple[Protocol, ...] = default_protocols(1000, 100)
    seeds: tuple[int, ...] = param(tuple(range(1, 11)), Seeds())
    batch: int = param(128, Int(low=1))
    T: int = param(128, Int(low=2))
    tol: float = param(1e-12, Positive())
    PRESETS = {"smoke": dict(protocols=default_protocols(20, 20), seeds=(1,)),
               "book": dict(protocols=default_protocols(200, 100), seeds=(1, 2, 3, 4, 5)), "paper": {}}
    GATED = ("seeds",)
    NOT_GATED = {"protocols": "the theorem's setting runs 200 steps (paper preset 1,000; the others 100 in both): "
                              "C16-C18 count the wrong-way moves over every step run, and the paper preset gives the "
                              "same shares (0 wrong-way, 1 asymmetric rise; checked for issue 26, 29 s against 4 s)"}

    def validate(self) -> None:
        names = tuple(example_families())
        for fam in (*self.shown, *self.counted):
            check_choice("shown/counted family", fam, names)
        if [p.name for p in self.protocols].count("theorem") != 1:
            raise ValueError("protocols: must hold exactly one protocol named 'theorem'")

    def theorem(self) -> Protocol:
        return next(p for p in self.protocols if p.name == "theorem")

    def protocol(self) -> str:
        runs = "; ".join(f"{p.name}: eta_Y = {p.eta_Y:g}, eta_Z = {p.eta_Z:g}, momentum {p.momentum:g}, {p.steps} steps"
                         for p in self.protocols)
        return (f"{', '.join(dict.fromkeys((*self.counted, *self.shown)))}, zero initialization, {runs}; each in the "
                f"long-sequence limit (scansnap.train, limit='population') and with sampled sequences (batch "
                f"{self.batch}, T = {self.T}, seeds {list(self.seeds)}); logits read back from the attention at "
                f"every step")


@dataclass(frozen=True)
class FamilyLogits:
    """The logits ``z_{ml}(t)`` of every contextual token of a one-query family, in Theorem 2's setting (Chapter 4's
    ``fig-ch4-fates``).

    Attributes:
        family: its name; tokens: ``(L,)`` token ids; common: ``(L,)`` whether each is a common token.
        population: ``(steps + 1, L)`` in the long-sequence limit; sampled: ``(steps + 1, L)`` mean over seeds.
    """

    family: str
    tokens: np.ndarray
    common: np.ndarray
    population: np.ndarray
    sampled: np.ndarray


@dataclass(frozen=True)
class TrainingResult:
    """Chapter 4's training runs (C16-C18).

    Attributes:
        config: the configuration.
        logits: one :class:`FamilyLogits` per shown family.
        distinct, common: ``(counted, protocols, 2, 3)`` int: ``(up, down, still)`` counts of the moves of
            distinct / common logits over (step, class, token) entries, summed over runs; axis 2 is
            :data:`LIMITS`.
        min_distinct_move, max_common_move: ``(counted, protocols, 2)``: the most negative distinct move and
            the most positive common move.
    """

    config: TrainingConfig
    logits: tuple[FamilyLogits, ...]
    distinct: np.ndarray
    common: np.ndarray
    min_distinct_move: np.ndarray
    max_common_move: np.ndarray


def _logits(classes, p: Protocol, limit: str, c: TrainingConfig, progress: Progress | None) -> torch.Tensor:
    """Logits ``(runs, steps + 1, M, M)`` at every step, read back from the attention snapshots."""
    hist = train.train(classes, p.eta_Y, p.eta_Z, steps=p.steps, batch=c.batch, T=c.T, optimizer="sgd",
                       momentum=p.momentum, init="zero", seed=[0] if limit == "population" else list(c.seeds),
                       limit=limit, snapshot_steps=list(range(p.steps + 1)), progress=progress)
    return logits_from_attention(hist.attention.transpose(0, 1), classes)


def run_training(config: TrainingConfig, progress: Progress | None = None) -> TrainingResult:
    """Every (family, protocol, limit) that a figure or a count of Chapter 4 needs (C16-C18), trained once."""
    c, fams = config, example_families()
    shape = (len(c.counted), len(c.protocols), len(LIMITS))
    counts = {k: np.zeros((*shape, 3), dtype=np.int64) for k in ("distinct", "common")}
    dmin, cmax = np.full(shape, np.nan), np.full(shape, np.nan)
    shown: dict[str, FamilyLogits] = {}
    for name in dict.fromkeys((*c.shown, *c.counted)):
        classes = fams[name]
        for j, p in enumerate(c.protocols):
            if name not in c.counted and not (name in c.shown and p.name == "theorem"):
                continue
            Z = {limit: _logits(classes, p, limit, c, progress) for limit in LIMITS}
            if name in c.shown and p.name == "theorem":
                m = int(classes.query[0])
                tokens = torch.nonzero(classes.support().any(0)).flatten()
                common = torch.isin(tokens, classes.common())
                shown[name] = FamilyLogits(name, tokens.numpy(), common.numpy(),
                                           Z["population"][0][:, m, tokens].numpy(),
                                           Z["sampled"].mean(0)[:, m, tokens].numpy())
            if name in c.counted:
                i = c.counted.index(name)
                for k, limit in enumerate(LIMITS):
                    runs = [fate_counts(z, classes, tol=c.tol) for z in Z[limit]]
                    counts["distinct"][i, j, k] = np.sum([r.distinct for r in runs], axis=0)
                    counts["common"][i, j, k] = np.sum([r.common for r in runs], axis=0)
                    dmin[i, j, k] = min(r.min_distinct_move for r in runs)
                    cmax[i, j, k] = max(r.max_common_move for r in runs)
    return TrainingResult(c, tuple(shown[n] for n in c.shown), counts["distinct"], counts["common"], dmin, cmax)


def training_work(c: TrainingConfig) -> int:
    """The progress units of :func:`run_training` (Chapter 4): training steps over both limits."""
    runs = sum(p.steps for p in c.protocols) * len(c.counted) + c.theorem().steps * len(set(c.shown) - set(c.counted))
    return 2 * runs
