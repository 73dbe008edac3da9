"""Data whose positions carry information, for the positional bias of Chapter 9 (paper Sec. 7).

The paper's data are bags of tokens: contextual tokens are i.i.d. whatever their position, so a bias on the
logits of positions (:class:`~scansnap.model_options.ModelOptions`, ``positions``) cannot single out a token.
:class:`PositionalClasses` splits the ``T - 1`` contextual positions into a **far** zone and a **near** zone
(the last ``round(near * (T - 1))`` positions, next to the query) with their own distributions
``P_far(l|n)`` and ``P_near(l|n)``; ``probs`` is their mixture ``P(l|n) = near P_near + (1 - near) P_far``, the
frequency of a token in a sequence. With ``shuffled``, each sequence's tokens are permuted at random: the same
token counts, positions without information (the bag-of-tokens control).

Long sequences (Lemma 2 with a bias ``p_t``): the attended distribution tends to
``f_n(l) ~ exp(z_ml) (A_near P_near(l|n) + A_far P_far(l|n))`` with ``A_zone = sum_{t in zone} exp(p_t)``
(:meth:`PositionalClasses.population`). A token that only occurs in one zone therefore sees its logit shifted
by ``log A_zone``: the bias is an additive prior on ``z``. Shuffled, every token occurs in every zone in
proportion, the factor ``sum_t exp(p_t)`` is common to all tokens and cancels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from scansnap._checks import check_int, check_tensor
from scansnap.data import SequenceClasses, attended

__all__ = [
    "PositionalClasses",
    "margin_family",
    "near_count",
    "near_share",
    "near_winner",
    "shuffled",
    "split_by_position",
    "zone_bias_gap",
]


def near_count(T: int, near: float) -> int:
    """Number of near positions in a sequence of length ``T``: ``round(near * (T - 1))``, at least 1 and at most
    ``T - 2`` (both zones non-empty; Chapter 9's positional data)."""
    check_int("T", T, low=3)
    return min(max(round(near * (T - 1)), 1), T - 2)


@dataclass(frozen=True)
class PositionalClasses(SequenceClasses):
    """Sequence classes with a near and a far zone of positions (module docstring): data for Sec. 7's positional
    bias (claims X2, X3).

    Attributes (beyond :class:`~scansnap.data.SequenceClasses`, whose ``probs`` is the mixture):
        near_probs, far_probs: ``(K, M)`` distributions of the near and the far zone; rows sum to 1.
        near: fraction of the contextual positions in the near zone, in ``(0, 1)``.
        shuffled: permute each sequence's tokens (positions then carry no information).
    """

    near_probs: torch.Tensor
    far_probs: torch.Tensor
    near: float
    shuffled: bool = False
    positional = True  # a class attribute: the model asks for the biased limit (OptionsModel.population)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (isinstance(self.near, float) and 0 < self.near < 1):
            raise ValueError(f"near: must be a fraction in (0, 1); got {self.near!r}")
        for name in ("near_probs", "far_probs"):
            p = check_tensor(name, getattr(self, name), shape=(self.K, self.M), floating=True, low=0.0)
            if (p.sum(1) - 1).abs().max() > 1e-9:
                raise ValueError(f"{name}: every row must sum to 1")
        mix = self.near * self.near_probs + (1 - self.near) * self.far_probs
        if (mix - self.probs).abs().max() > 1e-9:
            raise ValueError("probs: must be the mixture near * near_probs + (1 - near) * far_probs")

    def sample(
        self, batch: int, T: int, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``batch`` sequences of length ``T``: far positions first, then the near ones, then the query.

        Returns ``x`` ``(batch, T)`` long and the class index ``n`` ``(batch,)``, as the base sampler.
        """
        check_int("batch", batch, low=1)
        W = near_count(T, self.near)
        n = torch.randint(self.K, (batch,), generator=generator)
        far = torch.multinomial(self.far_probs[n], T - 1 - W, replacement=True, generator=generator)
        close = torch.multinomial(self.near_probs[n], W, replacement=True, generator=generator)
        ctx = torch.cat([far, close], dim=1)
        if self.shuffled:
            ctx = ctx.gather(1, torch.rand(ctx.shape, generator=generator).argsort(dim=1))
        return torch.cat([ctx, self.query[n, None]], dim=1), n

    def population(self, Z: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        """Attention of every class with the positional bias in the long-sequence form (module docstring).

        Args:
            Z: ``(..., M, M)``.
            bias: ``(..., L)`` per-position bias, position ``L - 1`` next to the query (default: none). Ignored
                when ``shuffled`` (it cancels).

        Returns:
            ``(..., K, M)``: ``exp(z) (A_near P_near + A_far P_far)`` normalized; without a bias, ``exp(z) P``.
        """
        check_tensor("Z", Z, shape=(..., self.M, self.M), floating=True)
        if bias is None or self.shuffled:
            return super().population(Z)
        check_tensor("bias", bias, shape=(*Z.shape[:-2], -1), floating=True)
        L = bias.shape[-1]
        W = near_count(L + 1, self.near)
        e = torch.exp(bias - bias.amax(-1, keepdim=True))
        a_near, a_far = e[..., L - W:].sum(-1), e[..., : L - W].sum(-1)
        w = a_near[..., None, None] * self.near_probs.to(Z.dtype) + a_far[..., None, None] * self.far_probs.to(Z.dtype)
        return attended(Z[..., self.query, :], w)


def split_by_position(classes: SequenceClasses, near_mask: torch.Tensor, near: float) -> PositionalClasses:
    """Move some tokens of each class to the near zone: :class:`PositionalClasses` from a bag-of-tokens family
    (Chapter 9's positional data).

    Args:
        classes: the family; its ``P(l|n)`` restricted to a zone and renormalized is that zone's distribution.
        near_mask: ``(K, M)`` bool, the tokens of class ``n`` that occur only near the query (the others only
            far); every class needs tokens in both zones.
        near: fraction of the positions in the near zone, in ``(0, 1)``.
    """
    check_tensor("near_mask", near_mask, shape=(classes.K, classes.M), dtype=torch.bool)
    p = classes.probs
    near_p, far_p = p * near_mask, p * ~near_mask
    if not ((near_p.sum(1) > 0) & (far_p.sum(1) > 0)).all():
        raise ValueError("near_mask: every class needs contextual tokens in both zones")
    near_p, far_p = near_p / near_p.sum(1, keepdim=True), far_p / far_p.sum(1, keepdim=True)
    near = float(near)
    return PositionalClasses(M=classes.M, query=classes.query, next=classes.next,
                             probs=near * near_p + (1 - near) * far_p, near_probs=near_p, far_probs=far_p, near=near)


def shuffled(classes: PositionalClasses) -> PositionalClasses:
    """The same family with each sequence's tokens permuted (same counts; positions without information): the
    bag-of-tokens control of claim X3."""
    return replace(classes, shuffled=True)


def margin_family(margins: tuple[float, ...], near: float = 0.125, num_common: int = 10, num_far: int = 5,
                  num_near: int = 5) -> PositionalClasses:
    """One query per margin ``rho``, two classes each: frequency says a far token wins by the margin ``rho`` (the
    family of Chapter 9's positional-bias experiment, claim X3).

    Class ``n`` (query ``n // 2``) draws, in the far zone, ``num_common`` common tokens (weight 1, shared by
    all classes) and ``num_far`` own distinct tokens (weights evenly spaced from 0.6 to 1); in the near zone,
    only its ``num_near`` other distinct tokens. The near zone's strongest token gets the share that makes
    its overall frequency ``rho`` times that of the strongest far token; the others share the rest in the
    proportions 1 : 2 : ... . Layout: common tokens, then per class its far and its near distinct tokens,
    then the queries, then the next tokens.

    Args:
        margins: ``rho`` per query, each > 0 (below 1: the frequency rule picks the far token).
        near: fraction of the positions in the near zone, in ``(0, 1)``.
    """
    check_int("num_common", num_common, low=0)
    check_int("num_far", num_far, low=1)
    check_int("num_near", num_near, low=2)
    R, K = len(margins), 2 * len(margins)
    per = num_far + num_near
    L = num_common + K * per
    M = L + R + K
    far_w = torch.linspace(0.6, 1.0, num_far, dtype=torch.float64)
    top_far = (1 - near) / (num_common + float(far_w.sum()))  # overall frequency of the strongest far token
    rest = torch.arange(1, num_near, dtype=torch.float64)
    near_p, far_p = torch.zeros(K, M, dtype=torch.float64), torch.zeros(K, M, dtype=torch.float64)
    for n in range(K):
        rho = float(margins[n // 2])
        share = rho * top_far / near
        if not 0 < share < 1:
            raise ValueError(f"margins: each must be in (0, {near / top_far:.3g}) for near = {near}; got {rho}")
        start = num_common + n * per
        far_p[n, :num_common] = 1.0
        far_p[n, start : start + num_far] = far_w
        near_p[n, start + num_far : start + per - 1] = (1 - share) * rest / rest.sum()
        near_p[n, start + per - 1] = share
    far_p /= far_p.sum(1, keepdim=True)
    return PositionalClasses(M=M, query=L + torch.arange(K) // 2, next=L + R + torch.arange(K),
                             probs=near * near_p + (1 - near) * far_p, near_probs=near_p, far_probs=far_p,
                             near=float(near))


def zone_bias_gap(bias: torch.Tensor, near: float) -> torch.Tensor:
    """``log mean_{near} exp(p_t) - log mean_{far} exp(p_t)``: the prior the bias gives near over far tokens
    (claim X2's ``log A_zone``, per position of each zone).

    Args:
        bias: ``(..., L)`` per-position bias (``L = T - 1``, the last next to the query); near: zone fraction.
    """
    check_tensor("bias", bias, floating=True)
    L = bias.shape[-1]
    W = near_count(L + 1, near)
    return (torch.logsumexp(bias[..., L - W:], -1) - torch.logsumexp(bias[..., : L - W], -1)
            - torch.log(torch.tensor(W / (L - W), dtype=bias.dtype)))


def _masks(classes: PositionalClasses) -> tuple[torch.Tensor, torch.Tensor]:
    distinct = classes.distinct_mask()
    return distinct, distinct & (classes.near_probs > 0)


def near_share(f: torch.Tensor, classes: PositionalClasses) -> torch.Tensor:
    """Share of each class's attention over its distinct tokens that lies on near tokens: ``(..., K, M)`` ->
    ``(..., K)`` (claim X3)."""
    check_tensor("f", f, shape=(..., classes.K, classes.M), floating=True, low=0.0)
    distinct, close = _masks(classes)
    return (f * close).sum(-1) / (f * distinct).sum(-1)


def near_winner(f: torch.Tensor, classes: PositionalClasses) -> torch.Tensor:
    """Whether each class's winning distinct token (largest attention) is a near token: ``(..., K)`` bool
    (claim X3)."""
    check_tensor("f", f, shape=(..., classes.K, classes.M), floating=True, low=0.0)
    distinct, close = _masks(classes)
    winner = torch.where(distinct, f, -1.0).argmax(-1, keepdim=True)
    return torch.take_along_dim(close.expand(*f.shape), winner, -1).squeeze(-1)
