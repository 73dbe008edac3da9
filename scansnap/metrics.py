"""Metrics of attention (paper Sec. 8 and Appendix G).

:func:`attention_entropy` is the quantity of the paper's Figure 6: for each next token ``n``, the
attention distribution ``f_n = c_n / 1^T c_n`` (Lemma 2) restricted to the distinct tokens
``G_DT(n)`` and renormalized, its entropy (natural log), averaged over ``n``.
:func:`entry_recall_at_threshold` is the recall-threshold curve of the paper's Figures 11-12 (Appendix G),
which tags the query's softmax value on every position of sampled sequences; :func:`recall_at_threshold`
tags Lemma 2's ``f_n`` instead (the mass of each token type), and :func:`recall_reach` summarizes how
slowly such a curve descends. :func:`freeze_rate` measures how fast an attention pattern still moves
(the "snap" of Sec. 6 and the frozen maps of Figure 7).
"""

from __future__ import annotations

import numpy as np
import torch

from scansnap._checks import check_tensor
from scansnap.data import SequenceClasses

__all__ = [
    "attention_entropy",
    "distinct_attention",
    "entry_recall_at_threshold",
    "freeze_rate",
    "recall_at_threshold",
    "recall_reach",
    "token_mass",
]


def distinct_attention(f: torch.Tensor, classes: SequenceClasses) -> torch.Tensor:
    """``f`` ``(..., K, M)`` restricted to each class's distinct tokens and renormalized: ``(..., K, M)``, the
    distribution whose entropy the paper's Figure 6 plots (:func:`attention_entropy`).

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
    """Attention mass of each class on its common and on its distinct tokens (the common mass falls in the
    paper's Figure 4, claim C35: by Theorem 2 and Corollary 2 the common tokens' logits fall).

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


def recall_at_threshold(
    f: torch.Tensor, classes: SequenceClasses, thresholds: torch.Tensor, renormalize: bool = False
) -> torch.Tensor:
    """Recall of the distinct tokens against a threshold on ``f_n`` (a variant of Appendix G's recall,
    which :func:`entry_recall_at_threshold` computes the paper's way, per attention entry).

    Every entry ``f_nl`` (the attention mass the query puts on token type ``l``; Lemma 2's
    ``c_n / 1^T c_n``) at or above a threshold ``tau`` is re-tagged 1, the others 0; the recall of
    class ``n`` is the fraction of its distinct tokens ``G_DT(n)`` tagged 1, and the result is its
    mean over the classes. A sparser attention keeps a few distinct tokens above ``tau`` up to
    larger thresholds: its recall descends more slowly in ``tau``.

    Args:
        f: ``(..., K, M)`` attention distributions ``f_n`` (e.g. ``classes.population(Z)``).
        classes: gives ``G_DT(n)``.
        thresholds: ``(S,)`` thresholds ``tau``.
        renormalize: tag the attention restricted to ``G_DT(n)`` and renormalized
            (:func:`distinct_attention`, the distribution of :func:`attention_entropy`) instead of ``f_n``.

    Returns:
        ``(..., S)`` recall in ``[0, 1]``, non-increasing along the sorted thresholds.
    """
    check_tensor("f", f, shape=(..., classes.K, classes.M), floating=True, low=0.0)
    check_tensor("thresholds", thresholds, shape=(-1,), floating=True)
    mask = classes.distinct_mask()
    if not mask.any(dim=1).all():
        raise ValueError("classes: every class needs at least one distinct token (|G_DT(n)| >= 1)")
    a = distinct_attention(f, classes) if renormalize else f
    kept = torch.stack([((a >= tau) & mask).sum(dim=-1) for tau in thresholds.tolist()], dim=-1)  # (..., K, S)
    per_class = kept.to(a.dtype) / mask.sum(dim=1, keepdim=True).to(a.dtype)
    return per_class.mean(dim=-2)


def entry_recall_at_threshold(
    f: torch.Tensor, classes: SequenceClasses, counts: torch.Tensor, thresholds: torch.Tensor
) -> torch.Tensor:
    """Recall of the distinct tokens per attention entry, the paper's way (Appendix G, Figs. 11-12).

    On a sequence of class ``n`` (query ``m``), the attention entry of a contextual position holding
    token ``l`` is the query's softmax value ``b = exp(z_ml) / sum_t' exp(z_m x_t')`` over the sequence's
    positions, i.e. ``w_nl / sum_l' N_l' w_nl'`` with ``N_l`` the count of ``l`` in the sequence and
    ``w_nl = f_nl / P(l|n)``, which is ``exp(z_ml)`` up to a factor per class (Lemma 2). Every entry
    with ``b >= tau`` is tagged 1; a sequence's recall is the share of its distinct-token entries
    (positions holding a token of ``G_DT(n)``) tagged 1; the result is the mean over sequences and classes.

    Args:
        f: ``(..., K, M)`` attention distributions ``f_n`` (e.g. ``classes.population(Z)``), > 0 on the support.
        classes: gives ``P(l|n)`` and ``G_DT(n)``.
        counts: ``(S, K, M)`` token counts of ``S`` sampled sequences per class (each with a distinct token).
        thresholds: ``(R,)`` thresholds ``tau``.

    Returns:
        ``(..., R)`` recall in ``[0, 1]``, non-increasing along sorted thresholds.
    """
    check_tensor("f", f, shape=(..., classes.K, classes.M), floating=True, low=0.0)
    check_tensor("counts", counts, shape=(-1, classes.K, classes.M), low=0.0)
    check_tensor("thresholds", thresholds, shape=(-1,), floating=True)
    mask = classes.distinct_mask()
    probs = classes.probs.to(f.dtype)
    w = torch.where(probs > 0, f / torch.where(probs > 0, probs, 1.0), 0.0)  # exp(z_ml) up to a factor per class
    N = counts.to(f.dtype)
    total = torch.einsum("...km,skm->...sk", w, N)  # sum over the sequence's positions of exp(z)
    if not (total > 0).all():
        raise ValueError("f: the attention of some sampled sequence is 0 everywhere (need f > 0 on the support)")
    # distinct tokens of each class, padded to the longest list (padding carries no entries)
    width = int(mask.sum(dim=1).max())
    order = torch.sort(mask.to(torch.int8), dim=1, descending=True, stable=True).indices[:, :width]  # (K, width)
    kept = torch.gather(mask, 1, order)
    n_entries = torch.gather(N, 2, order.expand(N.shape[0], -1, -1)) * kept  # (S, K, width)
    per_seq = n_entries.sum(dim=-1, keepdim=True)
    if not (per_seq > 0).all():
        raise ValueError("counts: every sampled sequence needs at least one distinct token")
    b = torch.gather(w, -1, order.expand(*w.shape[:-2], -1, -1))[..., None, :, :] / total[..., None]
    weight = (n_entries / per_seq / (N.shape[0] * classes.K)).expand_as(b)
    values, idx = torch.sort(b.flatten(-3), dim=-1)
    below = torch.cumsum(torch.gather(weight.flatten(-3), -1, idx), -1)
    below = torch.cat([torch.zeros_like(below[..., :1]), below], dim=-1)  # weight of the entries < values[i]
    at = torch.searchsorted(values, thresholds.to(values.dtype).expand(*values.shape[:-1], -1).contiguous())
    return (1.0 - torch.gather(below, -1, at)).clamp(0.0, 1.0)


def recall_reach(recall: np.ndarray, thresholds: np.ndarray, level: float) -> np.ndarray:
    """The threshold at which a recall curve first falls below ``level`` (linear interpolation); Chapter 7
    compares the recall curves of the paper's Figures 11-12 by it.

    A summary of how slowly a recall-threshold curve descends (:func:`recall_at_threshold`): the
    larger the reach, the slower the descent. At ``level = 1 / |G_DT(n)|`` it is about the threshold
    up to which one distinct token per class is still kept.

    Args:
        recall: ``(..., S)`` non-increasing curves on ``thresholds``.
        thresholds: ``(S,)`` strictly increasing.
        level: in ``(0, 1]``.

    Returns:
        ``(...)``; the first threshold if the curve starts below ``level``, ``nan`` if it never falls below.
    """
    r, tau = np.asarray(recall, dtype=np.float64), np.asarray(thresholds, dtype=np.float64)
    if tau.ndim != 1 or len(tau) < 2 or not (np.diff(tau) > 0).all():
        raise ValueError("thresholds: must be a 1-D strictly increasing array of at least 2 values")
    if r.shape[-1:] != tau.shape or not np.isfinite(r).all():
        raise ValueError(f"recall: must be finite with last axis of length {len(tau)}; got shape {r.shape}")
    if not 0 < level <= 1:
        raise ValueError(f"level: must be in (0, 1]; got {level}")
    below = r < level
    i = np.argmax(below, axis=-1)  # first index below the level (0 if none)
    lo = np.maximum(i - 1, 0)
    r_hi, r_lo = np.take_along_axis(r, lo[..., None], -1)[..., 0], np.take_along_axis(r, i[..., None], -1)[..., 0]
    frac = np.divide(r_hi - level, r_hi - r_lo, out=np.zeros_like(r_hi), where=r_hi > r_lo)
    reach = np.where(i == 0, tau[0], tau[lo] + frac * (tau[i] - tau[lo]))
    return np.where(below.any(axis=-1), reach, np.nan)


def freeze_rate(snapshots: torch.Tensor, steps: object, dims: int = 2) -> torch.Tensor:
    """Relative change of attention per step between consecutive snapshots (Sec. 6 "snap"; Figure 7).

    ``rate_i = ||A_{i+1} - A_i||_F / (||A_i||_F (s_{i+1} - s_i))``, the Frobenius norms taken over the last
    ``dims`` axes (e.g. ``(K, M)`` attention maps, or ``(T, T)`` maps of a language model). A pattern that
    has frozen has a rate near 0 even when it is not stationary.

    Args:
        snapshots: ``(S, ..., *map)`` attention at ``S >= 2`` snapshot steps (floating).
        steps: ``(S,)`` strictly increasing step numbers of the snapshots.
        dims: number of trailing axes that form one map (>= 1).

    Returns:
        ``(S - 1, ...)`` the rate between snapshot ``i`` and ``i + 1``, per unit step.
    """
    check_tensor("snapshots", snapshots, floating=True)
    s = torch.as_tensor(steps, dtype=snapshots.dtype, device=snapshots.device)
    if not isinstance(dims, int) or isinstance(dims, bool) or not 1 <= dims <= snapshots.ndim - 1:
        raise ValueError(f"dims: must be an integer in [1, {snapshots.ndim - 1}]; got {dims!r}")
    if snapshots.shape[0] < 2 or s.shape != (snapshots.shape[0],) or not (s.diff() > 0).all():
        raise ValueError(f"steps: must be {snapshots.shape[0]} >= 2 strictly increasing step numbers, one per "
                         f"snapshot; got {s.tolist()}")
    axes = tuple(range(-dims, 0))
    change = torch.linalg.vector_norm(snapshots.diff(dim=0), dim=axes)
    size = torch.linalg.vector_norm(snapshots[:-1], dim=axes)
    if not (size > 0).all():
        raise ValueError("snapshots: a snapshot is all zeros (its relative change is undefined)")
    return change / size / s.diff().reshape(-1, *([1] * (change.ndim - 1)))
