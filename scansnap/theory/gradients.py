"""Lemma 1: the closed-form gradients of Y and Z, in the paper's one-hot form, and autograd's."""

from __future__ import annotations

import torch

from scansnap._checks import check_int, check_tensor
from scansnap.model import YZModel, cross_entropy

__all__ = ["autograd_gradients", "lemma1_gradients"]


def lemma1_gradients(
    Y: torch.Tensor, Z: torch.Tensor, x: torch.Tensor, target: int | torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lemma 1 (Eqn 3): the gradients of the objective ``J`` with respect to ``Y`` and ``Z``.

    For one sequence with contextual one-hot rows ``X`` ``(T-1, M)``, query ``m = x_T`` and target
    ``n``: ``b = softmax(X z_m)``, ``f = X^T b``, ``f~ = f / ||f||``, ``alpha = softmax(Y^T f~)``,
    ``J = e_n^T Y^T f~ - log 1^T exp(Y^T f~)``, and

    * ``dJ/dY = f~ (e_n - alpha)^T``
    * ``dJ/dZ = e_m (e_n - alpha)^T Y^T (P_perp / ||f||) X^T diag(b) X`` with ``P_perp = I - f~ f~^T``.

    A gradient-ascent step is ``Y += eta_Y dJ/dY``, ``Z += eta_Z dJ/dZ`` (SGD on the loss ``-J``).
    This is written with the one-hot matrix ``X`` exactly as the lemma states it, independently of
    :mod:`scansnap.model`, so that the two can be checked against each other.

    Args:
        Y, Z: ``(M, M)`` floating parameters (``Z[m, l]``: logit of key ``l`` for query ``m``).
        x: ``(T,)`` or ``(B, T)`` long tokens, query last, ``T >= 2``.
        target: next-token vocabulary id(s): an int or ``(B,)`` long.

    Returns:
        ``(dJ/dY, dJ/dZ)``, each ``(M, M)``; for a batch, the mean over its sequences.
    """
    check_tensor("Y", Y, shape=(-1, -1), floating=True)
    M = Y.shape[0]
    check_tensor("Y", Y, shape=(M, M))
    check_tensor("Z", Z, shape=(M, M), dtype=Y.dtype)
    check_tensor("x", x, dtype=torch.long, low=0, high=M - 1)
    if x.ndim == 1:
        x = x[None]
    if x.ndim != 2 or x.shape[1] < 2:
        raise ValueError(f"x: must have shape (T,) or (B, T) with T >= 2; got {tuple(x.shape)}")
    B = x.shape[0]
    if isinstance(target, torch.Tensor):
        n = check_tensor("target", target, dtype=torch.long, low=0, high=M - 1).reshape(-1)
        if n.shape[0] != B:
            raise ValueError(f"target: must have shape ({B},) to match x; got {tuple(target.shape)}")
    else:
        n = torch.full((B,), check_int("target", target, low=0, high=M - 1))

    X = torch.nn.functional.one_hot(x[:, :-1], M).to(Y.dtype)  # (B, T-1, M)
    m = x[:, -1]
    b = torch.softmax(torch.einsum("btl,bl->bt", X, Z[m]), dim=-1)  # (B, T-1)
    f = torch.einsum("btl,bt->bl", X, b)  # (B, M)
    norm = f.norm(dim=-1, keepdim=True)
    ft = f / norm
    alpha = torch.softmax(ft @ Y, dim=-1)  # Y^T f~, (B, M)
    err = torch.nn.functional.one_hot(n, M).to(Y.dtype) - alpha  # e_n - alpha
    dY = torch.einsum("bl,bj->lj", ft, err) / B
    g = err @ Y.T  # (Y (e_n - alpha))^T, (B, M)
    P = torch.eye(M, dtype=Y.dtype) - ft[:, :, None] * ft[:, None, :]  # (B, M, M)
    XbX = torch.einsum("btl,bt,btk->blk", X, b, X)  # X^T diag(b) X, (B, M, M)
    rows = torch.einsum("bl,blk,bkj->bj", g, P, XbX) / norm  # (B, M)
    dZ = torch.zeros(M, M, dtype=Y.dtype).index_add_(0, m, rows) / B
    return dY, dZ


def autograd_gradients(
    Y: torch.Tensor, Z: torch.Tensor, x: torch.Tensor, target: int | torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dJ/dY, dJ/dZ)`` by torch autograd through :class:`~scansnap.model.YZModel`: the reference
    that Lemma 1's closed form (:func:`lemma1_gradients`) is checked against. Same arguments."""
    x = x[None] if x.ndim == 1 else x
    n = target if isinstance(target, torch.Tensor) else torch.full((x.shape[0],), int(target))
    model = YZModel.from_params(Y[None], Z[None])
    logits, _ = model(x)
    cross_entropy(logits, n.reshape(-1)).sum().backward()
    return -model.Y.grad[0], -model.Z.grad[0]
