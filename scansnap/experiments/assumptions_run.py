"""Chapter 2's run on the assumptions (C43): Syn-Small trained with the authors' protocol, heavy-ball momentum against
plain SGD on the same batches, sampled and in the long-sequence limit; the overlaps of Syn-Medium, its random
initialization and the bias of ``f~`` at finite ``T``; what makes the run of
:data:`scansnap.experiments.ch02_assumptions.ASSUMPTIONS` (its rule, verdicts and figure are in
:mod:`scansnap.experiments.ch02_assumptions`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from scansnap import data, metrics, theory, train
from scansnap.experiments.base import Progress
from scansnap.model import init_params, token_counts
from scansnap.params import Each, Int, Positive, Real, Seeds, listed, param, seed_range
from scansnap.results import Config

__all__ = ["RUNS", "AssumptionsConfig", "AssumptionsResult", "run_assumptions"]

RUNS = ("momentum", "warm-up", "plain", "plain-fast")
"""The optimizers compared in Chapter 2 (C43): heavy-ball momentum at ``eta``; plain SGD with momentum's warm-up
schedule; plain SGD at ``eta``; plain SGD at ``eta / (1 - momentum)``."""


@dataclass(frozen=True)
class AssumptionsConfig(Config):
    """Chapter 2's run (C43): the authors' Syn-Small protocol and the datasets whose overlaps are measured.

    Attributes:
        steps, seeds, batch, T: SGD steps, one sampled run per seed, sequences per step and their length.
        eta: ``eta_Y = eta_Z``; momentum: heavy-ball momentum of the authors' protocol.
        medium: Syn-Medium sizes (queries) whose overlaps and random initialization are measured.
        init_seed: seed of Syn-Medium's uniform initialization.
        bias_samples: fresh sequences of length ``T`` for the bias of ``f~`` at ``Z = 0``.
    """

    steps: int = param(100, Int(low=2), "{} SGD steps")
    seeds: tuple[int, ...] = param(tuple(range(1, 11)), Seeds(), seed_range)
    batch: int = param(128, Int(low=1), "batch {}")
    T: int = param(128, Int(low=2), "T = {}")
    eta: float = param(1.0, Positive(), "eta_Y = eta_Z = {:g}")
    momentum: float = param(0.9, Real(0, 1, open="both"), "momentum {:g}")
    medium: tuple[int, ...] = param((1, 3, 5, 10), Each(Int(low=1), min_len=0), listed)
    init_seed: int = param(1, Int(low=0), "uniform init (seed {})")
    bias_samples: int = param(100000, Int(low=2), "bias of f~ over {} sequences")
    PROTOCOL = ("Syn-Small, the authors' protocol: {steps}, {batch}, {T}, {eta}, zero init, {seeds}; {momentum} vs "
                "plain SGD (same batches) at eta, at eta/(1 - momentum) and with momentum's warm-up; the long-sequence "
                "limit as reference; Syn-Medium {medium} with the {init_seed}; {bias_samples}")
    PRESETS = {"smoke": dict(steps=20, seeds=(1, 2, 3, 4), bias_samples=2000),
               "book": dict(seeds=(1, 2, 3, 4, 5), bias_samples=20000), "paper": {}}
    GATED: ClassVar[tuple[str, ...]] = ("steps", "seeds")
    """C43 measures the gaps of the authors' protocol: a run of fewer than its 100 SGD steps measures another setting,
    which C43 depends on (``RULE_C43.depends_on``); fewer seeds than the paper preset's 10 widen the intervals of the
    two training gaps and of their split-half control alike, and are labelled."""
    NOT_GATED: ClassVar[dict[str, str]] = {
        "bias_samples": "the bias of f~ at T = 128 over these sequences is context in C43's details; no criterion "
                        "reads it"}
    """Fields whose book and paper presets differ, with why no verdict depends on them."""

    def schedule(self) -> list[float]:
        """Momentum's warm-up: the factor ``(1 - momentum^(t+1)) / (1 - momentum)`` of step ``t``."""
        return [(1 - self.momentum ** (t + 1)) / (1 - self.momentum) for t in range(self.steps)]


@dataclass(frozen=True)
class AssumptionsResult:
    """What the gaps of Chapter 2 measured (C43). ``R = len(RUNS)`` optimizers, ``S`` seeds, ``D`` datasets.

    Attributes:
        config: the configuration.
        sampled: ``(R, S, steps + 1)`` class 1's attention mass on its distinct tokens, sampled sequences.
        population: ``(R, steps + 1)`` the same in the long-sequence limit.
        z_spread: standard deviation of class 1's trained logits over its support (momentum, limit).
        datasets: names of the datasets; E_norm, E_max: ``(D,)`` ``||E||_2`` and the largest overlap at the
            initial attention; modification: ``(D,)`` ``||E (I + E)^{-1}||_2``; lemma17: ``(D,)`` its bound.
        modification_trained: ``||E (I + E)^{-1}||_2`` of Syn-Small after the momentum run (limit).
        init_f_rel: largest relative change of an entry of ``f_n`` that Syn-Medium's random ``Z(0)`` makes.
        init_pred_tv: largest total-variation distance of the random ``Y(0)``'s first prediction from the
            uniform one that ``Y(0) = 0`` gives; init_rowsum: largest ``|row sum of Y(0)|``.
        err_mean, err_q: mean and 95% quantile of ``||f - f_n||_inf`` at ``T``, ``Z = 0`` (class 1).
        bias, bias_z, bias_rel: the largest ``|E f~ - f~_n|`` entry, in standard errors, and relative to it.
        p_common, gap_distinct: class 1's probability of a common token and the gap between neighbouring
            distinct tokens' probabilities.
    """

    config: AssumptionsConfig
    sampled: np.ndarray
    population: np.ndarray
    z_spread: float
    datasets: tuple[str, ...]
    E_norm: np.ndarray
    E_max: np.ndarray
    modification: np.ndarray
    lemma17: np.ndarray
    modification_trained: float
    init_f_rel: float
    init_pred_tv: float
    init_rowsum: float
    err_mean: float
    err_q: float
    bias: float
    bias_z: float
    bias_rel: float
    p_common: float
    gap_distinct: float


def _distinct_mass(h: train.History, classes: data.SequenceClasses) -> np.ndarray:
    """``(C, snapshots)`` class 1's attention mass on its distinct tokens."""
    return metrics.token_mass(h.attention, classes)["distinct"][:, :, 0].T.numpy()


def _train_runs(c: AssumptionsConfig, limit: str, progress: Progress | None) -> tuple[np.ndarray, train.History]:
    """``(R, C, steps + 1)`` distinct mass of every optimizer of :data:`RUNS` (``C`` seeds, or 1 in the limit)."""
    classes = data.syn_small()
    seeds = list(c.seeds) if limit == "sampled" else [0]
    fast = c.eta / (1 - c.momentum)
    kw = dict(steps=c.steps, batch=c.batch, T=c.T, optimizer="sgd", init="zero", limit=limit,
              snapshot_steps=list(range(c.steps + 1)), progress=progress)
    with_momentum = train.train(classes, c.eta, c.eta, momentum=c.momentum, seed=seeds, **kw)
    warm = train.train(classes, c.eta, c.eta, momentum=0.0, seed=seeds, lr_schedule=c.schedule(), **kw)
    rates = [c.eta] * len(seeds) + [fast] * len(seeds)
    plain = _distinct_mass(train.train(classes, rates, rates, momentum=0.0, seed=seeds * 2, **kw), classes)
    S = len(seeds)
    mass = np.stack([_distinct_mass(with_momentum, classes), _distinct_mass(warm, classes), plain[:S], plain[S:]])
    return mass, with_momentum


def _overlaps(c: AssumptionsConfig, Z_trained: torch.Tensor) -> dict[str, object]:
    """``E`` at each dataset's initial attention (Syn-Small: zero; Syn-Medium: the uniform init's ``Z(0)``)."""
    sets = {"Syn-Small": (data.syn_small(), None)}
    for q in c.medium:
        cl = data.syn_medium(q)
        Z0 = init_params(cl.M, "uniform", torch.Generator().manual_seed(c.init_seed))[1]
        sets[f"Syn-Medium {q}/{2 * q}"] = (cl, Z0)
    rows = []
    for cl, Z0 in sets.values():
        F, _ = theory.unit_inputs(cl, Z0)
        E = theory.gram(F[theory.support_rows(F)])
        rows.append((float(np.linalg.norm(E, 2)), float(E.max()), theory.modification_norm(E), theory.lemma17_bound(E)))
    small = data.syn_small()
    F, _ = theory.unit_inputs(small, Z_trained)
    arr = np.array(rows)
    return dict(datasets=tuple(sets), E_norm=arr[:, 0], E_max=arr[:, 1], modification=arr[:, 2], lemma17=arr[:, 3],
                modification_trained=theory.modification_norm(theory.gram(F[theory.support_rows(F)])))


def _initialization(c: AssumptionsConfig) -> dict[str, float]:
    """Syn-Medium's uniform ``(Y(0), Z(0))`` against the theory's zero initialization (largest over ``medium``)."""
    f_rel, tv, rowsum = 0.0, 0.0, 0.0
    for q in c.medium:
        cl = data.syn_medium(q)
        Y0, Z0 = init_params(cl.M, "uniform", torch.Generator().manual_seed(c.init_seed))
        f0, f = cl.population(torch.zeros_like(Z0)), cl.population(Z0)
        on = f0 > 0
        f_rel = max(f_rel, float(((f - f0)[on] / f0[on]).abs().max()))
        F, _ = theory.unit_inputs(cl, Z0)
        p = torch.softmax(torch.from_numpy(F.T) @ Y0, dim=-1)  # (K, M): the first prediction of each class
        tv = max(tv, float(0.5 * (p - 1 / cl.M).abs().sum(-1).max()))
        rowsum = max(rowsum, float(Y0.sum(1).abs().max()))
    return dict(init_f_rel=f_rel, init_pred_tv=tv, init_rowsum=rowsum)


def _finite_T(c: AssumptionsConfig) -> dict[str, float]:
    """Class 1 at ``Z = 0`` and length ``T``: per-sequence error and the bias of ``f~`` over many sequences."""
    classes = data.syn_small()
    zero = torch.zeros(classes.M, classes.M, dtype=torch.float64)
    x, n = classes.sample(c.bias_samples, c.T, torch.Generator().manual_seed(c.init_seed))
    errors = theory.limit_errors(classes, zero, token_counts(x[:, :-1], classes.M), n)
    mine = n == 0
    dev, err = errors["dev_unit"][mine], errors["f"][mine]
    bias, se = dev.mean(0), dev.std(0) / math.sqrt(dev.shape[0])
    f_tilde = theory.unit_inputs(classes)[0][:, 0]
    worst = int(bias.abs().argmax())
    p1, distinct = classes.probs[0], classes.probs[0][classes.distinct(0)]
    return dict(err_mean=float(err.mean()), err_q=float(torch.quantile(err, 0.95)), bias=float(bias.abs().max()),
                bias_z=float(bias[worst].abs() / se[worst]), bias_rel=float(bias[worst].abs() / f_tilde[worst]),
                p_common=float(p1[classes.common()[0]]), gap_distinct=float(distinct[1] - distinct[0]))


def run_assumptions(c: AssumptionsConfig, progress: Progress | None = None) -> AssumptionsResult:
    """Chapter 2's run (C43): train every optimizer of :data:`RUNS` sampled and in the limit; measure overlaps,
    initialization, finite T."""
    sampled, _ = _train_runs(c, "sampled", progress)
    population, momentum_run = _train_runs(c, "population", progress)
    small = data.syn_small()
    Z_trained = momentum_run.Z[0]
    spread = float(Z_trained[small.query[0]][small.support()[0]].std())
    return AssumptionsResult(config=c, sampled=sampled, population=population[:, 0], z_spread=spread,
                             **_overlaps(c, Z_trained), **_initialization(c), **_finite_T(c))
