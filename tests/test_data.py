"""scansnap.data: the sequence-class family, the sampler and Lemma 2's long-sequence limit."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import gen, names
from scipy import stats

from scansnap.data import SequenceClasses, attended, sequence_classes, syn_medium, syn_small

F64 = torch.float64


def tiny(**overrides) -> dict:
    """Arguments of a valid 2-class family over M = 6 (contexts 0-3, queries 4, 5)."""
    kw = dict(
        M=6,
        query=torch.tensor([4, 5]),
        next=torch.tensor([0, 1]),
        probs=torch.tensor([[0.5, 0.5, 0, 0, 0, 0], [0, 0.25, 0.75, 0, 0, 0]], dtype=F64),
    )
    kw.update(overrides)
    return kw


# ----------------------------------------------------------------------------------------------
# The families
# ----------------------------------------------------------------------------------------------


def test_syn_small_layout() -> None:
    c = syn_small()
    assert (c.M, c.K) == (34, 2)
    assert c.query.tolist() == [30, 31]
    assert c.next.tolist() == [32, 33]
    assert c.common().tolist() == list(range(10))
    assert c.distinct(0).tolist() == list(range(10, 20))
    assert c.distinct(1).tolist() == list(range(20, 30))
    assert c.probs.dtype == F64 and c.query.dtype == torch.long and c.next.dtype == torch.long


def test_syn_small_probabilities() -> None:
    c = syn_small()
    ramp = np.linspace(0.1, 1.0, 10)
    z = 10 + ramp.sum()  # 15.5: ten common tokens of weight 1, then the ramp
    for n in range(2):
        p = c.probs[n].numpy()
        np.testing.assert_allclose(p[:10], 1 / z, rtol=1e-15, atol=1e-15)
        d = p[c.distinct(n).numpy()]
        np.testing.assert_allclose(d, ramp / z, rtol=1e-15, atol=1e-15)
        assert np.all(np.diff(d) > 0), "distinct probabilities must increase with the token id"
        mask = np.ones(34, dtype=bool)
        mask[:10] = False
        mask[c.distinct(n).numpy()] = False
        assert np.all(p[mask] == 0), "no mass outside common + own distinct tokens"
    assert math.isclose(c.probs[0, 0].item(), 1 / 15.5, rel_tol=0, abs_tol=1e-15)


@pytest.mark.parametrize("q", [1, 3, 5, 10])
def test_syn_medium_layout(q: int) -> None:
    c = syn_medium(q)
    K = 2 * q
    assert c.K == K
    M = 10 + 20 * q + q + 2 * q  # common, distinct blocks, queries, next tokens
    assert M == c.M
    first_query = 10 + 10 * K
    # two next tokens per query: next n has query first_query + n // 2
    assert c.query.tolist() == [first_query + n // 2 for n in range(K)]
    assert c.next.tolist() == list(range(first_query + q, first_query + q + K))
    counts = torch.bincount(c.query, minlength=c.M)
    assert counts[first_query : first_query + q].tolist() == [2] * q
    assert c.common().tolist() == list(range(10))
    for n in range(K):
        assert c.distinct(n).tolist() == list(range(10 + 10 * n, 20 + 10 * n))
    torch.testing.assert_close(c.probs.sum(1), torch.ones(K, dtype=F64), rtol=1e-12, atol=1e-12)
    # symmetric family: every class has the same profile, shifted
    assert torch.equal(c.probs[0, :10], c.probs[K - 1, :10])
    assert torch.equal(c.probs[0, c.distinct(0)], c.probs[K - 1, c.distinct(K - 1)])


def test_sequence_classes_general() -> None:
    c = sequence_classes(3, 2, num_common=4, num_distinct=3, common_weight=2.0, distinct_min=1.0,
                         distinct_max=3.0)
    assert c.K == 6 and c.M == 4 + 6 * 3 + 3 + 6
    assert c.query.tolist() == [22, 22, 23, 23, 24, 24]
    assert c.next.tolist() == list(range(25, 31))
    z = 4 * 2.0 + (1.0 + 2.0 + 3.0)
    np.testing.assert_allclose(c.probs[1, :4].numpy(), 2.0 / z, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(c.probs[1, 7:10].numpy(), np.array([1.0, 2.0, 3.0]) / z, rtol=1e-15, atol=1e-15)
    assert not c.support()[:, 22:].any(), "query and next tokens are never contextual"


def test_sequence_classes_without_common_or_distinct_tokens() -> None:
    no_common = sequence_classes(2, 1, num_common=0, num_distinct=3)
    assert no_common.common().numel() == 0
    assert no_common.distinct_mask().sum().item() == 6
    no_distinct = sequence_classes(2, 1, num_common=3, num_distinct=0)
    assert not no_distinct.distinct_mask().any()
    assert no_distinct.distinct(0).numel() == 0
    assert no_distinct.common().tolist() == [0, 1, 2]


def test_distinct_mask_and_common_partition_the_support(small: SequenceClasses) -> None:
    mask = small.distinct_mask()
    assert mask.shape == (2, 34) and mask.dtype == torch.bool
    assert mask.sum(1).tolist() == [10, 10]
    assert not (mask[0] & mask[1]).any()
    common = torch.zeros(34, dtype=torch.bool)
    common[small.common()] = True
    for n in range(2):
        assert torch.equal(mask[n] | common, small.support()[n])
        assert not (mask[n] & common).any()
        assert torch.equal(torch.nonzero(mask[n]).flatten(), small.distinct(n))


def test_distinct_and_common_on_an_irregular_family() -> None:
    # token 0 in classes 0 and 1, token 1 in all three, token 2 only in class 2, token 3 only in class 0
    probs = torch.tensor(
        [[0.5, 0.25, 0, 0.25, 0, 0, 0, 0, 0, 0],
         [0.5, 0.5, 0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0.5, 0.5, 0, 0, 0, 0, 0, 0, 0]], dtype=F64)
    c = SequenceClasses(M=10, query=torch.tensor([4, 4, 5]), next=torch.tensor([7, 8, 9]), probs=probs)
    assert c.common().tolist() == [0, 1]
    assert c.distinct(0).tolist() == [3]
    assert c.distinct(1).tolist() == []
    assert c.distinct(2).tolist() == [2]


# ----------------------------------------------------------------------------------------------
# The sampler
# ----------------------------------------------------------------------------------------------


def test_sample_shapes_query_and_support(small: SequenceClasses) -> None:
    x, n = small.sample(64, 9, gen(0))
    assert x.shape == (64, 9) and x.dtype == torch.long
    assert n.shape == (64,) and n.dtype == torch.long
    assert ((n >= 0) & (n < 2)).all()
    assert torch.equal(x[:, -1], small.query[n])
    assert small.probs[n[:, None], x[:, :-1]].gt(0).all(), "a contextual token outside supp(n)"
    x2, n2 = small.sample(1, 2, gen(0))  # the smallest legal call: one contextual token
    assert x2.shape == (1, 2) and x2[0, 1] == small.query[n2[0]]


def test_sample_shared_query_classes() -> None:
    c = syn_medium(3)
    x, n = c.sample(200, 5, gen(1))
    assert torch.equal(x[:, -1], c.query[n])
    assert torch.equal(x[:, -1], c.query[0] + n // 2), "next tokens 2q, 2q+1 share query q"
    assert c.probs[n[:, None], x[:, :-1]].gt(0).all()


def test_sample_frequencies(small: SequenceClasses) -> None:
    """Empirical frequencies match the model, at seed 0.

    Bounds (all computed exactly, no tuning):
    * class counts ~ Binomial(B, 1/K): each within 5 standard deviations (two-sided normal tail
      5.7e-7 per class);
    * for class n with N_n contextual tokens, the count of token l ~ Binomial(N_n, P(l|n)): within
      5 standard deviations for every l (union bound over 68 (n, l) pairs: < 4e-5); tokens outside
      supp(n) have standard deviation 0, so they must never appear;
    * Pearson's chi-square over supp(n) (19 degrees of freedom), computed explicitly: p > 1e-3.
    """
    B, T = 4000, 51
    x, n = small.sample(B, T, gen(0))
    class_counts = torch.bincount(n, minlength=small.K).double()
    sd = math.sqrt(B * 0.5 * 0.5)
    assert (class_counts - B / 2).abs().max() <= 5 * sd, class_counts
    for k in range(small.K):
        ctx = x[n == k, :-1].flatten()
        N = ctx.numel()
        assert class_counts[k] * (T - 1) == N
        observed = torch.bincount(ctx, minlength=small.M).double()
        p = small.probs[k]
        expected = N * p
        bound = 5 * torch.sqrt(N * p * (1 - p))
        assert ((observed - expected).abs() <= bound).all(), (k, observed, expected)
        s = small.support()[k]
        chi2 = (((observed[s] - expected[s]) ** 2) / expected[s]).sum().item()
        pval = stats.chi2.sf(chi2, df=int(s.sum()) - 1)
        assert pval > 1e-3, (k, chi2, pval)


def test_sample_chi_square_detects_a_wrong_distribution(small: SequenceClasses) -> None:
    """The frequency test has power: the same counts compared with a uniform distribution over the
    support are rejected (p < 1e-10)."""
    x, n = small.sample(4000, 51, gen(0))
    ctx = x[n == 0, :-1].flatten()
    observed = torch.bincount(ctx, minlength=small.M).double()[small.support()[0]]
    expected = torch.full_like(observed, ctx.numel() / observed.numel())
    chi2 = (((observed - expected) ** 2) / expected).sum().item()
    assert stats.chi2.sf(chi2, df=observed.numel() - 1) < 1e-10


def test_sample_determinism(small: SequenceClasses) -> None:
    a = small.sample(32, 17, gen(5))
    b = small.sample(32, 17, gen(5))
    c = small.sample(32, 17, gen(6))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


# ----------------------------------------------------------------------------------------------
# Lemma 2: population(Z)
# ----------------------------------------------------------------------------------------------


def test_population_direct_formula(small: SequenceClasses) -> None:
    Z = torch.randn(34, 34, generator=gen(0), dtype=F64)
    f = small.population(Z)
    assert f.shape == (2, 34) and f.dtype == F64
    for n in range(2):
        c = small.probs[n] * torch.exp(Z[small.query[n]])
        torch.testing.assert_close(f[n], c / c.sum(), rtol=1e-15, atol=1e-15)
    assert torch.equal(f > 0, small.support())


def test_population_at_zero_is_probs(small: SequenceClasses) -> None:
    f = small.population(torch.zeros(34, 34, dtype=F64))
    torch.testing.assert_close(f, small.probs, rtol=1e-15, atol=1e-15)


def test_population_depends_only_on_query_rows(small: SequenceClasses) -> None:
    Z = torch.randn(34, 34, generator=gen(1), dtype=F64)
    Z2 = Z.clone()
    Z2[:30] = 7.0  # rows of non-query tokens
    Z2[30:, 30:] = -3.0  # columns outside every support
    Z2[30] += 2.5  # a constant shift of a query row
    torch.testing.assert_close(small.population(Z2), small.population(Z), rtol=1e-14, atol=1e-14)


def test_population_batched(small: SequenceClasses) -> None:
    Z = torch.randn(3, 4, 34, 34, generator=gen(2), dtype=F64)
    f = small.population(Z)
    assert f.shape == (3, 4, 2, 34)
    for i in range(3):
        for j in range(4):
            torch.testing.assert_close(f[i, j], small.population(Z[i, j]), rtol=1e-15, atol=1e-15)
    torch.testing.assert_close(f.sum(-1), torch.ones(3, 4, 2, dtype=F64), rtol=1e-13, atol=1e-13)


def test_population_float32(small: SequenceClasses) -> None:
    Z = torch.randn(34, 34, generator=gen(3))
    f = small.population(Z)
    assert f.dtype == torch.float32
    torch.testing.assert_close(f.double(), small.population(Z.double()), rtol=1e-6, atol=1e-6)


def test_population_is_the_long_sequence_limit(small: SequenceClasses) -> None:
    """Lemma 2: the average of ``X^T b_T`` over long sampled sequences approaches ``f_n``.

    ``X^T b_T`` is computed here by hand (softmax over the contextual positions, then a histogram).
    For one sequence with L = T-1 i.i.d. tokens, f^_l = A_l / B with A_l = mean_t 1[x_t=l] w_l,
    B = mean_t w_{x_t}, w = exp(z_{psi(n)}), c = sum_l p_l w_l. The delta method gives
    f^_l - f_l = mean_t psi_l(x_t) + O(1/L), psi_l(x) = (1[x=l] w_l - f_l w_x) / c, so the
    standard deviation is sigma_l = sqrt(E psi_l^2 / L) (the O(1/sqrt T) rate of Lemma 2) and the
    leading bias is |f_l Var(w) - Cov(1[x=l] w_l, w_x)| / (c^2 L). Averaging S_n sequences, we require
    |mean f^_l - f_l| <= 5 sigma_l / sqrt(S_n) + 2 bias_l for every token (5 sd: union bound over 68
    tokens < 4e-5). At T = 20000, S = 32 the tolerance is < 1e-2 (0.006 here), and the unweighted
    P(l|n) misses by far more.
    """
    T, S = 20_000, 32
    Z = torch.randn(34, 34, generator=gen(11), dtype=F64)
    x, n = small.sample(S, T, gen(12))
    ctx, q = x[:, :-1], x[:, -1]
    b = torch.softmax(Z[q[:, None], ctx], dim=-1)  # (S, T-1): masked attention of the query
    f_hat = torch.zeros(S, 34, dtype=F64).scatter_add_(1, ctx, b)  # X^T b_T
    f = small.population(Z)
    L = T - 1
    for k in range(2):
        rows = f_hat[n == k]
        assert rows.shape[0] >= 4
        p, w = small.probs[k], torch.exp(Z[small.query[k]])
        c = (p * w).sum()
        fk = p * w / c
        e_psi2 = (p * w**2 - 2 * fk * w * p * w + fk**2 * (p * w**2).sum()) / c**2
        sigma = torch.sqrt(e_psi2 / L)
        var_w = (p * w**2).sum() - c**2
        cov = p * w**2 - p * w * c
        bias = (fk * var_w - cov).abs() / (c**2 * L)
        tol = 5 * sigma / math.sqrt(rows.shape[0]) + 2 * bias
        err = (rows.mean(0) - f[k]).abs()
        assert (err <= tol).all(), (k, (err / tol).max())
        assert tol.max() < 1e-2
        assert (rows.mean(0) - small.probs[k]).abs().max() > 10 * tol.max(), "test has no power"


def test_attended_with_counts_is_exact() -> None:
    """attended(z, counts) equals X^T softmax(X z) for one sequence."""
    ctx = torch.tensor([3, 1, 3, 0, 3, 1])
    z = torch.randn(5, generator=gen(4), dtype=F64)
    counts = torch.bincount(ctx, minlength=5).double()
    b = torch.softmax(z[ctx], dim=0)
    f = torch.zeros(5, dtype=F64).index_add_(0, ctx, b)
    torch.testing.assert_close(attended(z, counts), f, rtol=1e-15, atol=1e-15)
    assert attended(z, counts)[[2, 4]].eq(0).all()


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "param"),
    [
        (dict(M=1), "M"),
        (dict(M=6.0), "M"),
        (dict(probs=torch.tensor([[0.75, 0.5, -0.25, 0, 0, 0], [0, 0.25, 0.75, 0, 0, 0]], dtype=F64)),
         "probs"),
        (dict(probs=torch.tensor([[0.5, 0.4, 0, 0, 0, 0], [0, 0.25, 0.75, 0, 0, 0]], dtype=F64)), "probs"),
        (dict(probs=torch.tensor([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0]], dtype=torch.long)), "probs"),
        (dict(probs=torch.tensor([[0.5, 0.5, 0, 0, 0], [0, 0.25, 0.75, 0, 0]], dtype=F64)), "probs"),
        (dict(probs=torch.tensor([[0.5, 0.5, 0, 0, 0, float("nan")], [0, 0.25, 0.75, 0, 0, 0]], dtype=F64)),
         "probs"),
        (dict(probs=torch.tensor([[0.5, 0, 0, 0, 0.5, 0], [0, 0.25, 0.75, 0, 0, 0]], dtype=F64)), "probs"),
        (dict(query=torch.tensor([4, 6])), "query"),
        (dict(query=torch.tensor([-1, 5])), "query"),
        (dict(query=torch.tensor([4.0, 5.0])), "query"),
        (dict(query=[4, 5]), "query"),
        (dict(query=torch.tensor([[4, 5]])), "query"),
        (dict(query=torch.tensor([4, 5, 5])), "next"),
        (dict(next=torch.tensor([0, 6])), "next"),
        (dict(next=torch.tensor([1, 1])), "next"),
    ],
)
def test_sequence_classes_rejects(overrides: dict, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        SequenceClasses(**tiny(**overrides))


def test_tiny_is_valid() -> None:
    assert SequenceClasses(**tiny()).K == 2


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        (dict(num_query=0), "num_query"),
        (dict(num_query=1.5), "num_query"),
        (dict(next_per_query=0), "next_per_query"),
        (dict(num_common=-1), "num_common"),
        (dict(num_distinct=-2), "num_distinct"),
        (dict(num_common=0, num_distinct=0), "num_common"),
        (dict(common_weight=0.0), "common_weight"),
        (dict(common_weight=float("nan")), "common_weight"),
        (dict(distinct_min=-0.1), "distinct_min"),
        (dict(distinct_max=0.05), "distinct_max"),
        (dict(distinct_max=float("nan")), "distinct_max"),
    ],
)
def test_sequence_classes_factory_rejects(kwargs: dict, param: str) -> None:
    args = dict(num_query=2, next_per_query=1, num_common=3, num_distinct=3) | kwargs
    with pytest.raises(ValueError, match=names(param)):
        sequence_classes(**args)


@pytest.mark.parametrize(("batch", "T", "param"), [(0, 5, "batch"), (-3, 5, "batch"), (2.0, 5, "batch"),
                                                   (4, 1, "T"), (4, 0, "T"), (4, True, "T")])
def test_sample_rejects(small: SequenceClasses, batch, T, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        small.sample(batch, T, gen(0))


@pytest.mark.parametrize(
    "Z",
    [torch.zeros(34, 33, dtype=F64), torch.zeros(33, 33, dtype=F64), torch.zeros(34, dtype=F64),
     torch.zeros(34, 34, dtype=torch.long), torch.full((34, 34), float("inf"), dtype=F64),
     np.zeros((34, 34))],
    ids=["wide", "small", "1d", "long", "inf", "numpy"],
)
def test_population_rejects(small: SequenceClasses, Z) -> None:
    with pytest.raises(ValueError, match=names("Z")):
        small.population(Z)


@pytest.mark.parametrize("n", [-1, 2, 0.0])
def test_distinct_rejects(small: SequenceClasses, n) -> None:
    with pytest.raises(ValueError, match=names("n")):
        small.distinct(n)
