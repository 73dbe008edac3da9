"""The Y/Z reparameterized 1-layer transformer (paper Sec. 3.1, Eqn 1-2), batched over configurations.

Orientation (see ``book/notation.md``): ``Z[c, m, l]`` is the attention logit of key token ``l``
for query token ``m``; ``Y[c, l, j]`` is the decoder weight from attended token ``l`` to output
token ``j``, so the logits are ``Y^T f~`` with ``f~ = f / ||f||_2`` and ``f = X^T b_T`` the
attention-weighted histogram of the contextual tokens (the query itself is masked out).

A leading axis of size ``C`` stacks independent configurations (learning-rate pairs, seeds): the
summed loss of all configurations has, for each of them, exactly that configuration's gradient,
so one backward pass trains all ``C``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from scansnap._checks import check_choice, check_int, check_tensor
from scansnap.data import attended

__all__ = ["INITS", "YZModel", "cross_entropy", "init_params", "token_counts"]

INITS = ("zero", "uniform")


def init_params(
    M: int, init: str = "zero", generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64
) -> tuple[torch.Tensor, torch.Tensor]:
    """Initial ``(Y, Z)``, each ``(M, M)``.

    ``"zero"``: ``Y(0) = Z(0) = 0`` (the theory's setting). ``"uniform"``: every entry uniform in
    ``[-1/sqrt(M), 1/sqrt(M)]``, the default of a torch ``Linear(M, M)`` layer (the paper's Fig. 6
    runs); ``Y`` is drawn before ``Z`` from ``generator``.
    """
    check_int("M", M, low=2)
    check_choice("init", init, INITS)
    if init == "zero":
        return torch.zeros(M, M, dtype=dtype), torch.zeros(M, M, dtype=dtype)
    bound = 1.0 / math.sqrt(M)
    Y = (torch.rand(M, M, generator=generator, dtype=dtype) * 2 - 1) * bound
    Z = (torch.rand(M, M, generator=generator, dtype=dtype) * 2 - 1) * bound
    return Y, Z


def token_counts(ctx: torch.Tensor, M: int) -> torch.Tensor:
    """Per-sequence token histogram ``1^T X``: ``ctx`` ``(..., L)`` long -> ``(..., M)`` float64 counts."""
    check_tensor("ctx", ctx, dtype=torch.long, low=0, high=M - 1)
    counts = torch.zeros(*ctx.shape[:-1], M, dtype=torch.float64)
    return counts.scatter_add_(-1, ctx, torch.ones(ctx.shape, dtype=torch.float64))


class YZModel(nn.Module):
    """``C`` independent Y/Z models with parameters ``Y`` and ``Z``, each ``(C, M, M)``.

    Args:
        M: vocabulary size.
        configs: number ``C`` of stacked configurations.
        init: ``"zero"`` or ``"uniform"`` (see :func:`init_params`); each configuration draws its own.
        generator: random source for ``"uniform"``.
        dtype: parameter dtype (float64 by default: the book checks identities to 1e-10).
    """

    def __init__(
        self,
        M: int,
        configs: int = 1,
        init: str = "zero",
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        super().__init__()
        check_int("configs", configs, low=1)
        pairs = [init_params(M, init, generator, dtype) for _ in range(configs)]
        self.M = M
        self.Y = nn.Parameter(torch.stack([p[0] for p in pairs]))
        self.Z = nn.Parameter(torch.stack([p[1] for p in pairs]))

    @classmethod
    def from_params(cls, Y: torch.Tensor, Z: torch.Tensor) -> YZModel:
        """A model holding copies of ``Y`` and ``Z``, each ``(C, M, M)``."""
        check_tensor("Y", Y, shape=(-1, -1, -1), floating=True)
        C, M, _ = Y.shape
        check_tensor("Y", Y, shape=(C, M, M))
        check_tensor("Z", Z, shape=(C, M, M), dtype=Y.dtype)
        model = cls(M, configs=C, init="zero", dtype=Y.dtype)
        with torch.no_grad():
            model.Y.copy_(Y)
            model.Z.copy_(Z)
        return model

    @property
    def configs(self) -> int:
        """Number ``C`` of stacked configurations."""
        return int(self.Y.shape[0])

    def _check_tokens(self, name: str, t: torch.Tensor) -> None:
        check_tensor(name, t, dtype=torch.long, low=0, high=self.M - 1)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """Self-masked softmax attention of the query ``x[..., -1]`` over the contextual tokens.

        Args:
            x: ``(B, T)`` long, shared by all configurations, or ``(C, B, T)``, one batch each.

        Returns:
            ``b``: ``(C, B, T-1)``; ``b[c, i, t] = softmax_t Z[c, x_T, x_t]``.
        """
        x = self._batched(x)
        C = self.configs
        rows = self.Z[torch.arange(C)[:, None], x[..., -1]]  # (C, B, M): row z_{x_T} of each sample
        return torch.softmax(rows.gather(-1, x[..., :-1]), dim=-1)

    def attended(self, query: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """``f = X^T b_T`` from token weights, without building ``X``.

        Args:
            query: ``(B,)`` or ``(C, B)`` long query tokens.
            weights: ``(B, M)`` or ``(C, B, M)`` token counts of the contextual tokens (exact
                ``X^T b_T``) or probabilities ``P(l | n)`` (the Lemma 2 limit).

        Returns:
            ``f``: ``(C, B, M)``, non-negative, rows sum to 1.
        """
        self._check_tokens("query", query)
        rows = self.Z[torch.arange(self.configs)[:, None], query.expand(self.configs, -1)]
        return attended(rows, weights.to(rows.dtype))

    def decode(self, f: torch.Tensor) -> torch.Tensor:
        """Logits ``Y^T f~`` with ``f~ = f / ||f||_2``: ``f`` ``(C, B, M)`` -> ``(C, B, M)``."""
        return torch.bmm(f / f.norm(dim=-1, keepdim=True), self.Y)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(C, B, M)`` and attention ``(C, B, T-1)`` for sequences ``x`` ``(B, T)`` or ``(C, B, T)``."""
        x = self._batched(x)
        b = self.attention(x)
        f = torch.zeros(b.shape[:-1] + (self.M,), dtype=b.dtype).scatter_add(-1, x[..., :-1], b)
        return self.decode(f), b

    def _batched(self, x: torch.Tensor) -> torch.Tensor:
        self._check_tokens("x", x)
        if x.ndim == 2:
            x = x.expand(self.configs, -1, -1)
        if x.ndim != 3 or x.shape[0] != self.configs:
            raise ValueError(f"x: must have shape (B, T) or ({self.configs}, B, T); got {tuple(x.shape)}")
        if x.shape[-1] < 2:
            raise ValueError(f"x: sequence length T must be >= 2 (contextual tokens plus the query); got {x.shape[-1]}")
        return x


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-configuration mean cross-entropy (the loss ``-J``, batch mean).

    Args:
        logits: ``(C, B, M)``.
        target: ``(B,)`` or ``(C, B)`` long vocabulary ids of the next tokens.

    Returns:
        ``(C,)``.
    """
    check_tensor("logits", logits, shape=(-1, -1, -1), floating=True)
    check_tensor("target", target, dtype=torch.long, low=0, high=logits.shape[-1] - 1)
    if target.shape not in (logits.shape[1:2], logits.shape[:2]):
        raise ValueError(f"target: must have shape (B,) or (C, B) = {tuple(logits.shape[:2])}; "
                         f"got {tuple(target.shape)}")
    logp = torch.log_softmax(logits, dim=-1)
    target = target.expand(logits.shape[:-1])
    return -logp.gather(-1, target[..., None]).squeeze(-1).mean(dim=-1)
