"""How Chapter 6's regime measures (:mod:`~scansnap.experiments.phase_rules`: C25-C31, C34) are computed, the same way
on every kind of evidence: from Eqn 14 (**derivation**), the exact Eqn 10 system (**simulation**) and the trained
model (**training-population**, **training-sampled**); and the controls of the training rules, measured like the run.

Every regime number is read off the growth-factor bound ``chi-bar = exp(2 B_n)`` of Theorem 4 (Eqn 14's ``B_n``, the
exact system's, or the trained model's ``B_n`` read off its dominant distinct token): that is the curve whose local
exponent the theorem bounds by ``b / a``. :func:`phase_measures` turns :class:`scansnap.theory.GrowthMeasures` on a
learning-rate grid into one measures dataclass per claim (:class:`~scansnap.experiments.phase_rules.PhaseMeasures`);
on the trained model's grid the scanning exponent and the snap are compared with Eqn 14 at the same rates and horizon
(the theorem's own prediction there: with weak coupling ``4 a eta_Z Gamma`` stays small and even Eqn 14 neither
reaches ``b / a`` nor snaps within the horizon). :func:`phase_controls` computes the controls the training rules name.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from scansnap import theory
from scansnap.experiments.phase_rules import (
    Ordering,
    PhaseMeasures,
    RatioInvariance,
    Scanning,
    Snapping,
    TransitionOrder,
    TransitionSlope,
    permutations,
)

__all__ = ["no_scan_curve", "phase_controls", "phase_measures"]

_Share = Callable[[np.ndarray, list[list[int]], str], tuple[float, float]]


def _lines(nY: int, nZ: int) -> dict[str, list[list[int]]]:
    return {k: theory.grid_lines(nY, nZ, k) for k in ("eta_Y", "eta_Z", "scale")}


def _share(values: np.ndarray, lines: list[list[int]], direction: str) -> tuple[float, float]:
    if not any(len(line) >= 2 for line in lines):
        return math.nan, math.nan  # the grid has no step of this kind
    return theory.order_share(values, lines, direction)


def _ordering(B_end: np.ndarray, lines: dict[str, list[list[int]]], share: _Share = _share) -> dict[str, Ordering]:
    """C28-C30's measures: ``share`` (default :func:`_share`; the controls: :func:`_permuted`) of ``B_end`` ``(C,)``
    along the grid's lines of each kind, in the claimed direction."""
    return {c: Ordering(*share(B_end, lines[k], d))
            for c, k, d in (("C28", "scale", "up"), ("C29", "eta_Y", "down"), ("C30", "eta_Z", "up"))}


def _ratio_invariance(B_t0: np.ndarray, B_end: np.ndarray, scale: list[list[int]]) -> RatioInvariance:
    """C31's measures: the spread of ``B_t0`` and of ``B_end`` ``(C,)`` along the lines of fixed ``eta_Z / eta_Y``."""
    if not scale:
        return RatioInvariance(math.nan, math.nan)
    return RatioInvariance(float(theory.line_spread(B_t0, scale).max()),
                           float(np.median(theory.line_spread(B_end, scale))))


def _drop_share(drop: np.ndarray, ref_drop: np.ndarray) -> float:
    """Median over runs of ``(1 - drop) / (1 - ref_drop)``, over the runs in which Eqn 14 drops by at least 10%
    within the horizon (elsewhere it predicts no snap yet); ``nan`` when there is none."""
    room = 1 - ref_drop
    keep = room >= 0.1
    return float(np.median((1 - drop[keep]) / room[keep])) if keep.any() else math.nan


def _chi_exponents(m: theory.GrowthMeasures) -> tuple[np.ndarray, np.ndarray]:
    """Per run: the peak of d ln chi-bar / d ln t and its value at the horizon (GrowthMeasures keeps the local
    exponent of ln chi-bar at the horizon: times ln chi-bar gives that of chi-bar)."""
    return m.peak_chi_exponent, m.late_exponent * m.log_chi_end


def phase_measures(m: theory.GrowthMeasures, nY: int, nZ: int, b_over_a: float, *,
                   reference: theory.GrowthMeasures | None = None, freeze_drop: float = math.nan) -> PhaseMeasures:
    """The measures of every claim of :data:`~scansnap.experiments.phase_rules.CLAIMS` from ``m`` (growth curves of
    ``chi-bar = exp(2 B_n)`` on an ``nY x nZ`` grid, row-major, :func:`scansnap.theory.grid_lines`); ``reference``:
    Eqn 14's measures on the same rates and times (``None``: ``m`` is Eqn 14 itself). Lines that a grid lacks give
    ``nan``."""
    lines = _lines(nY, nZ)
    peak, late = _chi_exponents(m)
    ref_peak, ref_late = (np.full_like(peak, b_over_a), None) if reference is None else _chi_exponents(reference)
    drop = late / peak
    ref_drop = drop if ref_late is None else ref_late / ref_peak
    start = float(abs(np.nanmedian(m.early_exponent) - 2)) if np.isfinite(m.early_exponent).any() else math.nan
    scale = lines["scale"]
    return PhaseMeasures(
        C25=Scanning(start, float(np.median(peak / ref_peak)), float((peak - b_over_a).max()), b_over_a,
                     float(peak.max())),
        C26=Snapping(float(drop.max()), _drop_share(drop, ref_drop), float(ref_drop.max()),
                     float(m.decade_gain.min()), freeze_drop),
        C27=TransitionSlope(abs(m.slope + 1) + 1.96 * m.slope_se, _share(m.snap, lines["eta_Y"], "down")[0],
                            m.slope, m.slope_se), **_ordering(m.B_end, lines),
        C31=_ratio_invariance(m.B_t0, m.B_end, scale),
        C34=TransitionOrder(_share(m.snap, lines["eta_Y"], "down")[0],
                            _share(m.log_chi_end, lines["eta_Y"], "down")[0]))


def no_scan_curve(t: np.ndarray, B: np.ndarray) -> np.ndarray:
    """C25's null: ``B_n(horizon) ln(1 + t) / ln(1 + horizon)`` ``(S, C)`` for ``B`` ``(S, C)`` at steps ``t``
    ``(S,)``: the same end, logarithmic from the start (no scanning phase)."""
    return B[-1] * (np.log1p(t) / np.log1p(t[-1]))[:, None]


def _permuted(values: np.ndarray, lines: list[list[int]], direction: str) -> tuple[float, float]:
    """The median over :func:`~scansnap.experiments.phase_rules.permutations` of :func:`_share` of ``values``
    ``(C,)`` assigned to the grid at random."""
    shares = np.array([_share(values[p], lines, direction) for p in permutations(len(values))])
    return float(np.median(shares[:, 0])), float(np.median(shares[:, 1]))


def phase_controls(m: theory.GrowthMeasures, reference: theory.GrowthMeasures, t: np.ndarray, B: np.ndarray,
                   eta_Y: np.ndarray, eta_Z: np.ndarray, nY: int, nZ: int, b_over_a: float,
                   t0: np.ndarray, *, M: int, K: int, t_early: float | None = None) -> PhaseMeasures:
    """The controls of the training rules (each rule's ``control`` names it), computed from the same run: ``m``
    its measures, ``reference`` Eqn 14's at the same rates and times, ``B`` ``(S, C)`` its ``B_n`` at steps ``t``
    (``t[0] = 0``), ``t0`` ``(C,)`` its runs' ``t0``; ``M``, ``K``, ``t_early`` as for the run's measures.

    C25: a curve with no scanning phase (:func:`no_scan_curve`) measured like the run; C26: a power law
    chi-bar = t^q through each run's peak exponent q, measured like the run; C27: the same fit against ``eta_Z``;
    C28-C30, C34: the run's orderings with the learning rates permuted across runs
    (:func:`~scansnap.experiments.phase_rules.permutations`); C31: ``B_n`` read at one common step."""
    lines, C = _lines(nY, nZ), B.shape[1]
    scale = lines["scale"]
    tt = t[t > 1]
    log_chi = np.outer(np.log(tt), m.peak_chi_exponent)  # ln chi-bar = q ln t
    expo = np.gradient(log_chi, np.log(tt), axis=0)
    drop = expo[-1] / expo.max(axis=0)
    ref_peak, ref_late = _chi_exponents(reference)
    back = theory.value_at(tt, log_chi, np.full(C, tt[-1] / 10))
    gain = (log_chi[-1] - back) / log_chi[-1]
    B_common = theory.value_at(t[t > 0], B[t > 0], np.full(C, float(np.median(t0))))
    flat = no_scan_curve(t, B)
    scan = phase_measures(theory.measure_growth(t, 2 * flat, flat, eta_Y, eta_Z, M, K, t_early), nY, nZ, b_over_a,
                          reference=reference).C25
    return PhaseMeasures(
        C25=scan,
        C26=Snapping(float(drop.max()), _drop_share(drop, ref_late / ref_peak),
                     float((ref_late / ref_peak).max()), float(gain.min()), float(1 / t[-1])),
        C27=_slope_against_eta_Z(eta_Y, eta_Z, m.snap, lines), **_ordering(m.B_end, lines, _permuted),
        C31=_ratio_invariance(B_common, m.B_end, scale),
        C34=TransitionOrder(_permuted(m.snap, lines["eta_Y"], "down")[0],
                            _permuted(m.log_chi_end, lines["eta_Y"], "down")[0]))


def _slope_against_eta_Z(eta_Y: np.ndarray, eta_Z: np.ndarray, snap: np.ndarray,
                         lines: dict[str, list[list[int]]]) -> TransitionSlope:
    """C27's measures with the roles of the rates swapped (Theorem 4: eta_Z does not set the transition)."""
    ok = np.isfinite(snap).all() and len(np.unique(eta_Z)) >= 2
    slope, se = theory.transition_slope(eta_Z, eta_Y, snap) if ok else (math.nan, math.nan)
    return TransitionSlope(abs(slope + 1) + 1.96 * se, _share(snap, lines["eta_Z"], "down")[0], slope, se)
