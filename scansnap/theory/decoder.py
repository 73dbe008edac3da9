"""Section 4 and Appendix D: the dynamics of the decoder ``Y`` with the attention frozen.

With ``Z`` fixed (Assumption 1(c)) and long sequences (Lemma 2), class ``k`` feeds the decoder the
fixed unit vector ``f~_k``; the columns of ``F = [f~_1, .., f~_K]`` ``(d, K)`` are the inputs and
``E = F^T F - I`` ``(K, K)`` their overlaps. Classes are averaged uniformly (``pi_k = 1/K``), so one
SGD step on the population loss is ``Y += (eta_Y / K) sum_k f~_k (e_{n_k} - alpha_k)^T`` with
``alpha_k = softmax(Y^T f~_k)`` over ``M`` output tokens (Eqn 7, time ``t`` in steps).

* Lemma 3 (Eqn 8, 26): with ``F-bar = [F, F~]`` (``F~`` an orthonormal basis of the complement of
  ``span F``) and ``W = F-bar^T Y``, class ``k``'s logits are row ``k`` of ``W``. The modified update
  ``Y += eta F (F^T F)^{-1} e_k (e_{n_k} - alpha_k)^T`` moves row ``k`` of ``W`` only; the true update
  moves row ``j`` by ``E_jk`` times as much.
* Lemma 5 (Eqn 31-33): from ``Y = 0`` a row is ``w_k = h (M e_{n_k} - 1)`` with
  ``h_{s+1} = h_s + eta / (exp(M h_s) + M - 1)`` (:func:`lemma5_h`).
* Lemma 6 (Eqn 44-45): the continuous ``h(s)`` solves ``(exp(M h) - 1)/M + (M - 1) h = eta s``;
  :func:`lemma6_h` evaluates it in closed form (Lambert W / Wright omega).
* Theorem 1 (Eqn 9): ``g = Y (e_{n_k} - alpha_k) = gamma F (I + E)^{-1} (e_k - 1/M)``, i.e.
  ``gamma (iota_k f~_k - sum_k' beta_kk' f~_k')``, with ``gamma = M^2 h / (exp(M h) + M - 1)``.

Arrays are numpy float64; ``M`` (output tokens) may differ from the input dimension ``d``. The dynamics
themselves (SGD, ODE integration) and their measurement against Theorem 1 are in
:mod:`scansnap.theory.decoder_sgd`.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from scipy.special import wrightomega

from scansnap._checks import check_int, check_overlaps, check_positive, check_tensor, check_unit_columns
from scansnap.data import SequenceClasses, sequence_classes

__all__ = [
    "backprop_gradient",
    "classes_from_inputs",
    "complete_basis",
    "equal_overlap_classes",
    "gamma",
    "gamma_early",
    "gamma_late",
    "gamma_of_h",
    "gamma_peak",
    "gram",
    "hoeffding_count_radius",
    "lemma5_h",
    "lemma6_h",
    "lemma6_h_ivp",
    "remark1_effective_rate",
    "reparameterize",
    "theorem1_coefficients",
    "transition_time",
    "unit_inputs",
    "xi",
]

_UNIT_ATOL = 1e-9


# --------------------------------------------------------------------------------------------------
# inputs and the Gram matrix


def unit_inputs(classes: SequenceClasses, Z: torch.Tensor | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The decoder's fixed inputs in the long-sequence limit (Lemma 2) at attention logits ``Z``.

    Args:
        classes: the data family.
        Z: ``(M, M)`` attention logits (default 0: uniform attention).

    Returns:
        ``F`` ``(M, K)`` with columns ``f~_n = c_n / ||c_n||_2``, and ``targets`` ``(K,)`` int, the
        vocabulary ids of the next tokens.
    """
    Z = torch.zeros(classes.M, classes.M, dtype=torch.float64) if Z is None else Z
    f = classes.population(Z.to(torch.float64))  # (K, M), rows sum to 1
    ft = f / torch.linalg.vector_norm(f, dim=-1, keepdim=True)
    return ft.T.numpy().copy(), classes.next.numpy().copy()


def classes_from_inputs(F: np.ndarray) -> SequenceClasses:
    """A family whose inputs at ``Z = 0`` are exactly the columns of ``F`` (Chapter 3 turns the star
    inputs, on which Theorem 1(a)'s ``xi > 0`` fails, into a family with it).

    Args:
        F: ``(L, K)`` non-negative unit columns over ``L`` contextual tokens.

    Returns:
        :class:`~scansnap.data.SequenceClasses` with contextual tokens ``0..L-1``, one query per
        class (``L..L+K-1``) and the next tokens ``L+K..L+2K-1`` (``M = L + 2K``), and
        ``P(l | n) = F[l, n] / sum_l F[l, n]``, so that :func:`unit_inputs` gives back ``F``
        (padded with zero rows for the query and next tokens).
    """
    F = _check_inputs(F)
    L, K = F.shape
    probs = np.zeros((K, L + 2 * K))
    probs[:, :L] = (F / F.sum(0)).T
    return SequenceClasses(M=L + 2 * K, query=torch.arange(L, L + K), next=torch.arange(L + K, L + 2 * K),
                           probs=torch.from_numpy(probs))


def equal_overlap_classes(K: int, rho: float, num_distinct: int = 10) -> SequenceClasses:
    """``K`` classes (one query each) that share one common token, with ``E = rho (1 1^T - I)`` at ``Z = 0``:
    Remark 1's equal overlaps.

    Each class has ``num_distinct`` distinct tokens with the authors' weights (evenly spaced from
    0.1 to 1, :func:`scansnap.data.sequence_classes`) and the common token with the weight ``w`` that
    makes ``f~_n . f~_n' = w^2 / (w^2 + sum of squared distinct weights) = rho``. ``rho = 0``: no
    common token.
    """
    check_int("K", K, low=2)
    check_int("num_distinct", num_distinct, low=1)
    if not (isinstance(rho, (int, float)) and 0 <= rho < 1):
        raise ValueError(f"rho: must be in [0, 1); got {rho!r}")
    if rho == 0:
        return sequence_classes(num_query=K, next_per_query=1, num_common=0, num_distinct=num_distinct)
    squares = float((np.linspace(0.1, 1.0, num_distinct) ** 2).sum())
    weight = math.sqrt(rho * squares / (1 - rho))
    return sequence_classes(num_query=K, next_per_query=1, num_common=1, num_distinct=num_distinct,
                            common_weight=weight)


def gram(F: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """``E = F^T F - I`` ``(K, K)`` for unit columns ``F`` ``(d, K)``: zero diagonal, ``E_kk' = f~_k . f~_k'``
    (the overlaps of Sec. 4, small under Assumption 2).

    A torch ``F`` ``(..., d, K)`` gives a torch ``E`` ``(..., K, K)``, batched over the leading axes."""
    if isinstance(F, torch.Tensor):
        E = check_unit_columns("F", F).mT @ F
        return E - torch.diag_embed(torch.diagonal(E, dim1=-2, dim2=-1))
    F = _check_inputs(F)
    E = F.T @ F
    np.fill_diagonal(E, 0.0)
    return E


def complete_basis(F: np.ndarray) -> np.ndarray:
    """``F-bar = [F, F~]`` ``(d, d)``: ``F~`` an orthonormal basis of the complement of ``span F``
    (``F~^T F = 0``, ``F~^T F~ = I``), the basis of Lemma 3. Needs ``F`` of full column rank (Assumption 2)."""
    F = _check_inputs(F)
    d, K = F.shape
    Q, R = np.linalg.qr(F, mode="complete")
    if np.abs(np.diag(R)).min() < 1e-10:
        raise ValueError("F: columns must be linearly independent (Assumption 2: I + E invertible)")
    return np.concatenate([F, Q[:, K:]], axis=1)


def reparameterize(Y: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Lemma 3: ``W = F-bar^T Y`` ``(d, M)``; rows ``0..K-1`` are the classes' logits ``Y^T f~_k``."""
    return complete_basis(F).T @ np.asarray(Y, dtype=np.float64)


# --------------------------------------------------------------------------------------------------
# Lemmas 5-7: the per-class margin h


def lemma5_h(steps: int, M: int, eta: float) -> np.ndarray:
    """Lemma 5 (Eqn 33): ``h_0 = 0``, ``h_{s+1} = h_s + eta / (exp(M h_s) + M - 1)``; ``(steps + 1,)``."""
    check_int("steps", steps, low=0)
    check_int("M", M, low=2)
    eta = check_positive("eta", eta)
    h = np.zeros(steps + 1)
    x = 0.0
    for s in range(steps):
        x += eta / (math.exp(M * x) + M - 1)
        h[s + 1] = x
    return h


def lemma6_h(s: np.ndarray | float, M: int, eta: float) -> np.ndarray:
    """Lemma 6 (Eqn 45): the solution of ``dh/ds = eta / (exp(M h) + M - 1)``, ``h(0) = 0``.

    Closed form: ``(exp(M h) - 1)/M + (M - 1) h = eta s`` gives
    ``M h = c/(M-1) - W(exp(c/(M-1)) / (M-1))`` with ``c = M eta s + 1`` and ``W`` Lambert's W,
    evaluated as Wright's omega ``W(e^x) = omega(x)``; two Newton steps on Eqn 45 polish it.

    Args:
        s: ``(...)`` non-negative times (class visits).
        M: number of output tokens, >= 2.
        eta: learning rate, > 0.
    """
    check_int("M", M, low=2)
    eta = check_positive("eta", eta)
    s = np.asarray(s, dtype=np.float64)
    if (s < 0).any() or not np.isfinite(s).all():
        raise ValueError("s: must be finite and >= 0")
    x = (M * eta * s + 1) / (M - 1)
    h = (x - wrightomega(x - math.log(M - 1)).real) / M
    for _ in range(2):
        h = h - (np.expm1(M * h) / M + (M - 1) * h - eta * s) / (np.exp(M * h) + M - 1)
    return h


def lemma6_h_ivp(s: np.ndarray, M: int, eta: float, rtol: float = 1e-12, atol: float = 1e-14) -> np.ndarray:
    """Lemma 6's ``h(s)`` by integrating the ODE with ``scipy.integrate.solve_ivp`` (DOP853); a reference
    for :func:`lemma6_h` (Figure 8). ``s`` must be increasing and start at 0 or later."""
    check_int("M", M, low=2)
    eta = check_positive("eta", eta)
    s = np.asarray(s, dtype=np.float64)
    sol = solve_ivp(lambda _, h: eta / (np.exp(M * h) + M - 1), (0.0, float(s[-1])), [0.0], method="DOP853",
                    t_eval=s, rtol=rtol, atol=atol)
    return sol.y[0]


def gamma_of_h(h: np.ndarray | float | torch.Tensor, M: int) -> np.ndarray | torch.Tensor:
    """Theorem 1's speed-control coefficient ``gamma = M^2 h / (exp(M h) + M - 1)`` (elementwise, ``h >= 0``;
    a torch ``h`` gives a float64 torch result)."""
    check_int("M", M, low=2)
    if isinstance(h, torch.Tensor):
        h = check_tensor("h", h.to(torch.float64), low=0.0)
        q = torch.exp(-M * h)
        return M * M * h * q / (1 + (M - 1) * q)
    h = np.asarray(h, dtype=np.float64)
    # M^2 h exp(-M h) / (1 + (M - 1) exp(-M h)): no overflow for large h
    q = np.exp(-M * h)
    return M * M * h * q / (1 + (M - 1) * q)


def gamma(t: np.ndarray | float | torch.Tensor, M: int, K: int, eta: float) -> np.ndarray | torch.Tensor:
    """Theorem 1's ``gamma(t) = gamma_of_h(h(t / K))``: each of ``K`` uniformly sampled classes is seen ``t/K``
    times (a torch ``t`` gives a float64 torch result)."""
    check_int("K", K, low=1)
    if isinstance(t, torch.Tensor):
        return torch.from_numpy(np.asarray(gamma(t.detach().cpu().to(torch.float64).numpy(), M, K, eta)))
    return gamma_of_h(lemma6_h(np.asarray(t, dtype=np.float64) / K, M, eta), M)


def gamma_early(t: np.ndarray | float, K: int, eta: float) -> np.ndarray:
    """Theorem 1(b), early regime: ``gamma ~ eta t / K`` (``t``: any shape; the result has its shape)."""
    check_int("K", K, low=1)
    eta = check_positive("eta", eta)
    return eta * np.asarray(t, dtype=np.float64) / K


def gamma_late(t: np.ndarray | float, M: int, K: int, eta: float) -> np.ndarray:
    """Theorem 1(b), late regime as derived here: ``gamma ~ K ln(M eta t / K) / (eta t)`` (``t``: any shape,
    ``t > 0``; the result has its shape)."""
    check_int("M", M, low=2)
    check_int("K", K, low=1)
    eta = check_positive("eta", eta)
    t = np.asarray(t, dtype=np.float64)
    return K * np.log(M * eta * t / K) / (eta * t)


def transition_time(M: int, K: int, eta: float) -> float:
    """Theorem 1(b)'s ``t_0 = K ln M / eta``: where the early regime ends (``M h`` reaches about ``ln M``)."""
    check_int("M", M, low=2)
    check_int("K", K, low=1)
    eta = check_positive("eta", eta)
    return K * math.log(M) / eta


def gamma_peak(M: int) -> tuple[float, float]:
    """The maximum of Theorem 1's ``gamma`` over ``h``: ``u* = M h*`` solves ``exp(u) (u - 1) = M - 1``.

    Returns:
        ``(u*, gamma_max)`` with ``gamma_max = M (u* - 1) / (M - 1)``.
    """
    check_int("M", M, low=3)
    u = brentq(lambda v: math.exp(v) * (v - 1) - (M - 1), 1.0, 1.0 + math.log(M) + 1.0, xtol=1e-15)
    return u, M * (u - 1) / (M - 1)


# --------------------------------------------------------------------------------------------------
# Theorem 1


def theorem1_coefficients(
    E: np.ndarray | torch.Tensor, M: int
) -> tuple[np.ndarray, np.ndarray] | tuple[torch.Tensor, torch.Tensor]:
    """Theorem 1's ``iota`` ``(K,)`` and ``beta`` ``(K, K)`` (zero diagonal) from the overlaps ``E``.

    Column ``k`` of ``D = (I + E)^{-1} (I - 1 1^T / M)`` is ``(I + E)^{-1} (e_k - 1/M)``; then
    ``iota_k = D[k, k]`` and ``beta[k, k'] = -D[k', k]`` for ``k' != k``. A torch ``E`` ``(..., K, K)``
    gives torch ``iota`` ``(..., K)`` and ``beta`` ``(..., K, K)``, batched over the leading axes.
    """
    check_int("M", M, low=2)
    if isinstance(E, torch.Tensor):
        eye = torch.eye(E.shape[-1], dtype=E.dtype)
        D = torch.linalg.solve(eye + check_overlaps("E", E), (eye - 1.0 / M).expand_as(E))
        return torch.diagonal(D, dim1=-2, dim2=-1).clone(), -D.mT * (1 - eye)
    E = _check_overlaps(E)
    K = len(E)
    D = np.linalg.solve(np.eye(K) + E, np.eye(K) - 1.0 / M)
    beta = -D.T.copy()
    np.fill_diagonal(beta, 0.0)
    return np.diag(D).copy(), beta


def xi(E: np.ndarray | torch.Tensor, M: int) -> np.ndarray | torch.Tensor:
    """Theorem 1(a)'s ``xi_k = sum_k' beta_kk' E_kk'`` in closed form,
    ``[E^2 (I+E)^{-1}]_kk + [E (I+E)^{-1} 1]_k / M``; ``(K,)`` (a torch ``E`` ``(..., K, K)`` gives ``(..., K)``)."""
    check_int("M", M, low=2)
    if isinstance(E, torch.Tensor):
        A = torch.linalg.solve(torch.eye(E.shape[-1], dtype=E.dtype) + check_overlaps("E", E), E)
        return torch.diagonal(E @ A, dim1=-2, dim2=-1) + A.sum(-1) / M
    E = _check_overlaps(E)
    K = len(E)
    A = np.linalg.solve(np.eye(K) + E, E)  # (I+E)^{-1} E = E (I+E)^{-1} (E symmetric, they commute)
    return np.diag(E @ A) + A.sum(1) / M


# --------------------------------------------------------------------------------------------------
# the back-propagated gradient


def backprop_gradient(Y: np.ndarray, F: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The back-propagated gradient ``g_k = Y (e_{n_k} - alpha_k)`` of every class (the left side of Theorem 1,
    Eqn 9): ``(K, d)``."""
    return _residuals(Y, F, targets) @ np.asarray(Y).T


# --------------------------------------------------------------------------------------------------
# Remark 1: equal overlaps rho


def remark1_effective_rate(K: int, M: int, eta: float, rho: float) -> float:
    """The late effective learning rate of Eqn 7 with equal overlaps ``rho`` and ``M`` output tokens.

    Defined by Corollary 1's late form ``1 - alpha_k[n_k] ~ (1 - 1/M) K / (eta_eff t)``. Derived from
    :func:`scansnap.theory.decoder_sgd.remark1_reduced`: the gap ``v = b - c`` settles at
    ``exp(v*) = (1 + rho (M-1)) / (1 - rho)`` and then ``eta_eff = eta (1 - rho) A (1 - 1/M) / (A - 1)`` with
    ``A = K + (M - K)(1 - rho) / (1 + rho (M - 1))``. For ``M = K`` (every output token is a next
    token) this is Remark 1's ``eta (1 - rho)``.
    """
    check_int("K", K, low=2)
    check_int("M", M, low=K)
    eta = check_positive("eta", eta)
    A = K + (M - K) * (1 - rho) / (1 + rho * (M - 1))
    return eta * (1 - rho) * A * (1 - 1 / M) / (A - 1)


# --------------------------------------------------------------------------------------------------
# Lemma 10


def hoeffding_count_radius(t: int, K: int, delta: float) -> float:
    """Lemma 10: with probability ``>= 1 - delta``, ``max_n |N_n(t) - t/K| <= sqrt(t ln(2K/delta) / 2)``
    for ``t`` uniform draws among ``K`` classes (Hoeffding and a union bound)."""
    check_int("t", t, low=1)
    check_int("K", K, low=1)
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta: must be a failure probability in (0, 1); got {delta!r}")
    return math.sqrt(t * math.log(2 * K / delta) / 2)


# --------------------------------------------------------------------------------------------------
# helpers


def _residuals(Y: np.ndarray, F: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """``(K, M)``, row ``k`` = ``(e_{n_k} - softmax(Y^T f~_k))^T``."""
    logits = F.T @ Y
    logits -= logits.max(1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(1, keepdims=True)
    p = -p
    p[np.arange(len(targets)), targets] += 1.0
    return p


def _check_inputs(F: object) -> np.ndarray:
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2 or F.shape[1] < 1 or F.shape[0] < F.shape[1]:
        raise ValueError(f"F: must have shape (d, K) with d >= K >= 1; got {F.shape}")
    if not np.isfinite(F).all() or (F < 0).any():
        raise ValueError("F: entries must be finite and >= 0 (attention-weighted token histograms)")
    norms = np.linalg.norm(F, axis=0)
    if np.abs(norms - 1).max() > _UNIT_ATOL:
        raise ValueError(f"F: columns must have unit l2 norm; got norms {norms.tolist()}")
    return F


def _check_overlaps(E: object) -> np.ndarray:
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] != E.shape[1] or not np.isfinite(E).all():
        raise ValueError(f"E: must be a finite square (K, K) matrix; got shape {E.shape}")
    if np.abs(E - E.T).max() > 1e-12 or np.abs(np.diag(E)).max() > 1e-12:
        raise ValueError("E: must be symmetric with zero diagonal (E = F^T F - I)")
    if np.linalg.eigvalsh(np.eye(len(E)) + E).min() <= 0:
        raise ValueError("E: I + E must be positive definite (Assumption 2)")
    return E


def _check_problem(F: object, targets: object, M: int) -> tuple[np.ndarray, np.ndarray]:
    F = _check_inputs(F)
    check_int("M", M, low=2)
    targets = np.asarray(targets)
    if targets.shape != (F.shape[1],) or not np.issubdtype(targets.dtype, np.integer):
        raise ValueError(f"targets: must be {F.shape[1]} integer output ids; got {targets!r}")
    if (targets < 0).any() or (targets >= M).any() or len(set(targets.tolist())) != len(targets):
        raise ValueError(f"targets: must be distinct ids in [0, {M - 1}]; got {targets.tolist()}")
    return F, targets
