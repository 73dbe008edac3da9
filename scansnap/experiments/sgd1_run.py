"""Chapter 3's run in Theorem 1's own setting: SGD on ``Y`` with batch size 1, a uniformly random class at every step,
``Z = 0`` frozen, in the long-sequence limit, one class order per seed, and beside it the full population batch;
what makes the run of :data:`scansnap.experiments.ch03_sgd1.SGD1` (its rules C9-C11, verdicts and figure are in
:mod:`scansnap.experiments.ch03_sgd1`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scansnap import train
from scansnap.experiments.base import Progress
from scansnap.experiments.ch03_theorem1 import weak_family
from scansnap.params import Int, Positive, Real, Seeds, param
from scansnap.results import Config
from scansnap.theory import decoder as dec
from scansnap.theory import decoder_sgd as sim

__all__ = ["SGD1Config", "SGD1Result", "run_sgd1"]


@dataclass(frozen=True)
class SGD1Config(Config):
    """Chapter 3's run of Theorem 1 with batch size 1 (C9-C11) on the weak family (``K`` classes; ``M`` = its
    vocabulary), ``eta`` per sample, ``steps`` with ``points`` log-spaced snapshots, one random class order per
    seed. The direction and the coefficients are judged from ``t >= min_visits * K`` (each class seen about
    ``min_visits`` times); the regimes of ``gamma`` on ``t <= early_to * t_0`` and ``t >= late_from * t_0``."""

    K: int = param(4, Int(low=2))
    num_distinct: int = param(10, Int(low=1))
    common_weight: float = param(0.5, Positive())
    eta: float = param(0.3, Positive())
    steps: int = param(50000, Int(low=10))
    points: int = param(60, Int(low=3))
    seeds: tuple[int, ...] = param(tuple(range(1, 9)), Seeds(), lambda s: f"seeds {s[0]}-{s[-1]}, {len(s)}")
    min_visits: int = param(10, Int(low=1))
    early_to: float = param(0.1, Real(0, 1, open="both"))
    late_from: float = param(100.0, Real(low=10))
    PROTOCOL = ("SGD on Y of the model, batch size 1, a uniformly random class per step ({seeds}), Z = 0 frozen, T = "
                "inf; {K} classes with {num_distinct} distinct tokens and one common token of weight {common_weight}, "
                "M = the family's vocabulary, eta_Y = {eta}, {steps} steps; coefficients from t >= {first_t}")
    PRESETS = {"smoke": dict(steps=2000, points=40, seeds=(1, 2), late_from=30.0),
               "book": dict(steps=20000, seeds=(1, 2, 3, 4, 5, 6)), "paper": {}}
    GATED = ("steps", "seeds")

    @property
    def first_t(self) -> int:
        """The first step the coefficients are read from, ``min_visits * K``."""
        return self.min_visits * self.K


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
    """Every seed's batch-size-1 run (stacked), and one full-batch run, measured at the snapshots (Theorem 1,
    Chapter 3)."""
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
