"""scansnap.theory.scanning_measures: Eqn 11's deviation, Eqn 12's band, the scanning order, picked subsets."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import names

from scansnap import train
from scansnap.data import syn_small
from scansnap.theory import scanning as sc
from scansnap.theory import scanning_measures as sm


@pytest.fixture(scope="module")
def small_run() -> sc.Eqn10Run:
    t = np.concatenate([[0.0], np.geomspace(0.5, 300.0, 25)])
    return sc.integrate_eqn10(syn_small(), 1.0, 1.0, t)


def test_drop_steps() -> None:
    share = np.array([[1.0, 2.0, 4.0], [0.9, 2.0, 4.0], [0.4, 1.5, 4.0], [0.1, 0.9, 5.0]])
    np.testing.assert_array_equal(sm.drop_steps(share, 0.5), [2, 3, 4])
    np.testing.assert_array_equal(sm.drop_steps(share, 0.95), [1, 2, 4])


def test_top_set() -> None:
    ids = np.array([10, 11, 12, 13])
    assert sm.top_set(np.array([0.1, 0.2, 0.3, 0.4]), ids) == {13, 12}  # 0.7 >= 0.5 after two
    assert sm.top_set(np.array([0.1, 0.2, 0.3, 0.4]), ids, mass=0.4) == {13}
    assert sm.top_set(np.array([0.25, 0.25, 0.25, 0.25]), ids) == {10, 11}  # ties: smaller ids first
    assert sm.top_set(np.array([1.0, 0.0, 0.0, 0.0]), ids, mass=1.0) == {10}


def test_eqn11_deviation_is_zero_on_eqn10_and_reads_trained_logits(small_run: sc.Eqn10Run) -> None:
    small = syn_small()
    p, mask = small.probs[0].numpy(), small.distinct_mask()[0].numpy()
    f = small_run.ft[:, 0] / small_run.ft[:, 0].sum(-1, keepdims=True)
    chi, dev = sm.eqn11_deviation(f, p, mask)
    assert dev.shape == (9, len(small_run.t)) and dev.max() < 1e-7
    np.testing.assert_allclose(chi, sc.growth_factor(small_run.logits[:, 0, 19], 0.0), rtol=1e-9)
    # from trained attention (SGD from Z(0) = 0) the logits read back are the trained ones
    h = train.train(small, 1.0, 1.0, steps=15, batch=32, T=64, seed=2, snapshot_steps=range(16))
    chi, dev = sm.eqn11_deviation(h.attention[:, 0, 0].numpy(), p, mask)
    np.testing.assert_allclose(chi[-1], np.exp(2 * h.Z[0, small.query[0], 19].item()), rtol=1e-10)
    assert 1e-4 < dev.max() < 10, "training is close to, but not exactly, Eqn 11"




def test_deviation_at_growth() -> None:
    chi = np.array([1.0, 1.2, 1.6, 2.0])
    dev = np.array([[0.0, 0.1, 0.2, 0.5], [0.0, 0.3, 0.1, 0.1]])
    assert sm.deviation_at_growth(chi, dev, 1.5) == (0.2, 0.5)
    at, worst = sm.deviation_at_growth(chi, dev, 3.0)
    assert np.isnan(at) and worst == 0.5


def test_band_share_and_modal_set() -> None:
    assert sm.band_share(np.array([1.0, 2.0, 5.0]), np.ones(3), np.full(3, 4.0)) == pytest.approx(2 / 3)
    shares = np.array([[0.1, 0.2, 0.7], [0.1, 0.2, 0.7], [0.6, 0.2, 0.2]])
    assert sm.modal_set(shares, np.array([10, 11, 12])) == (frozenset({12}), pytest.approx(2 / 3))


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: sm.drop_steps(np.ones((3, 2)), 1.0), "tau"),
        (lambda: sm.drop_steps(np.zeros((3, 2)), 0.5), "share"),
        (lambda: sm.top_set(np.ones(3), np.arange(3), mass=0.0), "mass"),
        (lambda: sm.top_set(np.ones(3), np.arange(2)), "tokens"),
        (lambda: sm.eqn11_deviation(np.ones((2, 3)) / 3, np.ones(3) / 3, np.array([True, False, False])), "distinct"),
        (lambda: sm.deviation_at_growth(np.ones(3), np.ones((2, 2)), 1.5), "deviation"),
        (lambda: sm.deviation_at_growth(np.ones(2), np.ones((2, 2)), 1.0), "chi_star"),
        (lambda: sm.band_share(np.ones(2), np.ones(3), np.ones(2)), "lower"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        call()


def test_measured_rate_integrates_to_the_B_of_eqn10() -> None:
    """Along Eqn 10 (which keeps every query row's sum, like training), the fitted per-step rates add up to the
    B_n integrated with the ODE, and the logits read back are the integrated ones."""
    classes = syn_small()
    run = sc.integrate_eqn10(classes, 1.0, 1.0, np.arange(0.0, 41.0))
    c = classes.probs[0].numpy() * np.exp(run.logits[:, 0])
    f = c / c.sum(-1, keepdims=True)  # Lemma 2's f_n
    p, mask = classes.probs[0].numpy(), classes.distinct_mask()[0].numpy()
    np.testing.assert_allclose(sm.support_logits(f, p)[:, p > 0], run.logits[:, 0, p > 0], atol=1e-9)
    B = np.cumsum(sm.measured_rate(f, p, mask))
    np.testing.assert_allclose(B, run.B[1:, 0], rtol=0.05)


def test_theorem3_check_on_population_gradient_descent() -> None:
    """Gradient descent at a large eta_Y / eta_Z: f~_l0 grows, chi stays in the band of the measured rate."""
    classes = syn_small()
    h = train.train(classes, 10.0, 1.0, steps=60, limit="population", momentum=0.0, snapshot_steps=range(61))
    c = sm.theorem3_check(h.attention[:, 0], classes, 0, eta_Y=10.0, eta_Z=1.0)
    assert c.monotone_share == 1.0 and c.band_share_measured > 0.9 and c.chi_end > 1
    assert 0 <= c.deviation_max < 1 and c.B_end_measured > 0 and c.B_end_theorem1 > 0
    with pytest.raises(ValueError, match=names("momentum")):
        sm.theorem3_check(h.attention[:, 0], classes, 0, eta_Y=10.0, eta_Z=1.0, momentum=1.0)


def test_dominant_log_growth_equals_the_trained_logits() -> None:
    """``ln chi_l0`` read back from the attention equals ``2 z_{m l0}`` of the model's own final ``Z`` (training from
    ``Z(0) = 0``), ``l0`` the class's most frequent distinct token (with ``Z(0) = 0``, the dominant one), per
    configuration; and it is 0 at the first snapshot."""
    classes = syn_small()
    h = train.train(classes, torch.tensor([0.5, 2.0]), torch.tensor([1.0, 4.0]), steps=40, limit="population",
                    snapshot_steps=[0, 10, 40])
    for n in range(classes.K):
        log_chi, l0 = sm.dominant_log_growth(h.attention, classes, n)
        assert log_chi.shape == (3, 2) and (log_chi[0] == 0).all()
        D = classes.distinct(n).numpy()
        expected = int(D[np.argmax(classes.probs[n].numpy()[D])])
        assert l0.tolist() == [expected, expected]
        z_final = h.Z[:, int(classes.query[n]), expected].to(torch.float64).numpy()
        np.testing.assert_allclose(log_chi[-1], 2 * z_final, rtol=1e-6, atol=1e-9)
        assert (log_chi[-1] > 0).all(), "the dominant token's logit grows (Theorem 3)"


def test_dominant_log_growth_names_a_wrong_shape_and_class() -> None:
    classes = syn_small()
    with pytest.raises(ValueError, match="attention: must have shape"):
        sm.dominant_log_growth(torch.zeros(3, classes.K, classes.M), classes)
    with pytest.raises(ValueError, match="n"):
        sm.dominant_log_growth(torch.full((2, 1, classes.K, classes.M), 1.0 / classes.M), classes, n=classes.K)
