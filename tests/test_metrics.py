"""scansnap.metrics: attention entropy over distinct tokens (paper Fig. 6) and token mass."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import gen, names

from scansnap.data import SequenceClasses, sequence_classes, syn_medium
from scansnap.metrics import attention_entropy, distinct_attention, token_mass

F64 = torch.float64
LN10 = math.log(10)


def ramp_entropy() -> float:
    """Entropy of linspace(0.1, 1, 10) normalized, computed with numpy (about 2.1513)."""
    p = np.linspace(0.1, 1.0, 10)
    p = p / p.sum()
    return float(-(p * np.log(p)).sum())


def test_ramp_entropy_value() -> None:
    assert abs(ramp_entropy() - 2.151281720651836) < 1e-12


def test_entropy_at_zero(small: SequenceClasses) -> None:
    f = small.population(torch.zeros(34, 34, dtype=F64))
    h = attention_entropy(f, small)
    assert h.shape == () and abs(h.item() - ramp_entropy()) < 1e-12
    per = attention_entropy(f, small, per_class=True)
    assert per.shape == (2,)
    assert (per - ramp_entropy()).abs().max() < 1e-12
    # Syn-Medium: same profile per class
    med = syn_medium(3)
    assert abs(attention_entropy(med.population(torch.zeros(med.M, med.M, dtype=F64)), med).item()
               - ramp_entropy()) < 1e-12


def test_entropy_uniform_and_one_hot(small: SequenceClasses) -> None:
    f = torch.zeros(2, 34, dtype=F64)
    f[0, 10:20] = 0.1
    f[1, 20:30] = 0.1
    assert abs(attention_entropy(f, small).item() - LN10) < 1e-14
    g = torch.zeros(2, 34, dtype=F64)
    g[0, 13] = 1.0
    g[1, 29] = 1.0
    assert attention_entropy(g, small).item() == 0.0
    both = torch.stack([f[0], g[1]])
    per = attention_entropy(both, small, per_class=True)
    assert abs(per[0].item() - LN10) < 1e-14 and per[1].item() == 0.0
    assert abs(attention_entropy(both, small).item() - LN10 / 2) < 1e-14


def test_entropy_ignores_common_tokens_and_other_classes(small: SequenceClasses) -> None:
    """Only the renormalized distinct part of f_n matters: rescaling the common-token mass (and
    putting mass on another class's distinct tokens) leaves the entropy unchanged."""
    base = small.population(torch.randn(34, 34, generator=gen(0), dtype=F64))
    h = attention_entropy(base, small, per_class=True)
    common = torch.zeros(34, dtype=torch.bool)
    common[:10] = True
    for scale in (1e-6, 0.3, 50.0):
        f = base.clone()
        f[:, common] *= scale
        f[0, 25] = 0.2  # class 1's distinct token in class 0's row
        f = f / f.sum(-1, keepdim=True)
        assert (attention_entropy(f, small, per_class=True) - h).abs().max() < 1e-13
    # ... while changing the distinct profile does change it
    f = base.clone()
    f[0, 10] *= 5
    assert abs(attention_entropy(f, small, per_class=True)[0] - h[0]) > 1e-3


def test_entropy_batched(small: SequenceClasses) -> None:
    Z = torch.randn(3, 4, 34, 34, generator=gen(1), dtype=F64)
    f = small.population(Z)
    h = attention_entropy(f, small)
    per = attention_entropy(f, small, per_class=True)
    assert h.shape == (3, 4) and per.shape == (3, 4, 2)
    torch.testing.assert_close(h, per.mean(-1), rtol=1e-15, atol=1e-15)
    assert attention_entropy(f[1, 2], small).item() == h[1, 2].item()
    assert ((per >= 0) & (per <= LN10 + 1e-12)).all()


def test_distinct_attention(small: SequenceClasses) -> None:
    f = small.population(torch.randn(34, 34, generator=gen(2), dtype=F64))
    p = distinct_attention(f, small)
    assert p.shape == (2, 34)
    torch.testing.assert_close(p.sum(-1), torch.ones(2, dtype=F64), rtol=1e-14, atol=1e-14)
    assert torch.equal(p > 0, small.distinct_mask())
    for n in range(2):
        d = small.distinct(n)
        torch.testing.assert_close(p[n, d], f[n, d] / f[n, d].sum(), rtol=1e-15, atol=1e-15)


def test_token_mass(small: SequenceClasses) -> None:
    m = token_mass(small.population(torch.zeros(34, 34, dtype=F64)), small)
    torch.testing.assert_close(m["common"], torch.full((2,), 10 / 15.5, dtype=F64), rtol=1e-15, atol=1e-15)
    torch.testing.assert_close(m["distinct"], torch.full((2,), 5.5 / 15.5, dtype=F64), rtol=1e-15, atol=1e-15)
    f = small.population(torch.randn(5, 34, 34, generator=gen(3), dtype=F64))
    m = token_mass(f, small)
    assert m["common"].shape == m["distinct"].shape == (5, 2)
    torch.testing.assert_close(m["common"] + m["distinct"], torch.ones(5, 2, dtype=F64), rtol=1e-14, atol=1e-14)


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f",
    [torch.full((2, 33), 1 / 33, dtype=F64), torch.full((3, 34), 1 / 34, dtype=F64),
     torch.full((34,), 1 / 34),
     -torch.full((2, 34), 1 / 34, dtype=F64), torch.full((2, 34), 1, dtype=torch.long),
     torch.full((2, 34), float("nan"), dtype=F64), np.full((2, 34), 1 / 34)],
    ids=["M", "K", "1d", "negative", "long", "nan", "numpy"],
)
@pytest.mark.parametrize("fn", [attention_entropy, distinct_attention, token_mass])
def test_metrics_reject_bad_f(small: SequenceClasses, fn, f) -> None:
    with pytest.raises(ValueError, match=names("f")):
        fn(f, small)


def test_entropy_rejects_no_distinct_mass(small: SequenceClasses) -> None:
    f = torch.zeros(2, 34, dtype=F64)
    f[:, :10] = 0.1
    with pytest.raises(ValueError, match=names("f")):
        attention_entropy(f, small)


def test_entropy_rejects_classes_without_distinct_tokens() -> None:
    c = sequence_classes(2, 1, num_common=3, num_distinct=0)
    with pytest.raises(ValueError, match=names("classes")):
        attention_entropy(c.probs, c)


# ----------------------------------------------------------------------------------------------
# Recall against threshold (Appendix G, Figs. 11-12)
# ----------------------------------------------------------------------------------------------


def test_recall_at_zero_attention_matches_a_count(small: SequenceClasses) -> None:
    """At Z = 0, f_n on the distinct tokens is w / 15.5 with w = 0.1 .. 1: recall is a plain count."""
    from scansnap.metrics import recall_at_threshold

    f = small.population(torch.zeros(34, 34, dtype=F64))
    taus = np.linspace(0, 0.08, 33)
    r = recall_at_threshold(f, small, torch.tensor(taus))
    values = np.linspace(0.1, 1.0, 10) / 15.5
    want = [(values >= t).mean() for t in taus]
    np.testing.assert_allclose(r.numpy(), want, rtol=1e-15, atol=1e-15)
    assert r[0] == 1.0 and r[-1] == 0.0


def test_recall_uniform_and_renormalized(small: SequenceClasses) -> None:
    from scansnap.metrics import recall_at_threshold

    f = torch.zeros(2, 34, dtype=F64)
    f[:, :10] = 0.05  # half the mass on the common tokens
    f[0, 10:20] = 0.05
    f[1, 20:30] = 0.05
    taus = torch.tensor([0.0, 0.05, 0.0501, 0.1, 0.1001], dtype=F64)
    torch.testing.assert_close(recall_at_threshold(f, small, taus), torch.tensor([1.0, 1.0, 0, 0, 0], dtype=F64))
    # renormalized over the distinct tokens: each is 0.1
    torch.testing.assert_close(recall_at_threshold(f, small, taus, renormalize=True),
                               torch.tensor([1.0, 1.0, 1.0, 1.0, 0], dtype=F64))
    torch.testing.assert_close(recall_at_threshold(f, small, taus, renormalize=True),
                               recall_at_threshold(distinct_attention(f, small), small, taus))


def test_recall_batched_and_monotone(small: SequenceClasses) -> None:
    from scansnap.metrics import recall_at_threshold

    f = small.population(torch.randn(3, 4, 34, 34, generator=gen(5), dtype=F64))
    taus = torch.linspace(0, 1, 41, dtype=F64)
    r = recall_at_threshold(f, small, taus)
    assert r.shape == (3, 4, 41)
    assert (r.diff(dim=-1) <= 0).all() and (r >= 0).all() and (r <= 1).all()
    torch.testing.assert_close(r[2, 1], recall_at_threshold(f[2, 1], small, taus), rtol=0, atol=0)
    # one class with all its distinct tokens above tau, the other with none: recall 1/2
    g = torch.zeros(2, 34, dtype=F64)
    g[0, 10:20] = 0.1
    g[1, 0] = 0.5
    g[1, 20:30] = 0.05
    assert recall_at_threshold(g, small, torch.tensor([0.08], dtype=F64)).item() == 0.5


def test_recall_reach() -> None:
    from scansnap.metrics import recall_reach

    taus = np.linspace(0, 1, 11)
    line = 1 - taus  # falls below 0.25 between 0.7 and 0.8 (0.75 exactly)
    assert abs(recall_reach(line, taus, 0.25) - 0.75) < 1e-12
    curves = np.stack([line, np.where(taus < 0.35, 1.0, 0.0), np.full(11, 0.5), np.full(11, 0.1)])
    reach = recall_reach(curves, taus, 0.3)
    assert reach.shape == (4,)
    assert abs(reach[0] - 0.7) < 1e-12 and abs(reach[1] - (0.3 + 0.7 * 0.1)) < 1e-12
    assert np.isnan(reach[2]) and reach[3] == 0.0  # never below; starts below


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        (dict(recall=np.ones(3), thresholds=np.array([0.0, 0.2, 0.1]), level=0.5), "thresholds"),
        (dict(recall=np.ones(4), thresholds=np.linspace(0, 1, 3), level=0.5), "recall"),
        (dict(recall=np.ones(3), thresholds=np.linspace(0, 1, 3), level=0.0), "level"),
    ],
)
def test_recall_reach_rejects_bad_input(kwargs: dict, param: str) -> None:
    from scansnap.metrics import recall_reach

    with pytest.raises(ValueError, match=names(param)):
        recall_reach(**kwargs)


def test_recall_rejects_bad_input(small: SequenceClasses) -> None:
    from scansnap.metrics import recall_at_threshold

    f = small.population(torch.zeros(34, 34, dtype=F64))
    with pytest.raises(ValueError, match=names("thresholds")):
        recall_at_threshold(f, small, torch.zeros(2, 2, dtype=F64))
    with pytest.raises(ValueError, match=names("f")):
        recall_at_threshold(-f, small, torch.zeros(2, dtype=F64))
    c = sequence_classes(2, 1, num_common=3, num_distinct=0)
    with pytest.raises(ValueError, match=names("classes")):
        recall_at_threshold(c.probs, c, torch.zeros(2, dtype=F64))


def test_freeze_rate_is_the_relative_change_per_step() -> None:
    from scansnap.metrics import freeze_rate

    a = torch.ones(3, 2, 4, 5, dtype=torch.float64)
    a[1] *= 1.1  # +10% between steps 0 and 10
    a[2] = a[1]  # frozen between 10 and 30
    r = freeze_rate(a, [0, 10, 30])
    assert r.shape == (2, 2)
    torch.testing.assert_close(r[0], torch.full((2,), 0.1 / 10, dtype=torch.float64))
    assert (r[1] == 0).all()
    torch.testing.assert_close(freeze_rate(a, [0, 10, 30], dims=3), torch.tensor([0.01, 0.0], dtype=torch.float64))


def test_freeze_rate_rejects_bad_input() -> None:
    from scansnap.metrics import freeze_rate

    a = torch.rand(3, 4, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match=names("steps")):
        freeze_rate(a, [0, 0, 1])
    with pytest.raises(ValueError, match=names("steps")):
        freeze_rate(a, [0, 1])
    with pytest.raises(ValueError, match=names("dims")):
        freeze_rate(a, [0, 1, 2], dims=3)
    with pytest.raises(ValueError, match=names("snapshots")):
        freeze_rate(torch.zeros(2, 3, 3), [0, 1])


def test_entry_recall_equals_a_count_over_positions() -> None:
    """The paper's recall (Appendix G): the softmax value on every position of sampled sequences, tagged against
    each threshold, recomputed here position by position with the query's own softmax."""
    from scansnap.metrics import entry_recall_at_threshold

    c = syn_medium(1)
    g = gen(0)
    Z = 0.5 * torch.randn(3, c.M, c.M, dtype=torch.float64, generator=g)
    S, T = 4, 20
    x = torch.multinomial(c.probs.repeat(S, 1), T - 1, replacement=True, generator=g).reshape(S, c.K, T - 1)
    counts = torch.zeros(S, c.K, c.M, dtype=torch.float64).scatter_add_(2, x, torch.ones_like(x, dtype=torch.float64))
    taus = torch.linspace(0, 0.3, 31, dtype=torch.float64)
    got = entry_recall_at_threshold(c.population(Z), c, counts, taus)
    want = torch.zeros(3, len(taus), dtype=torch.float64)
    mask = c.distinct_mask()
    for ci in range(3):
        for s in range(S):
            for n in range(c.K):
                b = torch.softmax(Z[ci, c.query[n], x[s, n]], 0)  # the attention on each position
                d = mask[n][x[s, n]]
                want[ci] += ((b[:, None] >= taus) & d[:, None]).sum(0).double() / d.sum() / (S * c.K)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert (got[:, 0] == 1).all() and (got.diff(dim=-1) <= 0).all()
    with pytest.raises(ValueError, match=names("counts")):
        entry_recall_at_threshold(c.population(Z), c, counts[..., :-1], taus)
