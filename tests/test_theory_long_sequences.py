"""scansnap.theory.long_sequences: Lemma 2's limit, its delta-method rate, Lemma 18's bound."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import gen, names

from scansnap.data import SequenceClasses
from scansnap.model import token_counts
from scansnap.theory import (
    concentration_bound,
    hoeffding_radius,
    limit_errors,
    linearized_std,
    loglog_slope,
    sampled_attention,
)

F64 = torch.float64


def random_Z(classes: SequenceClasses, seed: int, sigma: float = 1.0) -> torch.Tensor:
    return sigma * torch.randn(classes.M, classes.M, generator=gen(seed), dtype=F64)


def test_sampled_attention_is_X_transpose_b(small: SequenceClasses) -> None:
    """Against X^T softmax(X z_m) written with the one-hot X, sequence by sequence."""
    Z = random_Z(small, 0)
    x, _ = small.sample(6, 50, gen(1))
    f = sampled_attention(small, Z, x)
    for i in range(x.shape[0]):
        X = torch.nn.functional.one_hot(x[i, :-1], small.M).to(F64)
        ref = X.T @ torch.softmax(X @ Z[x[i, -1]], dim=0)
        assert torch.allclose(f[i], ref, rtol=1e-14, atol=1e-14)


def test_limit_is_a_fixed_point(small: SequenceClasses) -> None:
    """Counts exactly proportional to P(l|n) give f = f_n: zero error of every kind."""
    Z = random_Z(small, 2)
    n = torch.tensor([0, 1, 1])
    errors = limit_errors(small, Z, 127 * small.probs[n], n)
    for key in ("f", "f_unit", "freq"):
        assert errors[key].abs().max() < 1e-14, key


def test_error_identity(small: SequenceClasses) -> None:
    """f - f_n = (diag(w) - f_n w^T)(p^ - p) / (w . p^), the identity Lemma 18 rests on."""
    Z = random_Z(small, 3)
    x, n = small.sample(20, 64, gen(4))
    counts = token_counts(x[:, :-1], small.M)
    dev = limit_errors(small, Z, counts, n)["dev"]
    for i in range(len(n)):
        w = torch.exp(Z[small.query[n[i]]])
        p, ph = small.probs[n[i]], counts[i] / 63
        fn = p * w / (w @ p)
        ref = (torch.diag(w) - torch.outer(fn, w)) @ (ph - p) / (w @ ph)
        assert torch.allclose(dev[i], ref, rtol=1e-14, atol=1e-14)


def test_linearized_std_is_binomial_at_zero(small: SequenceClasses) -> None:
    std = linearized_std(small, torch.zeros(small.M, small.M, dtype=F64))
    assert torch.allclose(std, (small.probs * (1 - small.probs)).sqrt(), rtol=1e-15, atol=1e-15)


def test_linearized_std_matches_monte_carlo(small: SequenceClasses) -> None:
    """rms(f_l - f_nl) sqrt(T - 1) -> sigma_nl: within 12% at T = 2000 with 3000 sequences (the
    statistical error of one rms is ~1/sqrt(2 * 1500) = 2%; a wrong constant is off by far more)."""
    Z, T = random_Z(small, 5, 0.7), 2000
    x, n = small.sample(3000, T, gen(6))
    dev = limit_errors(small, Z, token_counts(x[:, :-1], small.M), n)["dev"]
    std = linearized_std(small, Z)
    for k in range(small.K):
        on = small.support()[k]
        rms = dev[n == k][:, on].pow(2).mean(0).sqrt() * math.sqrt(T - 1)
        assert ((rms / std[k, on]) - 1).abs().max() < 0.12


def test_hoeffding_radius_inverts_the_tail() -> None:
    for T, k, delta in ((2, 1, 0.5), (128, 21, 0.05), (4096, 7, 1e-6)):
        eps = hoeffding_radius(T, k, delta)
        assert 2 * k * math.exp(-2 * (T - 1) * eps**2) == pytest.approx(delta, rel=1e-12)


def test_bound_at_zero_is_the_radius_and_shrinks(small: SequenceClasses) -> None:
    zero = torch.zeros(small.M, small.M, dtype=F64)
    for T in (16, 128, 4096):
        assert torch.allclose(concentration_bound(small, zero, T, 0.1), torch.full((2,), hoeffding_radius(T, 21, 0.1),
                                                                                   dtype=F64), rtol=1e-14, atol=0)
    Z = random_Z(small, 7)
    b = torch.stack([concentration_bound(small, Z, T, 0.05) for T in (16, 64, 256, 1024, 4096)])
    assert (b[1:] < b[:-1]).all()
    # a row shift of Z is a symmetry of the attention, hence of the bound
    assert torch.allclose(concentration_bound(small, Z + 3.0, 256, 0.05), b[2], rtol=1e-12, atol=0)


def test_bound_holds_on_the_hoeffding_event(small: SequenceClasses) -> None:
    """The deterministic step of Lemma 18: wherever all Hoeffding events hold, the error is within the
    bound. Checked at the edge of the events: frequencies p^ = p + t u for random zero-sum directions
    u, with t as large as the events (and p^ >= 0) allow."""
    Z, T, delta = random_Z(small, 8, 0.8), 300, 0.05
    bound = concentration_bound(small, Z, T, delta)
    g = gen(9)
    worst = 0.0
    for k in range(small.K):
        on = small.support()[k]
        w = torch.exp(Z[small.query[k]])[on]
        p = small.probs[k, on]
        fn = p * w / (w @ p)
        r = w * (1 - fn) + fn * w.max()
        eps = hoeffding_radius(T, int(on.sum()) + 1, delta)
        for _ in range(500):
            u = torch.randn(len(p), generator=g, dtype=F64)
            u -= u.mean()
            A = w * u - fn * (w @ u)  # the numerator mean per unit of t
            t = min((r * eps / A.abs()).min().item(), ((w.max() - w.min()) * eps / (w @ u).abs()).item(),
                    (p / (-u).clamp_min(1e-300)).min().item())
            ph = p + t * u
            err = (ph * w / (w @ ph) - fn).abs().max().item()
            worst = max(worst, err / bound[k].item())
    assert worst <= 1 + 1e-12, worst
    assert worst > 0.05, "the edge of the events was not reached"


def test_bound_fails_at_most_eta_often(small: SequenceClasses) -> None:
    Z, T, delta = random_Z(small, 10, 0.5), 200, 0.2
    x, n = small.sample(2000, T, gen(11))
    err = limit_errors(small, Z, token_counts(x[:, :-1], small.M), n)["f"]
    assert (err > concentration_bound(small, Z, T, delta)[n]).double().mean() <= delta


def test_loglog_slope_recovers_a_power_law() -> None:
    T = [16, 64, 256, 1024]
    slope, se = loglog_slope(T, [3.0 * t**-0.5 for t in T])
    assert slope == pytest.approx(-0.5, abs=1e-12) and se < 1e-12
    slope, se = loglog_slope(T, [t**-0.5 * (1 + 0.1 * (-1) ** i) for i, t in enumerate(T)])
    assert abs(slope + 0.5) < 0.1 and se > 0.01


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda c: hoeffding_radius(1, 3, 0.1), "T"),
        (lambda c: loglog_slope([1, 2], [1, 2]), "T, err"),
        (lambda c: loglog_slope([1, 2, 4], [1, 0, 2]), "T, err"),
        (lambda c: hoeffding_radius(10, 0, 0.1), "events"),
        (lambda c: hoeffding_radius(10, 3, 0.0), "delta"),
        (lambda c: hoeffding_radius(10, 3, 1.0), "delta"),
        (lambda c: concentration_bound(c, torch.zeros(3, 3, dtype=F64), 10, 0.1), "Z"),
        (lambda c: linearized_std(c, torch.zeros(c.M, c.M, dtype=torch.long)), "Z"),
        (lambda c: limit_errors(c, torch.zeros(c.M, c.M, dtype=F64), torch.tensor([[1.0] * c.M, [2.0] * c.M],
                                                                                   dtype=F64), torch.tensor([0, 1])),
         "counts"),
        (lambda c: limit_errors(c, torch.zeros(c.M, c.M, dtype=F64), torch.ones(2, c.M, dtype=F64),
                                torch.tensor([0, 2])), "n"),
        (lambda c: sampled_attention(c, torch.zeros(c.M, c.M, dtype=F64), torch.zeros(3, 1, dtype=torch.long)), "x"),
    ],
)
def test_bad_input_names_the_parameter(small: SequenceClasses, call, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        call(small)
