"""scansnap.theory (the package): one name per quantity, every submodule re-exported, and Theorem 1's closed
forms giving the same numbers for numpy columns and for batched torch input."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest
import torch
from conftest import gen, names

from scansnap import theory
from scansnap.theory import decoder, fates
from scansnap.theory.families import random_classes

F64 = torch.float64


def test_every_submodule_name_is_reexported_once() -> None:
    seen: dict[str, object] = {}
    for info in pkgutil.iter_modules(theory.__path__):
        module = importlib.import_module(f"scansnap.theory.{info.name}")
        for name in module.__all__:
            obj = getattr(module, name)
            assert seen.setdefault(name, obj) is obj, f"{name} names two different objects"
            assert getattr(theory, name) is obj
    assert sorted(seen) == sorted(theory.__all__)
    assert theory.lemma6_h is decoder.lemma6_h  # no longer dropped for a clash


def test_retired_twins_are_gone() -> None:
    """The torch twins of Theorem 1's quantities were merged into scansnap.theory.decoder."""
    for name in ("overlap_gram", "decoder_coefficients", "xi_coefficients", "speed_gamma", "speed_gamma_at"):
        assert not hasattr(theory, name) and not hasattr(fates, name)


def _batch(seed: int, B: int = 4) -> tuple[torch.Tensor, int]:
    """Unit rows f~_n of one random family at B random logits: (B, K, M), and M."""
    classes = random_classes(gen(seed))
    Z = torch.randn(B, classes.M, classes.M, generator=gen(100 + seed), dtype=F64)
    return fates.unit_scores(classes, Z), classes.M


@pytest.mark.parametrize("seed", range(6))
def test_theorem1_closed_forms_batched_torch_equal_numpy_per_item(seed: int) -> None:
    ft, M = _batch(seed)
    E = decoder.gram(ft.mT)  # (B, K, K)
    iota, beta = decoder.theorem1_coefficients(E, M)
    xi_n = decoder.xi(E, M)
    assert E.shape == beta.shape and iota.shape == xi_n.shape == E.shape[:-1]
    for b in range(ft.shape[0]):
        E_np = decoder.gram(ft[b].T.numpy())
        np.testing.assert_allclose(E[b].numpy(), E_np, rtol=1e-15, atol=1e-15)
        iota_np, beta_np = decoder.theorem1_coefficients(E_np, M)
        np.testing.assert_allclose(iota[b].numpy(), iota_np, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(beta[b].numpy(), beta_np, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(xi_n[b].numpy(), decoder.xi(E_np, M), rtol=1e-13, atol=1e-13)
    # xi_n = sum_n' beta_nn' E_nn' (Theorem 1(a)'s definition) equals its closed form
    torch.testing.assert_close((beta * E).sum(-1), xi_n, rtol=1e-13, atol=1e-13)


def test_batch_as_long_as_the_number_of_classes() -> None:
    """B == K once made a batched solve misread its right-hand side; the coefficients stay per item."""
    ft, M = _batch(0, B=1)
    K = ft.shape[-2]
    many = ft.expand(K, -1, -1).contiguous()
    _, beta = decoder.theorem1_coefficients(decoder.gram(many.mT), M)
    _, one = decoder.theorem1_coefficients(decoder.gram(ft[0].mT), M)
    torch.testing.assert_close(beta, one.expand(K, -1, -1), rtol=1e-14, atol=1e-14)


def test_gamma_torch_equals_numpy() -> None:
    M, K, eta = 50, 4, 0.7
    t = torch.tensor([0.0, 1e-3, 2.0, 12.0, 160.0, 4e3, 4e6], dtype=F64)
    np.testing.assert_array_equal(decoder.gamma(t, M, K, eta).numpy(), decoder.gamma(t.numpy(), M, K, eta))
    h = torch.from_numpy(decoder.lemma6_h(t.numpy() / K, M, eta))
    np.testing.assert_allclose(decoder.gamma_of_h(h, M).numpy(), decoder.gamma_of_h(h.numpy(), M), rtol=1e-15)
    assert float(decoder.gamma(1e-3, M, K, eta)) == pytest.approx(eta * 1e-3 / K, rel=1e-3)  # Theorem 1(b), early


def test_bad_input_names_the_parameter() -> None:
    ft, M = _batch(1, B=2)
    with pytest.raises(ValueError, match=names("F")):
        decoder.gram(2 * ft.mT)  # columns not unit
    with pytest.raises(ValueError, match=names("E")):
        decoder.xi(torch.ones(2, 3, 3, dtype=F64), M)  # non-zero diagonal
    with pytest.raises(ValueError, match=names("E")):
        decoder.theorem1_coefficients(torch.tensor([[0.0, 1.5], [1.5, 0.0]], dtype=F64), M)  # I + E indefinite
    with pytest.raises(ValueError, match=names("M")):
        decoder.theorem1_coefficients(decoder.gram(ft.mT), 1)
    with pytest.raises(ValueError, match=names("h")):
        decoder.gamma_of_h(torch.tensor([-1.0], dtype=F64), 10)
    with pytest.raises(ValueError, match=names("s")):
        decoder.gamma(torch.tensor([-1.0], dtype=F64), 10, 2, 1.0)
