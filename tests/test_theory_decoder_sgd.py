"""scansnap.theory.decoder_sgd: the decoder's dynamics simulated (SGD, ODE) and measured against Theorem 1."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import names

from scansnap import data
from scansnap.model import YZModel
from scansnap.theory import decoder as dec
from scansnap.theory import decoder_sgd as sim


def weak_inputs(K: int = 3, weight: float = 0.5) -> tuple[np.ndarray, np.ndarray, int]:
    """Support rows of the inputs of a weakly overlapping family, its targets and its M."""
    classes = data.sequence_classes(num_query=K, next_per_query=1, num_common=1, num_distinct=4, common_weight=weight)
    F, targets = dec.unit_inputs(classes)
    return F[sim.support_rows(F)], targets, classes.M


def test_support_rows() -> None:
    F = np.array([[0.6, 0.0], [0.0, 0.0], [0.8, 1.0]])
    assert sim.support_rows(F).tolist() == [0, 2]


def test_modified_sgd_is_exactly_theorem1() -> None:
    """Under Eqn 26 from Y = 0, each class row is h_t (M e_n - 1) with Lemma 5's h (step eta/K), and the
    back-propagated gradient is gamma(h) F (I + E)^{-1} (e_k - 1/M)."""
    F, targets, _ = weak_inputs()
    K, M, eta, steps = F.shape[1], 40, 1.5, 300
    Ys = sim.sgd_decoder(F, targets, M, eta, steps, [steps], modified=True)
    h = dec.lemma5_h(steps, M, eta / K)[-1]
    logits = F.T @ Ys[0]
    assert np.abs(logits - h * (M * np.eye(M)[targets] - 1)).max() < 1e-12
    m = sim.measure_gradients(Ys, F, targets, M)
    assert m.residual.max() < 1e-12 and m.outside.max() < 1e-12
    assert np.allclose(m.gamma, dec.gamma_of_h(h, M), rtol=1e-12)
    assert np.allclose(m.miss, (M - 1) / (np.exp(M * h) + M - 1), rtol=1e-12)  # Corollary 1, exactly
    iota, beta, xi = m.coefficients(m.gamma[:, 0], dec.gram(F))
    iota_th, beta_th = dec.theorem1_coefficients(dec.gram(F), M)
    assert np.allclose(iota[0], iota_th) and np.allclose(beta[0], beta_th)
    assert np.allclose(xi[0], dec.xi(dec.gram(F), M))


def test_true_sgd_differs_from_modified_by_order_E() -> None:
    F, targets, _ = weak_inputs(weight=0.3)
    M = 40
    norm_E = np.linalg.norm(dec.gram(F), 2)
    Y = sim.sgd_decoder(F, targets, M, 1.0, 200, [200])
    residual = sim.measure_gradients(Y, F, targets, M).residual
    assert 0 < residual.max() < 2 * norm_E


def test_batch_one_order_is_the_per_sample_update() -> None:
    """One step of class k changes Y by eta f~_k (e_n - alpha_k)^T; 5K round-robin steps give each class what
    5K full-batch steps (eta/K per class each) give, up to second-order terms."""
    F, targets, M = weak_inputs()
    K = F.shape[1]
    one = sim.sgd_decoder(F, targets, M, 0.7, 1, [1], order=[1])[0]
    r = np.eye(M)[targets[1]] - 1 / M
    assert np.abs(one - 0.7 * np.outer(F[:, 1], r)).max() < 1e-15
    rr = sim.sgd_decoder(F, targets, M, 0.01, 5 * K, [5 * K], order=np.tile(np.arange(K), 5))[0]
    full = sim.sgd_decoder(F, targets, M, 0.01, 5 * K, [5 * K])[0]
    assert np.abs(rr - full).max() < 1e-2 * np.abs(rr).max()  # each class gets 5 eta in both
    with pytest.raises(ValueError, match=names("order")):
        sim.sgd_decoder(F, targets, M, 0.1, 3, [3], order=[0, 1, K])


def test_ode_and_sgd_agree_to_first_order() -> None:
    """solve_ivp of Eqn 7 vs SGD on Y: the error halves with the learning rate (Euler is first order)."""
    F, targets, M = weak_inputs()
    K, eta, T = F.shape[1], 1.0, 50
    ode = sim.integrate_decoder(F, targets, M, eta, [float(T)])[0]
    errors = []
    for r in (1, 2, 4):
        sgd = sim.sgd_decoder(F, targets, M, eta / r, r * T, [r * T])[0]
        errors.append(np.abs(F.T @ (sgd - ode)).max())
    assert errors[0] < eta / K
    assert 1.7 < errors[0] / errors[1] < 2.3 and 1.7 < errors[1] / errors[2] < 2.3


def test_model_sgd_equals_numpy_sgd() -> None:
    classes = data.sequence_classes(num_query=3, next_per_query=1, num_common=1, num_distinct=3, common_weight=0.5)
    F, targets = dec.unit_inputs(classes)
    a = sim.sgd_decoder_model(classes, 0.8, 30, [0, 30])
    b = sim.sgd_decoder(F, targets, classes.M, 0.8, 30, [0, 30])
    assert np.abs(a - b).max() < 1e-12 and np.abs(a[-1]).max() > 0.1


def test_sampled_sgd_uses_the_models_per_sample_gradient() -> None:
    """Batch size 1 with a random class per step: the stacked seeds equal the numpy per-sample update in the
    same order, the visit counts add up, and seeds differ."""
    classes = data.sequence_classes(num_query=3, next_per_query=1, num_common=1, num_distinct=3, common_weight=0.5)
    F, targets = dec.unit_inputs(classes)
    run = sim.sgd_decoder_sampled(classes, 0.5, 40, [0, 7, 40], seeds=[3, 4])
    assert run.Y.shape == (3, 2, classes.M, classes.M) and run.visits.shape == (3, 2, 3)
    assert run.visits[0].sum() == 0 and (run.visits[-1].sum(-1) == 40).all()
    order = torch.randint(0, 3, (40,), generator=torch.Generator().manual_seed(3)).numpy()
    ref = sim.sgd_decoder(F, targets, classes.M, 0.5, 40, [7, 40], order=order)
    assert np.abs(run.Y[1:, 0] - ref).max() < 1e-12
    assert np.bincount(order, minlength=3).tolist() == run.visits[-1, 0].tolist()
    assert np.abs(run.Y[-1, 0] - run.Y[-1, 1]).max() > 1e-3
    model = YZModel.from_params(torch.zeros(1, classes.M, classes.M, dtype=torch.float64),
                                torch.zeros(1, classes.M, classes.M, dtype=torch.float64))
    k = int(order[0])
    _, gY, _ = model.loss_and_gradients(classes.query[[k]], classes.probs[[k]], classes.next[[k]])
    first = sim.sgd_decoder(F, targets, classes.M, 0.5, 1, [1], order=order[:1])[0]
    assert np.abs(first + 0.5 * gY[0].numpy()).max() < 1e-15


def test_late_gamma_fit_and_corollary1_rate() -> None:
    M, K, eta = 1000, 4, 1.0
    t = np.geomspace(1e4, 1e6, 20)
    assert sim.late_gamma_fit(t, K * np.log(M * eta * t / K) / (eta * t), M, K, eta) == pytest.approx(1.0)
    assert sim.late_gamma_fit(t, 1.5 * dec.gamma_late(t, M, K, eta), M, K, eta) == pytest.approx(1.5)
    miss = (1 - 1 / M) * K / (0.4 * t)
    np.testing.assert_allclose(sim.corollary1_rate(t, miss, M, K), 0.4)
    with pytest.raises(ValueError, match=names("t, gamma")):
        sim.late_gamma_fit(-t, t, M, K, eta)


def test_regime_fits_on_the_formula() -> None:
    M, K, eta = 1000, 4, 1.0
    t0 = dec.transition_time(M, K, eta)
    t = np.geomspace(1e-3 * t0, 1e4 * t0, 200)
    slope, fit = sim.regime_fits(t, dec.gamma(t, M, K, eta), M, K, eta)
    assert slope == pytest.approx(1.0, abs=1e-3) and fit == pytest.approx(1.0, abs=0.02)
    slope, fit = sim.regime_fits(t[:2], dec.gamma(t[:2], M, K, eta), M, K, eta)
    assert np.isnan(slope) and np.isnan(fit)


def test_remark1_exact_when_every_output_is_a_next_token() -> None:
    K, rho, eta, steps = 4, 0.6, 1.0, 400
    F, _ = dec.unit_inputs(dec.equal_overlap_classes(K, rho, num_distinct=3))
    F = F[sim.support_rows(F)]
    Y = sim.sgd_decoder(F, np.arange(K), K, eta, steps, [steps])[0]
    h = dec.lemma5_h(steps, K, eta * (1 - rho) / K)[-1]
    assert np.abs(F.T @ Y - h * (K * np.eye(K) - 1)).max() < 1e-12
    assert dec.remark1_effective_rate(K, K, eta, rho) == pytest.approx(eta * (1 - rho))


def test_remark1_reduced_matches_full_dynamics_and_its_late_rate() -> None:
    """The three-level reduction (its ODE) equals the full M-way ODE of Eqn 7 on an equal-overlap family, and
    its effective rate tends to remark1_effective_rate."""
    K, M, rho, T = 3, 30, 0.5, 40.0
    F, targets = dec.unit_inputs(dec.equal_overlap_classes(K, rho, num_distinct=3))
    F = F[sim.support_rows(F)]
    Y = sim.integrate_decoder(F, targets, M, 1.0, [T])[0]
    a, b, c = sim.remark1_reduced(K, M, 1.0, rho, [T])[0]
    logits = F.T @ Y
    others = np.setdiff1d(np.arange(M), targets)
    assert abs(logits[0, targets[0]] - a) < 1e-7
    assert abs(logits[0, targets[1]] - b) < 1e-7 and abs(logits[0, others[0]] - c) < 1e-7
    late = sim.remark1_reduced_rate(K, M, 1.0, rho, [1e3, 1e10])
    assert late[-1] == pytest.approx(dec.remark1_effective_rate(K, M, 1.0, rho), rel=1e-3)


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: sim.sgd_decoder(np.eye(3)[:, :2], np.array([0, 0]), 4, 0.1, 5, [5]), "targets"),
        (lambda: sim.sgd_decoder(np.eye(3)[:, :2], np.array([0, 1]), 4, 0.1, 5, [6]), "snapshots"),
        (lambda: sim.integrate_decoder(np.eye(3)[:, :2], np.array([0, 1]), 4, 0.1, [2.0, 1.0]), "times"),
        (lambda: sim.remark1_reduced(3, 5, 1.0, 1.0, [1.0]), "rho"),
        (lambda: sim.sgd_decoder_sampled(data.syn_small(), 1.0, 5, [5], seeds=[]), "seeds"),
        (lambda: sim.support_rows(np.ones(3)), "F"),
        (lambda: sim.corollary1_rate(np.ones(3), np.ones(3), 1, 2), "M"),
        (lambda: sim.corollary1_rate(np.ones(3), np.ones(3), 5, 0), "K"),
        (lambda: sim.regime_fits(np.ones(3), np.ones(3), 5, 2, 1.0, early_to=0.0), "early_to"),
        (lambda: sim.regime_fits(np.ones(3), np.ones(3), 5, 2, 1.0, late_from=-1.0), "late_from"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        call()
