"""Statistics behind the verdicts: paired t statistics over seeds, effect sizes, trend counts over grid
rows, threshold location, log-log slopes with standard errors, rank correlations.

Conventions. Per-seed measurements on a grid are arrays whose **last axis is the seed**; runs with the
same seed are paired (same initialization and batches), so a change between two cells is judged by
the **paired** t statistic of the per-seed differences (:func:`paired_t`), and its size by the mean
change over the seed spread (:func:`standardized_change`, Cohen's d with the pooled standard
deviation). :func:`trend_steps` applies both to every consecutive step along an axis, and
:func:`trend_summary` turns them into the shares and the effect size a rule judges.

The 95% interval of a mean over seeds is Student's t interval (:func:`t_interval`).

Every function is pure numpy float64 and raises a ``ValueError`` naming the bad argument.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest, spearmanr
from scipy.stats import t as student_t

from scansnap._checks import check_array, check_choice, check_int

__all__ = [
    "wilson_interval",
    "TrendSteps",
    "TrendSummary",
    "loglog_slope",
    "modal_argmin",
    "paired_t",
    "parabolic_argmin",
    "spearman",
    "standardized_change",
    "t_interval",
    "trend_steps",
    "trend_summary",
]

T_CRITICAL = 2.0
"""The |t| at which a paired step counts as significant (about the two-sided 5% level for 10 seeds)."""


def _seeds(name: str, x: object) -> np.ndarray:
    a = check_array(name, x)
    if a.ndim < 1 or a.shape[-1] < 1:
        raise ValueError(f"{name}: must have a last (seed) axis of length >= 1; got shape {a.shape}")
    return a


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den``, with ``0 / 0 = 0`` and ``x / 0 = +-inf``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    return np.where(den > 0, out, np.where(num == 0, 0.0, np.copysign(np.inf, num)))


def paired_t(a: object, b: object) -> np.ndarray:
    """Paired t statistic of ``b - a`` over the last (seed) axis: ``mean(d) / (sd(d) / sqrt(S))``.

    Args:
        a, b: ``(..., S)`` per-seed values (same shape; seed ``s`` of ``a`` is paired with seed ``s`` of ``b``).

    Returns:
        ``(...)``; nan when ``S < 2``, 0 when every difference is 0, +-inf when they are all equal and non-zero.
    """
    x, y = _seeds("a", a), _seeds("b", b)
    if x.shape != y.shape:
        raise ValueError(f"b: must have the shape of a {x.shape}; got {y.shape}")
    d = y - x
    S = d.shape[-1]
    if S < 2:
        return np.full(d.shape[:-1], np.nan)
    return _ratio(d.mean(-1), d.std(-1, ddof=1) / np.sqrt(S))


def standardized_change(a: object, b: object) -> np.ndarray:
    """The change ``mean(b) - mean(a)`` over the seed spread ``sqrt((var(a) + var(b)) / 2)`` (ddof 1).

    Cohen's d of the step: about 0.2 is small, 0.5 medium, 0.8 large. Shapes as :func:`paired_t`;
    nan when ``S < 2``.
    """
    x, y = _seeds("a", a), _seeds("b", b)
    if x.shape != y.shape:
        raise ValueError(f"b: must have the shape of a {x.shape}; got {y.shape}")
    if x.shape[-1] < 2:
        return np.full(x.shape[:-1], np.nan)
    spread = np.sqrt((x.var(-1, ddof=1) + y.var(-1, ddof=1)) / 2)
    return _ratio(y.mean(-1) - x.mean(-1), spread)


@dataclass(frozen=True)
class TrendSteps:
    """Every consecutive step along one axis of per-seed values ``(R, N, S)`` (rows, points, seeds).

    Attributes:
        change: ``(R, N - 1)`` change of the seed mean from point ``i`` to ``i + 1``.
        t: ``(R, N - 1)`` paired t statistic of that change (:func:`paired_t`).
        effect: ``(R, N - 1)`` the change over the seed spread (:func:`standardized_change`).
    """

    change: np.ndarray
    t: np.ndarray
    effect: np.ndarray


def trend_steps(values: object) -> TrendSteps:
    """The steps of ``values`` ``(R, N, S)``: R rows (e.g. one per dataset and fixed learning rate), N
    points along the varied axis in increasing order, S paired seeds (N >= 2)."""
    v = check_array("values", values, ndim=3)
    if v.shape[1] < 2:
        raise ValueError(f"values: need at least 2 points along axis 1; got shape {v.shape}")
    lo, hi = v[:, :-1], v[:, 1:]
    return TrendSteps(change=hi.mean(-1) - lo.mean(-1), t=paired_t(lo, hi), effect=standardized_change(lo, hi))


@dataclass(frozen=True)
class TrendSummary:
    """How well a grid follows a claimed direction (``"down"`` or ``"up"``), step by step.

    Attributes:
        rows: number of rows; steps: number of consecutive steps over all rows.
        rows_monotone: rows whose seed mean moves in the direction at every step.
        steps_along: steps whose seed mean moves in the direction.
        steps_significant: steps with a paired t of at least ``t_critical`` in the direction.
        median_effect: median over steps of the standardized change in the direction (Cohen's d; nan
            with fewer than 2 seeds or no step).
        t_critical: the threshold used.
    """

    rows: int
    steps: int
    rows_monotone: int
    steps_along: int
    steps_significant: int
    median_effect: float
    t_critical: float

    @property
    def share_rows(self) -> float:
        """``rows_monotone / rows`` (nan without rows)."""
        return self.rows_monotone / self.rows if self.rows else float("nan")

    @property
    def share_significant(self) -> float:
        """``steps_significant / steps`` (nan without steps)."""
        return self.steps_significant / self.steps if self.steps else float("nan")


def trend_summary(rows: list[np.ndarray], direction: str, t_critical: float = T_CRITICAL) -> TrendSummary:
    """Count how the rows follow ``direction``.

    Args:
        rows: arrays ``(N_r, S)`` (points along the varied axis, seeds); rows may differ in length
            (a row with fewer than 2 points has no step and counts as not monotone).
        direction: ``"down"`` (the claim: values fall along the axis) or ``"up"``.
        t_critical: a step is significant when its paired t is at least this, in the direction (> 0).

    Returns:
        :class:`TrendSummary`.
    """
    sign = {"down": -1.0, "up": 1.0}[check_choice("direction", direction, ("down", "up"))]
    if not t_critical > 0:
        raise ValueError(f"t_critical: must be > 0; got {t_critical}")
    monotone = along = significant = n_steps = 0
    effects: list[np.ndarray] = []
    for r in rows:
        r = check_array("rows", r, ndim=2)
        if r.shape[0] < 2:
            continue
        st = trend_steps(r[None])
        moved = sign * st.change[0] > 0
        monotone += bool(moved.all())
        along += int(moved.sum())
        significant += int((sign * st.t[0] >= t_critical).sum())
        n_steps += moved.size
        effects.append(sign * st.effect[0])
    pooled = np.concatenate(effects) if effects else np.array([])
    median = float(np.median(pooled)) if pooled.size and not np.isnan(pooled).any() else float("nan")
    return TrendSummary(rows=len(rows), steps=n_steps, rows_monotone=monotone, steps_along=along,
                        steps_significant=significant, median_effect=median, t_critical=float(t_critical))


def modal_argmin(means: object, x: object) -> tuple[float, np.ndarray]:
    """Where a grid is least, row by row, and the most common such place (a threshold's location).

    Args:
        means: ``(R, N)`` values (e.g. mean entropy per row of fixed ``eta_Z``, over N ratios).
        x: ``(N,)`` the positions of the columns.

    Returns:
        ``(x_mode, argmin)``: the most common ``x`` of least value (the smallest on a tie) and the
        ``(R,)`` ``x`` of least value per row.
    """
    m, xs = check_array("means", means, ndim=2), check_array("x", x, ndim=1)
    if m.shape[1] != len(xs) or m.shape[0] < 1:
        raise ValueError(f"means: must have shape (R >= 1, {len(xs)}); got {m.shape}")
    at = xs[np.argmin(m, axis=1)]
    counts = Counter(at.tolist())
    top = max(counts.values())
    return float(min(v for v, c in counts.items() if c == top)), at


def parabolic_argmin(values: object, x: object, log: bool = True) -> np.ndarray:
    """Per row of ``values`` ``(R, N)``, the position of least value refined by a parabola through the grid
    minimum and its two neighbours (in ``log x`` when ``log``); the grid position itself at an edge or
    when the parabola opens downwards.

    Returns:
        ``(R,)`` positions, in the units of ``x``.
    """
    v, xs = check_array("values", values, ndim=2), check_array("x", x, ndim=1)
    if v.shape[1] != len(xs) or len(xs) < 3:
        raise ValueError(f"values: must have shape (R, {len(xs)}) with at least 3 columns; got {v.shape}")
    if log and not (xs > 0).all():
        raise ValueError("x: must be > 0 for log=True")
    u = np.log(xs) if log else xs
    out = np.empty(v.shape[0])
    for i, row in enumerate(v):
        k = int(np.argmin(row))
        out[i] = u[k]
        if 0 < k < len(row) - 1:
            coef = np.polyfit(u[k - 1:k + 2], row[k - 1:k + 2], 2)
            if coef[0] > 0:
                out[i] = -coef[1] / (2 * coef[0])
    return np.exp(out) if log else out


def loglog_slope(x: object, y: object) -> tuple[float, float]:
    """Least-squares slope of ``log y`` against ``log x`` and its standard error.

    Args:
        x, y: ``(N,)`` positive values, ``N >= 3`` (the standard error needs ``N - 2 >= 1`` residual degrees
            of freedom).

    Returns:
        ``(slope, standard error)``.
    """
    xs, ys = check_array("x", x, ndim=1), check_array("y", y, ndim=1)
    if len(xs) != len(ys) or len(xs) < 3:
        raise ValueError(f"y: must have the length of x, at least 3; got {len(ys)} and {len(xs)}")
    if not ((xs > 0).all() and (ys > 0).all()):
        raise ValueError("x: x and y must be > 0")
    u, w = np.log(xs), np.log(ys)
    du = u - u.mean()
    if not (du @ du) > 0:
        raise ValueError("x: needs at least two distinct values")
    slope = float(du @ (w - w.mean()) / (du @ du))
    resid = w - w.mean() - slope * du
    return slope, float(np.sqrt(resid @ resid / (len(u) - 2) / (du @ du)))


def spearman(a: object, b: object) -> float:
    """Spearman rank correlation of ``a`` and ``b`` ``(N,)``, ``N >= 3``; nan when either is constant."""
    x, y = check_array("a", a, ndim=1), check_array("b", b, ndim=1)
    if len(x) != len(y) or len(x) < 3:
        raise ValueError(f"b: must have the length of a, at least 3; got {len(y)} and {len(x)}")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def t_interval(x: object, level: float = 0.95) -> tuple[float, float, float]:
    """Student's t interval of the mean of ``x`` ``(S,)`` (one value per seed; nan entries dropped).

    Returns:
        ``(mean, low, high)``: ``mean -+ t_{(1 + level)/2, S-1} sd / sqrt(S)`` (ddof 1). With fewer than 2 finite
        values the ends are nan (no interval; the mean is nan too when there is none); equal values give a
        zero-width interval.
    """
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"x: must have 1 dimension (seeds); got shape {a.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level: must be in (0, 1); got {level}")
    a = a[np.isfinite(a)]
    if a.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(a.mean())
    if a.size < 2:
        return mean, float("nan"), float("nan")
    half = float(student_t.ppf((1 + level) / 2, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))
    return mean, mean - half, mean + half


def wilson_interval(hits: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """``(low, high)``: the Wilson score interval of the proportion ``hits / n`` at confidence ``level``
    (:meth:`scipy.stats.binomtest`'s ``proportion_ci``; ``(0, 1)`` when ``n = 0``: nothing was observed). Unlike
    the normal interval it stays inside ``[0, 1]`` and is not empty at ``hits = 0`` (its upper end is then
    about ``3.8 / n``)."""
    n = check_int("n", n, low=0)
    hits = check_int("hits", hits, low=0, high=n)
    if not 0 < level < 1:
        raise ValueError(f"level: must be in (0, 1); got {level}")
    if n == 0:
        return 0.0, 1.0
    ci = binomtest(int(hits), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)
