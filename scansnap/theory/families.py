"""Families of sequence classes on which Section 5's statements (Eqn 10, Theorems 2-3, Corollary 2) are
checked: built from weights, drawn at random, and the named examples of Chapters 4 and 5.

Every family is a :class:`scansnap.data.SequenceClasses` with float64 ``probs``; the layout is that of
:func:`scansnap.data.sequence_classes` (contextual tokens first, then the queries, then the next tokens).
"""

from __future__ import annotations

import torch

from scansnap._checks import check_tensor
from scansnap.data import SequenceClasses, sequence_classes, syn_medium, syn_small

__all__ = ["classes_from_weights", "example_families", "random_classes"]



def classes_from_weights(weights: torch.Tensor | list, query: torch.Tensor | list) -> SequenceClasses:
    """A family of sequence classes from unnormalized weights over ``L`` contextual tokens (Chapter 5 checks
    Theorem 3's Eqn 11 on random families built with it).

    Layout: contextual tokens ``0 .. L-1``, then one id per distinct query, then the next tokens
    (``M = L + #queries + K``), as in :func:`scansnap.data.sequence_classes`.

    Args:
        weights: ``(K, L)`` non-negative; row ``n`` is proportional to ``P(l | n)``; each row needs a
            positive entry.
        query: ``(K,)`` integers in ``[0, #queries)``: which query each class uses (every query in
            that range must be used).

    Returns:
        :class:`~scansnap.data.SequenceClasses` with float64 ``probs``.
    """
    w = torch.as_tensor(weights, dtype=torch.float64)
    check_tensor("weights", w, shape=(-1, -1), low=0.0)
    K, L = w.shape
    if not (w.sum(1) > 0).all():
        raise ValueError("weights: every row (class) needs a positive weight")
    q = torch.as_tensor(query, dtype=torch.long)
    check_tensor("query", q, shape=(K,), low=0, high=K - 1)
    num_query = int(q.max()) + 1
    if sorted(set(q.tolist())) != list(range(num_query)):
        raise ValueError(f"query: must use every query index 0..{num_query - 1}; got {q.tolist()}")
    M = L + num_query + K
    probs = torch.zeros(K, M, dtype=torch.float64)
    probs[:, :L] = w / w.sum(1, keepdim=True)
    return SequenceClasses(M=M, query=L + q, next=L + num_query + torch.arange(K), probs=probs)


def random_classes(generator: torch.Generator, *, one_common: bool = False) -> SequenceClasses:
    """A random family for checks: 2-5 classes, 1 to ``K`` queries, every class with a distinct token (Chapter 4
    checks Eqn 10 and Theorem 2(a) on such families, Theorem 2(b) on those with ``one_common``).

    Default: contextual tokens ``0 .. K-1`` are one distinct token per class; up to 14 further tokens
    get random weights in random classes (so some are common, some distinct, some unused). With
    ``one_common``: token 0 is the only common token (held by classes 0 and 1 and by each other class
    with probability 1/2), and each class owns 1-3 distinct tokens. Weights are uniform in
    ``[0.1, 1.1)``.
    """
    g = generator
    K = int(torch.randint(2, 6, (), generator=g))
    if one_common:
        blocks = torch.randint(1, 4, (K,), generator=g).tolist()
        w = torch.zeros(K, 1 + sum(blocks), dtype=torch.float64)
        start = 1
        for n, b in enumerate(blocks):
            w[n, start:start + b] = torch.rand(b, generator=g, dtype=torch.float64) + 0.1
            start += b
        holds = torch.rand(K, generator=g) < 0.5
        holds[:2] = True
        w[:, 0] = (torch.rand(K, generator=g, dtype=torch.float64) + 0.1) * holds
    else:
        extra = int(torch.randint(2, 15, (), generator=g))
        w = torch.zeros(K, K + extra, dtype=torch.float64)
        w[torch.arange(K), torch.arange(K)] = torch.rand(K, generator=g, dtype=torch.float64) + 0.1
        present = torch.rand(K, extra, generator=g, dtype=torch.float64) + 0.1
        w[:, K:] = present * (torch.rand(K, extra, generator=g) < 0.5)
    num_query = int(torch.randint(1, K + 1, (), generator=g))
    query = torch.cat([torch.arange(num_query), torch.randint(num_query, (K - num_query,), generator=g)])
    return classes_from_weights(w, query)


def example_families() -> dict[str, SequenceClasses]:
    """The families of Chapter 4, each with one query for all its classes unless stated:

    * ``"one common token"``: 3 classes share common token 0 with different weights (1, 0.5, 2) and own
      3, 2 and 4 distinct tokens with unequal weights: Theorem 2(b)'s setting, no symmetry.
    * ``"Syn-Medium, one query"``: :func:`scansnap.data.syn_medium` with one query (2 classes, 10
      common, 10 distinct each): Corollary 2's symmetric setting.
    * ``"Syn-Small"``: :func:`scansnap.data.syn_small` (2 classes with their own queries; symmetric).
    * ``"two common, asymmetric"``: 2 classes share tokens 0 and 1; token 0 has weight 1 in class 0 and
      0.02 in class 1 (nearly a distinct token of class 0); token 1 weight 2 in both.
    * ``"common to 2 of 3"``: 3 classes share token 1 (weight 2); token 0 (weight 0.3) is shared by
      classes 0 and 1 only.
    * ``"weak overlap"``: 3 classes, one common token of weight 0.5 and 20 distinct tokens each
      (``E_{nn'} = 0.03``).
    * ``"weak overlap, asymmetric"``: 3 classes share common token 0 with weights 0.5, 0.25 and 1 and own 20
      distinct tokens each with unequal weights (1.5 down to 0.5; 0.2 up to 1 for class 1): ``E_{nn'}`` from 0.009
      to 0.022, no symmetry.
    * ``"disjoint"``: 3 classes with 5 distinct tokens each and no common token (``E = 0``).
    """
    one = [[1.0, 0.3, 0.6, 0.9, 0, 0, 0, 0, 0, 0], [0.5, 0, 0, 0, 0.2, 1.0, 0, 0, 0, 0],
           [2.0, 0, 0, 0, 0, 0, 0.4, 0.5, 0.6, 0.7]]
    weak = torch.zeros(3, 61, dtype=torch.float64)
    weak[:, 0] = torch.tensor([0.5, 0.25, 1.0])
    for n in range(3):
        weak[n, 1 + 20 * n: 21 + 20 * n] = torch.linspace(0.2, 1.0, 20) if n == 1 else torch.linspace(1.5, 0.5, 20)
    return {
        "one common token": classes_from_weights(one, [0, 0, 0]),
        "Syn-Medium, one query": syn_medium(1),
        "Syn-Small": syn_small(),
        "two common, asymmetric": classes_from_weights([[1.0, 2.0, 0.5, 0.5, 0, 0], [0.02, 2.0, 0, 0, 0.5, 0.5]],
                                                       [0, 0]),
        "common to 2 of 3": classes_from_weights([[0.3, 2.0, 1, 0, 0], [0.3, 2.0, 0, 1, 0], [0.0, 2.0, 0, 0, 1]],
                                                 [0, 0, 0]),
        "weak overlap": sequence_classes(1, 3, num_common=1, num_distinct=20, common_weight=0.5),
        "weak overlap, asymmetric": classes_from_weights(weak, [0, 0, 0]),
        "disjoint": sequence_classes(1, 3, num_common=0, num_distinct=5),
    }
