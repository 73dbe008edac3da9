"""Theorem 3 (growth of distinct tokens, Eqn 11-12): relative gain, growth factor, Eqn 12's ``B_n``,
and an ODE integration of Eqn 10 to check them against.

Setting (paper Sec. 5). Class ``n`` has query ``m = psi(n)``; its attention in the long-sequence
limit (Lemma 2) is ``f~_n = c_n / ||c_n||_2`` with ``c_{l|n} = P(l|n) exp(z_ml)``. For two distinct
tokens ``l, l'`` of ``n``:

* relative gain ``r_{l/l'|n}(t) = f~_nl^2(t) / f~_nl'^2(t) - 1`` (:func:`relative_gain`);
* growth factor ``chi_l(t) = exp(2 (z_ml(t) - z_ml(0)))`` (:func:`growth_factor`);
* Eqn 11: ``r_{l/l'|n}(t) = r_{l/l'|n}(0) chi_l(t)`` whenever every distinct token of ``n`` moves as
  ``z-dot_ml = A_n(t) f~_nl^2`` with one rate ``A_n(t)`` (Theorem 2(a): ``A_n = eta_Z gamma pi_n xi_n``);
* Eqn 12: with ``B_n(t) = eta_Z int_0^t gamma pi_n xi_n`` (:func:`growth_bound`, the one definition of
  ``B_n`` in the library: this book's reconstruction of Eqn 12, class weight ``pi_n`` included), a dominant
  token ``l_0`` (``r_{l_0/l|n}(0) > 0`` for every other distinct ``l``) whose class's common logits do not
  grow has ``exp(2 f~_nl0^2(0) B_n) <= chi_l0 <= exp(2 B_n)`` (:func:`dominant_token_bounds`).

The attention dynamics themselves (Eqn 10) come from :mod:`scansnap.theory.fates`, Theorem 1's ``gamma``
and ``xi`` from :mod:`scansnap.theory.decoder`; :func:`integrate_eqn10` integrates Eqn 10 with ``scipy``'s
``solve_ivp`` and accumulates ``B_n`` with it. Arrays are numpy float64 unless stated; token ids index the
last axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.integrate import solve_ivp

from scansnap._checks import check_array, check_int, check_positive
from scansnap._threads import one_thread
from scansnap.data import SequenceClasses
from scansnap.theory.decoder import gamma as theorem1_gamma
from scansnap.theory.decoder import gram, xi
from scansnap.theory.fates import eqn10_zdot, unit_scores

__all__ = [
    "Eqn10Run",
    "distinct_flow",
    "dominant_token",
    "dominant_token_bounds",
    "growth_bound",
    "growth_factor",
    "growth_rate",
    "integrate_eqn10",
    "relative_gain",
]



def _times(t: object) -> np.ndarray:
    times = check_array("t", t, ndim=1)
    if len(times) < 2 or times[0] != 0 or not (np.diff(times) > 0).all():
        raise ValueError("t: must be increasing with t[0] = 0 and at least 2 entries")
    return times


def relative_gain(ft: np.ndarray, l: int, l_prime: int) -> np.ndarray:
    """Theorem 3's relative gain ``r_{l/l'|n} = f~_nl^2 / f~_nl'^2 - 1``: ``ft`` ``(..., M)`` -> ``(...)``.

    ``ft`` may be the ``l2``- or the ``l1``-normalized attention (the ratio is the same).
    """
    f = check_array("ft", ft)
    M = f.shape[-1]
    check_int("l", l, low=0, high=M - 1)
    check_int("l_prime", l_prime, low=0, high=M - 1)
    if (f[..., l_prime] <= 0).any():
        raise ValueError(f"l_prime: token {l_prime} must have positive attention")
    return f[..., l] ** 2 / f[..., l_prime] ** 2 - 1.0


def growth_factor(z: np.ndarray, z0: np.ndarray | float) -> np.ndarray:
    """Theorem 3's growth factor ``chi_l = exp(2 (z_ml(t) - z_ml(0)))`` (elementwise, broadcasting)."""
    return np.exp(2.0 * (check_array("z", z) - check_array("z0", z0)))


def dominant_token_bounds(ft0: float | np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eqn 12: ``(exp(2 f~_nl0^2(0) B_n), exp(2 B_n))``, the bounds on the dominant token's ``chi_l0``.

    Args:
        ft0: ``f~_nl0(0)`` in ``[0, 1]`` (scalar or broadcastable to ``B``).
        B: ``B_n(t) = int_0^t A_n >= 0``, any shape.
    """
    f0, b = check_array("ft0", ft0), check_array("B", B)
    if (f0 < 0).any() or (f0 > 1).any():
        raise ValueError("ft0: must lie in [0, 1]")
    if (b < 0).any():
        raise ValueError("B: must be >= 0")
    return np.exp(2.0 * f0**2 * b), np.exp(2.0 * b)


def dominant_token(probs: np.ndarray, z0: np.ndarray, tokens: np.ndarray) -> int:
    """The token of ``tokens`` with the largest ``P(l|n) exp(z_ml(0))`` (Sec. 5, "initial value as prior").

    Args:
        probs, z0: ``(M,)`` ``P(l|n)`` and the initial logits of the class's query row.
        tokens: candidate token ids, e.g. the distinct tokens ``G_DT(n)``.
    """
    p, z = check_array("probs", probs, ndim=1), check_array("z0", z0, ndim=1)
    if p.shape != z.shape:
        raise ValueError(f"z0: must have the shape of probs {p.shape}; got {z.shape}")
    idx = np.asarray(tokens, dtype=np.int64)
    if idx.ndim != 1 or len(idx) == 0 or idx.min() < 0 or idx.max() >= len(p):
        raise ValueError(f"tokens: must be a non-empty 1-D array of ids in [0, {len(p) - 1}]")
    if (p[idx] <= 0).any():
        raise ValueError("tokens: every candidate needs P(l|n) > 0")
    return int(idx[np.argmax(np.log(p[idx]) + z[idx])])


def growth_rate(gamma: object, xi_n: object, *, eta_Z: float, pi: object) -> np.ndarray:
    """Theorem 2(a)'s rate ``A_n = eta_Z gamma pi_n xi_n`` at which the distinct tokens of class ``n`` move
    (``z-dot_ml = A_n f~_nl^2``), elementwise.

    Args:
        gamma: ``(S,)`` (or a scalar) Theorem 1's ``gamma`` (:func:`scansnap.theory.decoder.gamma`).
        xi_n: ``(S, K)`` or ``(S,)`` (or ``(K,)`` with a scalar ``gamma``) Theorem 1(a)'s ``xi_n``
            (:func:`scansnap.theory.decoder.xi`).
        eta_Z: attention learning rate ``> 0``.
        pi: class weights ``pi_n >= 0``, broadcastable to ``xi_n``'s last axis (``1/K`` for the uniform
            classes of training; 1 in the paper's convention).

    Returns:
        ``A_n`` with the shape of ``xi_n``.
    """
    check_positive("eta_Z", eta_Z)
    g, x, w = check_array("gamma", gamma), check_array("xi_n", xi_n), check_array("pi", pi)
    if (g < 0).any():
        raise ValueError("gamma: must be >= 0")
    if (w < 0).any():
        raise ValueError("pi: class weights must be >= 0")
    if g.ndim == 1 and x.ndim == 2:
        g = g[:, None]
    return eta_Z * g * w * x


def growth_bound(t: object, gamma: object, xi_n: object, *, eta_Z: float, pi: object) -> np.ndarray:
    """Eqn 12's ``B_n(t) = eta_Z int_0^t gamma(tau) pi_n xi_n(tau) dtau``, the one definition of ``B_n`` in the
    library (this book's reconstruction of Eqn 12: the integral of :func:`growth_rate`), by the trapezoid rule on
    samples along a trajectory (a training run, or a flow). :func:`integrate_eqn10` integrates the same rate
    inside its ODE instead (to the integrator's accuracy).

    Args:
        t: ``(S,)`` increasing sample times with ``t[0] = 0`` (SGD steps).
        gamma: ``(S,)`` Theorem 1's ``gamma(t)``; xi_n: ``(S, K)`` or ``(S,)`` Theorem 1(a)'s ``xi_n(t)``.
        eta_Z, pi: as in :func:`growth_rate`.

    Returns:
        ``B_n(t_s)`` with the shape of ``xi_n`` (0 at ``t = 0``).
    """
    times = _times(t)
    A = growth_rate(gamma, xi_n, eta_Z=eta_Z, pi=pi)
    if A.shape[0] != len(times):
        raise ValueError(f"xi_n: needs one row per time ({len(times)}); got shape {A.shape}")
    steps = np.diff(times).reshape(-1, *([1] * (A.ndim - 1)))
    return np.concatenate([np.zeros_like(A[:1]), np.cumsum(steps * (A[1:] + A[:-1]) / 2, axis=0)])


@dataclass(frozen=True)
class Eqn10Run:
    """A solution of Eqn 10 with the rates ``A_n`` and the bounds ``B_n`` of Theorem 3.

    Attributes:
        t: ``(S,)`` times (SGD steps).
        logits: ``(S, K, M)``; ``logits[s, n] = z_{psi(n)}(t_s)``.
        ft: ``(S, K, M)``, Lemma 2's ``f~_n(t_s)``.
        rate: ``(S, K)``, :func:`growth_rate` ``A_n(t) = eta_Z gamma(t) pi_n xi_n(t)`` with ``pi_n = 1/K``.
        B: ``(S, K)``, ``B_n(t) = int_0^t A_n`` (:func:`growth_bound`'s quantity, integrated with the ODE).
    """

    t: np.ndarray
    logits: np.ndarray
    ft: np.ndarray
    rate: np.ndarray
    B: np.ndarray


def integrate_eqn10(
    classes: SequenceClasses,
    eta_Y: float,
    eta_Z: float,
    t: np.ndarray,
    Z0: torch.Tensor | np.ndarray | None = None,
    *,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> Eqn10Run:
    """Integrate Eqn 10 (:func:`scansnap.theory.fates.eqn10_zdot`) and ``B_n`` with ``solve_ivp`` (DOP853).

    The decoder enters through ``gamma(t)`` (:func:`scansnap.theory.decoder.gamma`, Lemma 6 at class time
    ``t / K``); classes are uniform (``pi_n = 1/K``). The right-hand side is batched torch arithmetic (no
    loop over classes or items).

    Args:
        classes: the sequence classes.
        eta_Y, eta_Z: learning rates ``> 0``.
        t: ``(S,)`` increasing output times with ``t[0] = 0``.
        Z0: ``(M, M)`` initial attention logits (default 0).
        rtol, atol: tolerances of the integrator.
    """
    check_positive("eta_Y", eta_Y)
    check_positive("eta_Z", eta_Z)
    check_positive("rtol", rtol)
    check_positive("atol", atol)
    times = _times(t)
    K, M = classes.K, classes.M
    start = np.zeros((M, M)) if Z0 is None else check_array("Z0", Z0, ndim=2)
    if start.shape != (M, M):
        raise ValueError(f"Z0: must have shape ({M}, {M}); got {start.shape}")
    rows = torch.unique(classes.query)  # only the query rows of Z move
    Q, pi = len(rows), np.full(K, 1.0 / K)

    def full(y: np.ndarray) -> torch.Tensor:
        Z = torch.as_tensor(start, dtype=torch.float64).clone()
        Z[rows] = torch.as_tensor(y[: Q * M], dtype=torch.float64).reshape(Q, M)
        return Z

    def rate(Z: torch.Tensor, gamma: float) -> np.ndarray:
        return growth_rate(gamma, xi(gram(unit_scores(classes, Z).mT), M), eta_Z=eta_Z, pi=pi)

    def rhs(t_: float, y: np.ndarray) -> np.ndarray:
        Z, gamma = full(y), float(theorem1_gamma(t_, M, K, eta_Y))
        return np.concatenate([eqn10_zdot(classes, Z, gamma, eta_Z)[rows].numpy().ravel(), rate(Z, gamma)])

    y0 = np.concatenate([start[rows.numpy()].ravel(), np.zeros(K)])
    with one_thread():
        sol = solve_ivp(rhs, (0.0, float(times[-1])), y0, method="DOP853", t_eval=times, rtol=rtol, atol=atol)
        if not sol.success:  # pragma: no cover - the system is smooth
            raise RuntimeError(f"integrate_eqn10: solve_ivp failed: {sol.message}")
        Zs = torch.as_tensor(start, dtype=torch.float64).repeat(len(times), 1, 1)
        Zs[:, rows] = torch.as_tensor(sol.y[: Q * M].T, dtype=torch.float64).reshape(len(times), Q, M)
        gammas = theorem1_gamma(times, M, K, eta_Y)
        ft = unit_scores(classes, Zs)  # (S, K, M), batched
        return Eqn10Run(t=times, logits=Zs[:, classes.query].numpy(), ft=ft.numpy(),
                        rate=growth_rate(gammas, xi(gram(ft.mT), M), eta_Z=eta_Z, pi=pi), B=sol.y.T[:, Q * M:])


def distinct_flow(
    probs: np.ndarray, distinct: np.ndarray, rate: float, t: np.ndarray, z0: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One class whose distinct tokens move at a constant rate, ``z-dot_l = rate f~_l^2``, other logits frozen.

    The first fate of Sec. 5: ``xi_n`` bounded away from 0 (here ``A_n = rate``), so ``B_n = rate t``
    grows without bound.

    Args:
        probs: ``(M,)`` ``P(l|n)``; distinct: ``(M,)`` bool mask of ``G_DT(n)``.
        rate: ``A_n > 0``; t: ``(S,)`` increasing times with ``t[0] = 0``; z0: ``(M,)`` initial logits (default 0).

    Returns:
        ``z`` ``(S, M)`` and ``f~`` ``(S, M)`` (``l2``-normalized ``P exp(z)``).
    """
    p = check_array("probs", probs, ndim=1)
    if (p < 0).any() or p.sum() <= 0:
        raise ValueError("probs: must be non-negative with a positive entry")
    mask = np.asarray(distinct)
    if mask.dtype != bool or mask.shape != p.shape:
        raise ValueError(f"distinct: must be a bool mask of shape {p.shape}; got {mask.dtype} {mask.shape}")
    check_positive("rate", rate)
    times = _times(t)
    start = np.zeros_like(p) if z0 is None else check_array("z0", z0, ndim=1)
    if start.shape != p.shape:
        raise ValueError(f"z0: must have the shape of probs {p.shape}; got {start.shape}")

    def unit(z: np.ndarray) -> np.ndarray:
        c = p * np.exp(z - z[..., p > 0].max(axis=-1, keepdims=True))
        return c / np.linalg.norm(c, axis=-1, keepdims=True)

    sol = solve_ivp(lambda _, z: np.where(mask, rate * unit(z) ** 2, 0.0), (0.0, float(times[-1])), start,
                    method="DOP853", t_eval=times, rtol=1e-10, atol=1e-12)
    if not sol.success:  # pragma: no cover
        raise RuntimeError(f"distinct_flow: solve_ivp failed: {sol.message}")
    z = sol.y.T
    return z, unit(z)
