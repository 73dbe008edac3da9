"""Chapter 6's trained model, the run: Theorem 4's family trained on a grid of rates in the long-sequence limit and
with sampled sequences, the exact Eqn 10 system and Eqn 13-14 on the same grid, and the curves measured on each
(what makes the run of :data:`scansnap.experiments.ch06_trained.TRAINED`; its verdicts and figure are in
:mod:`scansnap.experiments.ch06_trained`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from scansnap import metrics, theory, train
from scansnap._checks import check_int
from scansnap._threads import one_thread
from scansnap.experiments.base import Progress
from scansnap.experiments.scan_snap_rules import ScanSnapRun, scan_snap_run
from scansnap.params import Int, Positive, Real, Seeds, param
from scansnap.results import Config

__all__ = ["Curves", "TrainedConfig", "TrainedResult", "run_trained"]


@dataclass(frozen=True)
class TrainedConfig(Config):
    """Chapter 6's trained model (``fig-ch6-trained``): Theorem 4's family, the grid and both training runs.

    Attributes:
        K, num_distinct, S0: the family (:func:`scansnap.theory.theorem4_family`).
        eta_Y0, eta_Z0, factor, n: the ``n x n`` grid of rates.
        steps: population-limit steps; dense: every step is a snapshot up to here; log_points: log-spaced
            snapshots after it.
        sampled_steps, T, batch, seeds, sampled_points: the sampled run (one run per seed and rate pair).
        t_early: the step at which the start's exponent is read (discrete SGD: ``t (t - 1) / 2``, not ``t^2``).
    """

    K: int = param(4, Int(low=2))
    num_distinct: int = param(10, Int(low=1))
    S0: float = param(0.1, Real(0, 1, open="both"))
    eta_Y0: float = param(0.25, Positive())
    eta_Z0: float = param(0.025, Positive())
    factor: float = param(2.0, Real(1, open="low"))
    n: int = param(4, Int(low=2))
    steps: int = 4000
    dense: int = param(100, Int(low=3))
    log_points: int = param(300, Int(low=2))
    sampled_steps: int = param(800, Int(low=3))
    T: int = param(128, Int(low=2))
    batch: int = param(128, Int(low=1))
    seeds: tuple[int, ...] = param((1,), Seeds())
    sampled_points: int = param(120, Int(low=3))
    t_early: float = param(10.0, Positive())
    PROTOCOL = ("Theorem 4's family (K = {K}, {num_distinct} distinct tokens, S0 = {S0}); grid eta_Y = {eta_Y0:g} x "
                "{factor:g}^i, eta_Z = {eta_Z0:g} x {factor:g}^j, i, j < {n}; Z(0) = Y(0) = 0; SGD without momentum")
    PRESETS = {"smoke": dict(n=2, steps=200, dense=20, log_points=40, sampled_steps=60, batch=32,
                             sampled_points=20, t_early=3.0),
               "book": {}, "paper": dict(steps=20000, log_points=500, sampled_steps=4000, seeds=(1, 2, 3))}
    GATED = ("steps", "sampled_steps", "seeds")
    NOT_GATED = {"log_points": "the snapshots' resolution after the dense stretch, which every measure reads as it is: "
                               "300 log-spaced points to 4,000 steps are denser than 500 to 20,000"}

    def validate(self) -> None:
        check_int("steps", self.steps, low=self.dense + 1)

    def grid(self) -> tuple[np.ndarray, np.ndarray]:
        """``(eta_Y, eta_Z)``, each ``(n * n,)``, row-major (``eta_Y`` by row)."""
        return theory.rate_grid(self.eta_Y0, self.eta_Z0, self.factor, self.n)

    def scope(self, evidence: str) -> str:
        """Which run of the experiment a verdict on ``evidence`` reads (appended to
        :meth:`~scansnap.results.Config.protocol`)."""
        return {"simulation": f"exact Eqn 10 (solve_ivp) over {self.steps} steps",
                "training-population": f"scansnap.train, limit='population', {self.steps} steps",
                "training-sampled": f"scansnap.train, sampled sequences T = {self.T}, batch {self.batch}, "
                                    f"{self.sampled_steps} steps, seeds {list(self.seeds)}"}[evidence]


@dataclass(frozen=True)
class Curves:
    """Chapter 6's measured curves of Theorem 4's quantities, ``(S, C)`` at steps ``t`` ``(S,)``: ``log_chi = ln
    chi_l0``, ``B`` (``B_n``), the common logit ``z_common``, the distinct entropy ``entropy``, the ``freeze`` rate
    ``(S - 1, C)`` (``nan`` where not measured) and the rates ``eta_Y``, ``eta_Z`` ``(C,)``."""

    t: np.ndarray
    eta_Y: np.ndarray
    eta_Z: np.ndarray
    log_chi: np.ndarray
    B: np.ndarray
    z_common: np.ndarray
    entropy: np.ndarray
    freeze: np.ndarray


@dataclass(frozen=True)
class TrainedResult:
    """Chapter 6's trained model: the population-limit run, the sampled run, the exact Eqn 10 system and Eqn 14 on
    the same grid.

    Attributes:
        population, sampled, exact: :class:`Curves` (the exact system has no entropy or freeze rate: ``nan``).
        B_eqn14, z_eqn13: ``(S, C)`` the predictions at the population run's steps; B_eqn14_sampled likewise at
            the sampled run's steps (``(S2, C2)``).
        a, b, M: the derived constants and the vocabulary size.
        cross_measured, cross_theorem: ``(C,)`` Theorem 1's ``gamma beta_01`` of the trained decoder at the
            horizon, and the theorem's value (:func:`scansnap.theory.cross_coefficient`).
        p1_population, p1_sampled: P1's measures (scan and snap) on each run and on its control
            (:func:`~scansnap.experiments.scan_snap_rules.scan_snap_run`).
    """

    config: TrainedConfig
    population: Curves
    sampled: Curves
    exact: Curves
    B_eqn14: np.ndarray
    z_eqn13: np.ndarray
    B_eqn14_sampled: np.ndarray
    a: float
    b: float
    M: int
    cross_measured: np.ndarray
    cross_theorem: np.ndarray
    p1_population: ScanSnapRun
    p1_sampled: ScanSnapRun


def _snapshots(steps: int, dense: int, points: int) -> list[int]:
    return sorted(set(range(dense + 1)) | set(np.round(np.geomspace(dense, steps, points)).astype(int).tolist()))


def _measure(hist: train.History, classes, t: np.ndarray) -> Curves:
    """Logits read back from the attention snapshots; ``B_n`` and ``ln chi`` of class 0's dominant token."""
    f = hist.attention  # (S, C, K, M)
    Z = theory.logits_from_attention(f, classes)
    q, c, l0 = int(classes.query[0]), int(classes.common()[0]), int(classes.distinct(0)[-1])
    z0 = Z[:, :, q, l0].numpy()
    ft = (f[:, :, 0, l0] / torch.linalg.vector_norm(f[:, :, 0], dim=-1)).numpy()
    return Curves(t=t, eta_Y=hist.eta_Y.numpy(), eta_Z=hist.eta_Z.numpy(), log_chi=2 * z0,
                  B=theory.growth_bound_from_logits(t, z0, ft), z_common=Z[:, :, q, c].numpy(),
                  entropy=metrics.attention_entropy(f, classes).numpy(),
                  freeze=metrics.freeze_rate(f, torch.as_tensor(t), dims=2).numpy())


def run_trained(config: TrainedConfig, progress: Progress | None = None) -> TrainedResult:
    """Chapter 6's run: train the grid twice (population, sampled), integrate the exact Eqn 10 system, evaluate
    Eqn 13-14 (Theorem 4)."""
    c = config
    fam = theory.theorem4_family(c.K, c.num_distinct, c.S0)
    eY, eZ = c.grid()
    k = theory.eqn13_constants(fam)
    snaps = _snapshots(c.steps, c.dense, c.log_points)
    t = np.array(snaps, dtype=float)
    with one_thread():
        pop = train.train(fam, torch.tensor(eY), torch.tensor(eZ), steps=c.steps, limit="population", momentum=0.0,
                          snapshot_steps=snaps, progress=progress)
        ss = _snapshots(c.sampled_steps, 3, c.sampled_points)
        smp = train.train(fam, torch.tensor(np.tile(eY, len(c.seeds))), torch.tensor(np.tile(eZ, len(c.seeds))),
                          steps=c.sampled_steps, limit="sampled", T=c.T, batch=c.batch, momentum=0.0,
                          seed=torch.tensor(np.repeat(c.seeds, len(eY))), snapshot_steps=ss, progress=progress)
        population, sampled = _measure(pop, fam, t), _measure(smp, fam, np.array(ss, dtype=float))
        p1 = [scan_snap_run(h.attention, fam, cv.log_chi, cv.t, cv.eta_Y, cv.eta_Z, c.dense)
              for h, cv in ((pop, population), (smp, sampled))]
        cross = [theory.cross_coefficient(fam, pop.Y[i], pop.Z[i], float(c.steps), float(eY[i]))
                 for i in range(len(eY))]
    runs = [theory.integrate_symmetric(fam, y, z, t) for y, z in zip(eY, eZ, strict=True)]
    nan = np.full((len(t), len(eY)), np.nan)
    exact = Curves(t, eY, eZ, np.stack([2 * r.z_distinct[:, -1] for r in runs], 1), np.stack([r.B for r in runs], 1),
                   np.stack([r.z_common for r in runs], 1), nan, nan[1:])
    pred = [theory.eqn14_at(t, fam.M, fam.K, y, z, k.a, k.b) for y, z in zip(eY, eZ, strict=True)]
    z13 = [theory.eqn13_logit(t, fam.M, fam.K, y, z, k.a) for y, z in zip(eY, eZ, strict=True)]
    pred_s = [theory.eqn14_at(sampled.t, fam.M, fam.K, y, z, k.a, k.b) for y, z in zip(sampled.eta_Y, sampled.eta_Z,
                                                                                       strict=True)]
    return TrainedResult(c, population, sampled, exact, np.stack(pred, 1), np.stack(z13, 1), np.stack(pred_s, 1),
                         k.a, k.b, fam.M, np.array([x[0] for x in cross]), np.array([x[1] for x in cross]), *p1)
