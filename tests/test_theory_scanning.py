"""scansnap.theory.scanning: Theorem 3 (Eqn 11-12), the Eqn-10 integration, the scanning order."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import names

from scansnap.data import SequenceClasses, sequence_classes, syn_small
from scansnap.theory import scanning as sc
from scansnap.theory.decoder import gamma as theorem1_gamma
from scansnap.theory.decoder import gram, xi
from scansnap.theory.fates import eqn10_zdot, unit_scores


@pytest.fixture(scope="module")
def small() -> SequenceClasses:
    """Syn-Small (module scope, overriding conftest's, so that one Eqn-10 run serves several tests)."""
    return syn_small()


@pytest.fixture(scope="module")
def shared_query() -> SequenceClasses:
    """4 classes, two per query: 2 common tokens, 3 distinct tokens each."""
    return sequence_classes(num_query=2, next_per_query=2, num_common=2, num_distinct=3,
                            distinct_min=0.2, distinct_max=1.0)


@pytest.fixture(scope="module")
def small_run(small: SequenceClasses) -> sc.Eqn10Run:
    t = np.concatenate([[0.0], np.geomspace(0.5, 300.0, 25)])
    return sc.integrate_eqn10(small, 1.0, 1.0, t)


def _eqn11_error(ft: np.ndarray, z: np.ndarray, tokens: np.ndarray) -> float:
    err = 0.0
    for l in tokens:
        for lp in tokens[tokens != l]:
            r = sc.relative_gain(ft, int(l), int(lp))
            pred = r[0] * sc.growth_factor(z[:, l], z[0, l])
            err = max(err, float(np.max(np.abs(r - pred) / np.abs(pred))))
    return err


def test_relative_gain_and_growth_factor_values() -> None:
    ft = np.array([[0.6, 0.8, 0.0], [0.8, 0.6, 0.0]])
    np.testing.assert_allclose(sc.relative_gain(ft, 1, 0), [0.64 / 0.36 - 1, 0.36 / 0.64 - 1])
    assert sc.relative_gain(ft[0], 0, 0) == 0.0
    np.testing.assert_allclose(sc.growth_factor(np.array([0.0, 0.5]), 0.0), [1.0, np.e])
    lower, upper = sc.dominant_token_bounds(0.5, np.array([0.0, 1.0, 2.0]))
    np.testing.assert_allclose(lower, np.exp([0.0, 0.5, 1.0]))
    np.testing.assert_allclose(upper, np.exp([0.0, 2.0, 4.0]))
    assert (lower <= upper).all()


def test_eqn11_holds_on_eqn10_syn_small(small: SequenceClasses, small_run: sc.Eqn10Run) -> None:
    """The Eqn-10 integration satisfies Eqn 11 to integrator accuracy, and Eqn 12's bounds."""
    for n in range(small.K):
        D = small.distinct(n).numpy()
        assert _eqn11_error(small_run.ft[:, n], small_run.logits[:, n], D) < 1e-7
        l0 = D[-1]
        chi = sc.growth_factor(small_run.logits[:, n, l0], 0.0)
        lower, upper = sc.dominant_token_bounds(small_run.ft[0, n, l0], small_run.B[:, n])
        assert (chi >= lower * (1 - 1e-9)).all() and (chi <= upper * (1 + 1e-9)).all()
        assert chi[-1] > 1.5, "the attention must have moved"
    assert (np.diff(small_run.B, axis=0) >= 0).all() and (small_run.rate >= 0).all()
    # Eqn 10 keeps each query row's sum (Lemma 1's invariant): zero from Z(0) = 0
    assert np.abs(small_run.logits.sum(-1)).max() < 1e-8


def test_integrate_eqn10_matches_eqn10_zdot_and_shared_queries(shared_query: SequenceClasses) -> None:
    """A random start, two classes sharing a query: rows stay equal; the first step follows eqn10_zdot."""
    g = torch.Generator().manual_seed(3)
    Z0 = 0.3 * torch.randn(shared_query.M, shared_query.M, generator=g, dtype=torch.float64)
    t = np.array([0.0, 2.0, 2.0 + 1e-4, 50.0])
    run = sc.integrate_eqn10(shared_query, 2.0, 0.5, t, Z0)
    np.testing.assert_allclose(run.logits[:, 0], run.logits[:, 1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run.logits[:, 2], run.logits[:, 3], rtol=1e-12, atol=1e-12)
    # finite difference between t = 2 and 2 + 1e-4 against the velocity of Eqn 10 (gamma at t = 2)
    Z = Z0.clone()
    Z[shared_query.query] = torch.as_tensor(run.logits[1])  # every query row at t = 2
    gamma = float(theorem1_gamma(2.0, shared_query.M, shared_query.K, 2.0))
    v = eqn10_zdot(shared_query, Z, gamma, 0.5)[shared_query.query[0]].numpy()
    fd = (run.logits[2, 0] - run.logits[1, 0]) / 1e-4
    assert np.abs(fd - v).max() < 1e-3 * np.abs(v).max() and np.abs(v).max() > 1e-3
    for n in range(shared_query.K):
        D = shared_query.distinct(n).numpy()
        assert _eqn11_error(run.ft[:, n], run.logits[:, n], D) < 1e-7


def test_distinct_flow_closed_form_and_winner_take_all(small: SequenceClasses) -> None:
    """Constant rate: the integrated form exp(-2 z) linear in I(t) across tokens (Eqn 11), and l0 takes all."""
    p = small.probs[0].numpy()
    mask = small.distinct_mask()[0].numpy()
    t = np.concatenate([[0.0], np.geomspace(1.0, 3000.0, 30)])
    z, ft = sc.distinct_flow(p, mask, 0.05, t)
    D = np.flatnonzero(mask)
    assert _eqn11_error(ft, z, D) < 1e-7
    assert (z[:, ~mask] == 0).all()  # other logits frozen
    # 1/q_l - 1/q_l' is constant in time (q_l = P_l^2 exp(2 z_l)): the invariant behind Eqn 11
    inv = 1 / (p[D[0]] ** 2 * np.exp(2 * z[:, D[0]])) - 1 / (p[D[-1]] ** 2 * np.exp(2 * z[:, D[-1]]))
    assert np.abs(inv / inv[0] - 1).max() < 1e-7
    share = ft[-1, D] / ft[-1, D].sum()
    assert share[-1] > 0.99 and np.argmax(ft[-1]) == D[-1]


def test_dominant_token_is_the_prior() -> None:
    p = np.array([0.1, 0.2, 0.3, 0.4])
    assert sc.dominant_token(p, np.zeros(4), np.array([0, 1, 2, 3])) == 3
    assert sc.dominant_token(p, np.array([0.0, 0.0, 0.5, 0.0]), np.array([0, 1, 2, 3])) == 2  # 0.3 e^.5 > 0.4
    assert sc.dominant_token(p, np.zeros(4), np.array([0, 1])) == 1


def test_integrate_eqn10_rows_sum_preserved_with_eqn10_zdot(small: SequenceClasses) -> None:
    """The velocity of Eqn 10 sums to zero over every query row (used by eqn11_deviation's gauge)."""
    g = torch.Generator().manual_seed(1)
    Z = torch.randn(small.M, small.M, generator=g, dtype=torch.float64)
    v = eqn10_zdot(small, Z, 0.7, 1.3)
    assert v.sum(-1).abs().max() < 1e-14


def test_growth_bound_is_the_integral_of_the_rate_along_the_eqn10_run(small: SequenceClasses,
                                                                      small_run: sc.Eqn10Run) -> None:
    """B_n = eta_Z int gamma pi_n xi_n: the trapezoid rule on the run's own gamma and xi approaches the B_n
    integrated inside the ODE, and the rate is Theorem 2(a)'s (eta_Z gamma pi_n xi_n)."""
    t = np.concatenate([[0.0], np.geomspace(0.5, 300.0, 400)])
    run = sc.integrate_eqn10(small, 1.0, 1.0, t)
    gam = theorem1_gamma(t, small.M, small.K, 1.0)
    xi_n = xi(gram(torch.as_tensor(run.ft).mT), small.M).numpy()  # (S, K), batched
    np.testing.assert_allclose(run.rate, sc.growth_rate(gam, xi_n, eta_Z=1.0, pi=0.5), rtol=1e-12)
    B = sc.growth_bound(t, gam, xi_n, eta_Z=1.0, pi=np.array([0.5, 0.5]))
    assert B.shape == (len(t), 2) and B[0].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(B[-1], run.B[-1], rtol=2e-3)
    # pi enters linearly, eta_Z too; one class alone gives a 1-D B
    np.testing.assert_allclose(sc.growth_bound(t, gam, xi_n[:, 0], eta_Z=2.0, pi=1.0), 4 * B[:, 0], rtol=1e-12)


def test_growth_bound_exact_on_a_linear_rate() -> None:
    """A rate linear in t is integrated exactly by the trapezoid rule: B = eta_Z pi xi t^2 / 2 for gamma = t."""
    t = np.array([0.0, 0.5, 2.0, 3.0])
    B = sc.growth_bound(t, t, np.full((4, 2), 0.3), eta_Z=2.0, pi=np.array([0.25, 0.75]))
    np.testing.assert_allclose(B, 2.0 * np.outer(t**2 / 2, [0.25 * 0.3, 0.75 * 0.3]), rtol=1e-14)


def test_eqn10_run_ft_is_unit_scores(small: SequenceClasses, small_run: sc.Eqn10Run) -> None:
    Z = torch.zeros(small.M, small.M, dtype=torch.float64)
    Z[small.query] = torch.as_tensor(small_run.logits[-1])
    np.testing.assert_allclose(small_run.ft[-1], unit_scores(small, Z).numpy(), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: sc.relative_gain(np.array([0.5, 0.0]), 0, 1), "l_prime"),
        (lambda: sc.relative_gain(np.array([0.5, 0.5]), 2, 1), "l"),
        (lambda: sc.growth_factor(np.array([np.nan]), 0.0), "z"),
        (lambda: sc.dominant_token_bounds(1.5, np.array([1.0])), "ft0"),
        (lambda: sc.dominant_token_bounds(0.5, np.array([-1.0])), "B"),
        (lambda: sc.dominant_token(np.array([0.5, 0.5]), np.zeros(3), np.array([0])), "z0"),
        (lambda: sc.dominant_token(np.array([0.5, 0.5]), np.zeros(2), np.array([2])), "tokens"),
        (lambda: sc.distinct_flow(np.array([0.5, 0.5]), np.array([True, False]), 0.0, np.array([0.0, 1.0])), "rate"),
        (lambda: sc.distinct_flow(np.array([0.5, 0.5]), np.array([1, 0]), 1.0, np.array([0.0, 1.0])), "distinct"),
        (lambda: sc.distinct_flow(np.array([0.5, 0.5]), np.array([True, False]), 1.0, np.array([1.0, 2.0])), "t"),
        (lambda: sc.growth_rate(np.ones(2), np.ones((2, 2)), eta_Z=0.0, pi=0.5), "eta_Z"),
        (lambda: sc.growth_rate(np.ones(2), np.ones((2, 2)), eta_Z=1.0, pi=-0.5), "pi"),
        (lambda: sc.growth_bound(np.array([0.0, 1.0]), np.ones(3), np.ones((3, 2)), eta_Z=1.0, pi=0.5), "xi_n"),
        (lambda: sc.growth_bound(np.array([1.0, 2.0]), np.ones(2), np.ones((2, 2)), eta_Z=1.0, pi=0.5), "t"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        call()


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [(dict(eta_Y=0.0), "eta_Y"), (dict(eta_Z=-1.0), "eta_Z"), (dict(t=np.array([1.0, 2.0])), "t"),
     (dict(t=np.array([0.0, 2.0, 1.0])), "t"), (dict(Z0=np.zeros((3, 3))), "Z0"), (dict(rtol=0.0), "rtol")],
)
def test_integrate_eqn10_rejects(small: SequenceClasses, kwargs: dict, param: str) -> None:
    args = dict(eta_Y=1.0, eta_Z=1.0, t=np.array([0.0, 1.0])) | kwargs
    with pytest.raises(ValueError, match=names(param)):
        sc.integrate_eqn10(small, **args)
