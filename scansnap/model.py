"""The Y/Z reparameterized 1-layer transformer (paper Sec. 3.1, Eqn 1-2), batched over configurations.

Orientation (see ``book/notation.md``): ``Z[c, m, l]`` is the attention logit of key token ``l``
for query token ``m``; ``Y[c, l, j]`` is the decoder weight from attended token ``l`` to output
token ``j``, so the logits are ``Y^T f~`` with ``f~ = f / ||f||_2`` and ``f = X^T b_T`` the
attention-weighted histogram of the contextual tokens (the query itself is masked out).

A leading axis of size ``C`` stacks independent configurations (learning-rate pairs, seeds): the
summed loss of all configurations has, for each of them, exactly that configuration's gradient,
so one backward pass trains all ``C``. :meth:`YZModel.loss_and_gradients` gives the same gradients
in closed form (Lemma 1), without autograd: the trainer's path; ``forward`` stays the reference.
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
    """Per-sequence token histogram ``1^T X``: ``ctx`` ``(..., L)`` long -> ``(..., M)`` float64 counts (Sec. 3.1:
    the attended ``f = X^T b_T`` depends on the contextual tokens only through them)."""
    check_tensor("ctx", ctx, dtype=torch.long, low=0, high=M - 1)
    counts = torch.zeros(*ctx.shape[:-1], M, dtype=torch.float64, device=ctx.device)
    return counts.scatter_add_(-1, ctx, torch.ones(ctx.shape, dtype=torch.float64, device=ctx.device))


class YZModel(nn.Module):
    """``C`` independent Y/Z models with parameters ``Y`` and ``Z``, each ``(C, M, M)``: the reparameterized
    1-layer transformer of Sec. 3.1 (Eqn 1-2), with Lemma 1's closed-form gradients.

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
        rows = self.Z[torch.arange(C, device=x.device)[:, None], x[..., -1]]  # (C, B, M): row z_{x_T} of each sample
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
        self._check_inputs(query, weights)
        rows = self.Z[torch.arange(self.configs, device=query.device)[:, None], query.expand(self.configs, -1)]
        return attended(rows, weights.to(rows.dtype))

    def decode(self, f: torch.Tensor) -> torch.Tensor:
        """Logits ``Y^T f~`` with ``f~ = f / ||f||_2``: ``f`` ``(C, B, M)`` -> ``(C, B, M)``."""
        check_tensor("f", f, shape=(self.configs, -1, self.M), floating=True)
        return torch.bmm(f / f.norm(dim=-1, keepdim=True), self.Y)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(C, B, M)`` and attention ``(C, B, T-1)`` for sequences ``x`` ``(B, T)`` or ``(C, B, T)``."""
        x = self._batched(x)
        b = self.attention(x)
        f = torch.zeros(b.shape[:-1] + (self.M,), dtype=b.dtype, device=b.device).scatter_add(-1, x[..., :-1], b)
        return self.decode(f), b

    @torch.no_grad()
    def loss_and_gradients(
        self, query: torch.Tensor, weights: torch.Tensor, target: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The loss ``-J`` (batch mean) and its gradients in ``Y`` and ``Z``, in closed form (Lemma 1).

        Equals autograd of ``cross_entropy(self.decode(self.attended(query, weights)), target)``
        (to rounding) without building a graph. This is Lemma 1 (see
        :func:`scansnap.theory.lemma1_gradients`) with the token weights ``w`` in place of the
        one-hot ``X``, since ``X^T diag(b_T) X = diag(f)``. Per sample, with query ``m`` and target
        ``n``: ``u = w * exp(z_m - max)``, ``f = u / 1^T u``, ``f~ = u / ||u||_2``,
        ``D = (softmax(Y^T f~) - e_n) / B`` and ``g = Y D``; summed over the batch,

        * ``dL/dY = sum f~ D^T``;
        * ``dL/dz_m = sum over the samples with query m of diag(f) P_perp g / ||f||_2
          = f~ * (g - f~ (f~ . g))``, with ``P_perp = I - f~ f~^T``. The ``l1`` normalization of
          ``f`` cancels (``f / ||f||_2 = f~``), and the ``-f f^T`` part of the softmax Jacobian
          drops out because ``f^T P_perp = 0``. The other rows of ``dL/dZ`` are zero.

        ``max`` bounds ``z_m`` over the keys, so ``exp`` stays in ``[0, 1]`` and nothing overflows;
        should every weighted key's term underflow, that sample is redone with the max over its
        weighted keys only (no 0/0 whatever the size of ``Z``).

        Args:
            query: ``(B,)`` or ``(C, B)`` long query tokens.
            weights: ``(B, M)`` or ``(C, B, M)`` token counts or probabilities, as in :meth:`attended`
                (every row needs a positive weight).
            target: ``(B,)`` or ``(C, B)`` long vocabulary ids of the next tokens.

        Returns:
            ``loss`` ``(C,)``, ``dL/dY`` and ``dL/dZ`` ``(C, M, M)``, for ``L = loss.sum()``: each
            configuration gets the gradient of its own loss.
        """
        self._check_batch(query, weights, target)
        C = self.configs
        Y, Z = self.Y.detach(), self.Z.detach()
        query = query.expand(C, -1)
        ft = _unit_attended(Z, query, weights.to(Z.dtype))
        logits = torch.bmm(ft, Y)
        loss, D = _cross_entropy_and_error(logits, target.expand(C, -1))
        gY = torch.bmm(ft.transpose(1, 2), D)
        gZ = _sum_rows_by_query(_attention_gradient(ft, torch.bmm(D, Y.transpose(1, 2))), query, self.M)
        return loss, gY, gZ

    def _check_batch(self, query: torch.Tensor, weights: torch.Tensor, target: torch.Tensor) -> None:
        """``query`` ``(B,)``/``(C, B)``, ``weights`` ``(B, M)``/``(C, B, M)``, ``target`` like ``query``."""
        B = self._check_inputs(query, weights)
        check_tensor("target", target, dtype=torch.long, low=0, high=self.M - 1)
        if target.shape not in ((B,), (self.configs, B)):
            raise ValueError(f"target: must have shape ({B},) or ({self.configs}, {B}); got {tuple(target.shape)}")

    def _check_inputs(self, query: torch.Tensor, weights: torch.Tensor) -> int:
        """``query`` ``(B,)``/``(C, B)`` and ``weights`` ``(B, M)``/``(C, B, M)``; returns ``B``."""
        self._check_tokens("query", query)
        C, M = self.configs, self.M
        B = query.shape[-1] if query.ndim in (1, 2) else -1
        if query.shape not in ((B,), (C, B)):
            raise ValueError(f"query: must have shape (B,) or ({C}, B); got {tuple(query.shape)}")
        if not (isinstance(weights, torch.Tensor) and weights.is_floating_point()):  # no pass over the values
            raise ValueError(f"weights: must be a floating-point torch.Tensor; got {weights!r:.60}")
        if weights.shape not in ((B, M), (C, B, M)):
            raise ValueError(f"weights: must have shape ({B}, {M}) or ({C}, {B}, {M}); got {tuple(weights.shape)}")
        return B

    def _batched(self, x: torch.Tensor) -> torch.Tensor:
        self._check_tokens("x", x)
        if x.ndim == 2:
            x = x.expand(self.configs, -1, -1)
        if x.ndim != 3 or x.shape[0] != self.configs:
            raise ValueError(f"x: must have shape (B, T) or ({self.configs}, B, T); got {tuple(x.shape)}")
        if x.shape[-1] < 2:
            raise ValueError(f"x: sequence length T must be >= 2 (contextual tokens plus the query); got {x.shape[-1]}")
        return x


def _unit_attended(Z: torch.Tensor, query: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``f~ = u / ||u||_2`` with ``u = w * exp(z_m - shift)``, ``z_m`` the row of each sample's query.

    The shift is first the max of ``z_m`` over all keys (one per row of ``Z``: cheap). Samples whose
    weighted keys all lie so far below it that ``u`` underflows are redone with the max over their
    weighted keys (then the largest weighted key's term is its weight).

    Args:
        Z: ``(C, M, M)``; query: ``(C, B)`` long; weights: ``(B, M)`` or ``(C, B, M)``, non-negative.

    Returns:
        ``(C, B, M)``.
    """
    c = torch.arange(Z.shape[0], device=Z.device)[:, None]
    u = _weighted_exp(Z[c, query], weights, Z.amax(-1)[c, query, None])
    norm = torch.linalg.vector_norm(u, dim=-1, keepdim=True)
    low = norm.squeeze(-1) < torch.finfo(u.dtype).tiny ** 0.5
    if low.any():
        rows, w = Z[c, query][low], weights.expand(u.shape)[low]
        u[low] = _weighted_exp(rows, w, torch.where(w > 0, rows, -torch.inf).amax(-1, keepdim=True))
        norm = torch.linalg.vector_norm(u, dim=-1, keepdim=True)
    return u.div_(norm)


def _weighted_exp(rows: torch.Tensor, weights: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """``w * exp(min(z - shift, 0))``, overwriting ``rows``; the clamp keeps keys of weight 0 finite."""
    return rows.sub_(shift).clamp_(max=0).exp_().mul_(weights)


def _cross_entropy_and_error(logits: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch-mean cross-entropy ``(C,)`` and its gradient ``D = (softmax - e_n) / B`` ``(C, B, M)``.

    Overwrites ``logits`` (``(C, B, M)``; ``target`` ``(C, B)`` long).
    """
    B = logits.shape[1]
    shifted = logits.sub_(logits.amax(-1, keepdim=True))
    picked = shifted.gather(-1, target[..., None])  # logit of the target, minus the max
    e = shifted.exp_()
    total = e.sum(-1, keepdim=True)  # >= 1
    loss = (total.log() - picked).squeeze(-1).mean(-1)
    D = e.div_(total * B).scatter_add_(-1, target[..., None], torch.full_like(picked, -1.0 / B))
    return loss, D


def _attention_gradient(ft: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """``dL/dz_m`` of every sample, ``f~ * (g - f~ (f~ . g))`` ``(C, B, M)``; overwrites ``g``."""
    along = (ft * g).sum(-1, keepdim=True)
    return g.addcmul_(ft, along, value=-1.0).mul_(ft)


def _sum_rows_by_query(rows: torch.Tensor, query: torch.Tensor, M: int) -> torch.Tensor:
    """``(C, M, M)``: row ``m`` of configuration ``c`` sums ``rows[c, i]`` over the samples with query ``m``."""
    C = rows.shape[0]
    out = torch.zeros(C * M, M, dtype=rows.dtype, device=rows.device)
    out.index_add_(0, (torch.arange(C, device=rows.device)[:, None] * M + query).flatten(), rows.flatten(0, 1))
    return out.view(C, M, M)


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-configuration mean cross-entropy (the loss ``-J`` of Eqn 2, batch mean).

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
