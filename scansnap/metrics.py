"""Metrics of attention (paper Sec. 8 and Appendix G).

:func:`attention_entropy` is the quantity of the paper's Figure 6: for each next token ``n``, the
attention distribution ``f_n = c_n / 1^T c_n`` (Lemma 2) restricted to the distinct tokens
``G_DT(n)`` and renormalized, its entropy (natural log), averaged over ``n``.
"""

from __future__ import annotations

import torch

from scansnap._checks import check_tensor
from scansnap.data import SequenceClasses

__all__ = ["attention_entropy", "distinct_attention", "token_mass"]


def distinct_attention(f: torch.Tensor, classes: SequenceClasses) -> torch.Tensor:
    """``f`` ``(..., K, M)`` restricted to each class's distinct tokens and renormalized: ``(..., K, M)``.

    Entries outside ``G_DT(n)`` are 0; each row sums to 1 (a class with no distinct token is an error).
    """
    check_tensor("f", f, shape=(..., classes.K, classes.M), floating=True, low=0.0)
    mask = classes.distinct_mask()
    if not mask.any(dim=1).all():
        raise ValueError("classes: every class needs at least one distinct token (|G_DT(n)| >= 1)")
    p = f * mask.to(f.dtype)
    total = p.sum(dim=-1, keepdim=True)
    if not (total > 0).all():
        raise ValueError("f: the attention on the distinct tokens of some class is 0 (need > 0)")
    return p / total


def attention_entropy(f: torch.Tensor, classes: SequenceClasses, per_class: bool = False) -> torch.Tensor:
    """Entropy (nats) of the attention over distinct tokens (paper Fig. 6; Appendix G).

    Args:
        f: ``(..., K, M)`` attention distributions ``f_n`` (e.g. ``classes.population(Z)``).
        classes: gives ``G_DT(n)``.
        per_class: return ``(..., K)`` instead of the mean over next tokens ``(...)``.

    Returns:
        ``(...)`` mean over ``n`` of ``-sum_{l in G_DT(n)} p_l ln p_l`` (``0 ln 0 = 0``), or ``(..., K)``.
    """
    p = distinct_attention(f, classes)
    h = -torch.xlogy(p, p).sum(dim=-1)
    return h if per_class else h.mean(dim=-1)


def token_mass(f: torch.Tensor, classes: SequenceClasses) -> dict[str, torch.Tensor]:
    """Attention mass of each class on its common and on its distinct tokens.

    Args:
        f: ``(..., K, M)`` attention distributions ``f_n``.

    Returns:
        ``{"common": (..., K), "distinct": (..., K)}``: ``sum_{l in G_CT} f_nl`` and ``sum_{l in G_DT(n)} f_nl``.
    """
    check_tensor("f", f, shape=(..., classes.K, classes.M), floating=True, low=0.0)
    common = torch.zeros(classes.M, dtype=torch.bool)
    common[classes.common()] = True
    return {
        "common": (f * common.to(f.dtype)).sum(dim=-1),
        "distinct": (f * classes.distinct_mask().to(f.dtype)).sum(dim=-1),
    }
