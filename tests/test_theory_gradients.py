"""scansnap.theory.gradients: Lemma 1's closed-form gradients against autograd."""

from __future__ import annotations

import pytest
import torch
from conftest import gen, names

from scansnap.theory import autograd_gradients, lemma1_gradients

F64 = torch.float64
M, T = 13, 40
SEEDS = range(10)


def instance(seed: int, B: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random float64 ``(Y, Z, x, target)``: Y, Z ~ N(0, 1); tokens uniform; x is (B, T)."""
    g = gen(seed)
    Y = torch.randn(M, M, generator=g, dtype=F64)
    Z = torch.randn(M, M, generator=g, dtype=F64)
    x = torch.randint(M, (B, T), generator=g)
    target = torch.randint(M, (B,), generator=g)
    return Y, Z, x, target


def reference_J(Y: torch.Tensor, Z: torch.Tensor, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The batch-mean objective J, written from the paper's definitions with plain torch ops
    (independent of scansnap.model)."""
    total = torch.zeros((), dtype=F64)
    for i in range(x.shape[0]):
        X = torch.nn.functional.one_hot(x[i, :-1], M).to(F64)
        b = torch.softmax(X @ Z[x[i, -1]], dim=0)
        f = X.T @ b
        logits = Y.T @ (f / torch.linalg.vector_norm(f))
        total = total + logits[target[i]] - torch.logsumexp(logits, dim=0)
    return total / x.shape[0]


def autograd_reference(Y, Z, x, target) -> tuple[torch.Tensor, torch.Tensor]:
    Y = Y.clone().requires_grad_(True)
    Z = Z.clone().requires_grad_(True)
    return torch.autograd.grad(reference_J(Y, Z, x, target), (Y, Z))


@pytest.mark.parametrize("B", [1, 5])
@pytest.mark.parametrize("seed", SEEDS)
def test_lemma1_equals_autograd(seed: int, B: int) -> None:
    """Closed form vs autograd of J (= -cross_entropy), float64: max abs error < 1e-10
    (observed ~1e-15)."""
    Y, Z, x, target = instance(seed, B)
    dY, dZ = lemma1_gradients(Y, Z, x, target)
    rY, rZ = autograd_reference(Y, Z, x, target)
    err = max((dY - rY).abs().max().item(), (dZ - rZ).abs().max().item())
    assert err < 1e-10, err
    assert rZ.abs().max() > 1e-3 and rY.abs().max() > 1e-3, "a vacuous instance"
    # the package's own autograd path (through YZModel) agrees as well
    aY, aZ = autograd_gradients(Y, Z, x, target)
    assert max((aY - rY).abs().max().item(), (aZ - rZ).abs().max().item()) < 1e-10


def test_lemma1_scalar_target_and_1d_x() -> None:
    Y, Z, x, _ = instance(7, 1)
    dY, dZ = lemma1_gradients(Y, Z, x[0], 4)
    rY, rZ = autograd_reference(Y, Z, x, torch.tensor([4]))
    assert (dY - rY).abs().max() < 1e-10 and (dZ - rZ).abs().max() < 1e-10
    dY2, dZ2 = lemma1_gradients(Y, Z, x, torch.tensor([4]))
    assert torch.equal(dY, dY2) and torch.equal(dZ, dZ2)


def test_lemma1_batch_is_the_mean() -> None:
    Y, Z, x, target = instance(8, 4)
    dY, dZ = lemma1_gradients(Y, Z, x, target)
    parts = [lemma1_gradients(Y, Z, x[i], int(target[i])) for i in range(4)]
    torch.testing.assert_close(dY, sum(p[0] for p in parts) / 4, rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(dZ, sum(p[1] for p in parts) / 4, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("seed", SEEDS)
def test_lemma1_invariants(seed: int) -> None:
    """Rows of dJ/dY sum to 0 (1^T (e_n - alpha) = 0); dJ/dZ lives in the query rows and each of
    its rows sums to 0 (f^T P_perp = 0)."""
    Y, Z, x, target = instance(seed, 5)
    dY, dZ = lemma1_gradients(Y, Z, x, target)
    assert dY.sum(1).abs().max() < 1e-13
    queries = torch.zeros(M, dtype=torch.bool)
    queries[x[:, -1]] = True
    assert torch.equal(dZ[~queries], torch.zeros_like(dZ[~queries]))
    assert dZ[queries].abs().amax(1).min() > 1e-6, "every query row moves"
    assert dZ.sum(1).abs().max() < 1e-13


def test_lemma1_row_form() -> None:
    """Eqn 4: for one sequence, dJ/dz_m = diag(f) P_perp Y (e_n - alpha) / ||f||."""
    Y, Z, x, target = instance(9, 1)
    dY, dZ = lemma1_gradients(Y, Z, x, target)
    X = torch.nn.functional.one_hot(x[0, :-1], M).to(F64)
    m, n = int(x[0, -1]), int(target[0])
    b = torch.softmax(X @ Z[m], 0)
    f = X.T @ b
    ft = f / f.norm()
    alpha = torch.softmax(Y.T @ ft, 0)
    err = torch.nn.functional.one_hot(torch.tensor(n), M).to(F64) - alpha
    P = torch.eye(M, dtype=F64) - torch.outer(ft, ft)
    torch.testing.assert_close(dZ[m], torch.diag(f) @ P @ Y @ err / f.norm(), rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(dY, torch.outer(ft, err), rtol=1e-15, atol=1e-15)


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


def _bad_cases():
    Y, Z, x, target = instance(0, 3)
    return [
        ((Y[:, :-1], Z, x, target), "Y"),
        ((Y[None], Z, x, target), "Y"),
        ((Y.long(), Z.long(), x, target), "Y"),
        ((Y, Z[:-1, :-1], x, target), "Z"),
        ((Y, Z.float(), x, target), "Z"),
        ((Y, Z, x.double(), target), "x"),
        ((Y, Z, x[:, :1], target), "x"),
        ((Y, Z, x[None], target), "x"),
        ((Y, Z, x.index_fill(1, torch.tensor([3]), M), target), "x"),
        ((Y, Z, x.index_fill(1, torch.tensor([T - 1]), -1), target), "x"),
        ((Y, Z, x, target[:2]), "target"),
        ((Y, Z, x, torch.tensor([0, 1, M])), "target"),
        ((Y, Z, x, target.double()), "target"),
        ((Y, Z, x, M), "target"),
        ((Y, Z, x, -1), "target"),
        ((Y, Z, x, 1.0), "target"),
    ]


@pytest.mark.parametrize(("args", "param"), _bad_cases())
def test_lemma1_rejects(args, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        lemma1_gradients(*args)
