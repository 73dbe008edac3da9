"""scansnap.theory.regimes: local exponents, snap time, transition slope, grid lines and orderings."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import names

from scansnap.theory import phase, regimes


def test_local_exponent_of_power_laws() -> None:
    t = np.geomspace(1, 1e4, 200)
    p = regimes.local_exponent(t, np.stack([t**2, 3 * t**0.5], 1))
    np.testing.assert_allclose(p[1:-1], [[2.0, 0.5]] * (len(t) - 2), atol=1e-10)


def test_snap_time_on_eqn14_is_the_transition_whatever_the_coupling() -> None:
    t = np.geomspace(0.01, 1e6, 2000)
    M, K = 992, 10
    for eta_Z, a in ((0.5, 0.09), (1e-4, 1e-3)):  # strong and weak coupling 4 a eta_Z Gamma
        for eY in (0.5, 2.0):
            B = phase.eqn14_at(t, M, K, eY, eta_Z, a, a / 9)
            got = float(regimes.snap_time(t, B, 9.0))
            assert abs(got / phase.snap_time_limit(M, K, eY) - 1) < 1e-3


def test_snap_time_is_nan_when_the_exponent_never_falls() -> None:
    t = np.geomspace(1, 100, 50)
    assert np.isnan(regimes.snap_time(t, t**2))


def test_transition_slope_recovers_a_planted_slope_with_per_group_intercepts() -> None:
    eY = np.repeat([0.25, 0.5, 1.0, 2.0], 4)
    eZ = np.tile([0.1, 0.2, 0.4, 0.8], 4)
    rng = np.random.default_rng(0)
    times = 30 * eZ ** 0.3 * eY ** -0.8 * np.exp(rng.normal(0, 0.01, 16))
    slope, se = regimes.transition_slope(eY, eZ, times)
    assert abs(slope + 0.8) < 4 * se and se < 0.02
    exact_slope, exact_se = regimes.transition_slope(eY, eZ, 30 * eY**-1.0)
    assert exact_slope == pytest.approx(-1.0) and exact_se < 1e-12


def test_growth_bound_from_logits_recovers_a_known_rate() -> None:
    t = np.linspace(0, 50, 2001)
    P = np.array([0.2, 0.5, 1.0])
    A = 0.3  # z-dot_l = A f~_l^2 with f~ = P e^z / ||P e^z||, integrated by Euler steps
    z = np.zeros((len(t), 3))
    for i in range(1, len(t)):
        c = P * np.exp(z[i - 1])
        z[i] = z[i - 1] + (t[i] - t[i - 1]) * A * c**2 / (c @ c)
    c = P * np.exp(z)
    ft = c / np.linalg.norm(c, axis=1, keepdims=True)
    B = regimes.growth_bound_from_logits(t, z[:, 2], ft[:, 2])
    assert abs(B[-1] / (A * t[-1]) - 1) < 1e-3


def test_grid_lines_and_orderings() -> None:
    assert regimes.grid_lines(2, 3, "eta_Y") == [[0, 3], [1, 4], [2, 5]]
    assert regimes.grid_lines(2, 3, "eta_Z") == [[0, 1, 2], [3, 4, 5]]
    assert regimes.grid_lines(2, 3, "scale") == [[0, 4], [1, 5]]
    v = np.array([1.0, 2.0, 4.0, 3.0])
    assert regimes.order_share(v, [[0, 1, 2, 3]], "up") == (2 / 3, pytest.approx(1.0))
    np.testing.assert_allclose(regimes.line_spread(v, [[0, 2]]), [3 / 2.5])
    np.testing.assert_allclose(regimes.value_at([1.0, 100.0], [[0.0], [2.0]], [10.0]), [1.0])


def test_measure_growth_on_eqn14() -> None:
    t = np.geomspace(0.1, 1e5, 600)
    eY, eZ = np.array([0.5, 1.0, 2.0]), np.array([0.1, 0.1, 0.1])
    B = np.stack([phase.eqn14_at(t, 46, 4, y, z, 0.03, 0.0075) for y, z in zip(eY, eZ, strict=True)], 1)
    m = regimes.measure_growth(t, 2 * B, B, eY, eZ, 46, 4, a_over_b=4.0)
    assert m.slope == pytest.approx(-1.0, abs=1e-3)
    np.testing.assert_allclose(m.early_exponent, 2.0, atol=3e-3)
    assert (m.peak_chi_exponent < 0.25).all() and (m.late_exponent < 0.25).all() and (m.decade_gain > 0).all()
    assert np.diff(m.B_end).max() < 0  # at fixed eta_Z, a larger eta_Y ends lower (insight (c))


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: regimes.local_exponent([1.0, 2.0], [1.0, 2.0]), "t"),
        (lambda: regimes.local_exponent([1.0, 2.0, 3.0], [1.0, -2.0, 3.0]), "y"),
        (lambda: regimes.snap_time([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], -1.0), "a_over_b"),
        (lambda: regimes.transition_slope([1.0, 2.0], [1.0, 1.0], [1.0, 2.0]), "times"),
        (lambda: regimes.grid_lines(2, 2, "diagonal"), "kind"),
        (lambda: regimes.order_share([1.0], [[0]], "up"), "lines"),
        (lambda: regimes.line_spread([[1.0, 2.0]], [[0]]), "values"),
        (lambda: regimes.line_spread([1.0, 2.0], [[0, 1], []]), "lines"),
        (lambda: regimes.measure_growth([1.0, 2.0], [[1.0], [1.0]], [[1.0], [1.0]], [1.0], [1.0], 10, 2), "log_chi"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        call()


def test_scan_shortfall_is_empty_only_for_a_visible_scan() -> None:
    assert regimes.scan_shortfall(1.0, 0.3) == ""
    assert "largest ln chi_l0 0.99" in regimes.scan_shortfall(0.99, 0.5)
    assert "entropy 0.29 nats" in regimes.scan_shortfall(2.0, 0.29)
