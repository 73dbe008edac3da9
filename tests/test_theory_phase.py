"""scansnap.theory.phase: Theorem 4 (Eqn 13-14), its constants derived from Eqn 10, the exact reduced system."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import names

from scansnap import data, theory
from scansnap.theory import decoder
from scansnap.theory import phase as ph

FAM = ph.theorem4_family(4, 6, 0.1)


def test_theorem4_family_has_the_requested_overlap() -> None:
    k = ph.eqn13_constants(FAM)
    assert abs(k.S0 - 0.1) < 1e-12 and k.K == 4 and k.M == FAM.M
    F, _ = decoder.unit_inputs(FAM)
    E = decoder.gram(F)
    np.testing.assert_allclose(E[~np.eye(4, dtype=bool)], 0.1, rtol=1e-12, atol=1e-12)


def test_constants_match_eqn10_at_zero_and_b_over_a_is_one_over_K_one_minus_S0() -> None:
    k = ph.eqn13_constants(FAM)
    assert abs(k.b / k.a - 1 / (4 * (1 - k.S0))) < 1e-12
    Z = torch.zeros(FAM.M, FAM.M, dtype=torch.float64)
    zdot = theory.eqn10_zdot(FAM, Z, 1.0, 1.0)[int(FAM.query[0])]
    ft = theory.unit_scores(FAM, Z)[0]
    d = FAM.distinct(0)
    assert abs(-float(zdot[int(FAM.common()[0])]) / k.a - 1) < 1e-12  # z-dot_c = -a eta_Z gamma at z = 0
    np.testing.assert_allclose((zdot[d] / ft[d] ** 2).numpy(), k.b, rtol=1e-12)  # A_n = b eta_Z gamma
    a, b = ph.leading_constants(4, k.S0)
    assert b / a == pytest.approx(0.25) and a == pytest.approx(3 * 0.01)


def test_symmetric_rates_equal_the_population_gradient_with_theorem1s_decoder() -> None:
    rng = np.random.default_rng(0)
    q, c = int(FAM.query[0]), int(FAM.common()[0])
    for _ in range(3):
        Z = torch.zeros(FAM.M, FAM.M, dtype=torch.float64)
        Z[q, c] = -rng.uniform(0, 1)
        zd = torch.from_numpy(rng.normal(0, 0.3, 6))
        for n in range(FAM.K):
            Z[q, FAM.distinct(n)] = zd
        h = rng.uniform(0.01, 0.2)
        Y = theory.theorem1_decoder(FAM, Z, h)
        zdot = theory.population_zdot(FAM, Y, Z, 1.0)[q]
        ft = theory.unit_scores(FAM, Z)[0]
        fall, rate = ph.symmetric_rates(float(ft[c]) ** 2, FAM.K, FAM.M)
        g = float(decoder.gamma_of_h(h, FAM.M))
        assert abs(-float(zdot[c]) / (g * fall) - 1) < 1e-10
        d = FAM.distinct(0)
        np.testing.assert_allclose((zdot[d] / ft[d] ** 2).numpy() / (g * rate), 1.0, rtol=1e-10)


def test_integrate_symmetric_matches_the_full_eqn10_integrator() -> None:
    t = np.array([0.0, 5.0, 40.0, 300.0])
    run = ph.integrate_symmetric(FAM, 1.0, 0.5, t)
    full = theory.integrate_eqn10(FAM, 1.0, 0.5, t)
    q, c = int(FAM.query[0]), int(FAM.common()[0])
    np.testing.assert_allclose(run.z_common, full.logits[:, 0, c], rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(run.z_distinct[:, -1], full.logits[:, 0, int(FAM.distinct(0)[-1])], rtol=1e-6,
                               atol=1e-10)
    np.testing.assert_allclose(run.B, full.B[:, 0], rtol=1e-6, atol=1e-12)
    assert q == int(FAM.query[-1])
    # B_n of the exact system is Eqn 12's growth_bound of its own rate (one definition of B_n)
    dense = np.linspace(0.0, 300.0, 3001)
    fine = ph.integrate_symmetric(FAM, 1.0, 0.5, dense)
    _, rate = ph.symmetric_rates(fine.S, FAM.K, FAM.M)
    B = theory.growth_bound(dense, decoder.gamma(dense, FAM.M, FAM.K, 1.0), rate * FAM.K, eta_Z=0.5, pi=1 / FAM.K)
    assert abs(B[-1] / fine.B[-1] - 1) < 1e-5


def test_growth_ceiling_bounds_B_by_the_common_tokens_fall_and_is_reached_when_distinct_logits_stay() -> None:
    """B_n <= growth_ceiling(z_c) along the exact flow (the distinct logits only grow); the path integral of
    -dz_c / (K (1 - S)) along the run is B_n itself (the rate ratio of symmetric_rates), and the ceiling is that
    integral with S at its largest value given z_c, so at a tiny step it is reached to first order."""
    for S0 in (0.1, 0.3, 0.9):
        fam = ph.theorem4_family(2, 3, S0)
        t = np.linspace(0.0, 4000.0, 40001)
        run = ph.integrate_symmetric(fam, 1.0, 1.0, t)
        ceiling = ph.growth_ceiling(run.z_common, S0, 2)
        assert (ceiling * (1 + 1e-9) + 1e-12 >= run.B).all()
        path = np.concatenate([[0.0], np.cumsum(-np.diff(run.z_common) / (2 * (1 - 0.5 * (run.S[1:] + run.S[:-1]))))])
        np.testing.assert_allclose(path[1:], run.B[1:], rtol=1e-3)  # trapezoid on a 0.1-step grid
        gap = 1 - run.B[1:] / ceiling[1:]
        assert gap[0] < 1e-3 and gap[-1] > 10 * gap[0]  # reached at the start; opens as distinct logits move
    with pytest.raises(ValueError, match=names("S0")):
        ph.growth_ceiling(-1.0, 1.0, 2)


def test_eqn14_closed_form_matches_the_integrated_eqn13_over_nine_decades() -> None:
    t = np.geomspace(1e-3, 1e6, 200)
    z, B = ph.integrate_eqn13(t, 992, 10, 1.0, 0.5, 0.09, 0.01)
    np.testing.assert_allclose(B, ph.eqn14_at(t, 992, 10, 1.0, 0.5, 0.09, 0.01), rtol=1e-8)
    np.testing.assert_allclose(z, ph.eqn13_logit(t, 992, 10, 1.0, 0.5, 0.09), rtol=1e-8)
    d = 1e-5 * t  # Gamma-dot = gamma, by central differences
    dG = (ph.gamma_integral(t + d, 992, 10, 1.0) - ph.gamma_integral(t - d, 992, 10, 1.0)) / (2 * d)
    np.testing.assert_allclose(dG, decoder.gamma(t, 992, 10, 1.0), rtol=1e-6)


def test_snap_time_limit_is_inverse_in_eta_Y_and_matches_the_horizon_optimum() -> None:
    for M, K in ((46, 4), (992, 10)):
        base = ph.snap_time_limit(M, K, 1.0)
        for eY in (0.25, 3.0):
            assert ph.snap_time_limit(M, K, eY) == pytest.approx(base / eY, rel=1e-12)
            assert theory.horizon_optimum(M, K, base / eY) == pytest.approx(eY, rel=1e-9)
        assert 1.0 < base / decoder.transition_time(M, K, 1.0) < 1.6  # t* close to t0 = K ln M / eta_Y


def test_cross_coefficient_is_theorem1s_for_theorem1s_decoder() -> None:
    Z = torch.zeros(FAM.M, FAM.M, dtype=torch.float64)
    h = float(decoder.lemma6_h(10.0 / FAM.K, FAM.M, 1.0))
    measured, theorem = ph.cross_coefficient(FAM, theory.theorem1_decoder(FAM, Z, h), Z, 10.0, 1.0)
    assert abs(measured / theorem - 1) < 1e-9


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: ph.theorem4_family(4, 6, 1.5), "S0"),
        (lambda: ph.theorem4_family(1, 6, 0.1), "K"),
        (lambda: ph.eqn13_constants(data.syn_small()), "classes"),
        (lambda: ph.eqn13_constants(FAM, M=3), "M"),
        (lambda: ph.integrate_symmetric(FAM, 1.0, 0.5, [1.0, 2.0]), "t"),
        (lambda: ph.integrate_eqn13([0.0, 1.0], 10, 2, 1.0, 1.0, 1.0, 1.0), "t"),
        (lambda: ph.eqn14_at([1.0], 10, 2, 1.0, 0.5, -1.0, 1.0), "a"),
        (lambda: ph.gamma_integral([-1.0], 10, 2, 1.0), "t"),
        (lambda: ph.leading_constants(4, 0.0), "S0"),
        (lambda: ph.cross_coefficient(FAM, torch.zeros(FAM.M, FAM.M), torch.zeros(FAM.M, FAM.M), 0.0, 1.0), "t"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        call()


def test_b_over_a_is_not_one_for_a_small_common_token() -> None:
    for K in (2, 4, 10):
        for S0 in (0.01, 0.1, 0.3):
            k = ph.eqn13_constants(ph.theorem4_family(K, 5, S0))
            assert k.b / k.a < 1 / (K * (1 - 0.3)) + 1e-12 and not math.isclose(k.b, k.a)
