"""What the scan-then-snap dynamics (Theorems 3-4) predict for the sparsity of the attention
(Chapter 7, the paper's Figure 6).

Three pieces, all numpy float64:

* **Entropy along the growth law** (Theorem 2(a) and Eqn 11 integrated). If the logits of the
  distinct tokens ``l`` of a class move as ``z-dot_l = A(t) f~_l^2`` with one common rate
  ``A(t) >= 0`` and ``f~_l = P_l exp(z_l) / ||c||``, then ``exp(-2 z_l(t)) = exp(-2 z_l(0)) - 2 P_l^2 S(t)``
  with ``S = int A / ||c||^2``. With ``a_l = exp(-2 z_l(0)) / P_l^2`` and ``a_0 = min_l a_l`` (the
  dominant token ``l_0``), the growth factor of ``l_0`` is ``chi = a_0 / (a_0 - 2 S)`` and the
  attention over the distinct tokens, renormalized, is
  ``p_l proportional to (a_l - a_0 (1 - 1/chi))^(-1/2)``: one scalar ``chi >= 1`` indexes the whole
  path (:func:`growth_law_attention`). Its entropy (:func:`entropy`) starts at the entropy of
  ``P_l exp(z_l(0))`` (``chi = 1``) and tends to 0 like ``chi^(-1/2) ln(chi) / 2 * sum_l sqrt(a_0 / (a_l - a_0))``
  (:func:`entropy_tail`).
* **Theorem 4 in parametric form**, from :mod:`scansnap.theory.phase` (Chapter 6, where it is derived and
  its constants settled): Lemma 6's ``t(h) = (K / eta_Y) ((exp(M h) - 1) / M + (M - 1) h)``
  (:func:`lemma6_time`) and Eqn 14's ``B(h) = b / (4 a) ln(1 + 2 a K M^2 eta_Z h^2 / eta_Y)``
  (:func:`eqn14_bound`), re-exported here.
* **The learning-rate optimum at a fixed horizon** (:func:`horizon_optimum`). At fixed ``t`` and
  ``eta_Z``, ``B`` is largest (the attention sparsest) at ``eta_Y* = (K / t) G(u* / M)`` with
  ``G(h) = (exp(M h) - 1) / M + (M - 1) h`` and ``u* > 0`` the root of
  ``phi(u) = exp(u) (2 - u) + (M - 1) u - 2``; ``eta_Y*`` does not depend on ``eta_Z``.

Nothing here depends on the constants ``a``, ``b`` of Eqn 13 beyond ``a, b > 0`` (Chapter 6 derives them:
``b / a = 1 / (K (1 - S_0))``, :func:`scansnap.theory.phase.eqn13_constants`).
"""

from __future__ import annotations

import numpy as np

from scansnap._checks import check_int, check_positive
from scansnap.theory.phase import eqn14_bound, lemma6_time, optimum_root

__all__ = [
    "entropy",
    "entropy_tail",
    "eqn14_bound",
    "growth_law_attention",
    "horizon_optimum",
    "lemma6_time",
]


def _finite(name: str, x: object) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: must be finite (no nan or inf)")
    return a


def _inverse_weights(weights: object, z0: object | None) -> np.ndarray:
    """``a_l = exp(-2 z_l(0)) / P_l^2`` for ``weights`` ``(L,)`` > 0 (any scale) and ``z0`` ``(L,)``."""
    w = _finite("weights", weights)
    if w.ndim != 1 or len(w) < 1 or not (w > 0).all():
        raise ValueError(f"weights: must be a non-empty 1-D array of numbers > 0; got shape {w.shape}")
    z = np.zeros_like(w) if z0 is None else _finite("z0", z0)
    if z.shape != w.shape:
        raise ValueError(f"z0: must have the shape of weights {w.shape}; got {z.shape}")
    w = w / w.max()
    return np.exp(-2.0 * (z - z.max())) / w**2  # rescaling all a_l by one factor leaves p unchanged


def growth_law_attention(weights: object, chi: object, z0: object | None = None) -> np.ndarray:
    """The distinct attention of one class along Theorem 3's growth law (Eqn 11) when the dominant token's growth
    factor is ``chi``.

    Args:
        weights: ``(L,)`` ``P(l|n)`` of the class's distinct tokens (> 0; any common scale).
        chi: growth factor ``chi = exp(2 (z_l0(t) - z_l0(0))) >= 1`` of the dominant token, any shape.
        z0: ``(L,)`` initial logits ``z_l(0)`` (default 0).

    Returns:
        ``(*chi.shape, L)``: ``p_l proportional to (a_l - a_0 (1 - 1/chi))^(-1/2)``, rows summing to 1.
    """
    a = _inverse_weights(weights, z0)
    c = _finite("chi", chi)
    if (c < 1).any():
        raise ValueError("chi: the growth factor must be >= 1")
    a0 = a.min()
    # a_l - a_0 + a_0 / chi, with a_l - a_0 computed first (exact 0 for the dominant token)
    base = (a - a0)[None, :] + a0 / c.reshape(-1, 1)
    q = base ** -0.5
    p = q / q.sum(axis=-1, keepdims=True)
    return p.reshape(*c.shape, len(a))


def entropy(p: object) -> np.ndarray:
    """Entropy (nats) over the last axis of distributions ``p`` ``(..., L)`` (``0 ln 0 = 0``): the sparsity measure
    of the paper's Figure 6."""
    q = _finite("p", p)
    if (q < 0).any():
        raise ValueError("p: must be non-negative")
    logs = np.log(np.where(q > 0, q, 1.0))
    return -(q * logs).sum(axis=-1)


def entropy_tail(weights: object, chi: object, z0: object | None = None) -> np.ndarray:
    """The large-``chi`` asymptote ``chi^(-1/2) ln(chi) / 2 * sum_{l != l0} sqrt(a_0 / (a_l - a_0))`` of the
    entropy along Theorem 3's growth law.

    The entropy of :func:`growth_law_attention` divided by this tends to 1 as ``chi -> infinity``
    (needs a unique dominant token: ``a_l > a_0`` for every other ``l``).
    """
    a = _inverse_weights(weights, z0)
    c = _finite("chi", chi)
    if (c <= 1).any():
        raise ValueError("chi: must be > 1 for the asymptote")
    gaps = np.sort(a)[1:] - a.min()
    if (gaps <= 0).any():
        raise ValueError("weights: the dominant token must be unique (a_l > a_0 for every other token)")
    return 0.5 * np.log(c) / np.sqrt(c) * np.sqrt(a.min() / gaps).sum()


def horizon_optimum(M: int, K: int, t: float) -> float:
    """The decoder learning rate ``eta_Y* = (K / t) G(u* / M)`` that maximizes ``B`` at horizon ``t``.

    ``G(h) = (exp(M h) - 1) / M + (M - 1) h`` (Lemma 6) and ``u*`` is :func:`optimum_root`. Below
    ``eta_Y*`` the bound ``B(t)`` grows with ``eta_Y``, above it ``B(t)`` falls; ``eta_Z`` and the
    constants ``a``, ``b`` of Eqn 13 do not move it.
    """
    check_int("M", M, low=2)
    check_int("K", K, low=1)
    check_positive("t", t)
    u = optimum_root(M)
    return K / t * (np.expm1(u) / M + (M - 1) * u / M)
