"""scansnap.theory.overlaps: Lemma 3's modification and its Lemma-17 bound; random and star families."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import names

from scansnap.theory import decoder as dec
from scansnap.theory import overlaps as ov


@pytest.mark.parametrize("e", [0.1, 0.5, 0.9])
def test_two_classes_lemma17_is_exact(e: float) -> None:
    E = np.array([[0.0, e], [e, 0.0]])
    assert ov.modification_norm(E) == pytest.approx(e / (1 - e), rel=1e-12)
    assert ov.lemma17_bound(E) == pytest.approx(e / (1 - e), rel=1e-12)


def test_bound_says_nothing_past_one_but_the_modification_is_finite() -> None:
    K, rho = 6, 0.5  # equal overlaps: eigenvalues rho (K - 1) = 2.5 and -rho
    E = rho * (np.ones((K, K)) - np.eye(K))
    assert ov.lemma17_bound(E) == math.inf
    expect = max(rho * (K - 1) / (1 + rho * (K - 1)), rho / (1 - rho))
    assert ov.modification_norm(E) == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_random_inputs_are_unit_and_the_change_respects_its_bound(seed: int) -> None:
    F = ov.random_inputs(np.random.default_rng(seed))
    L, K = F.shape
    assert 2 <= K <= 8 and K + 3 <= L <= 40 and (F >= 0).all()
    np.testing.assert_allclose(np.linalg.norm(F, axis=0), 1, rtol=1e-12)
    change, bound = ov.update_change(F)
    assert change.shape == (K,) and (change <= bound * (1 + 1e-12)).all()


def test_star_family_breaks_xi_under_norm_below_one() -> None:
    F = ov.star_inputs()
    E = dec.gram(F)
    assert E[0, 1] == pytest.approx(0.001) and E[1, 2] == pytest.approx(0.3)
    assert np.linalg.norm(E, 2) < 1 and E.sum(1).max() > 1
    xi = dec.xi(E, F.shape[0] + 2 * F.shape[1])
    assert xi[0] < 0 < xi[1:].min()


def test_star_family_rejects_impossible_weights() -> None:
    with pytest.raises(ValueError, match=names("overlap, weak, link")):
        ov.star_inputs(leaves=20, overlap=0.3)
