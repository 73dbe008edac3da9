"""scansnap.positions: data whose positions carry information, and the positional bias in the limit."""

from __future__ import annotations

import pytest
import torch
from conftest import gen, names

from scansnap.data import syn_medium
from scansnap.model import token_counts
from scansnap.positions import PositionalClasses, near_count, shuffled, split_by_position

F64 = torch.float64


def zoned(near: float = 0.25) -> PositionalClasses:
    classes = syn_medium(1)
    mask = torch.zeros(classes.K, classes.M, dtype=torch.bool)
    for n in range(classes.K):
        mask[n, classes.distinct(n)[:5]] = True
    return split_by_position(classes, mask, near)


def test_zones_and_mixture() -> None:
    pc = zoned()
    assert torch.allclose(pc.probs, 0.25 * pc.near_probs + 0.75 * pc.far_probs)
    assert ((pc.near_probs > 0) & (pc.far_probs > 0)).sum() == 0  # tokens segregated by zone
    assert near_count(33, 0.25) == 8 and near_count(5, 0.01) == 1 and near_count(5, 0.99) == 3


def test_sample_puts_near_tokens_last() -> None:
    pc = zoned()
    x, n = pc.sample(64, 33, gen(0))
    assert x.shape == (64, 33) and torch.equal(x[:, -1], pc.query[n])
    near_ok = pc.near_probs[n[:, None], x[:, 24:32]] > 0
    far_ok = pc.far_probs[n[:, None], x[:, :24]] > 0
    assert near_ok.all() and far_ok.all()


def test_shuffled_keeps_counts_and_mixes_positions() -> None:
    pc = zoned()
    x, n = pc.sample(64, 33, gen(1))
    xs, ns = shuffled(pc).sample(64, 33, gen(1))
    assert torch.equal(n, ns)
    assert torch.equal(token_counts(x[:, :-1], pc.M), token_counts(xs[:, :-1], pc.M))
    assert not (pc.near_probs[ns[:, None], xs[:, 24:32]] > 0).all()


def test_bias_is_an_additive_prior_for_segregated_tokens() -> None:
    """f(Z, bias) equals f(Z + log A_zone(l), no bias) with the zone masses A of the bias."""
    pc = zoned()
    g = gen(2)
    Z = torch.randn(pc.M, pc.M, generator=g, dtype=F64)
    bias = torch.randn(32, generator=g, dtype=F64)
    a_near, a_far = bias[24:].exp().sum(), bias[:24].exp().sum()
    shift = torch.where(pc.near_probs.sum(0) > 0, torch.log(a_near / 0.25), torch.log(a_far / 0.75))
    want = pc.population(Z + shift)  # base limit, probs = mixture
    assert (pc.population(Z, bias) - want).abs().max() <= 1e-12
    assert (shuffled(pc).population(Z, bias) - pc.population(Z)).abs().max() == 0


def test_equal_zones_average_the_bias_out() -> None:
    classes = syn_medium(1)
    pc = PositionalClasses(M=classes.M, query=classes.query, next=classes.next, probs=classes.probs,
                           near_probs=classes.probs, far_probs=classes.probs, near=0.25)
    Z = torch.randn(classes.M, classes.M, generator=gen(3), dtype=F64)
    bias = torch.randn(32, generator=gen(4), dtype=F64)
    assert (pc.population(Z, bias) - classes.population(Z)).abs().max() <= 1e-15


def test_reject() -> None:
    classes = syn_medium(1)
    with pytest.raises(ValueError, match=names("near_mask")):
        split_by_position(classes, torch.zeros(classes.K, classes.M, dtype=torch.bool), 0.2)
    with pytest.raises(ValueError, match=names("near")):
        PositionalClasses(M=classes.M, query=classes.query, next=classes.next, probs=classes.probs,
                          near_probs=classes.probs, far_probs=classes.probs, near=1.5)
    with pytest.raises(ValueError, match=names("probs")):
        pc = zoned()
        PositionalClasses(M=pc.M, query=pc.query, next=pc.next, probs=pc.far_probs, near_probs=pc.near_probs,
                          far_probs=pc.far_probs, near=0.25)
