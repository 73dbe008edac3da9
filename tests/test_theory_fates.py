"""scansnap.theory.fates: Eqn 10, Theorem 2 and Corollary 2 against the model's exact population gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import gen, names

from scansnap import data, train
from scansnap.model import init_params
from scansnap.theory import fates
from scansnap.theory.decoder import gamma_of_h, gram, theorem1_coefficients, xi
from scansnap.theory.families import classes_from_weights, example_families, random_classes

F64 = torch.float64


def random_family(seed: int, one_common: bool = False) -> data.SequenceClasses:
    return random_classes(gen(seed), one_common=one_common)


def random_state(classes: data.SequenceClasses, seed: int) -> tuple[torch.Tensor, float]:
    g = gen(1000 + seed)
    Z = torch.randn(classes.M, classes.M, generator=g, dtype=F64)
    h = float(torch.rand((), generator=g, dtype=F64)) * 3 / classes.M
    return Z, h


@pytest.mark.parametrize("seed", range(12))
def test_eqn10_equals_exact_gradient_under_theorem1_decoder(seed: int) -> None:
    """With the decoder of Theorem 5 the model's exact population z-gradient is Eqn 10 (and Theorem 2(a))."""
    classes = random_family(seed)
    Z, h = random_state(classes, seed)
    Y = fates.theorem1_decoder(classes, Z, h)
    exact = fates.population_zdot(classes, Y, Z, eta_Z=0.7)
    gamma = gamma_of_h(h, classes.M)
    pred = fates.eqn10_zdot(classes, Z, gamma, eta_Z=0.7)
    torch.testing.assert_close(exact, pred, rtol=1e-12, atol=1e-12 * max(1.0, pred.abs().max().item()))
    # Theorem 2(a): distinct tokens move at eta_Z gamma pi_n xi_n f~_nl^2 (> 0 when the class overlaps)
    ft = fates.unit_scores(classes, Z)
    xi_n = xi(gram(ft.mT), classes.M)
    rate = 0.7 * gamma * xi_n[:, None] * ft**2 / classes.K
    mask = classes.distinct_mask()
    torch.testing.assert_close(exact[classes.query][mask], rate[mask], rtol=1e-12, atol=1e-12)
    overlaps = (gram(ft.mT) > 1e-9).any(1)
    assert (xi_n[overlaps] > 0).all()
    assert (exact[classes.query][mask & overlaps[:, None]] > 0).all()


def test_theorem1_decoder_gives_theorem1_gradient(small) -> None:
    """Y^T f~_n = h (M e_n - 1), and g_n = gamma F (I + E)^{-1} (e_n - 1/M): the coefficients on F are
    (gamma iota_n, -gamma beta_nn')."""
    Z, h = random_state(small, 0)
    Y = fates.theorem1_decoder(small, Z, h)
    ft = fates.unit_scores(small, Z)
    M = small.M
    torch.testing.assert_close(ft @ Y, h * (M * torch.nn.functional.one_hot(small.next, M).to(F64) - 1),
                               rtol=1e-12, atol=1e-12)
    A, off = fates.span_coefficients(ft, fates.class_gradients(small, Y, Z))
    iota, beta = theorem1_coefficients(gram(ft.mT), M)
    gamma = gamma_of_h(h, M)
    assert off < 1e-12
    torch.testing.assert_close(torch.diagonal(A), gamma * iota, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(A - torch.diag(torch.diagonal(A)), -gamma * beta, rtol=1e-12, atol=1e-12)


def test_decoder_coefficients_closed_forms() -> None:
    """K = 2: beta = E/(1-E^2) + 1/(M(1+E)) and xi = beta E;
    and xi equals [E^2 (I+E)^-1]_nn + [E (I+E)^-1 1]_n / M for a random family."""
    a = torch.tensor([0.6, 0.8, 0.0], dtype=F64)
    b = torch.tensor([0.6, 0.0, 0.8], dtype=F64)
    ft = torch.stack([a, b])
    E, M = 0.36, 10
    _, beta = theorem1_coefficients(gram(ft.mT), M)
    assert beta[0, 1].item() == pytest.approx(E / (1 - E**2) + 1 / (M * (1 + E)), rel=1e-13)
    assert xi(gram(ft.mT), M)[0].item() == pytest.approx(beta[0, 1].item() * E, rel=1e-13)
    classes = random_family(3)
    ft = fates.unit_scores(classes, random_state(classes, 3)[0])
    Eg = gram(ft.mT)
    inv = torch.linalg.inv(torch.eye(classes.K, dtype=F64) + Eg)
    closed = torch.diagonal(Eg @ Eg @ inv) + (Eg @ inv).sum(1) / classes.M
    torch.testing.assert_close(xi(gram(ft.mT), classes.M), closed, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_theorem2b_single_common_token(seed: int) -> None:
    classes = random_family(seed, one_common=True)
    assert classes.common().tolist() == [0] and classes.distinct_mask().any(1).all()
    Z, h = random_state(classes, seed)
    gamma = float(gamma_of_h(h, classes.M))
    pred = fates.eqn10_zdot(classes, Z, gamma, eta_Z=1.3)
    closed = fates.single_common_rate(classes, Z, gamma, eta_Z=1.3)
    queries = torch.unique(classes.query)
    torch.testing.assert_close(pred[queries, 0], closed[queries], rtol=1e-12, atol=1e-12)
    holders = torch.unique(classes.query[classes.probs[:, 0] > 0])
    assert (closed[holders] < 0).all()  # every query whose classes hold the common token: z falls


def test_corollary2_symmetric_family() -> None:
    """One query, bijection of distinct tokens, global common tokens, symmetric Z: every common token
    falls at Corollary 2's rate, and matched distinct tokens move alike."""
    classes = data.sequence_classes(1, 3, num_common=4, num_distinct=5)
    g = gen(5)
    Z = torch.zeros(classes.M, classes.M, dtype=F64)
    m = int(classes.query[0])
    Z[m, :4] = torch.randn(4, generator=g, dtype=F64)  # any common logits
    profile = torch.randn(5, generator=g, dtype=F64)  # the same distinct profile for every class
    for n in range(3):
        Z[m, classes.distinct(n)] = profile
    gamma = 0.37
    pred = fates.eqn10_zdot(classes, Z, gamma, eta_Z=2.0)
    eps = fates.unit_scores(classes, Z)[0, :4]
    want = fates.corollary2_rate(eps, 3, classes.M, gamma, 2.0)
    torch.testing.assert_close(pred[m, :4], want, rtol=1e-13, atol=1e-13)
    assert (pred[m, :4] < 0).all()
    moves = torch.stack([pred[m, classes.distinct(n)] for n in range(3)])
    torch.testing.assert_close(moves, moves[:1].expand(3, -1), rtol=1e-14, atol=1e-14)
    # the closed-form beta is Theorem 1's beta when E = S (1 1^T - I)
    ft = fates.unit_scores(classes, Z)
    _, beta = theorem1_coefficients(gram(ft.mT), classes.M)
    S = float((eps**2).sum())
    assert beta[0, 1].item() == pytest.approx(float(fates.corollary2_beta(S, 3, classes.M)), rel=1e-12)


def test_asymmetric_common_token_can_rise() -> None:
    """Without symmetry Corollary 2 fails: a common token that is nearly distinct to one class rises."""
    classes = example_families()["two common, asymmetric"]
    Z = torch.zeros(classes.M, classes.M, dtype=F64)
    pred = fates.eqn10_zdot(classes, Z, 1.0)
    m = int(classes.query[0])
    assert pred[m, 0] > 0 > pred[m, 1]


def test_random_classes() -> None:
    for seed in range(20):
        c = random_classes(gen(seed))
        assert 2 <= c.K <= 5 and c.distinct_mask().any(1).all()
        assert torch.equal(random_classes(gen(seed)).probs, c.probs)  # same generator state, same family


def test_disjoint_classes_do_not_move_attention() -> None:
    """No overlap, no attention dynamics: Eqn 10 is 0, and so is Z after long-sequence training."""
    classes = example_families()["disjoint"]
    Z = torch.randn(classes.M, classes.M, generator=gen(0), dtype=F64)
    assert fates.eqn10_zdot(classes, Z, 1.0).abs().max() == 0
    hist = train.train(classes, 1.0, 1.0, steps=30, momentum=0.0, limit="population", snapshot_steps=[30])
    assert hist.Z.abs().max() < 1e-14


@pytest.mark.parametrize("name", ["Syn-Small", "one common token", "common to 2 of 3"])
@pytest.mark.parametrize("limit", ["population", "sampled"])
def test_logits_from_attention_recovers_Z(name: str, limit: str) -> None:
    classes = example_families()[name]
    hist = train.train(classes, 1.0, 1.0, steps=8, batch=16, T=32, limit=limit, seed=[1, 2], snapshot_steps=[0, 4, 8])
    Z = fates.logits_from_attention(hist.attention, classes)  # (S, C, M, M)
    assert Z.shape == (3, 2, classes.M, classes.M)
    torch.testing.assert_close(Z[-1], hist.Z, rtol=1e-12, atol=1e-12)
    assert Z[0].abs().max() < 1e-14


def test_logits_from_attention_differences_from_any_start(small) -> None:
    """From a random start the recovered logits differ from Z by a constant per query row (per group):
    differences between snapshots are exact."""
    hist = train.train(small, 1.0, 1.0, steps=6, init="uniform", seed=3, snapshot_steps=[0, 6], limit="population")
    Z = fates.logits_from_attention(hist.attention[:, 0], small)
    Z0 = init_params(small.M, "uniform", gen(3))[1]
    true_diff = (hist.Z[0] - Z0)[small.query][:, :30]
    torch.testing.assert_close((Z[1] - Z[0])[small.query][:, :30], true_diff, rtol=1e-12, atol=1e-12)


def test_fate_counts_on_a_made_up_trajectory(small) -> None:
    Z = torch.zeros(4, small.M, small.M, dtype=F64)
    m0 = int(small.query[0])
    Z[1, m0, 10] = 0.5  # a distinct token of class 0 up at step 0 -> 1
    Z[2, m0, 10] = 0.2  # ... then down
    Z[3, m0, 0] = 0.1  # a common token up at the last step, ...
    Z[3, m0, 10] = 0.2
    c = fates.fate_counts(Z, small)
    assert c.distinct == (1, 1, 3 * 20 - 2)
    assert c.common == (1, 0, 3 * 20 - 1)
    assert c.min_distinct_move == pytest.approx(-0.3) and c.max_common_move == pytest.approx(0.1)


@pytest.mark.parametrize("B", [3, 2])  # B = K = 2: a batch as long as the number of classes
def test_eqn10_batched_over_leading_axes(small, B: int) -> None:
    Zs = torch.randn(B, small.M, small.M, generator=gen(2), dtype=F64)
    gam = torch.tensor([0.1, 0.2, 0.3][:B], dtype=F64)
    batched = fates.eqn10_zdot(small, Zs, gam)
    for i in range(B):
        torch.testing.assert_close(batched[i], fates.eqn10_zdot(small, Zs[i], float(gam[i])), rtol=1e-15, atol=1e-15)
    np.testing.assert_array_equal(batched[:, :30].numpy(), 0.0)  # only query rows move


def test_bad_input_is_rejected(small) -> None:
    Z = torch.zeros(small.M, small.M, dtype=F64)
    with pytest.raises(ValueError, match=names("eta_Z")):
        fates.eqn10_zdot(small, Z, 1.0, eta_Z=0.0)
    with pytest.raises(ValueError, match=names("gamma")):
        fates.eqn10_zdot(small, Z, -1.0)
    with pytest.raises(ValueError, match=names("Z")):
        fates.eqn10_zdot(small, Z[:5], 1.0)
    with pytest.raises(ValueError, match=names("classes")):
        fates.single_common_rate(small, Z, 1.0)  # ten common tokens
    with pytest.raises(ValueError, match=names("S")):
        fates.corollary2_beta(1.0, 2, 10)
    with pytest.raises(ValueError, match=names("query")):
        classes_from_weights([[1.0, 1.0], [1.0, 0.0]], [0, 2])
    with pytest.raises(ValueError, match=names("weights")):
        classes_from_weights([[1.0, -1.0], [1.0, 0.0]], [0, 0])
    with pytest.raises(ValueError, match=names("f")):
        fates.logits_from_attention(torch.zeros(2, small.M, dtype=F64), small)
    with pytest.raises(ValueError, match=names("Z")):
        fates.fate_counts(Z[None], small)
    with pytest.raises(ValueError, match=names("beta")):
        fates.eqn10_zdot(small, Z, 1.0, beta=torch.zeros(3, 3, dtype=F64))
