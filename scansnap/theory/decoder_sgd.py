"""The decoder's dynamics simulated and measured against Theorem 1 (Section 4, Appendix D; Chapter 3).

The closed forms live in :mod:`scansnap.theory.decoder`; this module runs the dynamics they describe,
with the attention frozen (Assumption 1(c)) and long sequences (Lemma 2), and measures what the
theorem predicts along a trajectory:

* Eqn 7 and Lemma 3's modified Eqn 26: :func:`decoder_velocity`, :func:`integrate_decoder`
  (``solve_ivp``), :func:`sgd_decoder` (numpy: the full population batch, or batch size 1 in a given
  class order); :func:`sgd_decoder_model` and :func:`sgd_decoder_sampled` do the same with the
  package's model (:meth:`~scansnap.model.YZModel.loss_and_gradients`, Lemma 1's gradient): the full
  batch, or batch size 1 with a random class order per seed (the setting of Theorem 1 and Lemma 12).
* :func:`measure_gradients`: the back-propagated gradient of every class along a trajectory, written in
  Theorem 1's terms (``gamma``, the residual off its direction, ``1 - alpha``, the coordinates that give
  ``iota``, ``beta``, ``xi``); :func:`late_gamma_fit`, :func:`regime_fits`, :func:`corollary1_rate`.
* Remark 1 with ``M > K`` output tokens: :func:`remark1_reduced`, :func:`remark1_reduced_rate`.

Arrays are numpy float64; ``F`` ``(d, K)`` holds the unit inputs (usually only the rows of tokens that
occur in some class, :func:`support_rows`: ``Y``'s other rows never move), ``M`` the output tokens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy.integrate import solve_ivp

from scansnap._checks import check_int, check_positive, check_seeds
from scansnap._threads import one_thread
from scansnap.data import SequenceClasses
from scansnap.model import YZModel
from scansnap.theory.decoder import _check_problem, _residuals, backprop_gradient, gram, transition_time
from scansnap.theory.long_sequences import loglog_slope

__all__ = [
    "GradientMeasures",
    "SampledDecoderRun",
    "corollary1_rate",
    "decoder_velocity",
    "integrate_decoder",
    "late_gamma_fit",
    "measure_gradients",
    "remark1_reduced",
    "regime_fits",
    "remark1_reduced_rate",
    "sgd_decoder",
    "sgd_decoder_model",
    "sgd_decoder_sampled",
    "support_rows",
]


def support_rows(F: np.ndarray) -> np.ndarray:
    """Indices of the rows of ``F`` ``(d, K)`` that are not zero: the tokens that occur in some class.

    Under Eqn 7 (and Eqn 26) from ``Y = 0`` the other rows of ``Y`` never move, so ``F[rows]`` and
    ``Y[rows]`` carry the whole dynamics.
    """
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2:
        raise ValueError(f"F: must have shape (d, K); got {F.shape}")
    return np.flatnonzero(np.abs(F).sum(1) > 0)


# --------------------------------------------------------------------------------------------------
# the dynamics (Eqn 7 and the modified Eqn 26)


def decoder_velocity(
    Y: np.ndarray, F: np.ndarray, targets: np.ndarray, eta: float, *, modified: bool = False
) -> np.ndarray:
    """``dY/dt`` ``(d, M)`` of Eqn 7, ``(eta/K) sum_k f~_k (e_{n_k} - alpha_k)^T``, or with ``modified``
    Lemma 3's Eqn 26, ``(eta/K) F (F^T F)^{-1} sum_k e_k (e_{n_k} - alpha_k)^T``."""
    R = _residuals(Y, F, targets)  # (K, M), row k = (e_{n_k} - alpha_k)^T
    if modified:
        R = np.linalg.solve(F.T @ F, R)
    return (eta / F.shape[1]) * (F @ R)


def integrate_decoder(
    F: np.ndarray,
    targets: np.ndarray,
    M: int,
    eta: float,
    times: Sequence[float] | np.ndarray,
    *,
    modified: bool = False,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> np.ndarray:
    """Integrate Eqn 7 (or Eqn 26) from ``Y(0) = 0`` with ``solve_ivp`` (DOP853).

    Args:
        F: ``(d, K)`` unit inputs; targets: ``(K,)`` distinct output ids in ``[0, M)``.
        M: number of output tokens.
        eta: ``eta_Y``; time is in SGD steps of the population loss.
        times: increasing times ``>= 0`` at which to return ``Y``.

    Returns:
        ``(len(times), d, M)``.
    """
    F, targets = _check_problem(F, targets, M)
    eta = check_positive("eta", eta)
    times = np.asarray(times, dtype=np.float64)
    if times.ndim != 1 or (np.diff(times) <= 0).any() or times[0] < 0:
        raise ValueError("times: must be a strictly increasing 1-D sequence of times >= 0")
    d = F.shape[0]

    def rhs(_: float, y: np.ndarray) -> np.ndarray:
        return decoder_velocity(y.reshape(d, M), F, targets, eta, modified=modified).ravel()

    sol = solve_ivp(rhs, (0.0, float(times[-1])), np.zeros(d * M), method="DOP853", t_eval=times,
                    rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return sol.y.T.reshape(len(times), d, M)


def sgd_decoder(
    F: np.ndarray,
    targets: np.ndarray,
    M: int,
    eta: float,
    steps: int,
    snapshots: Sequence[int],
    *,
    modified: bool = False,
    order: Sequence[int] | np.ndarray | None = None,
) -> np.ndarray:
    """SGD on ``Y`` alone from ``Y = 0``, with the attention frozen.

    Args:
        F, targets, M: as in :func:`integrate_decoder`.
        eta: ``eta_Y``; steps: number of updates; snapshots: steps in ``[0, steps]`` to return.
        modified: use Lemma 3's Eqn 26 instead of Eqn 7.
        order: ``(steps,)`` class ids: batch size 1, update ``s`` uses class ``order[s]`` alone at rate
            ``eta`` (Lemma 1's per-sample update). Default: the population batch, ``Y += decoder_velocity(Y)``.

    Returns:
        ``(len(snapshots), d, M)``: ``Y`` after ``s`` steps for each ``s`` in ``snapshots``.
    """
    F, targets = _check_problem(F, targets, M)
    eta = check_positive("eta", eta)
    check_int("steps", steps, low=0)
    want = {check_int("snapshots", s, low=0, high=steps) for s in snapshots}
    K = F.shape[1]
    if order is not None:
        order = np.asarray(order)
        if order.shape != (steps,) or not np.issubdtype(order.dtype, np.integer) or (order < 0).any() \
                or (order >= K).any():
            raise ValueError(f"order: must be {steps} class ids in [0, {K - 1}]; got shape {order.shape}")
    Y = np.zeros((F.shape[0], M))
    P = F @ np.linalg.inv(F.T @ F) if modified else F
    out = {}
    for s in range(steps + 1):
        if s in want:
            out[s] = Y.copy()
        if s == steps:
            break
        if order is None:
            Y += (eta / K) * (P @ _residuals(Y, F, targets))
        else:
            k = int(order[s])
            Y += eta * np.outer(P[:, k], _residuals(Y, F[:, [k]], targets[[k]])[0])
    return np.stack([out[s] for s in snapshots])


def _model_sgd(classes: SequenceClasses, eta: float, steps: int, snapshots: Sequence[int], Z: torch.Tensor | None,
               picks: torch.Tensor | None) -> np.ndarray:
    """Plain SGD on ``Y`` of :class:`~scansnap.model.YZModel` with ``Z`` frozen; ``picks`` ``(steps, C)``:
    the class of each configuration's batch of one (``None``: one configuration, the population batch).
    Returns ``(len(snapshots), C, M, M)``."""
    eta = check_positive("eta", eta)
    check_int("steps", steps, low=0)
    want = {check_int("snapshots", s, low=0, high=steps) for s in snapshots}
    M, C = classes.M, 1 if picks is None else picks.shape[1]
    Z = torch.zeros(M, M, dtype=torch.float64) if Z is None else Z.to(torch.float64)
    model = YZModel.from_params(torch.zeros(C, M, M, dtype=torch.float64), Z.expand(C, M, M).clone())
    out = {}
    with one_thread():  # tiny tensors: threads only add overhead (and contention)
        for s in range(steps + 1):
            if s in want:
                out[s] = model.Y.detach().numpy().copy()
            if s == steps:
                break
            if picks is None:
                batch = (classes.query, classes.probs, classes.next)
            else:
                k = picks[s]
                batch = (classes.query[k][:, None], classes.probs[k][:, None], classes.next[k][:, None])
            _, gY, _ = model.loss_and_gradients(*batch)
            with torch.no_grad():
                model.Y.sub_(eta * gY)
    return np.stack([out[s] for s in snapshots])


def sgd_decoder_model(
    classes: SequenceClasses, eta: float, steps: int, snapshots: Sequence[int], Z: torch.Tensor | None = None
) -> np.ndarray:
    """SGD on ``Y`` alone with the package's model: the gradient of the population loss of
    :class:`~scansnap.model.YZModel` (Lemma 1, :meth:`~scansnap.model.YZModel.loss_and_gradients`)
    with ``Z`` frozen (default 0), plain SGD with learning rate ``eta`` on ``Y`` only, ``Y(0) = 0``.

    Returns:
        ``(len(snapshots), M, M)`` numpy copies of ``Y``.
    """
    return _model_sgd(classes, eta, steps, snapshots, Z, None)[:, 0]


@dataclass(frozen=True)
class SampledDecoderRun:
    """What :func:`sgd_decoder_sampled` returns; ``S`` snapshots, ``C`` seeds.

    Attributes:
        steps: ``(S,)`` the snapshot steps.
        Y: ``(S, C, M, M)`` the decoder of each seed.
        visits: ``(S, C, K)`` how often each class was drawn before the snapshot (Lemma 10's ``N_k(t)``).
    """

    steps: np.ndarray
    Y: np.ndarray
    visits: np.ndarray


def sgd_decoder_sampled(
    classes: SequenceClasses,
    eta: float,
    steps: int,
    snapshots: Sequence[int],
    seeds: Sequence[int],
    Z: torch.Tensor | None = None,
) -> SampledDecoderRun:
    """Theorem 1's own setting: SGD with batch size 1 on ``Y`` of the package's model, ``Z`` frozen (default 0),
    long sequences (Lemma 2), each step's class drawn uniformly at random (one ``torch.Generator`` per seed).

    Every seed is one configuration of one stacked model, so all seeds run in one pass.
    """
    check_int("steps", steps, low=0)
    K = classes.K
    picks = torch.stack([torch.randint(0, K, (steps,), generator=torch.Generator().manual_seed(s))
                         for s in check_seeds("seeds", seeds)], dim=1)  # (steps, C)
    Ys = _model_sgd(classes, eta, steps, snapshots, Z, picks)
    onehot = torch.nn.functional.one_hot(picks, K).cumsum(0)  # (steps, C, K): visits after each step
    visits = torch.cat([torch.zeros(1, len(seeds), K, dtype=onehot.dtype), onehot])[list(snapshots)]
    return SampledDecoderRun(np.asarray(snapshots), Ys, visits.numpy())


# --------------------------------------------------------------------------------------------------
# measuring a trajectory against Theorem 1


@dataclass(frozen=True)
class GradientMeasures:
    """Theorem 1 measured along a trajectory: ``S`` snapshots, ``K`` classes.

    Attributes:
        gamma: ``(S, K)`` least-squares factor of class ``k``'s gradient along Theorem 1's direction
            ``(I + E)^{-1} (e_k - 1/M)`` (in the basis ``F``).
        residual: ``(S, K)`` relative distance of the gradient's coordinates from that direction.
        outside: ``(S, K)`` relative part of the gradient outside ``span F`` (0 in theory).
        miss: ``(S, K)`` ``1 - alpha_k[n_k]``, the probability the decoder gives the wrong tokens.
        coef: ``(S, K, K)`` row ``k``: the gradient's coordinates in the basis ``F``.
    """

    gamma: np.ndarray
    residual: np.ndarray
    outside: np.ndarray
    miss: np.ndarray
    coef: np.ndarray

    def coefficients(self, gamma_ref: np.ndarray, E: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The measured ``iota`` ``(S, K)``, ``beta`` ``(S, K, K)`` (zero diagonal) and ``xi`` ``(S, K)``: the
        coordinates divided by a reference ``gamma`` ``(S,)`` or ``(S, K)`` (Theorem 1's ``gamma(t)``)."""
        ref = np.asarray(gamma_ref, dtype=np.float64)
        ref = ref[:, None, None] if ref.ndim == 1 else ref[:, :, None]
        scaled = self.coef / ref
        K = scaled.shape[-1]
        iota = np.diagonal(scaled, axis1=1, axis2=2).copy()
        beta = -scaled * (1 - np.eye(K))
        return iota, beta, (beta * E).sum(-1)


def measure_gradients(Ys: np.ndarray, F: np.ndarray, targets: np.ndarray, M: int) -> GradientMeasures:
    """Theorem 1's quantities along a trajectory ``Ys`` ``(S, d, M)`` for inputs ``F`` ``(d, K)``."""
    F, targets = _check_problem(F, targets, M)
    K = F.shape[1]
    D = np.linalg.solve(np.eye(K) + gram(F), np.eye(K) - 1.0 / M).T  # row k: Theorem 1's direction d_k
    G = F.T @ F
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("gamma", "residual", "outside", "miss", "coef")}
    for Y in np.asarray(Ys, dtype=np.float64):
        g = backprop_gradient(Y, F, targets)  # (K, d)
        coef = np.linalg.solve(G, F.T @ g.T).T
        gam = (coef * D).sum(1) / (D * D).sum(1)
        out["gamma"].append(gam)
        out["residual"].append(np.linalg.norm(coef - gam[:, None] * D, axis=1) / np.linalg.norm(coef, axis=1))
        out["outside"].append(np.linalg.norm(g - coef @ F.T, axis=1) / np.linalg.norm(g, axis=1))
        out["miss"].append(_residuals(Y, F, targets)[np.arange(K), targets])
        out["coef"].append(coef)
    return GradientMeasures(**{k: np.stack(v) for k, v in out.items()})


def late_gamma_fit(t: np.ndarray, gamma: np.ndarray, M: int, K: int, eta: float) -> float:
    """Theorem 1(b)'s late regime fitted with one parameter: ``gamma t = A ln(B t)`` with ``B = M eta / K``
    fixed; returns ``A / (K / eta)`` (1 when the late form holds). ``t``, ``gamma``: ``(n,)``, ``n >= 1``."""
    t, gamma = np.asarray(t, dtype=np.float64), np.asarray(gamma, dtype=np.float64)
    if t.ndim != 1 or t.shape != gamma.shape or len(t) < 1 or (t <= 0).any():
        raise ValueError(f"t, gamma: need equal-length 1-D arrays with t > 0; got shapes {t.shape}, {gamma.shape}")
    L = np.log(M * eta * t / K)
    return float((gamma * t) @ L / (L @ L)) / (K / eta)


def regime_fits(t: np.ndarray, gamma: np.ndarray, M: int, K: int, eta: float, early_to: float = 0.1,
                late_from: float = 100.0) -> tuple[float, float]:
    """Theorem 1(b)'s two regimes fitted on a measured ``gamma`` ``(n,)`` at steps ``t`` ``(n,)``.

    Returns:
        the log-log slope of ``gamma`` for ``t <= early_to t_0`` (1 in the early regime; nan with fewer than
        3 points) and :func:`late_gamma_fit` for ``t >= late_from t_0`` (1 in the late regime; nan without
        points), with ``t_0 = K ln M / eta``.
    """
    early_to, late_from = check_positive("early_to", early_to), check_positive("late_from", late_from)
    t, gamma = np.asarray(t, dtype=np.float64), np.asarray(gamma, dtype=np.float64)
    t0 = transition_time(M, K, eta)
    early, late = t <= early_to * t0, t >= late_from * t0
    slope = loglog_slope(t[early], gamma[early])[0] if early.sum() >= 3 else math.nan
    return slope, late_gamma_fit(t[late], gamma[late], M, K, eta) if late.any() else math.nan


def corollary1_rate(t: np.ndarray, miss: np.ndarray, M: int, K: int) -> np.ndarray:
    """The learning rate that Corollary 1's late form ``1 - alpha = (1 - 1/M) K / (eta t)`` implies for a
    measured ``miss = 1 - alpha`` at steps ``t`` (same shapes)."""
    check_int("M", M, low=2)
    check_int("K", K, low=1)
    return (1 - 1 / M) * K / (np.asarray(t, dtype=np.float64) * np.asarray(miss, dtype=np.float64))


# --------------------------------------------------------------------------------------------------
# Remark 1 with M > K output tokens


def remark1_reduced(K: int, M: int, eta: float, rho: float, times: Sequence[float] | np.ndarray) -> np.ndarray:
    """Eqn 7 with ``E = rho (1 1^T - I)`` reduced to three logit levels, integrated with ``solve_ivp``.

    By symmetry every class row of the logits is ``a e_{n_k} + b (N - e_{n_k}) + c (1 - N)`` (``N``: the
    indicator of the ``K`` next tokens): ``a`` on its own next token, ``b`` on the other next tokens,
    ``c`` on the ``M - K`` other tokens. With ``p, q, r`` the softmax probabilities of the three
    levels, ``da = (eta/K)((1-p) - rho (K-1) q)``, ``db = (eta/K)(-q + rho((1-p) - (K-2) q))``,
    ``dc = -(eta/K)(1 + rho (K-1)) r``.

    Returns:
        ``(len(times), 3)``: ``(a, b, c)`` at each time (steps of full-batch SGD).
    """
    check_int("K", K, low=2)
    check_int("M", M, low=K)
    eta = check_positive("eta", eta)
    if not (isinstance(rho, (int, float)) and 0 <= rho < 1):
        raise ValueError(f"rho: must be in [0, 1); got {rho!r}")
    times = np.asarray(times, dtype=np.float64)

    def rhs(_: float, y: np.ndarray) -> list[float]:
        e = np.exp(y - y.max())
        p, q, r = e / (e[0] + (K - 1) * e[1] + (M - K) * e[2])
        return [(eta / K) * ((1 - p) - rho * (K - 1) * q),
                (eta / K) * (-q + rho * ((1 - p) - (K - 2) * q)),
                -(eta / K) * (1 + rho * (K - 1)) * r]

    sol = solve_ivp(rhs, (0.0, float(times[-1])), [0.0, 0.0, 0.0], method="LSODA", t_eval=times,
                    rtol=1e-10, atol=1e-12)
    return sol.y.T


def remark1_reduced_rate(K: int, M: int, eta: float, rho: float, times: Sequence[float] | np.ndarray) -> np.ndarray:
    """Remark 1's effective learning rate (Corollary 1's form, :func:`corollary1_rate`) along
    :func:`remark1_reduced` at ``times``."""
    levels = remark1_reduced(K, M, eta, rho, times)
    e = np.exp(levels - levels.max(1, keepdims=True))
    others = (K - 1) * e[:, 1] + (M - K) * e[:, 2]
    return corollary1_rate(np.asarray(times), others / (e[:, 0] + others), M, K)
