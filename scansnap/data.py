"""Sequence classes: the paper's data model (Sec. 3.2; Syn-Small and Syn-Medium of Sec. 8).

A *sequence class* is indexed by its next token ``n`` (class index in ``[0, K)``). Each class has
one query token ``psi(n)`` (``query[n]``), its own vocabulary id (``next[n]``) and a conditional
distribution ``P(l | psi(n), n)`` over contextual tokens (``probs[n]``, shape ``(M,)``).
A sequence of length ``T`` is ``x_1 .. x_{T-1}`` drawn i.i.d. from ``probs[n]``, then the query
``x_T = query[n]``; the target is ``next[n]``.

Lemma 2 (the long-sequence limit): as ``T -> infinity`` the attention-weighted token histogram
``f = X^T b_T`` tends to ``c_n / 1^T c_n`` with ``c_n[l] = P(l | n) exp(Z[psi(n), l])``;
:func:`attended` computes that distribution for either exact probabilities (the limit) or the
token counts of one finite sequence (exact for that sequence), so the model and the limit share
one code path.

Token-id layout of :func:`sequence_classes` (as in the authors' ``Dataset2``): common tokens
``0 .. num_common-1``, then ``num_distinct`` distinct tokens per next token in consecutive blocks,
then the query ids, then the next-token ids. ``M`` is the total.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from scansnap._checks import check_int, check_tensor

__all__ = [
    "SequenceClasses",
    "attended",
    "sequence_classes",
    "syn_medium",
    "syn_small",
]

_PROB_ATOL = 1e-9


def attended(logits: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Attention-weighted token distribution ``w * exp(z) / sum(w * exp(z))`` (Lemma 2, Eqn 6).

    Args:
        logits: ``(..., M)`` attention logits ``z_{m l}`` of the query ``m`` for every key token ``l``.
        weights: ``(..., M)`` non-negative weights broadcastable to ``logits``: token counts of a
            sequence (then the result equals ``X^T b_T`` exactly) or ``P(l | n)`` (the ``T -> inf``
            limit ``f_n = c_n / 1^T c_n``). Every row needs at least one positive weight.

    Returns:
        ``(..., M)`` distribution: non-negative, sums to 1 over the last axis, zero where weight is 0.
    """
    return torch.softmax(logits + torch.log(weights), dim=-1)


@dataclass(frozen=True)
class SequenceClasses:
    """A family of sequence classes (paper Sec. 3.2).

    Attributes:
        M: vocabulary size (contextual, query and next tokens together).
        query: ``(K,)`` long, the query token ``psi(n)`` of each next token.
        next: ``(K,)`` long, the vocabulary id of each next token, distinct. A next token's id may also be a query
            or a contextual token's (one vocabulary, as in a language model, where a word is context for one
            prediction and the target of another): the model (:mod:`scansnap.model`) does not require the roles to
            use separate ids. A class's query must not be one of its own contextual tokens.
        probs: ``(K, M)`` float64, ``P(l | psi(n), n)`` over contextual tokens; rows sum to 1.
    """

    M: int
    query: torch.Tensor
    next: torch.Tensor
    probs: torch.Tensor

    def __post_init__(self) -> None:
        check_int("M", self.M, low=2)
        K = int(self.query.shape[0]) if isinstance(self.query, torch.Tensor) and self.query.ndim == 1 else -1
        check_tensor("query", self.query, shape=(K,), dtype=torch.long, low=0, high=self.M - 1)
        check_tensor("next", self.next, shape=(K,), dtype=torch.long, low=0, high=self.M - 1)
        check_tensor("probs", self.probs, shape=(K, self.M), floating=True, low=0.0)
        sums = self.probs.sum(dim=1)
        if not torch.allclose(sums, torch.ones_like(sums), rtol=0.0, atol=_PROB_ATOL):
            raise ValueError(
                f"probs: every row must sum to 1 (within {_PROB_ATOL}); got row sums {sums.tolist()}"
            )
        if len(set(self.next.tolist())) != K:
            raise ValueError(f"next: next-token ids must be distinct; got {self.next.tolist()}")
        if self.probs[torch.arange(K, device=self.probs.device), self.query].gt(0).any():
            raise ValueError("probs: a class's query token must not be one of its contextual tokens")

    def to(self, device: torch.device | str) -> SequenceClasses:
        """The same classes with every tensor on ``device`` (``self`` when they are there already): a run draws its
        batches from the CPU copy (:mod:`scansnap.device`) and computes with this one."""
        moved = {f.name: v.to(device) for f in dataclasses.fields(self)
                 if isinstance(v := getattr(self, f.name), torch.Tensor) and v.device != torch.device(device)}
        return dataclasses.replace(self, **moved) if moved else self

    @property
    def K(self) -> int:
        """Number of next tokens (classes)."""
        return int(self.query.shape[0])

    def support(self) -> torch.Tensor:
        """``(K, M)`` bool, ``supp(n) = {l : P(l | n) > 0}``."""
        return self.probs > 0

    def distinct_mask(self) -> torch.Tensor:
        """``(K, M)`` bool; row ``n`` marks ``G_DT(n) = {l : Omega(l) = {n}}``."""
        s = self.support()
        return s & (s.sum(dim=0, keepdim=True) == 1)

    def distinct(self, n: int) -> torch.Tensor:
        """Distinct tokens of class ``n``, ``G_DT(n)``: long ``(|G_DT(n)|,)``, increasing ids."""
        check_int("n", n, low=0, high=self.K - 1)
        return torch.nonzero(self.distinct_mask()[n]).flatten()

    def common(self) -> torch.Tensor:
        """Common tokens ``G_CT = {l : |Omega(l)| >= 2}``: long ``(|G_CT|,)``."""
        return torch.nonzero(self.support().sum(dim=0) >= 2).flatten()

    def sample(
        self, batch: int, T: int, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw ``batch`` sequences of length ``T`` (classes uniform, contexts i.i.d.).

        Returns:
            x: ``(batch, T)`` long; ``x[:, :-1]`` contextual tokens, ``x[:, -1]`` the query.
            n: ``(batch,)`` long class index in ``[0, K)``; the target token is ``next[n]``.
        """
        check_int("batch", batch, low=1)
        check_int("T", T, low=2)
        n = torch.randint(self.K, (batch,), generator=generator)
        ctx = torch.multinomial(self.probs[n], T - 1, replacement=True, generator=generator)
        return torch.cat([ctx, self.query[n, None]], dim=1), n

    def population(self, Z: torch.Tensor) -> torch.Tensor:
        """Lemma 2: the ``T -> inf`` attention distribution ``f_n = c_n / 1^T c_n`` of every class.

        Args:
            Z: ``(..., M, M)`` attention logits, ``Z[..., m, l]`` for query ``m`` and key ``l``.

        Returns:
            ``(..., K, M)``; row ``n`` is ``P(l|n) exp(Z[psi(n), l])`` normalized to sum 1.
        """
        check_tensor("Z", Z, shape=(..., self.M, self.M), floating=True)
        return attended(Z[..., self.query, :], self.probs.to(Z.dtype))


def sequence_classes(
    num_query: int,
    next_per_query: int,
    num_common: int,
    num_distinct: int,
    *,
    common_weight: float = 1.0,
    distinct_min: float = 0.1,
    distinct_max: float = 1.0,
) -> SequenceClasses:
    """The paper's synthetic family (Sec. 3.2 and 8; the authors' ``Dataset2``).

    ``K = num_query * next_per_query`` next tokens; next token ``n`` has query ``n // next_per_query``.
    Every class shares the ``num_common`` common tokens (unnormalized weight ``common_weight``) and
    owns ``num_distinct`` distinct tokens with unnormalized weights evenly spaced from
    ``distinct_min`` to ``distinct_max`` (increasing with the token id). Each class's weights are
    normalized to sum 1. Layout: common ids, distinct blocks, query ids, next-token ids.
    """
    check_int("num_query", num_query, low=1)
    check_int("next_per_query", next_per_query, low=1)
    check_int("num_common", num_common, low=0)
    check_int("num_distinct", num_distinct, low=0)
    if num_common + num_distinct == 0:
        raise ValueError("num_common + num_distinct: need at least one contextual token per class (>= 1)")
    for name, value in (("common_weight", common_weight), ("distinct_min", distinct_min)):
        if not value > 0:
            raise ValueError(f"{name}: must be > 0; got {value}")
    if not distinct_max >= distinct_min:
        raise ValueError(f"distinct_max: must be >= distinct_min={distinct_min}; got {distinct_max}")
    K = num_query * next_per_query
    first_query = num_common + K * num_distinct
    M = first_query + num_query + K
    weights = torch.zeros(K, M, dtype=torch.float64)
    weights[:, :num_common] = common_weight
    ramp = torch.linspace(distinct_min, distinct_max, num_distinct, dtype=torch.float64)
    for n in range(K):
        start = num_common + n * num_distinct
        weights[n, start : start + num_distinct] = ramp
    query = first_query + torch.arange(K) // next_per_query
    nxt = first_query + num_query + torch.arange(K)
    return SequenceClasses(M=M, query=query, next=nxt, probs=weights / weights.sum(1, keepdim=True))


def syn_small() -> SequenceClasses:
    """Syn-Small (paper Fig. 4): 2 next tokens with their own queries, common 0-9, distinct 10-19, 20-29.

    ``M = 34``: queries 30, 31; next tokens 32, 33 (the authors' released run).
    """
    return sequence_classes(num_query=2, next_per_query=1, num_common=10, num_distinct=10)


def syn_medium(num_query: int) -> SequenceClasses:
    """Syn-Medium (paper Fig. 6): ``num_query`` queries, 2 next tokens each, 10 common, 10 distinct each.

    ``K = 2 num_query`` next tokens; next tokens ``2q`` and ``2q + 1`` share query ``q``. Every class
    has the 10 common tokens (ids 0-9, unnormalized probability 1 each) and its own 10 distinct
    tokens (unnormalized probabilities 0.1, 0.2, ..., 1.0, increasing with the id), so
    ``P(l|n) = 1/15.5`` for a common token and ``w/15.5`` for a distinct token of weight ``w``.
    ``M = 10 + 10 K + num_query + K = 10 + 23 num_query``. The paper's sweep (the authors' released
    runs) uses ``num_query`` in {1, 3, 5, 10}: ``K`` = 2, 6, 10, 20 and ``M`` = 33, 79, 125, 240.
    """
    return sequence_classes(num_query=num_query, next_per_query=2, num_common=10, num_distinct=10)
