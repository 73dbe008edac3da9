"""scansnap.stats: paired t statistics, effect sizes, trend counts, threshold location, slopes, rank correlation."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import names
from scipy import stats as sps

from scansnap import stats


def test_paired_t_matches_scipy_and_handles_degenerate_cases() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4, 10))
    b = a + 0.3 + 0.2 * rng.normal(size=a.shape)
    np.testing.assert_allclose(stats.paired_t(a, b), sps.ttest_rel(b, a, axis=-1).statistic, rtol=1e-12)
    assert np.isnan(stats.paired_t([1.0], [2.0]))
    assert stats.paired_t([1.0, 2.0], [1.0, 2.0]) == 0.0
    assert stats.paired_t([1.0, 2.0], [2.0, 3.0]) == np.inf and stats.paired_t([1.0, 2.0], [0.0, 1.0]) == -np.inf
    with pytest.raises(ValueError, match=names("b")):
        stats.paired_t(np.zeros((2, 3)), np.zeros((3, 2)))


def test_standardized_change_is_cohens_d_with_pooled_spread() -> None:
    a, b = np.array([1.0, 2.0, 3.0]), np.array([3.0, 5.0, 4.0])
    pooled = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    assert stats.standardized_change(a, b) == pytest.approx((b.mean() - a.mean()) / pooled)
    assert stats.standardized_change(a, a + 1) == pytest.approx(1.0)  # a shift by one seed standard deviation
    assert np.isnan(stats.standardized_change([1.0], [2.0]))
    assert stats.standardized_change([1.0, 1.0], [2.0, 2.0]) == np.inf


def test_trend_steps_shapes_and_values() -> None:
    values = np.arange(24, dtype=float).reshape(2, 3, 4)  # each step adds 4 to every seed
    st = stats.trend_steps(values)
    assert st.change.shape == st.t.shape == st.effect.shape == (2, 2)
    np.testing.assert_allclose(st.change, 4.0)
    assert (st.t == np.inf).all()  # identical differences over seeds
    with pytest.raises(ValueError, match=names("values")):
        stats.trend_steps(np.zeros((2, 1, 4)))


def test_trend_summary_counts_rows_steps_and_effect() -> None:
    rng = np.random.default_rng(1)
    down = [np.array([[2.0], [1.5], [1.0]]) + 0.05 * rng.normal(size=(3, 10)) for _ in range(4)]
    s = stats.trend_summary(down, "down")
    assert (s.rows, s.steps, s.rows_monotone, s.steps_along, s.steps_significant) == (4, 8, 4, 8, 8)
    assert s.share_rows == 1.0 and s.share_significant == 1.0 and s.median_effect > 5
    up = stats.trend_summary(down, "up")
    assert up.rows_monotone == 0 and up.steps_significant == 0 and up.median_effect < -5
    flat = [np.array([[1.0], [1.0]]) + 0.1 * rng.normal(size=(2, 10))]
    f = stats.trend_summary(flat, "down")
    assert f.steps_significant == 0 and abs(f.median_effect) < 1.5
    short = stats.trend_summary([np.ones((1, 3))], "up")  # no step: not monotone, no effect
    assert (short.rows, short.steps, short.rows_monotone) == (1, 0, 0) and np.isnan(short.share_significant)
    assert np.isnan(stats.trend_summary([np.ones((3, 1))], "up").median_effect)  # one seed: no spread
    with pytest.raises(ValueError, match=names("direction")):
        stats.trend_summary(down, "sideways")
    with pytest.raises(ValueError, match=names("t_critical")):
        stats.trend_summary(down, "down", t_critical=0)


def test_modal_argmin_prefers_the_most_common_then_the_smallest() -> None:
    x = np.array([1.0, 2.0, 5.0, 10.0])
    means = np.array([[3, 1, 2, 4], [3, 1, 2, 4], [1, 3, 2, 4], [4, 3, 1, 2]], dtype=float)
    mode, at = stats.modal_argmin(means, x)
    assert mode == 2.0 and at.tolist() == [2.0, 2.0, 1.0, 5.0]
    assert stats.modal_argmin(means[2:], x)[0] == 1.0  # a tie between 1 and 5: the smaller
    with pytest.raises(ValueError, match=names("means")):
        stats.modal_argmin(means[:, :3], x)


def test_parabolic_argmin_recovers_a_parabola_vertex_in_log_x() -> None:
    x = np.geomspace(0.25, 16, 7)
    values = (np.log(x)[None, :] - np.log([[2.5], [0.9]])) ** 2
    np.testing.assert_allclose(stats.parabolic_argmin(values, x), [2.5, 0.9], rtol=1e-10)
    linear = (x[None, :] - 3.0) ** 2  # a parabola in x itself
    assert stats.parabolic_argmin(linear, x, log=False)[0] == pytest.approx(3.0)
    edge = np.arange(7.0)[None, :]
    assert stats.parabolic_argmin(edge, x)[0] == x[0]
    with pytest.raises(ValueError, match=names("x")):
        stats.parabolic_argmin(linear, x - 1.0)


def test_loglog_slope_and_its_standard_error() -> None:
    x = np.geomspace(0.25, 4, 7)
    slope, se = stats.loglog_slope(x, 3 * x**0.7)
    assert slope == pytest.approx(0.7) and se == pytest.approx(0.0, abs=1e-12)
    rng = np.random.default_rng(2)
    y = x * np.exp(0.1 * rng.normal(size=7))
    fit = sps.linregress(np.log(x), np.log(y))
    assert stats.loglog_slope(x, y) == pytest.approx((fit.slope, fit.stderr), rel=1e-10)
    with pytest.raises(ValueError, match=names("y")):
        stats.loglog_slope(x[:2], y[:2])
    with pytest.raises(ValueError, match=names("x")):
        stats.loglog_slope(-x, y)


def test_spearman() -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0])
    assert stats.spearman(a, a**3) == pytest.approx(1.0) and stats.spearman(a, -a) == pytest.approx(-1.0)
    b = np.array([2.0, 1.0, 4.0, 3.0])
    assert stats.spearman(a, b) == pytest.approx(sps.spearmanr(a, b).statistic)
    assert np.isnan(stats.spearman(a, np.ones(4)))
    with pytest.raises(ValueError, match=names("b")):
        stats.spearman(a, a[:3])


def test_t_interval_matches_scipy_and_handles_few_seeds() -> None:
    x = np.array([0.3, 0.5, 0.4, 0.45, 0.35])
    mean, lo, hi = stats.t_interval(x)
    ref = sps.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
    assert mean == pytest.approx(x.mean()) and (lo, hi) == pytest.approx(ref, rel=1e-12)
    assert stats.t_interval([2.0, 2.0, np.nan]) == (2.0, 2.0, 2.0)  # nan dropped; equal values: zero width
    one = stats.t_interval([1.0])
    assert one[0] == 1.0 and np.isnan(one[1]) and np.isnan(one[2])
    assert all(np.isnan(v) for v in stats.t_interval([]))
    with pytest.raises(ValueError, match="level"):
        stats.t_interval(x, level=1.0)
    with pytest.raises(ValueError, match="x: must have 1 dimension"):
        stats.t_interval(np.ones((2, 2)))


def test_wilson_interval_is_the_score_interval_and_covers_at_its_level() -> None:
    import math

    from scipy.stats import norm

    z = norm.ppf(0.975)
    for hits, n in ((0, 1000), (3, 50), (50, 50), (17, 400)):
        p, z2 = hits / n, z * z
        half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
        want = ((p + z2 / (2 * n) - half) / (1 + z2 / n), (p + z2 / (2 * n) + half) / (1 + z2 / n))
        assert stats.wilson_interval(hits, n) == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)
    for hits, n, level, param in ((1, -1, 0.95, "n"), (5, 4, 0.95, "hits"), (-1, 4, 0.95, "hits"),
                                  (0.5, 4, 0.95, "hits"), (1, 4, 1.0, "level")):
        with pytest.raises(ValueError, match=names(param)):
            stats.wilson_interval(hits, n, level)
    # coverage: 4000 draws of Binomial(200, 0.1); the 95% interval misses p in 5% of them, and the share of misses
    # of 4000 draws lies within 0.05 +- 4 sd (sd = sqrt(0.05 * 0.95 / 4000) = 0.0034), whatever the seed
    hits = np.random.default_rng(0).binomial(200, 0.1, size=4000)
    miss = np.mean([not (lo <= 0.1 <= hi) for lo, hi in (stats.wilson_interval(h, 200) for h in hits)])
    assert abs(miss - 0.05) < 4 * math.sqrt(0.05 * 0.95 / 4000) + 0.01  # + 0.01: the discreteness of Binomial(200)
