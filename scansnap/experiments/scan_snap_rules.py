"""The paper's central claim P1 on Chapter 6's trained runs: scan and snap seen in training on synthetic data.

P1 is judged on the run of the grid whose dominant distinct token grows most (the best chance to see both phases),
on **training-population** and **training-sampled** evidence (:mod:`~scansnap.experiments.ch06_trained`):

* **scan**: the growth factor of the dominant distinct token reaches the scanning scale (``ln chi_l0`` gains at
  least :data:`scansnap.theory.SCAN_LOG_CHI`, the target Chapter 6 already uses) while the common token loses
  attention (its attention mass falls by at least half);
* **snap**: the attention freezes, by the bounded measures of :mod:`scansnap.freeze` (the change per step in the last
  window over the first, the share of rows keeping their attended key), with Chapter 6's freeze thresholds.

Its control is the same measures on the same run with the order of its checkpoints shuffled in time (the median over
:data:`SHUFFLES` seeded shuffles): a gain, a fall and a decay that any ordering of the same maps would give are no
scan and no snap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from scansnap import metrics, theory
from scansnap.data import SequenceClasses
from scansnap.freeze import freeze_criteria, freeze_measures
from scansnap.verdicts import Rule, at_least

__all__ = ["COMMON_FALL", "SHUFFLES", "RULES_P1", "ScanSnap", "ScanSnapRun", "scan_snap", "scan_snap_run"]

SHUFFLES = 200
"""How many seeded shuffles of the checkpoints' order the control takes the median over."""
COMMON_FALL = (0.5, 0.2)
"""The fall of the common token's attention mass (1 - end / start) that verifies (partly verifies) "common tokens lose
attention" (set before any run)."""


@dataclass(frozen=True)
class ScanSnap:
    """P1's measures on one run (the run of the grid whose ``ln chi_l0`` gains most).

    Attributes:
        log_chi_gain: ``ln chi_l0`` of the dominant distinct token at the last checkpoint minus at the first.
        common_fall: ``1 - m_end / m_start``, ``m`` the common token's attention mass (mean over classes).
        tv_ratio, keep_share: :class:`scansnap.freeze.FreezeMeasures` of the run's attention.
        tv_early, tv_late: the mean total variation over the first and the last window (context).
        eta_Y, eta_Z: the run's rates (context).
    """

    log_chi_gain: float
    common_fall: float
    tv_ratio: float
    keep_share: float
    tv_early: float
    tv_late: float
    eta_Y: float
    eta_Z: float


@dataclass(frozen=True)
class ScanSnapRun:
    """P1's measures on one training run and on its control (the checkpoints shuffled in time); ``early``,
    ``late``: the windows' ends in steps."""

    measures: ScanSnap
    control: ScanSnap
    early: tuple[float, float]
    late: tuple[float, float]


def _windows(t: np.ndarray, window: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """The first window ``(t[0], the checkpoint nearest t[0] + window)`` and the last ``(the checkpoint nearest
    t[-1] - window, t[-1])``."""
    a = float(t[np.argmin(np.abs(t[1:-1] - t[0] - window)) + 1])
    b = float(t[np.argmin(np.abs(t[1:-1] - t[-1] + window)) + 1])
    return (float(t[0]), a), (b, float(t[-1]))


def scan_snap(f: torch.Tensor, log_chi: np.ndarray, common: np.ndarray, t: np.ndarray,
              eta_Y: np.ndarray, eta_Z: np.ndarray, early: tuple[float, float],
              late: tuple[float, float]) -> ScanSnap:
    """:class:`ScanSnap` of the run whose ``ln chi_l0`` gains most (P1, Chapter 6).

    Args:
        f: ``(S, C, K, M)`` attention at the ``S`` checkpoints of ``C`` runs; log_chi, common: ``(S, C)`` the
            dominant distinct token's ``ln chi_l0`` and the common token's attention mass; t: ``(S,)`` steps;
            eta_Y, eta_Z: ``(C,)``; early, late: the windows (:func:`scansnap.freeze.freeze_measures`).
    """
    gain = log_chi[-1] - log_chi[0]
    j = int(np.argmax(gain))
    fm = freeze_measures(f[:, j], t, early, late)
    fall = 1 - common[-1, j] / common[0, j] if common[0, j] > 0 else math.nan
    return ScanSnap(float(gain[j]), float(fall), fm.tv_ratio, fm.keep_share, fm.tv_early, fm.tv_late,
                    float(eta_Y[j]), float(eta_Z[j]))


def scan_snap_run(f: torch.Tensor, classes: SequenceClasses, log_chi: np.ndarray, t: np.ndarray, eta_Y: np.ndarray,
                  eta_Z: np.ndarray, window: float) -> ScanSnapRun:
    """P1's measures of a training run (``f`` ``(S, C, K, M)``, ``log_chi`` ``(S, C)``, ``t`` ``(S,)``, ``eta_Y``,
    ``eta_Z`` ``(C,)``; ``window``: the windows' length in steps, short enough that the first and the last window
    do not overlap) and of its control, the median over :data:`SHUFFLES` seeded shuffles of the
    checkpoints' order (the steps stay where they are; the control's rates: those of the run its shuffles pick
    most often).

    From a :class:`scansnap.train.History` ``h`` on ``classes``, for class ``n`` (Chapter 6 reads class 0):
    ``log_chi, _ = theory.dominant_log_growth(h.attention, classes, n)`` and ``t = h.steps.numpy()``.
    """
    S, C = int(f.shape[0]), int(f.shape[1]) if f.ndim == 4 else -1
    t = np.asarray(t, dtype=float)
    for name, value, shape in (("log_chi", log_chi, (S, C)), ("t", t, (S,)), ("eta_Y", eta_Y, (C,)),
                               ("eta_Z", eta_Z, (C,))):
        if np.shape(value) != shape:
            raise ValueError(f"{name}: must have shape {shape} (f is (S, C, K, M) = {tuple(f.shape)}); got "
                             f"{np.shape(value)}")
    if S < 3 or not (np.diff(t) > 0).all():
        raise ValueError(f"t: must be at least 3 increasing checkpoint steps; got {t.tolist()}")
    early, late = _windows(t, window) if window > 0 else ((0.0, 0.0), (0.0, 0.0))
    if not (window > 0 and early[0] < early[1] <= late[0] < late[1]):
        raise ValueError(f"window: must be > 0 and short enough that the first window {early} ends before the last "
                         f"{late} starts (t {t[0]:g} .. {t[-1]:g}); got {window!r}")
    common = metrics.token_mass(f, classes)["common"].mean(-1).numpy()
    real = scan_snap(f, log_chi, common, t, eta_Y, eta_Z, early, late)
    draws = []
    for seed in range(SHUFFLES):
        p = np.random.default_rng(seed).permutation(len(t))
        draws.append(scan_snap(f[torch.as_tensor(p)], log_chi[p], common[p], t, eta_Y, eta_Z, early, late))
    def typical(k: str) -> float:  # the median of a measure; the most frequent of a run's rates (context)
        x = np.array([getattr(d, k) for d in draws])
        if k in ("eta_Y", "eta_Z"):
            values, counts = np.unique(x, return_counts=True)
            return float(values[np.argmax(counts)])
        return float(np.nanmedian(x))

    control = ScanSnap(*(typical(k) for k in ScanSnap.__dataclass_fields__))
    return ScanSnapRun(real, control, early, late)


def _rule(evidence: str) -> Rule:
    return Rule("P1", evidence, ScanSnap, (
        at_least("log_chi_gain", "gain of ln chi_l0 of the dominant distinct token over the run (the run of the grid "
                 "that gains most): the scanning scale", theory.SCAN_LOG_CHI, theory.SCAN_LOG_CHI / 2),
        at_least("common_fall", "fall of the common token's attention mass over the same run, 1 - end / start",
                 *COMMON_FALL),
        *freeze_criteria("the same run's attention"),
    ), alternative="no scan and snap: the dominant distinct token never reaches the scanning scale while the common "
                   "token keeps its attention, or the attention keeps changing as fast late as early (no freeze)",
        control=f"the same measures on the same run with its checkpoints shuffled in time (median over {SHUFFLES} "
                "seeded shuffles): the gain, the fall and the decay any ordering of the same maps would give",
        note=f"Scan: ln chi_l0 gains >= {theory.SCAN_LOG_CHI:g} (Chapter 6's scanning target; partly: half) while the "
             f"common token's mass falls by >= {COMMON_FALL[0]:g} (partly {COMMON_FALL[1]:g}). Snap: Chapter 6's "
             "freeze criterion (scansnap.freeze): the change per step in the last window over the first <= 0.01 "
             "(partly 0.1), and >= 0.9 (partly 0.75) of the rows keep their attended key over the last window; the "
             "windows are the first and the last `dense` steps of the run. All four are required: the claim is both "
             "phases. Thresholds set before any run (issue 26).")


RULES_P1 = {ev: _rule(ev) for ev in ("training-population", "training-sampled")}
