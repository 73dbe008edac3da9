"""Lemma 2 (the long-sequence limit) and Lemma 18 (its concentration, Appendix H).

For a sequence of class ``n`` (query ``m = psi(n)``) the attended histogram is
``f = X^T b_T = p^ * w / (w . p^)``, where ``p^`` is the empirical frequency of each contextual
token among the ``T - 1`` i.i.d. draws and ``w = exp(z_m)``. Lemma 2: as ``T -> inf``,
``f -> f_n = p * w / (w . p)`` with ``p = P(. | n)`` (that limit is
:meth:`scansnap.data.SequenceClasses.population`; this module does not re-implement it).

Everything here rests on one exact identity (the chapter proves it with sympy)::

    f - f_n = sum_t w_{x_t} (e_{x_t} - f_n) / sum_t w_{x_t} = (diag(w) - f_n w^T) (p^ - p) / (w . p^),

a ratio of two means of i.i.d. bounded summands, the numerator of mean zero. From it:

* :func:`linearized_std`: the delta-method standard deviation ``sigma_nl`` of ``f_l`` (its rms error
  is ``sigma_nl / sqrt(T - 1)`` to leading order: the ``O(T^{-1/2})`` rate of Lemma 2);
* :func:`concentration_bound`: Lemma 18 as reconstructed here: Hoeffding's inequality for the
  numerator and the denominator, with a union bound, gives ``||f - f_n||_inf <= bound_n`` with
  probability ``>= 1 - delta``;
* :func:`limit_errors`: the measured distances of sampled sequences from the limit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from scansnap._checks import check_int, check_tensor
from scansnap.data import SequenceClasses, attended
from scansnap.model import token_counts

__all__ = [
    "concentration_bound",
    "hoeffding_radius",
    "limit_errors",
    "linearized_std",
    "loglog_slope",
    "rate_fits",
    "sampled_attention",
]


def _check_delta(delta: object) -> float:
    ok = isinstance(delta, (int, float)) and not isinstance(delta, bool) and 0 < delta < 1
    if not ok:
        raise ValueError(f"delta: must be a failure probability in (0, 1); got {delta!r}")
    return float(delta)


def _check_Z(classes: SequenceClasses, Z: torch.Tensor) -> torch.Tensor:
    return check_tensor("Z", Z, shape=(classes.M, classes.M), floating=True)


def sampled_attention(classes: SequenceClasses, Z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Lemma 2's finite-``T`` side: ``f = X^T b_T`` of each sequence, exactly.

    Args:
        classes: the data (only ``M`` is used).
        Z: ``(M, M)`` attention logits, ``Z[m, l]`` for query ``m`` and key ``l``.
        x: ``(B, T)`` long sequences, query last (as drawn by :meth:`SequenceClasses.sample`).

    Returns:
        ``(B, M)``: the attention-weighted histogram of the contextual tokens ``x[:, :-1]``.
    """
    _check_Z(classes, Z)
    check_tensor("x", x, shape=(-1, -1), dtype=torch.long, low=0, high=classes.M - 1)
    if x.shape[1] < 2:
        raise ValueError(f"x: sequences need T >= 2 tokens; got shape {tuple(x.shape)}")
    return attended(Z[x[:, -1]], token_counts(x[:, :-1], classes.M).to(Z.dtype))


def limit_errors(
    classes: SequenceClasses, Z: torch.Tensor, counts: torch.Tensor, n: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Distances of sampled sequences from the long-sequence limit of their class (Lemma 2).

    Args:
        classes: the data; Z: ``(M, M)`` attention logits.
        counts: ``(B, M)`` token counts of the contextual tokens of each sequence (the sufficient
            statistic: ``scansnap.model.token_counts(x[:, :-1], M)``), all of one length ``T - 1``.
        n: ``(B,)`` long class of each sequence.

    Returns:
        ``"dev"``: ``(B, M)`` ``f - f_n``; ``"dev_unit"``: ``(B, M)`` ``f~ - f~_n`` with ``f~ = f / ||f||_2``;
        ``"f"``, ``"f_unit"``: ``(B,)`` their sup norms; ``"freq"``: ``(B,)`` ``max_l |p^_l - P(l|n)|``
        with ``p^ = counts / (T - 1)`` the empirical token frequencies.
    """
    _check_Z(classes, Z)
    check_tensor("counts", counts, shape=(-1, classes.M), floating=True, low=0.0)
    check_tensor("n", n, shape=(counts.shape[0],), dtype=torch.long, low=0, high=classes.K - 1)
    total = counts.sum(dim=-1)
    if not (torch.all(total > 0) and torch.allclose(total, total[0].expand_as(total), rtol=1e-9, atol=0)):
        raise ValueError("counts: every sequence needs the same positive number T - 1 of contextual tokens")
    f = attended(Z[classes.query[n]], counts.to(Z.dtype))
    limit = classes.population(Z)[n]
    unit = f / f.norm(dim=-1, keepdim=True) - limit / limit.norm(dim=-1, keepdim=True)
    freq = counts / total[:, None] - classes.probs[n]
    return {
        "dev": f - limit,
        "dev_unit": unit,
        "f": (f - limit).abs().amax(dim=-1),
        "f_unit": unit.abs().amax(dim=-1),
        "freq": freq.abs().amax(dim=-1),
    }


def loglog_slope(T: Sequence[float], err: Sequence[float]) -> tuple[float, float]:
    """Least-squares slope of ``log err`` against ``log T`` and its standard error (the rate of Lemma 2).

    Args:
        T, err: equal-length positive values, at least 3.

    Returns:
        ``(slope, standard error)``; an error ``~ C T^a`` gives slope ``a`` (Lemma 2: ``a = -1/2``).
    """
    t, e = np.asarray(T, dtype=np.float64), np.asarray(err, dtype=np.float64)
    if t.ndim != 1 or t.shape != e.shape or len(t) < 3 or not (np.all(t > 0) and np.all(e > 0) and np.isfinite(t @ e)):
        raise ValueError(f"T, err: need equal-length 1-D positive values, at least 3; got {t.tolist()}, {e.tolist()}")
    x, y = np.log(t), np.log(e)
    xc = x - x.mean()
    slope = float(xc @ (y - y.mean()) / (xc @ xc))
    resid = y - y.mean() - slope * xc
    return slope, float(np.sqrt(resid @ resid / (len(x) - 2) / (xc @ xc)))


def rate_fits(T: Sequence[float], err: np.ndarray, fit_from: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lemma 2's rate fitted to many error series at once (:func:`loglog_slope` per series).

    Args:
        T: ``(nT,)`` sequence lengths; err: ``(nT, ...)`` positive errors, one series per trailing index.
        fit_from: the asymptotic range is ``T >= fit_from`` (at least 3 lengths).

    Returns:
        ``(slope, se, slope_all)``, each ``err.shape[1:]``: the slope and its standard error over the
        asymptotic range, and the slope over every ``T``.
    """
    t, e = np.asarray(T, dtype=np.float64), np.asarray(err, dtype=np.float64)
    if e.shape[:1] != t.shape:
        raise ValueError(f"err: must have shape ({len(t)}, ...) to match T; got {e.shape}")
    late = t >= fit_from
    if late.sum() < 3:
        raise ValueError(f"fit_from: needs at least 3 lengths T >= fit_from; got {int(late.sum())} for {fit_from}")
    flat = e.reshape(len(t), -1)
    fits = [(*loglog_slope(t[late], col[late]), loglog_slope(t, col)[0]) for col in flat.T]
    return tuple(np.array([f[i] for f in fits]).reshape(e.shape[1:]) for i in range(3))


def _weights(classes: SequenceClasses, Z: torch.Tensor) -> torch.Tensor:
    """``(K, M)`` ``w = exp(z_m - max_{l in supp} z_ml)`` on the support of each class, 0 elsewhere."""
    rows = Z[classes.query].to(torch.float64)
    support = classes.support()
    top = rows.masked_fill(~support, -math.inf).amax(dim=-1, keepdim=True)
    return torch.where(support, torch.exp(rows - top), torch.zeros_like(rows))


def linearized_std(classes: SequenceClasses, Z: torch.Tensor) -> torch.Tensor:
    """Delta-method standard deviation of the attended histogram (Lemma 2's rate, with its constant).

    ``sqrt(T - 1) (f_l - f_nl)`` tends in distribution to a centred normal with variance
    ``sigma_nl^2 = (w_l^2 p_l (1 - 2 f_nl) + f_nl^2 sum_k p_k w_k^2) / (w . p)^2`` (``p = P(.|n)``,
    ``w = exp(z_m)``); at ``Z = 0`` this is the binomial ``p_l (1 - p_l)``.

    Returns:
        ``(K, M)`` float64 ``sigma_nl``; the rms of ``f_l - f_nl`` is ``sigma_nl / sqrt(T - 1) (1 + O(1/T))``.
    """
    _check_Z(classes, Z)
    w, p = _weights(classes, Z), classes.probs
    S = (p * w).sum(dim=-1, keepdim=True)
    f = p * w / S
    second = (p * w**2).sum(dim=-1, keepdim=True)
    var = (w**2 * p * (1 - 2 * f) + f**2 * second) / S**2
    return var.clamp_min(0).sqrt()


def hoeffding_radius(T: int, events: int, delta: float) -> float:
    """The ``eps`` with ``2 k exp(-2 (T - 1) eps^2) = delta``: Hoeffding's inequality plus a union bound, the
    radius of Lemma 18's bound (Appendix H; :func:`concentration_bound`).

    With probability ``>= 1 - delta``, each of ``k = events`` means of ``T - 1`` i.i.d. summands with
    values in an interval of length ``r`` is within ``r eps`` of its expectation, where
    ``eps = sqrt(ln(2 k / delta) / (2 (T - 1)))``. (Token frequencies: ``r = 1``, ``k = |supp n|``.)
    """
    check_int("T", T, low=2)
    check_int("events", events, low=1)
    delta = _check_delta(delta)
    return math.sqrt(math.log(2 * events / delta) / (2 * (T - 1)))


def concentration_bound(classes: SequenceClasses, Z: torch.Tensor, T: int, delta: float) -> torch.Tensor:
    """Lemma 18 (reconstructed): a bound on ``||f - f_n||_inf`` that holds with probability ``>= 1 - delta``.

    Write ``f - f_n = A / S^`` with ``S^ = mean_t w_{x_t}`` (expectation ``S = w . p``) and
    ``A_l = mean_t w_{x_t} (1[x_t = l] - f_nl)`` (expectation 0); ``w = exp(z_m)``, ``x_1 .. x_{T-1}``
    i.i.d. from ``p = P(. | n)`` on its support ``S_n``. The summands of ``A_l`` lie in an interval
    of length ``r_l = w_l (1 - f_nl) + f_nl w_max``, those of ``S^`` in ``[w_min, w_max]``
    (extremes over ``S_n``). Hoeffding for these ``|S_n| + 1`` means, each at level
    ``delta / (|S_n| + 1)``, and ``S^ >= w_min`` give, with ``eps`` = :func:`hoeffding_radius`
    ``(T, |S_n| + 1, delta)``::

        ||f - f_n||_inf <= eps max_{l in S_n} r_l / max(S - eps (w_max - w_min), w_min).

    At ``Z = 0`` (all ``w`` equal) this is ``eps``. It is ``O(sqrt(ln(|S_n| / delta) / T))``, and can
    exceed 1 at small ``T`` (then it says nothing: a sup-norm distance of two distributions is <= 1).

    Args:
        classes: the data; Z: ``(M, M)`` logits; T: sequence length (``>= 2``); delta: in ``(0, 1)``.

    Returns:
        ``(K,)`` float64, one bound per class.
    """
    _check_Z(classes, Z)
    check_int("T", T, low=2)
    delta = _check_delta(delta)
    w, p, support = _weights(classes, Z), classes.probs, classes.support()
    bounds = []
    for k in range(classes.K):
        wk, pk = w[k, support[k]], p[k, support[k]]
        eps = hoeffding_radius(T, int(support[k].sum()) + 1, delta)
        S = (pk * wk).sum()
        f = pk * wk / S
        r = (wk * (1 - f) + f * wk.max()).max()
        bounds.append(eps * r / torch.maximum(S - eps * (wk.max() - wk.min()), wk.min()))
    return torch.stack(bounds)
