"""Theorem 4 (Sec. 6, Eqn 13-14, App. F): the phase transition of the attention, scan then snap (Chapter 6).

**The family the theorem assumes.** All ``K`` classes share one query; one common token ``c`` with
``P(c|n) = p_c``; every class owns distinct tokens with the same profile (Corollary 2's symmetric family
with ``|G_CT| = 1``, e.g. ``data.sequence_classes(1, K, num_common=1, ...)``); ``Z(0) = 0``; uniform classes
(``pi_n = 1/K``). Then ``E = S (1 1^T - I)`` with ``S = f~_nc^2``, every ``beta_{nn'}`` is Corollary 2's
``beta(S)`` and ``xi_n = (K - 1) beta(S) S``, and Eqn 10 reduces *exactly* to (Theorem 2)::

    z-dot_c = -eta_Z gamma (sum_n pi_n xi_n) (1 - S),      z-dot_l = eta_Z gamma pi_n xi_n f~_l^2  (l distinct)

so ``dB_n/dt = eta_Z gamma pi_n xi_n = -z-dot_c / (K (1 - S))``: the common token collects the overlap of
``K`` classes, a distinct token that of its own class only (:func:`symmetric_rates`).

**Eqn 13** writes ``z-dot = -a eta_Z gamma e^{4z}`` and ``pi_n xi_n = b e^{4z}`` (for ``1/M << S << 1``,
``beta ~ S`` and ``S = S_0 e^{2z}`` with constant normalizers, so ``xi ~ (K - 1) S_0^2 e^{4z}``). The
constants follow from the family (:func:`eqn13_constants`, matched at ``t = 0``): ``a = sum_n pi_n xi_n(0)
(1 - S_0)``, ``b = pi_n xi_n(0)``; to leading order ``a = (K - 1) S_0^2`` and ``b = a / K``
(:func:`leading_constants`). So ``b / a = 1 / (K (1 - S_0)) ~ 1/K``, not the paper's single ``C_0``.

**Eqn 14** (:func:`eqn14_bound`): ``B_n = b / (4a) ln(1 + 4 a eta_Z Gamma)`` with ``Gamma = int_0^t gamma =
K M^2 h^2 / (2 eta_Y)`` (:func:`gamma_integral`), ``h`` the decoder state of Lemma 6 at step ``t``
(:func:`lemma6_time` is its inverse). ``B_n`` is Eqn 12's one quantity (``scansnap.theory.scanning.growth_bound``).

**Integrating it.** :func:`integrate_symmetric` integrates the exact reduced Eqn 10 system, :func:`integrate_eqn13`
the simplified one; :mod:`scansnap.theory.regimes` measures the regimes on any growth curve. Arrays are numpy
float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from scansnap._checks import check_array, check_int, check_positive
from scansnap.data import SequenceClasses, sequence_classes
from scansnap.theory import decoder
from scansnap.theory.fates import class_gradients, corollary2_beta, span_coefficients, unit_scores

__all__ = [
    "Eqn13Constants",
    "SymmetricRun",
    "cross_coefficient",
    "eqn13_constants",
    "eqn13_logit",
    "eqn14_at",
    "eqn14_bound",
    "gamma_integral",
    "growth_ceiling",
    "integrate_eqn13",
    "integrate_symmetric",
    "leading_constants",
    "lemma6_time",
    "optimum_root",
    "snap_time_limit",
    "symmetric_family_weights",
    "symmetric_rates",
    "theorem4_family",
]


def _check_sizes(M: int, K: int, eta_Y: float) -> None:
    check_int("M", M, low=2)
    check_int("K", K, low=1)
    check_positive("eta_Y", eta_Y)


def _nonneg(name: str, x: object) -> np.ndarray:
    a = check_array(name, x)
    if (a < 0).any():
        raise ValueError(f"{name}: must be >= 0")
    return a


def lemma6_time(h: object, M: int, K: int, eta_Y: float) -> np.ndarray:
    """Lemma 6: the step ``t = (K / eta_Y) ((exp(M h) - 1) / M + (M - 1) h)`` at decoder state ``h >= 0``."""
    _check_sizes(M, K, eta_Y)
    hh = _nonneg("h", h)
    return K / eta_Y * (np.expm1(M * hh) / M + (M - 1) * hh)


def eqn14_bound(h: object, M: int, K: int, eta_Y: float, eta_Z: float, a: float = 1.0, b: float = 1.0) -> np.ndarray:
    """Eqn 14: ``B(h) = b / (4 a) ln(1 + 2 a K M^2 eta_Z h^2 / eta_Y)`` at decoder state ``h >= 0`` (Theorem 4)."""
    _check_sizes(M, K, eta_Y)
    for name, v in (("eta_Z", eta_Z), ("a", a), ("b", b)):
        check_positive(name, v)
    hh = _nonneg("h", h)
    return b / (4 * a) * np.log1p(2 * a * K * M**2 * eta_Z * hh**2 / eta_Y)


def gamma_integral(t: object, M: int, K: int, eta_Y: float) -> np.ndarray:
    """``Gamma(t) = int_0^t gamma = K M^2 h(t/K)^2 / (2 eta_Y)``, the clock of Eqn 13 (Theorem 1's ``gamma``)."""
    _check_sizes(M, K, eta_Y)
    return K * M**2 * decoder.lemma6_h(_nonneg("t", t) / K, M, eta_Y) ** 2 / (2 * eta_Y)


def eqn14_at(t: object, M: int, K: int, eta_Y: float, eta_Z: float, a: float, b: float) -> np.ndarray:
    """Eqn 14's ``B_n`` at steps ``t`` (Lemma 6's ``h(t / K)``)."""
    _check_sizes(M, K, eta_Y)
    return eqn14_bound(decoder.lemma6_h(_nonneg("t", t) / K, M, eta_Y), M, K, eta_Y, eta_Z, a, b)


def eqn13_logit(t: object, M: int, K: int, eta_Y: float, eta_Z: float, a: float) -> np.ndarray:
    """Eqn 13's common logit in closed form, ``z(t) = -ln(1 + 4 a eta_Z Gamma(t)) / 4`` from ``z(0) = 0``."""
    check_positive("eta_Z", eta_Z)
    check_positive("a", a)
    return -np.log1p(4 * a * eta_Z * gamma_integral(t, M, K, eta_Y)) / 4


def integrate_eqn13(
    t: object, M: int, K: int, eta_Y: float, eta_Z: float, a: float, b: float, *, rtol: float = 1e-12,
    atol: float = 1e-30,
) -> tuple[np.ndarray, np.ndarray]:
    """``solve_ivp`` (DOP853) of Eqn 13 and of ``B-dot = b eta_Z gamma e^{4z}`` from ``z = B = 0``, in ``ln t``
    from ``t[0] > 0`` (started from the series ``B = b eta_Z Gamma``, ``z = -a eta_Z Gamma``; ``atol`` is tiny
    because ``B`` and ``z`` start near 0, so ``rtol`` controls the error).

    Returns:
        ``z`` and ``B``, each ``(S,)`` at the increasing times ``t`` (> 0).
    """
    times = check_array("t", t, ndim=1)
    if len(times) < 2 or times[0] <= 0 or not (np.diff(times) > 0).all():
        raise ValueError("t: must be increasing, > 0, with at least 2 entries")
    for name, v in (("eta_Z", eta_Z), ("a", a), ("b", b), ("rtol", rtol), ("atol", atol)):
        check_positive(name, v)
    G0 = float(gamma_integral(times[0], M, K, eta_Y))  # Gamma(t0) tiny: one term of the series suffices

    def rhs(s: float, y: np.ndarray) -> np.ndarray:
        tt = math.exp(s)
        rate = eta_Z * float(decoder.gamma(tt, M, K, eta_Y)) * math.exp(4 * y[0]) * tt
        return np.array([-a * rate, b * rate])

    y0 = [-a * eta_Z * G0, b * eta_Z * G0]
    sol = solve_ivp(rhs, (math.log(times[0]), math.log(times[-1])), y0, method="DOP853", t_eval=np.log(times),
                    rtol=rtol, atol=atol)
    if not sol.success:  # pragma: no cover - smooth system
        raise RuntimeError(f"integrate_eqn13: solve_ivp failed: {sol.message}")
    return sol.y[0], sol.y[1]


@dataclass(frozen=True)
class Eqn13Constants:
    """The constants of Eqn 13 for a family (``z-dot = -a eta_Z gamma e^{4z}``, ``pi_n xi_n = b e^{4z}``).

    Attributes:
        a, b: matched to Eqn 10's exact rates at ``Z = 0`` (Theorem 2(a)-(b)).
        S0: the common token's squared unit attention ``f~_nc(0)^2`` (its overlap ``E_{nn'}``).
        K, M: classes and vocabulary size.
    """

    a: float
    b: float
    S0: float
    K: int
    M: int


def symmetric_family_weights(classes: SequenceClasses) -> tuple[float, np.ndarray]:
    """``(p_c, P_l)`` of a family in Theorem 4's setting: one query, exactly one common token shared by every
    class, and the same sorted distinct profile in every class (``ValueError`` otherwise)."""
    if len(torch.unique(classes.query)) != 1:
        raise ValueError("classes: Theorem 4 needs one query for every class")
    common = classes.common()
    if len(common) != 1 or not bool((classes.probs[:, common[0]] > 0).all()):
        raise ValueError(f"classes: Theorem 4 needs exactly one common token, held by every class; "
                         f"got {common.tolist()}")
    profiles = [np.sort(classes.probs[n, classes.distinct(n)].numpy()) for n in range(classes.K)]
    pc = classes.probs[:, common[0]].numpy()
    if len(profiles[0]) == 0 or any(p.shape != profiles[0].shape or not np.allclose(p, profiles[0], rtol=0,
                                                                                    atol=1e-12) for p in profiles):
        raise ValueError("classes: every class needs the same distinct profile (a P-preserving bijection)")
    if not np.allclose(pc, pc[0], rtol=0, atol=1e-12):
        raise ValueError("classes: the common token needs the same P(c|n) in every class")
    return float(pc[0]), profiles[0]


def theorem4_family(K: int, num_distinct: int, S0: float) -> SequenceClasses:
    """A family in Theorem 4's setting: one query, ``K`` classes, one common token whose squared unit attention
    at ``Z = 0`` is ``S0`` (in (0, 1)), and ``num_distinct`` distinct tokens per class with the authors' weights
    (evenly spaced from 0.1 to 1; :func:`scansnap.data.sequence_classes`)."""
    check_int("K", K, low=2)
    check_int("num_distinct", num_distinct, low=1)
    if not 0 < S0 < 1:
        raise ValueError(f"S0: must lie in (0, 1); got {S0}")
    ramp = np.linspace(0.1, 1.0, num_distinct)
    weight = math.sqrt(S0 / (1 - S0) * float(ramp @ ramp))
    return sequence_classes(1, K, num_common=1, num_distinct=num_distinct, common_weight=weight)


def symmetric_rates(S: object, K: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    """Eqn 10 in the symmetric one-common-token family, per unit ``eta_Z gamma``: the common token's fall
    ``(sum_n pi_n xi_n)(1 - S)`` and the rate ``pi_n xi_n`` of ``B_n``, with ``xi_n = (K - 1) beta(S) S`` and
    ``pi_n = 1/K`` (``S = f~_nc^2`` in ``[0, 1)``). Their ratio is ``K (1 - S)``."""
    s = _nonneg("S", S)
    xi = (K - 1) * corollary2_beta(torch.from_numpy(s), K, M).numpy() * s
    return xi * (1 - s), xi / K


def eqn13_constants(classes: SequenceClasses, M: int | None = None) -> Eqn13Constants:
    """Eqn 13's constants matched at ``Z = 0`` for a family in Theorem 4's setting (see the module docstring).

    Args:
        classes: the family (:func:`symmetric_family_weights` validates it).
        M: the decoder's vocabulary size (default ``classes.M``; a larger one adds unused tokens).
    """
    pc, P = symmetric_family_weights(classes)
    M = classes.M if M is None else check_int("M", M, low=classes.M)
    S0 = pc**2 / (pc**2 + float(P @ P))
    fall, rate = symmetric_rates(S0, classes.K, M)
    return Eqn13Constants(a=float(fall), b=float(rate), S0=S0, K=classes.K, M=M)


def growth_ceiling(z_common: object, S0: float, K: int) -> np.ndarray:
    """How far the distinct tokens can have grown, given how far the common token fell, in the exact flow of Theorem 4's
    family from ``Z = 0``: ``B_n <= (1/K) (-z_c + S0 (1 - e^{2 z_c}) / (2 (1 - S0)))``.

    From ``dB_n = -dz_c / (K (1 - S))`` (:func:`symmetric_rates`) and ``S <= S0 e^{2 z_c} / (S0 e^{2 z_c} + 1 - S0)``
    (the distinct logits only grow); equality while they stay at 0. ``ln chi_l0 <= 2 B_n`` (Eqn 12), so a visible
    scan needs the common token to fall by about ``K (1 - S0) / 2`` per unit of ``ln chi_l0``.

    Args:
        z_common: the common logit ``z_c <= 0`` (any shape); S0: ``f~_nc^2`` at ``Z = 0``, in (0, 1); K: classes.

    Returns:
        the ceiling of ``B_n``, same shape as ``z_common``.
    """
    check_int("K", K, low=2)
    if not 0 < S0 < 1:
        raise ValueError(f"S0: must lie in (0, 1); got {S0}")
    z = np.asarray(z_common, dtype=float)
    return (-z + S0 * (1 - np.exp(2 * z)) / (2 * (1 - S0))) / K


def leading_constants(K: int, S0: float) -> tuple[float, float]:
    """Leading order of Eqn 13's constants (:func:`eqn13_constants`) for ``1/M << S0 << 1``:
    ``a = (K - 1) S0^2``, ``b = a / K``."""
    check_int("K", K, low=2)
    a = (K - 1) * check_positive("S0", S0) ** 2
    return a, a / K


@dataclass(frozen=True)
class SymmetricRun:
    """A solution of the exact Eqn 10 system of the symmetric one-common-token family (one class shown).

    Attributes:
        t: ``(S,)`` steps; z_common: ``(S,)`` the common logit; z_distinct: ``(S, L)`` the distinct logits
        (sorted profile, the dominant token last); S: ``(S,)`` ``f~_nc^2``; B: ``(S,)`` ``B_n = int A_n``.
    """

    t: np.ndarray
    z_common: np.ndarray
    z_distinct: np.ndarray
    S: np.ndarray
    B: np.ndarray


def integrate_symmetric(
    classes: SequenceClasses, eta_Y: float, eta_Z: float, t: object, *, M: int | None = None,
    rtol: float = 1e-10, atol: float = 1e-13,
) -> SymmetricRun:
    """Integrate Eqn 10 exactly in Theorem 4's family (:func:`symmetric_rates`, ``gamma`` of Lemma 6 at
    ``t / K``) with ``solve_ivp`` (DOP853), from ``Z = 0``; also ``B_n``. The clock is the decoder state ``h``
    (``gamma dt = K M^2 h dh / eta_Y``), so no ``gamma(t)`` is evaluated inside the integrator.

    Args:
        classes: the family; eta_Y, eta_Z: learning rates; t: ``(S,)`` increasing with ``t[0] = 0``;
        M: the decoder's vocabulary size (default ``classes.M``).
    """
    pc, P = symmetric_family_weights(classes)
    check_positive("eta_Y", eta_Y)
    check_positive("eta_Z", eta_Z)
    K, M = classes.K, classes.M if M is None else check_int("M", M, low=classes.M)
    times = check_array("t", t, ndim=1)
    if len(times) < 2 or times[0] != 0 or not (np.diff(times) > 0).all():
        raise ValueError("t: must be increasing with t[0] = 0 and at least 2 entries")
    L = len(P)
    w = np.concatenate([[pc], P])
    hs = decoder.lemma6_h(times / K, M, eta_Y)  # the decoder's state is the clock: gamma dt = (K M^2 h / eta_Y) dh

    def unit(z: np.ndarray) -> np.ndarray:
        c = w * np.exp(z - z.max())
        return c / np.linalg.norm(c)

    def rhs(h: float, y: np.ndarray) -> np.ndarray:
        f = unit(y[: L + 1])
        fall, rate = symmetric_rates(f[0] ** 2, K, M)
        g = eta_Z * K * M**2 * h / eta_Y
        return np.concatenate([[-g * fall], g * rate * f[1:] ** 2, [g * rate]])

    sol = solve_ivp(rhs, (0.0, float(hs[-1])), np.zeros(L + 2), method="DOP853", t_eval=hs, rtol=rtol, atol=atol)
    if not sol.success:  # pragma: no cover - smooth system
        raise RuntimeError(f"integrate_symmetric: solve_ivp failed: {sol.message}")
    z = sol.y[: L + 1].T
    S = np.array([unit(row)[0] ** 2 for row in z])
    return SymmetricRun(t=times, z_common=z[:, 0], z_distinct=z[:, 1:], S=S, B=sol.y[L + 1])


def optimum_root(M: int) -> float:
    """The positive root ``u*`` of ``phi(u) = exp(u) (2 - u) + (M - 1) u - 2`` (``M >= 2``), which places the
    learning rate ``eta_Y*`` that maximizes Eqn 14's ``B`` at a fixed horizon
    (:func:`scansnap.theory.snapping.horizon_optimum`)."""
    check_int("M", M, low=2)

    def phi(u: float) -> float:
        return np.exp(u) * (2.0 - u) + (M - 1) * u - 2.0

    # phi(u) = M u - u^3 / 6 + O(u^4) > 0 near 0, and phi is concave on u > 0: one sign change
    hi = 2.0
    while phi(hi) > 0:
        hi *= 2.0
    return brentq(phi, 1e-3, hi, xtol=1e-15, rtol=1e-15)


def snap_time_limit(M: int, K: int, eta_Y: float) -> float:
    """Eqn 14's transition time as :func:`scansnap.theory.snap_time` measures it: the decoder clock's exponent
    ``gamma t / Gamma`` falls from 2 to 1 where ``gamma t = Gamma``, i.e. at ``(K / eta_Y) G(u* / M)`` with
    ``G(h) = (exp(M h) - 1) / M + (M - 1) h`` and ``u*`` the positive root of ``exp(u)(2 - u) + (M - 1) u - 2``
    (:func:`optimum_root`, the root of Chapter 7's horizon optimum). Exactly proportional to
    ``1 / eta_Y``; ``u*`` is close to ``ln M``, so this is close to ``t0 = K ln M / eta_Y``."""
    _check_sizes(M, K, eta_Y)
    return float(lemma6_time(optimum_root(M) / M, M, K, eta_Y))


def cross_coefficient(classes: SequenceClasses, Y: torch.Tensor, Z: torch.Tensor, t: float,
                      eta_Y: float) -> tuple[float, float]:
    """Theorem 1's cross-class coefficient ``gamma beta_{01}`` of a model's decoder against the theorem's.

    The measured one comes from the least-squares coefficients of ``g_0 = Y (e_0 - alpha_0)`` on the
    ``f~_n`` (``scansnap.theory.span_coefficients``); the theorem's is ``gamma(t) beta_{01}(E)`` with ``gamma`` of
    Lemma 6 at step ``t`` and ``beta`` from the current overlaps (exact for Lemma 3's modified decoder).

    Args:
        classes: the family; Y, Z: ``(M, M)`` a model's parameters; t: its step (> 0); eta_Y: its decoder rate.

    Returns:
        ``(measured, theorem)``.
    """
    check_positive("t", t)
    ft = unit_scores(classes, Z.detach().to(torch.float64))
    A, _ = span_coefficients(ft, class_gradients(classes, Y.detach().to(torch.float64), Z.detach()))
    _, beta = decoder.theorem1_coefficients(decoder.gram(ft.numpy().T), classes.M)
    return -float(A[0, 1]), float(decoder.gamma(t, classes.M, classes.K, eta_Y)) * float(beta[0, 1])
