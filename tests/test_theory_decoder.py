"""scansnap.theory.decoder: Lemma 3, Lemmas 5-7, Theorem 1, Remark 1, Lemma 10 in closed form (Chapter 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import names

from scansnap import data
from scansnap.theory import decoder as dec


def weak_inputs(K: int = 3, weight: float = 0.5) -> tuple[np.ndarray, np.ndarray, int]:
    """Support rows of the inputs of a weakly overlapping family, its targets and its M."""
    classes = data.sequence_classes(num_query=K, next_per_query=1, num_common=1, num_distinct=4, common_weight=weight)
    F, targets = dec.unit_inputs(classes)
    return F[np.abs(F).sum(1) > 0], targets, classes.M


def random_inputs(seed: int, K: int = 4, L: int = 12) -> np.ndarray:
    rng = np.random.default_rng(seed)
    P = rng.uniform(0, 1, (L, K)) * (rng.uniform(0, 1, (L, K)) < 0.5)
    P[rng.integers(0, L, K), np.arange(K)] += 1.0  # no empty class
    return P / np.linalg.norm(P, axis=0)


def test_unit_inputs_and_gram() -> None:
    F, _, _ = weak_inputs()
    assert np.allclose(np.linalg.norm(F, axis=0), 1)
    E = dec.gram(F)
    assert np.allclose(np.diag(E), 0) and np.allclose(E, E.T) and (E >= 0).all()
    # one shared common token of weight w against 4 distinct weights 0.1..1: E = w^2 / (w^2 + sum of squares)
    squares = float((np.linspace(0.1, 1, 4) ** 2).sum())
    assert E[0, 1] == pytest.approx(0.25 / (0.25 + squares), rel=1e-12)


@pytest.mark.parametrize("rho", [0.0, 0.3, 0.9])
def test_equal_overlap_classes_have_equal_overlaps(rho: float) -> None:
    F, _ = dec.unit_inputs(dec.equal_overlap_classes(4, rho))
    E = dec.gram(F)
    off = E[~np.eye(4, dtype=bool)]
    assert np.allclose(off, rho, atol=1e-12)


def test_classes_from_inputs_round_trip() -> None:
    F = random_inputs(0)
    classes = dec.classes_from_inputs(F)
    G, targets = dec.unit_inputs(classes)
    assert np.abs(G[: F.shape[0]] - F).max() < 1e-14 and np.abs(G[F.shape[0]:]).max() == 0
    assert len(set(targets.tolist())) == F.shape[1]


@pytest.mark.parametrize("seed", range(5))
def test_lemma3_reparameterization(seed: int) -> None:
    """W = F-bar^T Y: the first K rows are the class logits; the modified update moves row k only, and
    the true update moves row j by E_jk as much."""
    F = random_inputs(seed)
    K, M = F.shape[1], 7
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(F.shape[0], M))
    Fbar = dec.complete_basis(F)
    assert np.abs(Fbar[:, K:].T @ F).max() < 1e-12
    assert np.abs(Fbar[:, K:].T @ Fbar[:, K:] - np.eye(Fbar.shape[1] - K)).max() < 1e-12
    W = dec.reparameterize(Y, F)
    assert np.abs(W[:K] - F.T @ Y).max() < 1e-12
    targets = rng.choice(M, K, replace=False)
    k = 1
    r = np.eye(M)[targets[k]] - np.exp(W[k]) / np.exp(W[k]).sum()
    modified = F @ np.linalg.solve(F.T @ F, np.eye(K)[k])[:, None] @ r[None]
    dW = dec.reparameterize(modified, F)
    expect = np.zeros_like(dW)
    expect[k] = r
    assert np.abs(dW - expect).max() < 1e-12
    true = F[:, [k]] @ r[None]
    dW_true = dec.reparameterize(true, F)
    E = dec.gram(F)
    assert np.abs(dW_true[:K] - (np.eye(K) + E)[:, [k]] @ r[None]).max() < 1e-12
    assert np.abs(dW_true[K:]).max() < 1e-12


def test_complete_basis_rejects_dependent_columns() -> None:
    F = np.array([[1.0, 1.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match=names("F")):
        dec.complete_basis(F)


@pytest.mark.parametrize(("M", "eta"), [(2, 0.5), (50, 0.7), (1000, 1.0), (10, 3.0)])
def test_lemma6_closed_form_solves_the_ode(M: int, eta: float) -> None:
    s = np.concatenate([[0.0], np.geomspace(1e-3, 1e5, 200)])
    h = dec.lemma6_h(s, M, eta)
    residual = np.expm1(M * h) / M + (M - 1) * h - eta * s
    assert np.abs(residual / np.maximum(eta * s, 1)).max() < 1e-13
    assert np.abs(h - dec.lemma6_h_ivp(s, M, eta)).max() < 1e-9
    assert (np.diff(h) > 0).all() and h[0] == 0


@pytest.mark.parametrize(("M", "eta"), [(50, 0.7), (200, 0.1), (10, 3.0)])
def test_lemma7_discrete_stays_within_eta_over_M_above(M: int, eta: float) -> None:
    """0 <= h_s - h(s) <= eta/M - eta/(exp(M h(s)) + M - 1) (the chapter's telescoping bound), ratio -> 1."""
    h_s = dec.lemma5_h(5000, M, eta)
    h = dec.lemma6_h(np.arange(5001.0), M, eta)
    gap = h_s - h
    assert gap.min() >= -1e-12
    assert (gap <= eta / M - eta / (np.exp(M * h) + M - 1) + 1e-12).all()
    assert h_s[-1] / h[-1] - 1 < 1e-3


def test_lemma5_recursion_by_hand() -> None:
    h = dec.lemma5_h(2, 3, 0.6)
    assert h[1] == pytest.approx(0.6 / 3)
    assert h[2] == pytest.approx(0.2 + 0.6 / (math.exp(0.6) + 2))


def test_gamma_regimes_and_peak() -> None:
    M, K, eta = 1000, 10, 1.0
    t0 = dec.transition_time(M, K, eta)
    assert t0 == pytest.approx(K * math.log(M) / eta)
    early = dec.gamma(0.01 * t0, M, K, eta) / dec.gamma_early(0.01 * t0, K, eta)
    assert abs(early - 1) < 1e-3
    late = [float(dec.gamma(x * t0, M, K, eta) / dec.gamma_late(x * t0, M, K, eta)) for x in (10, 100, 1e4)]
    assert late[0] > late[1] > late[2] > 1 and late[2] - 1 < 1e-3
    u, gmax = dec.gamma_peak(M)
    assert math.exp(u) * (u - 1) == pytest.approx(M - 1, rel=1e-12)
    h = np.linspace(0, 20 / M, 20001)
    assert dec.gamma_of_h(h, M).max() == pytest.approx(gmax, rel=1e-6)
    assert np.isfinite(dec.gamma_of_h(1e6, M)) and dec.gamma_of_h(1e6, M) == 0


def test_theorem1_coefficients_without_overlap() -> None:
    iota, beta = dec.theorem1_coefficients(np.zeros((3, 3)), 20)
    assert np.allclose(iota, 1 - 1 / 20)
    assert np.allclose(beta[~np.eye(3, dtype=bool)], 1 / 20) and np.allclose(np.diag(beta), 0)
    assert np.allclose(dec.xi(np.zeros((3, 3)), 20), 0)


@pytest.mark.parametrize("seed", range(5))
def test_xi_closed_form_equals_its_definition(seed: int) -> None:
    E = dec.gram(random_inputs(seed))
    M = 30
    _, beta = dec.theorem1_coefficients(E, M)
    assert np.abs((beta * E).sum(1) - dec.xi(E, M)).max() < 1e-14


def test_hoeffding_count_radius() -> None:
    assert dec.hoeffding_count_radius(100, 5, 0.1) == pytest.approx(math.sqrt(50 * math.log(100)))
    with pytest.raises(ValueError, match=names("delta")):
        dec.hoeffding_count_radius(100, 5, 1.5)


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: dec.lemma5_h(10, 1, 0.1), "M"),
        (lambda: dec.lemma5_h(10, 5, -0.1), "eta"),
        (lambda: dec.lemma6_h(-1.0, 5, 0.1), "s"),
        (lambda: dec.gram(np.ones((3, 2))), "F"),
        (lambda: dec.theorem1_coefficients(np.array([[0.0, 2.0], [2.0, 0.0]]), 5), "E"),
        (lambda: dec.equal_overlap_classes(3, 1.0), "rho"),
        (lambda: dec.gamma_early(1.0, 0, 0.1), "K"),
        (lambda: dec.gamma_early(1.0, 2, 0.0), "eta"),
        (lambda: dec.gamma_late(1.0, 1, 2, 0.1), "M"),
        (lambda: dec.gamma_late(1.0, 5, 2, -0.1), "eta"),
        (lambda: dec.transition_time(5, 0, 0.1), "K"),
        (lambda: dec.transition_time(5, 2, float("nan")), "eta"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        call()
