"""scansnap.heads: what several heads pick, and C22's prediction per head."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import names

from scansnap.data import syn_medium
from scansnap.heads import head_picks, jaccard

F64 = torch.float64


def test_jaccard() -> None:
    assert jaccard(frozenset({1, 2}), frozenset({2, 3})) == pytest.approx(1 / 3)
    assert jaccard(frozenset(), frozenset()) == 1.0 and jaccard(frozenset({1}), frozenset({2})) == 0.0


def test_picks_follow_the_attention_and_the_prediction_the_initial_logits() -> None:
    classes = syn_medium(1)
    M, K = classes.M, classes.K
    Z0 = torch.zeros(2, M, M, dtype=F64)
    m = int(classes.query[0])
    d0, d1 = classes.distinct(0), classes.distinct(1)
    Z0[1, m, d0[0]] = 5.0  # head 1 starts with the rarest distinct token of class 0 far ahead
    f = torch.full((2, K, M), 1e-3, dtype=F64)
    f[0, 0, d0[-1]] = f[1, 0, d0[0]] = 1.0  # each head ends on its own token for class 0
    f[:, 1, d1[-1]] = 1.0  # and on the same token for class 1
    picks = head_picks(f, Z0, classes)
    assert picks.sets[0] == (frozenset({int(d0[-1])}), frozenset({int(d0[0])}))
    assert picks.winners.tolist() == [[int(d0[-1]), int(d0[0])], [int(d1[-1])] * 2]
    assert np.array_equal(picks.winners, picks.predicted)  # frequency wins without a prior, the prior with it
    assert picks.jaccard == pytest.approx(0.5) and picks.coverage == pytest.approx(1.5)


def test_reject_shapes() -> None:
    classes = syn_medium(1)
    with pytest.raises(ValueError, match=names("Z0")):
        head_picks(torch.ones(2, classes.K, classes.M, dtype=F64), torch.zeros(3, classes.M, classes.M), classes)
