"""The rules of Chapter 6's regime claims (C25-C31, C34), one per claim and kind of evidence, and the numbers
they judge, computed the same way from Eqn 14 (**derivation**), the exact Eqn 10 system (**simulation**) and
the trained model (**training-population**, **training-sampled**).

:func:`phase_numbers` turns :class:`scansnap.theory.GrowthMeasures` on a learning-rate grid into named numbers;
:func:`phase_rule` gives the rule of one claim on one kind of evidence (thresholds fixed here, before any run;
they are looser only where the evidence is not exact: discrete SGD steps, sampling noise). The experiment
modules :mod:`~scansnap.experiments.ch06_figures` and :mod:`~scansnap.experiments.ch06_trained` list the rules
they use in their ``RULES``.
"""

from __future__ import annotations

import math

import numpy as np

from scansnap import theory
from scansnap._checks import check_choice
from scansnap.verdicts import Rule, Verdict, at_least, at_most

__all__ = ["CLAIMS", "judge", "phase_numbers", "phase_rule"]

CLAIMS = ("C25", "C26", "C27", "C28", "C29", "C30", "C31", "C34")
_EXACT = ("derivation",)


def _start_tolerance(evidence: str) -> tuple[float, float]:
    # Eqn 14 and the exact system start like t^2 exactly; SGD's discrete steps give t (t - 1) / 2 instead
    return {"derivation": (0.01, 0.1), "simulation": (0.05, 0.2)}.get(evidence, (0.3, 0.6))


def phase_rule(claim: str, evidence: str) -> Rule:
    """The rule of ``claim`` (one of :data:`CLAIMS`: Theorem 4's regimes and learning-rate insights, C25-C31, and
    Figure 3's C34) on ``evidence``."""
    check_choice("claim", claim, CLAIMS)
    share = ("share of adjacent grid steps that go the claimed way", 1.0, 0.67)
    if claim == "C25":
        v, p = _start_tolerance(evidence)
        return Rule(claim, evidence, (
            at_most("start_deviation", "|local exponent of ln chi at the start - 2| (median over runs)", v, p),
            at_most("peak_exponent", "largest d ln chi / d ln t over runs and times (1: linear)", 1.0, 1.5),
            at_most("bound_excess", "largest d ln chi / d ln t minus b/a (Theorem 4's bound for chi-bar)", 1e-9
                    if evidence in _EXACT else 0.05, 1e-3 if evidence in _EXACT else 0.5, required=False),
        ), note="chi is Eqn 12's bound exp(2 B_n) for Eqn 14, the dominant distinct token's growth factor otherwise.")
    if claim == "C26":
        crit = [at_most("late_exponent", "largest local exponent of ln chi at the horizon (2 at the t^2 start; "
                        "a power law t^p keeps it at 2, ln ln t growth gives about 2 / ln t)", 0.25, 0.5),
                at_least("decade_gain", "smallest share of B_n gained in the last decade of steps (still moving)",
                         0.01, 0.001)]
        if evidence.startswith("training"):
            crit.append(at_most("freeze_drop", "largest ratio of the attention's freeze rate at the horizon to its "
                                "peak", 0.01, 0.1))
        return Rule(claim, evidence, tuple(crit))
    if claim == "C27":
        return Rule(claim, evidence, (
            at_most("slope_deviation", "|slope of ln t_snap against ln eta_Y (one intercept per eta_Z) + 1|", 0.2, 0.4),
            at_least("earlier_share", f"{share[0]} (larger eta_Y: earlier snap)", share[1], share[2]),
        ), note="t_snap: where the local exponent of the decoder clock read off B_n through Eqn 14's inverse falls "
            "to 1, half its t^2 start (theory.snap_time).")
    if claim == "C31":
        exact = evidence in _EXACT
        return Rule(claim, evidence, (
            at_most("spread_t0", "largest relative spread of B_n(t0) along a line of fixed eta_Z/eta_Y",
                    1e-9 if exact else 0.05, 1e-6 if exact else 0.15),
            at_least("spread_horizon", "median relative spread of B_n at the horizon along those lines", 0.02, 0.005),
        ))
    if claim == "C34":
        return Rule(claim, evidence, (
            at_least("later_share", f"{share[0]} (smaller eta_Y: later snap)", share[1], share[2]),
            at_least("larger_share", f"{share[0]} (smaller eta_Y: larger growth factor at the horizon)", share[1],
                     share[2]),
        ))
    what = {"C28": "both rates scaled up: larger B_n", "C29": "smaller eta_Y at fixed eta_Z: larger B_n",
            "C30": "larger eta_Z at fixed eta_Y: larger B_n"}[claim]
    return Rule(claim, evidence, (
        at_least("share", f"{share[0]} at the horizon ({what})", share[1], share[2]),
        at_least("step", "median relative change of B_n per grid step that goes the claimed way", 0.01, 0.001),
    ))


def phase_numbers(m: theory.GrowthMeasures, nY: int, nZ: int, b_over_a: float,
                  freeze_drop: float | None = None) -> dict[str, dict[str, float]]:
    """The numbers of every claim of :data:`CLAIMS` (Theorem 4's regimes, Chapter 6; claim -> name -> value) from
    measures on an ``nY x nZ`` grid (row-major, :func:`scansnap.theory.grid_lines`); lines that a grid lacks give
    ``nan``."""
    lines = {k: theory.grid_lines(nY, nZ, k) for k in ("eta_Y", "eta_Z", "scale")}
    nan = math.nan

    def share(values: np.ndarray, kind: str, direction: str) -> tuple[float, float]:
        if not any(len(line) >= 2 for line in lines[kind]):
            return nan, nan  # the grid has no step of this kind
        return theory.order_share(values, lines[kind], direction)

    def first(values: np.ndarray, kind: str, direction: str) -> float:
        return share(values, kind, direction)[0]

    numbers: dict[str, dict[str, float]] = {
        "C25": {"start_deviation": float(abs(np.nanmedian(m.early_exponent) - 2))
                if np.isfinite(m.early_exponent).any() else nan,
                "peak_exponent": float(m.peak_chi_exponent.max()),
                "bound_excess": float((m.peak_chi_exponent - b_over_a).max()), "b_over_a": b_over_a},
        "C26": {"late_exponent": float(m.late_exponent.max()), "decade_gain": float(m.decade_gain.min())},
        "C27": {"slope_deviation": abs(m.slope + 1), "earlier_share": first(m.snap, "eta_Y", "down"),
                "slope": m.slope, "slope_se": m.slope_se},
        "C34": {"later_share": first(m.snap, "eta_Y", "down"), "larger_share": first(m.log_chi_end, "eta_Y", "down")},
    }
    if freeze_drop is not None:
        numbers["C26"]["freeze_drop"] = freeze_drop
    for claim, kind, direction in (("C28", "scale", "up"), ("C29", "eta_Y", "down"), ("C30", "eta_Z", "up")):
        s, step = share(m.B_end, kind, direction)
        numbers[claim] = {"share": s, "step": step}
    scale = lines["scale"]
    numbers["C31"] = {"spread_t0": float(theory.line_spread(m.B_t0, scale).max()) if scale else nan,
                      "spread_horizon": float(np.median(theory.line_spread(m.B_end, scale))) if scale else nan}
    return numbers


def judge(claims: tuple[str, ...], evidence: str, numbers: dict[str, dict[str, float]], *, protocol: str,
          link: str, details: str = "") -> list[Verdict]:
    """The verdicts of ``claims`` (Chapter 6's C25-C31 and C34) on ``evidence`` from :func:`phase_numbers`."""
    return [phase_rule(c, evidence).judge(numbers[c], protocol=protocol, link=link, details=details) for c in claims]
