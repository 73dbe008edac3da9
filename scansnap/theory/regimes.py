"""Measuring Theorem 4's regimes on growth curves (Chapter 6): local exponents, the snap (transition) time,
the transition time's slope against ``eta_Y``, ``B_n`` read off training, and orderings on a learning-rate grid.

A *growth curve* is ``g(t) > 0`` sampled at increasing steps: Eqn 14's ``B_n``, the exact system's ``B_n``, or
``ln chi_l0 = 2 (z_ml0(t) - z_ml0(0))`` of a trained model. Near ``t = 0`` each grows like ``t^2`` (local exponent
2, the scanning start); in the snapping phase like ``ln ln t`` (exponent near 0). A *grid* is ``nY x nZ``
configurations, flattened row-major (``c = i nZ + j``) with ``eta_Y = eta_Y0 q^i`` and ``eta_Z = eta_Z0 q^j``, so
the lines ``j - i = const`` hold the ratio ``eta_Z / eta_Y`` fixed (:func:`grid_lines`). Arrays are numpy float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scansnap._checks import check_array, check_choice, check_int, check_positive

__all__ = [
    "SCAN_ENTROPY_FALL",
    "SCAN_LOG_CHI",
    "GrowthMeasures",
    "grid_lines",
    "growth_bound_from_logits",
    "line_spread",
    "local_exponent",
    "measure_growth",
    "order_share",
    "rate_grid",
    "scan_shortfall",
    "snap_time",
    "transition_slope",
    "value_at",
]


SCAN_LOG_CHI = 1.0
"""The growth ``ln chi_l0`` of the dominant distinct token that makes a scan visible (set before any run)."""
SCAN_ENTROPY_FALL = 0.3
"""The fall of the distinct-token entropy (nats) that makes a scan visible (set before any run)."""


def scan_shortfall(log_chi: float, entropy_fall: float) -> str:
    """Empty when a run scans visibly (``ln chi_l0 >= 1`` and an entropy fall ``>= 0.3`` nats, the largest over the
    run), else the gap in words with its numbers: the ``too_small`` reason of a training verdict on Theorem 4's
    scanning and snapping (:meth:`scansnap.verdicts.Rule.judge`)."""
    if log_chi >= SCAN_LOG_CHI and entropy_fall >= SCAN_ENTROPY_FALL:
        return ""
    return (f"the trained attention never scans (largest ln chi_l0 {log_chi:.3g}, target {SCAN_LOG_CHI:g}; largest "
            f"fall of the distinct-token entropy {entropy_fall:.3g} nats, target {SCAN_ENTROPY_FALL:g})")


def growth_bound_from_logits(t: object, z: object, ft: object) -> np.ndarray:
    """``B_n`` read off a trajectory of one distinct token: ``int z-dot_ml / f~_nl^2 dt``, which is Eqn 12's
    ``B_n = int A_n`` whenever Theorem 2(a) (``z-dot_ml = A_n f~_nl^2``) holds; trapezoid rule in ``f~^2``.

    Args:
        t: ``(S,)`` increasing steps with ``t[0] = 0``; z, ft: ``(S, ...)`` the token's logit and ``f~_nl``.

    Returns:
        ``(S, ...)``, 0 at ``t = 0``.
    """
    times, zz, f = check_array("t", t, ndim=1), check_array("z", z), check_array("ft", ft)
    if zz.shape != f.shape or zz.shape[0] != len(times) or (f <= 0).any():
        raise ValueError(f"ft: must be > 0 with the shape of z {zz.shape}, one row per time")
    f2 = f**2
    steps = np.diff(zz, axis=0) / ((f2[1:] + f2[:-1]) / 2)
    return np.concatenate([np.zeros_like(zz[:1]), np.cumsum(steps, axis=0)])


def local_exponent(t: object, y: object) -> np.ndarray:
    """``d ln y / d ln t`` along the first axis (second-order differences on a non-uniform ``ln t`` grid): 2 at
    the start of Theorem 4's scanning regime, near 0 when it snaps.

    Args:
        t: ``(S,)`` increasing, > 0; y: ``(S, ...)`` > 0.
    """
    times, yy = check_array("t", t, ndim=1), check_array("y", y)
    if len(times) < 3 or times[0] <= 0 or not (np.diff(times) > 0).all():
        raise ValueError("t: must be increasing, > 0, with at least 3 entries")
    if yy.shape[0] != len(times) or (yy <= 0).any():
        raise ValueError(f"y: must be > 0 with one row per time ({len(times)}); got shape {yy.shape}")
    return np.gradient(np.log(yy), np.log(times), axis=0)


def snap_time(t: object, B: object, a_over_b: float = 0.0) -> np.ndarray:
    """The measured transition: the first step after which the decoder clock's local exponent
    ``q = d ln X / d ln t`` has fallen below 1, half its start value 2, with ``X = exp(4 (a/b) B) - 1`` read off a
    growth curve ``B_n`` through Eqn 14's own inverse (``X = 4 a eta_Z Gamma``, so ``q = gamma t / Gamma``);
    interpolated in ``ln t``, ``nan`` if it never falls. ``a_over_b = 0`` takes ``X = B`` (the limit
    ``4 a eta_Z Gamma << 1``). On Eqn 14 this is :func:`scansnap.theory.snap_time_limit`, exactly ``K / eta_Y`` times
    a function of ``M``, whatever the coupling.

    Args:
        t: ``(S,)`` increasing, > 0; B: ``(S, ...)`` > 0; a_over_b: Eqn 13's ``a / b`` (>= 0).

    Returns:
        ``(...)``.
    """
    times, y = check_array("t", t, ndim=1), check_array("B", B)
    if not a_over_b >= 0:
        raise ValueError(f"a_over_b: must be >= 0; got {a_over_b}")
    if len(times) < 3 or times[0] <= 0 or not (np.diff(times) > 0).all() or y.shape[0] != len(times) or (y <= 0).any():
        raise ValueError(f"B: need one row > 0 per time of an increasing t > 0 (>= 3 samples); got {y.shape}")
    X = np.expm1(4 * a_over_b * y) if a_over_b > 0 else y
    p = np.gradient(np.log(X), np.log(times), axis=0)
    flat = p.reshape(len(times), -1)
    out = np.full(flat.shape[1], np.nan)
    for j in range(flat.shape[1]):
        col = flat[:, j]
        top = int(np.argmax(col))
        below = np.flatnonzero(col[top:] < 1.0)
        if len(below) and col[top] >= 1.0:
            i = top + int(below[0])
            x0, x1, y0, y1 = math.log(times[i - 1]), math.log(times[i]), col[i - 1], col[i]
            out[j] = math.exp(x0 + (y0 - 1.0) / (y0 - y1) * (x1 - x0))
    return out.reshape(p.shape[1:])


def transition_slope(eta_Y: object, eta_Z: object, times: object) -> tuple[float, float]:
    """Least-squares slope of ``ln t_snap`` against ``ln eta_Y`` with one intercept per value of ``eta_Z``, and
    its standard error (Theorem 4 / insight (a): slope -1).

    Args:
        eta_Y, eta_Z, times: ``(C,)`` the configurations' rates and measured transition times (> 0).
    """
    x, g, y = (check_array(n, v, ndim=1) for n, v in (("eta_Y", eta_Y), ("eta_Z", eta_Z), ("times", times)))
    if not (x.shape == g.shape == y.shape) or (x <= 0).any() or (y <= 0).any():
        raise ValueError("times: eta_Y, eta_Z and times need equal shapes and values > 0")
    groups = np.unique(g)
    X = np.column_stack([np.log(x)] + [(g == v).astype(float) for v in groups])
    dof = len(y) - X.shape[1]
    if dof < 1 or np.linalg.matrix_rank(X) < X.shape[1]:
        raise ValueError("times: need at least two eta_Y values per eta_Z and one more point than parameters")
    coef, *_ = np.linalg.lstsq(X, np.log(y), rcond=None)
    resid = np.log(y) - X @ coef
    cov = (resid @ resid / dof) * np.linalg.inv(X.T @ X)
    return float(coef[0]), float(math.sqrt(cov[0, 0]))


def value_at(t: object, y: object, at: object) -> np.ndarray:
    """Column ``c`` of ``y`` ``(S, C)`` at time ``at[c]``, interpolated linearly in ``ln t`` (``t > 0``; ``nan``
    outside ``[t[0], t[-1]]``), e.g. ``B_n`` at each run's ``t0`` (Figure 9, claim C31)."""
    times, yy, pts = check_array("t", t, ndim=1), check_array("y", y, ndim=2), check_array("at", at, ndim=1)
    if (times <= 0).any() or yy.shape != (len(times), len(pts)):
        raise ValueError(f"y: must be (S, C) = ({len(times)}, {len(pts)}) on times > 0; got {yy.shape}")
    x = np.log(times)
    return np.array([np.interp(math.log(p), x, yy[:, c], left=np.nan, right=np.nan) if p > 0 else np.nan
                     for c, p in enumerate(pts)])


def rate_grid(eta_Y0: float, eta_Z0: float, factor: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n x n`` grid ``eta_Y = eta_Y0 q^i``, ``eta_Z = eta_Z0 q^j`` (``q = factor > 1``), flattened row-major:
    ``(eta_Y, eta_Z)``, each ``(n * n,)``; Chapter 6 tests Theorem 4's learning-rate insights (C27-C31) on it."""
    check_positive("eta_Y0", eta_Y0)
    check_positive("eta_Z0", eta_Z0)
    if not factor > 1:
        raise ValueError(f"factor: must be > 1; got {factor}")
    q = factor ** np.arange(check_int("n", n, low=1))
    return np.repeat(eta_Y0 * q, n), np.tile(eta_Z0 * q, n)


def grid_lines(nY: int, nZ: int, kind: str) -> list[list[int]]:
    """Lines of flat indices through an ``nY x nZ`` grid, each ordered by increasing learning rate:
    ``"eta_Y"`` (``eta_Y`` grows at fixed ``eta_Z``), ``"eta_Z"`` (``eta_Z`` grows at fixed ``eta_Y``) or
    ``"scale"`` (both grow by the grid factor: fixed ratio; only lines of at least 2 cells). These are the
    directions of Theorem 4's learning-rate insights (C27-C30) and of Figure 9's fixed ratio (C31)."""
    check_int("nY", nY, low=1)
    check_int("nZ", nZ, low=1)
    check_choice("kind", kind, ("eta_Y", "eta_Z", "scale"))
    if kind == "eta_Y":
        return [[i * nZ + j for i in range(nY)] for j in range(nZ)]
    if kind == "eta_Z":
        return [[i * nZ + j for j in range(nZ)] for i in range(nY)]
    lines = [[i * nZ + i + k for i in range(nY) if 0 <= i + k < nZ] for k in range(-nY + 1, nZ)]
    return [line for line in lines if len(line) >= 2]


def order_share(values: object, lines: list[list[int]], direction: str) -> tuple[float, float]:
    """How ``values`` ``(C,)`` move along ``lines`` (:func:`grid_lines`): the share of adjacent steps that go
    ``direction`` (``"up"`` or ``"down"``; a ``nan`` step counts against), and the median relative step
    ``|v_{k+1} / v_k - 1|`` of those that do (0 if none): how well a grid follows one of Theorem 4's
    learning-rate insights (C27-C30)."""
    v = np.asarray(values, dtype=np.float64)
    sign = {"up": 1.0, "down": -1.0}[check_choice("direction", direction, ("up", "down"))]
    steps = [(v[a], v[b]) for line in lines for a, b in zip(line[:-1], line[1:], strict=True)]
    if not steps:
        raise ValueError("lines: need at least one adjacent pair")
    good = [abs(b / a - 1) for a, b in steps if sign * (b - a) > 0 and a != 0]
    return len(good) / len(steps), float(np.median(good)) if good else 0.0


def line_spread(values: object, lines: list[list[int]]) -> np.ndarray:
    """``(max - min) / |mean|`` of ``values`` ``(C,)`` along each line: ``(len(lines),)`` (C31: ``B_n(t0)`` does
    not change along a line of fixed ratio, Figure 9)."""
    v = np.asarray(values, dtype=np.float64)  # nan stays: a missing value makes its line's spread nan
    if v.ndim != 1:
        raise ValueError(f"values: must have 1 dimension (C,); got shape {v.shape}")
    if any(not line for line in lines):
        raise ValueError("lines: every line needs at least one index into values")
    return np.array([(v[line].max() - v[line].min()) / abs(v[line].mean()) for line in lines])


@dataclass(frozen=True)
class GrowthMeasures:
    """The regime numbers of growth curves on a grid (each ``(C,)`` unless stated).

    Attributes:
        snap: :func:`snap_time` of ``B``; slope, slope_se: :func:`transition_slope` of ``snap``
            (``nan`` if a snap time is missing).
        early_exponent: local exponent of ``ln chi`` at ``t_early`` (2 for a ``t^2`` start; ``nan`` where
            ``t_early > 0.2 t0``, no longer the start).
        peak_chi_exponent: the largest ``d ln chi / d ln t`` along the run (Theorem 4: below ``b / a``).
        late_exponent: local exponent of ``ln chi`` at the last sample (snapping: near 0).
        log_chi_end, B_end: ``ln chi`` and ``B_n`` at the last sample; B_t0: ``B_n`` at ``t0 = K ln M / eta_Y``.
        decade_gain: ``(B(T) - B(T / 10)) / B(T)``, the share of ``B_n`` gained in the last decade of steps.
    """

    snap: np.ndarray
    slope: float
    slope_se: float
    early_exponent: np.ndarray
    peak_chi_exponent: np.ndarray
    late_exponent: np.ndarray
    log_chi_end: np.ndarray
    B_end: np.ndarray
    B_t0: np.ndarray
    decade_gain: np.ndarray


def measure_growth(t: object, log_chi: object, B: object, eta_Y: object, eta_Z: object, M: int, K: int,
                   t_early: float | None = None, a_over_b: float = 0.0) -> GrowthMeasures:
    """:class:`GrowthMeasures` of ``ln chi`` and ``B`` ``(S, C)`` sampled at steps ``t`` ``(S,)`` (only the samples
    after the last one with some ``ln chi <= 0`` or ``B <= 0`` are used: sampling noise can make them dip),
    for configurations with rates ``eta_Y``, ``eta_Z`` ``(C,)`` and ``t0 = K ln M / eta_Y``; the start's exponent
    is read at ``t_early`` (default: the first sample used); ``a_over_b`` goes to :func:`snap_time`. These are
    the numbers of Theorem 4's regimes that Chapter 6 judges."""
    times = check_array("t", t, ndim=1)
    lc, b = check_array("log_chi", log_chi, ndim=2), check_array("B", B, ndim=2)
    eY, eZ = check_array("eta_Y", eta_Y, ndim=1), check_array("eta_Z", eta_Z, ndim=1)
    if lc.shape != b.shape or lc.shape != (len(times), len(eY)) or eZ.shape != eY.shape:
        raise ValueError(f"B: log_chi and B must be (S, C) = ({len(times)}, {len(eY)}); got {lc.shape}, {b.shape}")
    bad = np.flatnonzero(~(((lc > 0) & (b > 0)).all(axis=1) & (times > 0)))
    first = int(bad[-1]) + 1 if len(bad) else 0  # from the last sample with a curve <= 0 on
    if len(times) - first < 3:
        raise ValueError("log_chi: growth curves must end with at least 3 samples > 0")
    tt, lc, b = times[first:], lc[first:], b[first:]
    t0 = K * math.log(check_int("M", M, low=2)) / eY
    snap = snap_time(tt, b, a_over_b)
    slope, se = transition_slope(eY, eZ, snap) if np.isfinite(snap).all() else (math.nan, math.nan)
    p = local_exponent(tt, lc)
    start = tt[0] if t_early is None else max(check_positive("t_early", t_early), tt[0])
    early = np.where(start <= 0.2 * t0, value_at(tt, p, np.full(len(eY), start)), np.nan)
    back = value_at(tt, b, np.full(len(eY), tt[-1] / 10))
    return GrowthMeasures(snap=snap, slope=slope, slope_se=se, early_exponent=early,
                          peak_chi_exponent=(p * lc).max(axis=0), late_exponent=p[-1], log_chi_end=lc[-1],
                          B_end=b[-1], B_t0=value_at(tt, b, t0), decade_gain=(b[-1] - back) / b[-1])
