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
    torch.testing.assert_close(h, per.mean(-1), rtol=0, atol=1e-15)
    assert attention_entropy(f[1, 2], small).item() == h[1, 2].item()
    assert ((per >= 0) & (per <= LN10 + 1e-12)).all()


def test_distinct_attention(small: SequenceClasses) -> None:
    f = small.population(torch.randn(34, 34, generator=gen(2), dtype=F64))
    p = distinct_attention(f, small)
    assert p.shape == (2, 34)
    torch.testing.assert_close(p.sum(-1), torch.ones(2, dtype=F64), rtol=0, atol=1e-14)
    assert torch.equal(p > 0, small.distinct_mask())
    for n in range(2):
        d = small.distinct(n)
        torch.testing.assert_close(p[n, d], f[n, d] / f[n, d].sum(), rtol=0, atol=1e-15)


def test_token_mass(small: SequenceClasses) -> None:
    m = token_mass(small.population(torch.zeros(34, 34, dtype=F64)), small)
    torch.testing.assert_close(m["common"], torch.full((2,), 10 / 15.5, dtype=F64), rtol=0, atol=1e-15)
    torch.testing.assert_close(m["distinct"], torch.full((2,), 5.5 / 15.5, dtype=F64), rtol=0, atol=1e-15)
    f = small.population(torch.randn(5, 34, 34, generator=gen(3), dtype=F64))
    m = token_mass(f, small)
    assert m["common"].shape == m["distinct"].shape == (5, 2)
    torch.testing.assert_close(m["common"] + m["distinct"], torch.ones(5, 2, dtype=F64), rtol=0, atol=1e-14)


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
