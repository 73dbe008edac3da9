"""How common a token is across contexts, how much attention it receives, and rank statistics (Chapter 8).

The theory (Theorem 2, Sec. 5) says attention moves away from **common** tokens, those that occur
with many different next tokens, towards **distinct** ones. On real text, Chapter 8 measures:

* :func:`next_token_entropy`: for each key token ``l``, the entropy of the next token ``x_{i+1}`` over
  the positions ``i`` whose attention window (the ``window`` tokens up to ``i``) holds ``l``, estimated
  from the same number of sampled (key, next) pairs for every token, so that rare and frequent tokens
  are compared without the plug-in estimator's sample-size bias. A common token (``the``, ``,``) has a
  high entropy; a distinct one a low entropy.
* :func:`document_frequency`: the share of lines (paragraphs) that contain the token.
* :func:`received_attention`: the attention a key token receives relative to uniform attention.
* :func:`share_decreasing`: the share of pairs in a given order (rank correlations: :func:`scansnap.stats.spearman`).
"""

from __future__ import annotations

import numpy as np
import torch

from scansnap._checks import check_int, check_tensor

__all__ = ["document_frequency", "next_token_entropy", "received_attention", "share_decreasing"]


def next_token_entropy(ids: torch.Tensor, vocab: int, window: int = 35, pairs: int = 256,
                       seed: int = 0) -> np.ndarray:
    """``(vocab,)`` entropy (nats) of the next token given that a key token is in the attention window: high for
    Theorem 2's common tokens, low for distinct ones (Chapter 8's token study, ``fig-ch8-tokens``).

    Every (key position ``j``, query position ``i``) with ``j <= i < j + window`` gives the pair
    ``(ids[j], ids[i + 1])``. For each key token, ``pairs`` of its pairs are drawn without replacement
    (seeded) and the entropy of their next tokens is computed (at most ``ln pairs``); a token with fewer
    pairs gets ``nan``.

    Args:
        ids: ``(N,)`` long token ids of a text.
        vocab: vocabulary size ``V``; window: attention window (the sequence length); pairs: sample size.
    """
    check_tensor("ids", ids, shape=(-1,), dtype=torch.long, low=0, high=vocab - 1)
    check_int("window", window, low=1)
    check_int("pairs", pairs, low=2)
    x = ids.numpy()
    keys = np.concatenate([x[: len(x) - 1 - k] for k in range(window)])
    nexts = np.concatenate([x[1 + k:] for k in range(window)])
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(keys))
    order = order[np.argsort(keys[order], kind="stable")]  # grouped by key, random within a group
    k_sorted = keys[order]
    starts = np.searchsorted(k_sorted, np.arange(vocab))
    rank = np.arange(len(k_sorted)) - starts[k_sorted]
    kept = order[rank < pairs]
    code, counts = np.unique(keys[kept].astype(np.int64) * vocab + nexts[kept], return_counts=True)
    p = counts / pairs
    h = np.bincount(code // vocab, weights=-p * np.log(p), minlength=vocab)
    total = np.bincount(keys, minlength=vocab)
    return np.where(total >= pairs, h, np.nan)


def document_frequency(ids: torch.Tensor, vocab: int, eos: int) -> np.ndarray:
    """``(vocab,)`` share of lines (ended by the token ``eos``) that contain each token (Chapter 8's token study,
    ``fig-ch8-tokens``)."""
    check_tensor("ids", ids, shape=(-1,), dtype=torch.long, low=0, high=vocab - 1)
    x = ids.numpy()
    line = np.concatenate([[0], np.cumsum(x[:-1] == eos)])
    uniq = np.unique(line.astype(np.int64) * vocab + x)
    return np.bincount(uniq % vocab, minlength=vocab) / (line[-1] + 1)


def received_attention(maps: torch.Tensor, x: torch.Tensor, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Attention each key token receives, relative to uniform attention (Chapter 8's token study,
    ``fig-ch8-tokens``).

    Query position ``i`` of a causal map spreads over ``i + 1`` keys (the diagonal included, as the
    model's mask); the entry ``a_ij`` counts as ``(i + 1) a_ij`` (1 = uniform). Each key token's score is
    the mean of that ratio over every (query, key) pair in which it is the key.

    Args:
        maps: ``(S, T, T)`` causal attention; x: ``(S, T)`` the tokens of the windows.

    Returns:
        ``(vocab,)`` scores (``nan`` for tokens never seen) and ``(vocab,)`` number of pairs behind each.
    """
    check_tensor("maps", maps, shape=(-1, -1, -1), floating=True, low=0.0)
    check_tensor("x", x, shape=(maps.shape[0], maps.shape[1]), dtype=torch.long, low=0, high=vocab - 1)
    T = maps.shape[1]
    ratio = maps.double() * torch.arange(1, T + 1, dtype=torch.float64)[:, None]
    per_key = ratio.tril().sum(dim=1)  # (S, T): summed over the queries i >= j
    n_pairs = (T - torch.arange(T, dtype=torch.float64)).expand_as(per_key)
    total = torch.bincount(x.reshape(-1), per_key.reshape(-1), minlength=vocab).numpy()
    count = torch.bincount(x.reshape(-1), n_pairs.reshape(-1), minlength=vocab).numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan), count


def share_decreasing(x: np.ndarray, y: np.ndarray) -> float:
    """Share of pairs ``x_i < x_j`` (distinct ``x``) with ``y_j < y_i``: 1 when ``y`` falls strictly as ``x`` grows
    (claim C41: Figure 10's entropy against the learning rate)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2:
        raise ValueError(f"y: must be 1-D with the shape of x {x.shape} (at least 2 entries); got {y.shape}")
    i, j = np.triu_indices(len(x), 1)
    i, j = np.where(x[i] < x[j], i, j), np.where(x[i] < x[j], j, i)  # x[i] < x[j]
    keep = x[i] != x[j]
    return float(np.mean(y[j[keep]] < y[i[keep]]))
