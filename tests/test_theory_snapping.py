"""scansnap.theory.snapping: entropy along Theorem 3's growth law, Theorem 4 in parametric form,
and the learning-rate optimum at a fixed horizon (Chapter 7)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import names
from scipy.integrate import solve_ivp
from scipy.optimize import minimize_scalar

from scansnap.theory import decoder
from scansnap.theory import snapping as sn

RAMP = np.linspace(0.1, 1.0, 10)


def ramp_entropy() -> float:
    p = RAMP / RAMP.sum()
    return float(-(p * np.log(p)).sum())


def test_growth_law_starts_at_the_initial_attention() -> None:
    rng = np.random.default_rng(0)
    z0 = rng.normal(0, 0.5, 10)
    p = sn.growth_law_attention(RAMP, 1.0, z0)
    want = RAMP * np.exp(z0)
    np.testing.assert_allclose(p, want / want.sum(), rtol=1e-15, atol=1e-15)
    assert abs(sn.entropy(sn.growth_law_attention(RAMP, 1.0)) - ramp_entropy()) < 1e-14


def test_growth_law_solves_the_attention_ode() -> None:
    """Integrate z-dot_l = A(t) f~_l^2 (f~ = c / ||c||, c_l = P_l exp(z_l)) with a time-varying rate and
    compare the distinct attention with the closed form at the dominant token's growth factor."""
    rng = np.random.default_rng(1)
    P, z0 = rng.uniform(0.1, 1.0, 6), rng.normal(0, 0.3, 6)
    P = P / P.sum()

    def rhs(t: float, z: np.ndarray) -> np.ndarray:
        c = P * np.exp(z)
        return (1.0 + 0.5 * np.sin(3 * t)) * c**2 / (c @ c)

    sol = solve_ivp(rhs, (0, 40.0), z0, rtol=1e-12, atol=1e-12, dense_output=True)
    top = int(np.argmax(P * np.exp(z0)))
    errs = []
    for t in np.linspace(0, 40.0, 30):
        z = sol.sol(t)
        chi = np.exp(2 * (z[top] - z0[top]))
        c = P * np.exp(z)
        errs.append(np.abs(sn.growth_law_attention(P, chi, z0) - c / c.sum()).max())
    assert max(errs) < 1e-8
    assert np.exp(2 * (sol.sol(40.0)[top] - z0[top])) > 3  # the run went far enough to matter


def test_entropy_falls_along_the_growth_law_and_matches_its_tail() -> None:
    rng = np.random.default_rng(2)
    chi = np.geomspace(1, 1e30, 500)
    for _ in range(20):
        w, z0 = rng.uniform(0.05, 1, 8), rng.normal(0, 1, 8)
        H = sn.entropy(sn.growth_law_attention(w, chi, z0))
        assert (np.diff(H) < 1e-12).all() and H[-1] < 1e-6
    for c in (1e32, 1e64):
        ratio = sn.entropy(sn.growth_law_attention(RAMP, c)) / sn.entropy_tail(RAMP, c)
        assert abs(ratio - 1) < 0.03


def test_entropy() -> None:
    assert abs(sn.entropy(np.full(10, 0.1)) - np.log(10)) < 1e-14
    assert sn.entropy(np.array([0.0, 1.0, 0.0])) == 0.0
    assert sn.entropy(np.full((3, 4), 0.25)).shape == (3,)


def h_of_t(t: object, M: int, K: int, eta_Y: float) -> np.ndarray:
    """The decoder state at step ``t`` (each of ``K`` classes seen ``t / K`` times): Lemma 6."""
    return decoder.lemma6_h(np.asarray(t, dtype=float) / K, M, eta_Y)


def test_lemma6_time_inverts_lemma6_h() -> None:
    t = np.array([0.0, 1e-3, 1.0, 37.0, 1e3, 1e8])
    for M, K, eta in ((33, 2, 0.5), (240, 20, 3.0)):
        h = h_of_t(t, M, K, eta)
        assert (np.diff(h) > 0).all()
        np.testing.assert_allclose(sn.lemma6_time(h, M, K, eta), t, rtol=1e-12, atol=1e-12)


def test_eqn14_bound_integrates_eqn13() -> None:
    """dB/dt = b eta_Z gamma / (1 + 4 a eta_Z Gamma) with gamma = M^2 h / (exp(M h) + M - 1) and
    Gamma = K M^2 h^2 / (2 eta_Y), by central differences in t."""
    M, K, eY, eZ, a, b = 79, 6, 1.5, 0.7, 0.3, 0.2
    for t in (0.5, 20.0, 400.0):
        dt = 1e-4 * t
        B = [sn.eqn14_bound(h_of_t(s, M, K, eY), M, K, eY, eZ, a, b) for s in (t - dt, t + dt)]
        h = h_of_t(t, M, K, eY)
        gamma = M**2 * h / (np.exp(M * h) + M - 1)
        Gamma = K * M**2 * h**2 / (2 * eY)
        want = b * eZ * gamma / (1 + 4 * a * eZ * Gamma)
        assert abs((B[1] - B[0]) / (2 * dt) / want - 1) < 1e-6


def test_horizon_optimum_is_the_argmax_and_ignores_eta_Z() -> None:
    for M, K, t in ((33, 2, 100.0), (240, 20, 100.0), (125, 10, 1000.0)):
        star = sn.horizon_optimum(M, K, t)
        for eZ, a, b in ((0.5, 1.0, 1.0), (3.0, 0.2, 5.0)):
            def negB(log_eY: float, M=M, K=K, t=t, eZ=eZ, a=a, b=b) -> float:
                eY = float(np.exp(log_eY))
                return -float(sn.eqn14_bound(h_of_t(t, M, K, eY), M, K, eY, eZ, a, b))

            res = minimize_scalar(negB, bounds=(np.log(star) - 3, np.log(star) + 3), method="bounded",
                                  options={"xatol": 1e-10})
            assert abs(np.exp(res.x) / star - 1) < 1e-4


def test_optimum_root_is_the_sign_change_of_phi() -> None:
    for M in (2, 33, 240, 10**6):
        u = sn.optimum_root(M)
        phi = lambda v, M=M: np.exp(v) * (2 - v) + (M - 1) * v - 2  # noqa: E731
        assert abs(phi(u)) < 1e-9 * M
        assert phi(0.5 * u) > 0 and phi(1.5 * u) < 0


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: sn.growth_law_attention(RAMP, 0.5), "chi"),
        (lambda: sn.growth_law_attention(-RAMP, 2.0), "weights"),
        (lambda: sn.growth_law_attention(RAMP, 2.0, np.zeros(3)), "z0"),
        (lambda: sn.entropy_tail(np.ones(4), 10.0), "weights"),
        (lambda: sn.entropy_tail(RAMP, 1.0), "chi"),
        (lambda: sn.entropy(np.array([-0.1, 1.1])), "p"),
        (lambda: sn.lemma6_time(-1.0, 10, 2, 1.0), "h"),
        (lambda: sn.lemma6_time(1.0, 1, 2, 1.0), "M"),
        (lambda: sn.lemma6_time(1.0, 10, 2, 0.0), "eta_Y"),
        (lambda: sn.eqn14_bound(1.0, 10, 2, 1.0, -1.0), "eta_Z"),
        (lambda: sn.horizon_optimum(10, 0, 100.0), "K"),
        (lambda: sn.horizon_optimum(10, 2, 0.0), "t"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        call()
