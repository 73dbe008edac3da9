"""What several attention heads pick (Chapter 9; paper Sec. 5 "initial value as prior", claim C22).

For a model with ``H`` heads (:class:`~scansnap.model_options.ModelOptions`), each head ``h`` has its own
attention ``f^{(h)}_n`` over the contextual tokens of class ``n``. Restricted to the distinct tokens
``G_DT(n)``, a head **picks** the fewest tokens that hold half of that attention
(:func:`scansnap.theory.top_set`) and its **winner** is the token with the most. C22 predicts the winner from
the initialization alone: ``argmax_l P(l|n) exp(z^{(h)}_{ml}(0))`` (:func:`scansnap.theory.dominant_token`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch

from scansnap._checks import check_tensor
from scansnap.data import SequenceClasses
from scansnap.theory import dominant_token, top_set

__all__ = ["HeadPicks", "head_picks", "jaccard"]


def jaccard(a: frozenset, b: frozenset) -> float:
    """``|a & b| / |a | b|`` (1 for two empty sets): how alike two heads' picks are (claim X4, Chapter 9)."""
    union = a | b
    return len(a & b) / len(union) if union else 1.0


@dataclass(frozen=True)
class HeadPicks:
    """What the heads of one configuration picked, per class.

    Attributes:
        sets: ``sets[n][h]``: the distinct tokens head ``h`` picks for class ``n``.
        winners: ``(K, H)`` the winning distinct token of each head and class.
        predicted: ``(K, H)`` C22's prediction ``argmax_l P(l|n) exp(z^{(h)}_{ml}(0))``.
        jaccard: mean Jaccard similarity over pairs of heads and over classes (1 with one head).
        coverage: mean over classes of the number of distinct tokens picked by at least one head.
    """

    sets: tuple[tuple[frozenset, ...], ...]
    winners: np.ndarray
    predicted: np.ndarray
    jaccard: float
    coverage: float


def head_picks(f: torch.Tensor, Z0: torch.Tensor, classes: SequenceClasses, mass: float = 0.5) -> HeadPicks:
    """Picks, winners and C22's predictions of every head of one configuration.

    Args:
        f: ``(H, K, M)`` final attention of each head (e.g. ``History.attention[-1][c]``).
        Z0: ``(H, M, M)`` each head's initial logits.
        classes: the family (gives ``P(l|n)``, ``G_DT(n)`` and the queries).
        mass: share of the distinct attention a picked set holds, in ``(0, 1]``.
    """
    check_tensor("f", f, shape=(-1, classes.K, classes.M), floating=True, low=0.0)
    H = f.shape[0]
    check_tensor("Z0", Z0, shape=(H, classes.M, classes.M), floating=True)
    probs = classes.probs.numpy()
    sets, winners, predicted = [], np.zeros((classes.K, H), dtype=np.int64), np.zeros((classes.K, H), dtype=np.int64)
    for n in range(classes.K):
        d = classes.distinct(n).numpy()
        m = int(classes.query[n])
        row = tuple(top_set(f[h, n, d].numpy(), d, mass) for h in range(H))
        sets.append(row)
        for h in range(H):
            winners[n, h] = int(d[int(np.argmax(f[h, n, d].numpy()))])
            predicted[n, h] = dominant_token(probs[n], Z0[h, m].numpy(), d)
    pairs = [jaccard(a, b) for row in sets for a, b in itertools.combinations(row, 2)]
    return HeadPicks(
        sets=tuple(sets), winners=winners, predicted=predicted,
        jaccard=float(np.mean(pairs)) if pairs else 1.0,
        coverage=float(np.mean([len(frozenset().union(*row)) for row in sets])),
    )
