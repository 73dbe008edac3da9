"""Chapter 9's residual fates, the training run (C33b): the Y/Z trainer with and without the residual on
:func:`scansnap.theory.residual.cross_query_family`, in the long-sequence limit and sampled, from ``Z(0) ~ N(0,
z_std^2)``; the net change of every logit from its run's own ``Z(0)``. What makes the run of
:data:`scansnap.experiments.ch09_fates.FATES` (its measures, rules, verdicts and figure are in
:mod:`scansnap.experiments.ch09_fates`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from scansnap import train
from scansnap._threads import one_thread
from scansnap.experiments.base import Progress
from scansnap.model_options import ModelOptions, head_params
from scansnap.params import Each, Fraction, Int, Positive, Seeds, listed, param, seed_list
from scansnap.results import Config
from scansnap.theory import residual as res

__all__ = ["FatesConfig", "FatesResult", "run_fates"]


@dataclass(frozen=True)
class FatesConfig(Config):
    """Chapter 9's fates (C33b): training on :func:`~scansnap.theory.residual.cross_query_family` from ``Y(0) = 0``
    and ``Z(0) ~ N(0, z_std^2)``, SGD with momentum: in the limit with each ``(eta_Y, eta_Z)`` of ``etas`` and each
    of ``seeds``, and sampled (``batch``, ``T``) with ``seeds`` at the first pair."""

    steps: int = param(300, Int(low=1))
    etas: tuple[tuple[float, float], ...] = param(((1.0, 1.0), (2.0, 0.5), (1.0, 0.25)), Each(Each(Positive())),
                                                  listed)
    seeds: tuple[int, ...] = param(tuple(range(1, 11)), Seeds(), seed_list)
    batch: int = param(128, Int(low=1))
    T: int = param(128, Int(low=2))
    momentum: float = param(0.9, Fraction())
    z_std: float = param(0.1, Positive())  # > 0: runs in the long-sequence limit differ only by Z(0)
    PROTOCOL = ("theory.residual.cross_query_family (2 queries x 2 classes), Y(0) = 0, Z(0) ~ N(0, {z_std:g}^2), SGD "
                "momentum {momentum}, {steps} steps, with and without the residual, {seeds}; long-sequence limit at "
                "(eta_Y, eta_Z) in {etas} (one run per pair and seed); sampled at {self.etas[0]}, batch {batch}, T = "
                "{T}")
    PRESETS = {"smoke": dict(steps=20, seeds=(1, 2, 3), batch=32, T=64),
               "book": dict(etas=((1.0, 1.0), (2.0, 0.5))), "paper": {}}
    GATED: ClassVar[tuple[str, ...]] = ("steps", "seeds", "etas", "batch", "T")
    """This book's full protocol (the ``paper`` preset: the paper ran no such experiment); a cut only labels the
    verdicts (no rule's ``depends_on`` names one): the local or global fate is read per run, at every learning-rate
    pair alike."""


@dataclass(frozen=True)
class FatesResult:
    """Chapter 9's fates (C33b), net logit changes ``z(final) - z(0)``: ``population`` ``(2, P * S, M, M)`` (no
    residual, residual; one per learning-rate pair and seed, pair-major), ``sampled`` ``(2, S, M, M)`` (one per
    seed); ``global_roles``, ``local_roles`` ``(M, M)`` (:func:`scansnap.theory.residual.token_roles`)."""

    config: FatesConfig
    population: np.ndarray
    sampled: np.ndarray
    global_roles: np.ndarray
    local_roles: np.ndarray


def _initial_Z(M: int, options: ModelOptions, seeds: list[int]) -> torch.Tensor:
    """``Z(0)`` ``(C, M, M)`` of the trainer's runs with these ``seeds`` (each seed's generator draws it first)."""
    return torch.stack([head_params(M, options, "zero", torch.Generator().manual_seed(s))[1] for s in seeds])


@one_thread()  # tiny tensors: a second thread only adds contention (and changes the sums' order)
def run_fates(config: FatesConfig, progress: Progress | None = None) -> FatesResult:
    """Chapter 9's fates (C33b): each variant (no residual, residual) in the limit (all pairs and seeds stacked) and
    sampled (all seeds stacked); net changes from each run's own ``Z(0)``."""
    classes, c = res.cross_query_family(), config
    glob, loc = res.token_roles(classes)
    pop, smp = [], []
    for residual in (False, True):
        kw = dict(steps=c.steps, momentum=c.momentum, snapshot_steps=[0, c.steps], progress=progress,
                  options=ModelOptions(residual=residual, z_std=c.z_std))
        runs = [(e, s) for e in c.etas for s in c.seeds]
        h = train.train(classes, [e[0] for e, _ in runs], [e[1] for e, _ in runs], seed=[s for _, s in runs],
                        limit="population", **kw)
        pop.append((h.Z - _initial_Z(classes.M, kw["options"], [s for _, s in runs])).numpy())
        h = train.train(classes, c.etas[0][0], c.etas[0][1], seed=list(c.seeds), batch=c.batch, T=c.T, **kw)
        smp.append((h.Z - _initial_Z(classes.M, kw["options"], list(c.seeds))).numpy())
    return FatesResult(c, np.stack(pop), np.stack(smp), glob.numpy(), loc.numpy())
