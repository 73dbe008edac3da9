"""Measures of scanning in a trajectory of attention (Chapter 5): how far training is from Eqn 11, where
the dominant token's growth factor sits against Eqn 12's band, the scanning order, and the subset of
distinct tokens an attention pattern picks (paper Fig. 5).

These read snapshots of the attention ``f_n`` (from the trainer, :attr:`scansnap.train.History.attention`,
or from an integration of Eqn 10); the statements they measure are in :mod:`scansnap.theory.scanning`.
Arrays are numpy float64.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from scansnap._checks import check_array, check_fraction, check_int, check_positive
from scansnap.data import SequenceClasses
from scansnap.theory.decoder import gamma, gram, xi
from scansnap.theory.fates import logits_from_attention
from scansnap.theory.scanning import dominant_token, dominant_token_bounds, growth_bound, growth_factor, relative_gain

__all__ = [
    "Theorem3Check",
    "band_share",
    "deviation_at_growth",
    "dominant_log_growth",
    "drop_steps",
    "eqn11_deviation",
    "measured_rate",
    "modal_set",
    "support_logits",
    "theorem3_check",
    "top_set",
]


def support_logits(f: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """The logits ``z_ml`` ``(S, M)`` of one class read back from its attention snapshots ``f`` ``(S, M)``.

    On ``supp(n)``, ``z_ml = log(f_nl / P(l|n)) + const``, and the constant is fixed by the invariant of
    gradient training (Lemma 1): when class ``n`` is the only class of its query ``m`` (as in Syn-Small),
    every update of row ``m`` sums to 0 over ``supp(n)``, so from ``Z(0) = 0`` the logits on ``supp(n)``
    sum to 0 at every step (SGD with or without momentum; not Adam). Entries off the support are 0.
    """
    fn, p = check_array("f", f, ndim=2), check_array("probs", probs, ndim=1)
    if fn.shape[1] != len(p):
        raise ValueError(f"f: must be (S, {len(p)}) like probs; got {fn.shape}")
    support = p > 0
    if (fn[:, support] <= 0).any():
        raise ValueError("f: must be positive on the support of probs")
    z = np.zeros_like(fn)
    z[:, support] = np.log(fn[:, support] / p[support])
    z[:, support] -= z[:, support].mean(axis=1, keepdims=True)  # the gauge: logits on supp(n) sum to 0
    return z


def _distinct(probs: np.ndarray, distinct: np.ndarray, M: int) -> np.ndarray:
    mask = np.asarray(distinct)
    if mask.shape != (M,) or mask.dtype != bool or len(probs) != M:
        raise ValueError(f"distinct: f (S, M), probs (M,) and distinct (M,) bool must agree; got M = {M}, "
                         f"{np.shape(probs)}, {mask.dtype} {mask.shape}")
    if not (mask <= (np.asarray(probs) > 0)).all() or mask.sum() < 2:
        raise ValueError("distinct: must mark at least 2 tokens of the support of probs")
    return np.flatnonzero(mask)


def eqn11_deviation(
    f: np.ndarray, probs: np.ndarray, distinct: np.ndarray, l0: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """How far trained attention is from Eqn 11: ``|r_{l0/l|n}(t) / (r_{l0/l|n}(0) chi_l0(t)) - 1|``, with the
    logits read back by :func:`support_logits` (from ``Z(0) = 0``, class ``n`` alone on its query).

    Args:
        f: ``(S, M)`` attention snapshots ``f_n = c_n / 1^T c_n`` of one class (row 0 the start),
            positive on its support.
        probs: ``(M,)`` ``P(l|n)``; distinct: ``(M,)`` bool mask of ``G_DT(n)`` (at least 2 tokens).
        l0: the reference distinct token (default: the most frequent one).

    Returns:
        ``chi_l0`` ``(S,)`` and the deviation ``(L - 1, S)`` for the other distinct tokens ``l`` (in
        increasing id order).
    """
    fn, p = check_array("f", f, ndim=2), check_array("probs", probs, ndim=1)
    D = _distinct(p, distinct, fn.shape[1])
    z = support_logits(fn, p)
    l0 = int(D[np.argmax(p[D])]) if l0 is None else check_int("l0", l0, low=0, high=len(p) - 1)
    if l0 not in D:
        raise ValueError(f"l0: must be one of the distinct tokens {D.tolist()}; got {l0}")
    chi = growth_factor(z[:, l0], z[0, l0])
    r = np.stack([relative_gain(fn, l0, int(l)) for l in D if l != l0])  # (L - 1, S)
    return chi, np.abs(r / (r[:, :1] * chi) - 1.0)


def dominant_log_growth(attention: torch.Tensor, classes: SequenceClasses, n: int = 0) -> tuple[np.ndarray,
                                                                                                   np.ndarray]:
    """``ln chi_l0(t) = 2 (z_{m l0}(t) - z_{m l0}(0))`` of class ``n``'s dominant distinct token in a trained run,
    the growth a scan is measured by (Theorem 3, Eqn 12; Chapter 6's P1).

    The logits are read back from the attention (:func:`scansnap.theory.logits_from_attention`), ``m`` is the
    class's query and ``l0`` its dominant distinct token at the first snapshot (:func:`scansnap.theory.dominant_token`:
    the largest ``P(l|n) exp(z_ml(0))``), chosen per configuration.

    Args:
        attention: ``(S, C, K, M)`` snapshots of ``C`` configurations, e.g.
            :attr:`scansnap.train.History.attention` (row 0 the start).
        classes: the classes the run trained on; n: the class, ``0 <= n < K``.

    Returns:
        ``ln chi_l0`` ``(S, C)`` (0 at the first snapshot) and ``l0`` ``(C,)`` (token ids).
    """
    f = torch.as_tensor(attention)
    if f.ndim != 4 or tuple(f.shape[2:]) != (classes.K, classes.M):
        raise ValueError(f"attention: must have shape (S, C, K, M) = (S, C, {classes.K}, {classes.M}); got "
                         f"{tuple(f.shape)}")
    n = check_int("n", n, low=0, high=classes.K - 1)
    q = int(classes.query[n])
    z = logits_from_attention(f, classes)[:, :, q].to(torch.float64).numpy()  # (S, C, M)
    probs, tokens = classes.probs[n].to(torch.float64).numpy(), classes.distinct(n).numpy()
    l0 = np.array([dominant_token(probs, z[0, c], tokens) for c in range(z.shape[1])], dtype=np.int64)
    zl = z[:, np.arange(z.shape[1]), l0]
    return 2.0 * (zl - zl[0]), l0  # ln of growth_factor(zl, zl[0]), without its exp


def measured_rate(f: np.ndarray, probs: np.ndarray, distinct: np.ndarray) -> np.ndarray:
    """The rate ``A_n`` at which one class's distinct logits actually moved, per step: the least-squares fit of
    ``dz_l = A_n f~_nl^2`` over the distinct tokens (Theorem 2(a)'s form), ``f~`` at the start of the step.

    Args:
        f, probs, distinct: as in :func:`eqn11_deviation` (snapshots one step apart).

    Returns:
        ``(S - 1,)``; its cumulative sum is the ``B_n`` of the run's own motion.
    """
    fn, p = check_array("f", f, ndim=2), check_array("probs", probs, ndim=1)
    D = _distinct(p, distinct, fn.shape[1])
    dz = np.diff(support_logits(fn, p)[:, D], axis=0)
    q = (fn / np.linalg.norm(fn, axis=1, keepdims=True))[:-1, D] ** 2
    return (dz * q).sum(1) / (q * q).sum(1)


def drop_steps(share: np.ndarray, tau: float) -> np.ndarray:
    """The scanning order: for each token, the first snapshot index at which ``share`` falls below
    ``tau`` times its initial value; ``S`` (one past the last) for a token that never does. Theorem 3 says
    distinct tokens drop in order of increasing ``P(l|n)`` (claim C21).

    Args:
        share: ``(S, L)`` attention of ``L`` tokens at ``S`` snapshots (row 0 the start, positive).
        tau: threshold fraction in ``(0, 1)``.

    Returns:
        ``(L,)`` int64.
    """
    a = check_array("share", share, ndim=2)
    if not (0 < tau < 1):
        raise ValueError(f"tau: must lie in (0, 1); got {tau}")
    if (a[0] <= 0).any():
        raise ValueError("share: the initial share of every token must be > 0")
    below = a < tau * a[0]
    return np.where(below.any(axis=0), below.argmax(axis=0), a.shape[0]).astype(np.int64)


def top_set(share: np.ndarray, tokens: np.ndarray, mass: float = 0.5) -> frozenset[int]:
    """The fewest tokens that together hold at least ``mass`` of ``share`` (larger share first, ties by
    smaller id): which subset of distinct tokens an attention pattern picks (paper Fig. 5).

    Args:
        share: ``(L,)`` non-negative attention of the tokens ``tokens`` ``(L,)``.
        mass: fraction of the total, in ``(0, 1]``.
    """
    s = check_array("share", share, ndim=1)
    ids = np.asarray(tokens, dtype=np.int64)
    if ids.shape != s.shape:
        raise ValueError(f"tokens: must have the shape of share {s.shape}; got {ids.shape}")
    if (s < 0).any() or s.sum() <= 0:
        raise ValueError("share: must be non-negative with a positive total")
    if not (0 < mass <= 1):
        raise ValueError(f"mass: must lie in (0, 1]; got {mass}")
    order = np.lexsort((ids, -s))
    cum = np.cumsum(s[order]) / s.sum()
    k = min(int(np.searchsorted(cum, mass * (1 - 1e-12))) + 1, len(s))
    return frozenset(int(i) for i in ids[order[:k]])


def deviation_at_growth(chi: np.ndarray, deviation: np.ndarray, chi_star: float) -> tuple[float, float]:
    """Summarize :func:`eqn11_deviation` (the distance from Theorem 3's Eqn 11) for one run: the deviation
    (worst over tokens) at the first snapshot at which ``chi_l0`` reaches ``chi_star`` (nan if it never does),
    so that runs are compared at the same amount of scanning; and its maximum over the run.

    Args:
        chi: ``(S,)`` growth factor of the dominant token; deviation: ``(L - 1, S)``; chi_star: ``> 1``.
    """
    c, d = check_array("chi", chi, ndim=1), check_array("deviation", deviation, ndim=2)
    if d.shape[1] != len(c):
        raise ValueError(f"deviation: must have one column per snapshot ({len(c)}); got shape {d.shape}")
    if not chi_star > 1:
        raise ValueError(f"chi_star: must be > 1; got {chi_star}")
    worst = d.max(axis=0)
    hit = np.flatnonzero(c >= chi_star)
    return (float(worst[hit[0]]) if len(hit) else float("nan")), float(worst.max())


def band_share(chi: np.ndarray, lower: np.ndarray, upper: np.ndarray, rtol: float = 1e-9) -> float:
    """Share of entries with ``lower <= chi <= upper`` (Eqn 12's band), each bound relaxed by ``rtol``."""
    c, lo, hi = check_array("chi", chi), check_array("lower", lower), check_array("upper", upper)
    if not (c.shape == lo.shape == hi.shape) or c.size == 0:
        raise ValueError(f"lower: chi, lower and upper must share one non-empty shape; got {c.shape}, {lo.shape}, "
                         f"{hi.shape}")
    return float(((c >= lo * (1 - rtol)) & (c <= hi * (1 + rtol))).mean())


def modal_set(shares: np.ndarray, tokens: np.ndarray, mass: float = 0.5) -> tuple[frozenset[int], float]:
    """The :func:`top_set` that most runs pick, and the share of runs that pick it (ties: the first seen): how
    consistently a learning rate picks its subset of distinct tokens (paper Fig. 5, claim C37).

    Args:
        shares: ``(runs, L)`` attention of the tokens ``tokens`` ``(L,)`` in each run; mass: as in :func:`top_set`.
    """
    s = check_array("shares", shares, ndim=2)
    sets = [top_set(row, tokens, mass) for row in s]
    picked, count = Counter(sets).most_common(1)[0]
    return picked, count / len(sets)


@dataclass(frozen=True)
class Theorem3Check:
    """One training run measured against Theorem 3 for one class (:func:`theorem3_check`).

    Attributes:
        deviation_at_star, deviation_max: :func:`deviation_at_growth` of the Eqn-11 deviation.
        band_share_measured: share of snapshots after the first at which ``chi_l0`` lies in Eqn 12's band with
            ``B_n`` the integral of the run's own rate (:func:`measured_rate`).
        band_share_theorem1: the same with Eqn 12's ``B_n = eta_Z int gamma pi_n xi_n`` of Theorem 1's ``gamma``
            and ``xi_n(t)`` (:func:`scansnap.theory.scanning.growth_bound`).
        monotone_share: share of steps at which ``f~_nl0`` did not decrease (Eqn 12's monotonicity).
        chi_end, B_end_measured, B_end_theorem1: the final growth factor of ``l0`` and both ``B_n``.
    """

    deviation_at_star: float
    deviation_max: float
    band_share_measured: float
    band_share_theorem1: float
    monotone_share: float
    chi_end: float
    B_end_measured: float
    B_end_theorem1: float


def theorem3_check(f: object, classes: SequenceClasses, n: int, *, eta_Y: float, eta_Z: float, momentum: float = 0.0,
                   chi_star: float = 1.5) -> Theorem3Check:
    """Measure one training run (from ``Z(0) = 0``, class ``n`` alone on its query) against Theorem 3.

    Theorem 1's ``B_n`` uses ``xi_n(t)`` of the run's attention (:func:`scansnap.theory.decoder.xi`), ``gamma(t)``
    of Lemma 6 and ``pi_n = 1/K``; heavy-ball momentum ``mu`` enters as its long-run effective rates
    ``eta / (1 - mu)`` (an approximation the theorem does not make). The dominant token is the most frequent
    distinct token.

    Args:
        f: ``(S, K, M)`` attention snapshots ``f_n`` at steps ``0 .. S - 1``.
        classes: the family; n: the class; eta_Y, eta_Z, momentum: the run's optimizer; chi_star: ``> 1``.
    """
    a = check_array("f", f, ndim=3)
    check_int("n", n, low=0, high=classes.K - 1)
    check_positive("eta_Y", eta_Y)
    check_positive("eta_Z", eta_Z)
    eff = 1.0 / (1.0 - check_fraction("momentum", momentum))
    t = np.arange(a.shape[0], dtype=np.float64)
    ft = torch.as_tensor(a / np.linalg.norm(a, axis=-1, keepdims=True))
    xi_n = xi(gram(ft.mT), classes.M).numpy()[:, n]
    B_th = growth_bound(t, gamma(t, classes.M, classes.K, eta_Y * eff), xi_n, eta_Z=eta_Z * eff, pi=1.0 / classes.K)
    probs, mask = classes.probs[n].numpy(), classes.distinct_mask()[n].numpy()
    D = np.flatnonzero(mask)
    l0 = int(D[np.argmax(probs[D])])
    chi, dev = eqn11_deviation(a[:, n], probs, mask, l0)
    at_star, worst = deviation_at_growth(chi, dev, chi_star)
    B_me = np.concatenate([[0.0], np.cumsum(measured_rate(a[:, n], probs, mask))])
    f0 = ft[0, n, l0].item()
    bands = [band_share(chi[1:], *(x[1:] for x in dominant_token_bounds(f0, np.maximum(B, 0.0)))) for B in (B_me, B_th)]
    return Theorem3Check(at_star, worst, bands[0], bands[1], float((np.diff(ft[:, n, l0].numpy()) >= -1e-12).mean()),
                         float(chi[-1]), float(B_me[-1]), float(B_th[-1]))
