"""The overlaps ``E = F^T F - I`` of Assumption 2, and families of inputs on which Theorem 1 is tested (Chapters 2, 3).

Lemma 3 replaces the decoder's true update ``eta f~_k (e_n - alpha_k)^T`` by the modified one of Eqn 26,
``eta F (F^T F)^{-1} e_k (e_n - alpha_k)^T = eta (f~_k - F E (I + E)^{-1} e_k)(e_n - alpha_k)^T``. The size of
the change is set by ``E (I + E)^{-1}``: :func:`modification_norm` gives its exact spectral norm,
:func:`lemma17_bound` the paper's bound ``||E|| / (1 - ||E||)`` (Lemma 17; it needs ``||E||_2 < 1``, while
``I + E``, a Gram matrix of independent columns, is invertible whatever ``||E||_2``), and
:func:`update_change` the change of each class's update in input space.

Whether a family of sequence classes, trained at given learning rates, meets Assumption 2 as the book tests it
(weak overlap and ``eta_Y >> eta_Z``; the paper's own eigenvalue bounds are lost): :func:`assumption2`, with the
bounds :data:`ASSUMPTION2_MAX_NORM` and :data:`ASSUMPTION2_MIN_RATE_RATIO` fixed here, before any run.

Families of inputs (``F`` ``(L, K)``, non-negative unit columns, as Lemma 2 makes them):
:func:`random_inputs` (random supports and weights) and :func:`star_inputs`, a family on which
Theorem 1(a)'s ``xi > 0`` fails although ``||E||_2 < 1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from scansnap._checks import check_int, check_positive
from scansnap.data import SequenceClasses
from scansnap.theory.decoder import _check_inputs, _check_overlaps, gram

__all__ = ["ASSUMPTION2_MAX_NORM", "ASSUMPTION2_MIN_RATE_RATIO", "Assumption2", "assumption2", "lemma17_bound",
           "modification_norm", "random_inputs", "star_inputs", "update_change"]

ASSUMPTION2_MAX_NORM = 0.1
"""The largest ``||E||_2`` (at the start, ``Z = 0``) the book admits as "weak overlap" (Assumption 2): Lemma 17's
bound ``||E|| / (1 - ||E||)`` is then at most 0.11, so Lemma 3's modified update, under which Theorem 1 is exact,
changes the true one by at most 11%."""

ASSUMPTION2_MIN_RATE_RATIO = 10.0
"""The smallest ``eta_Y / eta_Z`` the book reads as ``eta_Y >> eta_Z`` (Assumption 1(c) with Assumption 2: an
order of magnitude)."""


@dataclass(frozen=True)
class Assumption2:
    """Assumption 2 for one family at given learning rates (Chapter 4, C15).

    Attributes:
        E_max: largest off-diagonal overlap ``E_nn' = f~_n . f~_n'`` at ``Z = 0``.
        E_norm: ``||E||_2`` at ``Z = 0`` (every class, whatever its query: the overlaps live in token space).
        rate_ratio: ``eta_Y / eta_Z``.
        meets: ``E_norm <= max_norm`` and ``rate_ratio >= min_ratio``.
    """

    E_max: float
    E_norm: float
    rate_ratio: float
    meets: bool


def assumption2(classes: SequenceClasses, eta_Y: float, eta_Z: float, max_norm: float = ASSUMPTION2_MAX_NORM,
                min_ratio: float = ASSUMPTION2_MIN_RATE_RATIO) -> Assumption2:
    """Whether ``classes`` trained from zero initialization at ``eta_Y``, ``eta_Z`` meets Assumption 2 (weak
    overlap, ``eta_Y >> eta_Z``): the overlaps ``E = F^T F - I`` of Lemma 2's unit attention vectors at ``Z = 0``
    (``f~_n`` proportional to ``P(. | n)``) have ``||E||_2 <= max_norm``, and ``eta_Y / eta_Z >= min_ratio``."""
    check_positive("eta_Y", eta_Y)
    check_positive("eta_Z", eta_Z)
    check_positive("max_norm", max_norm)
    check_positive("min_ratio", min_ratio)
    f = classes.population(torch.zeros(classes.M, classes.M, dtype=torch.float64))  # (K, M)
    F = (f / torch.linalg.vector_norm(f, dim=-1, keepdim=True)).mT.numpy()
    E = gram(F)
    E_norm, ratio = float(np.linalg.norm(E, 2)), eta_Y / eta_Z
    return Assumption2(float(E.max()), E_norm, ratio, E_norm <= max_norm and ratio >= min_ratio)


def modification_norm(E: np.ndarray) -> float:
    """``||E (I + E)^{-1}||_2``: the worst case over update directions of Lemma 3's modification's relative size
    (one class's update changes by :func:`update_change`, which this norm times ``||F||_2`` bounds).

    ``E`` ``(K, K)``: symmetric, zero diagonal, ``I + E`` positive definite. For ``K = 2`` and overlap ``e``
    the eigenvalues are ``e/(1+e)`` and ``-e/(1-e)``, so the norm is ``e/(1-e)`` (Lemma 17's bound is tight).
    """
    E = _check_overlaps(E)
    return float(np.linalg.norm(np.linalg.solve(np.eye(len(E)) + E, E), 2))


def lemma17_bound(E: np.ndarray) -> float:
    """Lemma 17's bound ``||E||_2 / (1 - ||E||_2)`` on :func:`modification_norm` (``inf`` when ``||E||_2 >= 1``:
    the bound says nothing there, though ``I + E`` stays invertible)."""
    norm = float(np.linalg.norm(_check_overlaps(E), 2))
    return norm / (1 - norm) if norm < 1 else math.inf


def update_change(F: np.ndarray) -> tuple[np.ndarray, float]:
    """The relative change Eqn 26 makes to each class's update, ``||F E (I + E)^{-1} e_k||_2`` ``(K,)``, and its
    bound ``sqrt(1 + ||E||) ||E|| / (1 - ||E||)`` (``||F||_2 = sqrt(1 + ||E||)`` times Lemma 17's bound)."""
    F = _check_inputs(F)
    E = gram(F)
    change = np.linalg.norm(F @ np.linalg.solve(np.eye(len(E)) + E, E), axis=0)
    return change, math.sqrt(1 + float(np.linalg.norm(E, 2))) * lemma17_bound(E)


def random_inputs(rng: np.random.Generator, max_classes: int = 8, max_tokens: int = 40) -> np.ndarray:
    """A random family ``(L, K)``: ``K`` uniform in ``[2, max_classes]``, ``L`` in ``[K + 3, max_tokens]``; each
    class has a random support of 1 to ``L // 2`` tokens with weights uniform in ``[0.05, 1]``; columns
    normalized. Chapter 3 checks Lemma 3 and Theorem 1(a)'s ``xi`` on such families."""
    check_int("max_classes", max_classes, low=2)
    check_int("max_tokens", max_tokens, low=max_classes + 3)
    K = int(rng.integers(2, max_classes + 1))
    L = int(rng.integers(K + 3, max_tokens + 1))
    P = np.zeros((L, K))
    for k in range(K):
        size = int(rng.integers(1, L // 2 + 1))
        P[rng.choice(L, size, replace=False), k] = rng.uniform(0.05, 1, size)
    return P / np.linalg.norm(P, axis=0)


def star_inputs(leaves: int = 5, overlap: float = 0.3, weak: float = 0.001, link: float = 0.05) -> np.ndarray:
    """A "star" family ``(leaves + 3, leaves + 2)``: class 1 (the centre) overlaps each of ``leaves`` classes
    ``2..`` by ``overlap`` and class 0 by only ``weak``; Theorem 1(a)'s ``xi_0 > 0`` fails on it although
    ``||E||_2 < 1`` (Chapter 3).

    Token ``i < leaves`` is shared by the centre (weight ``overlap``) and leaf ``i`` (its only token);
    token ``leaves`` by the centre (weight ``link``) and class 0 (weight ``weak / link``); the last two tokens
    are the centre's and class 0's own, filling their columns to unit norm. So ``E_{1, leaf} = overlap``,
    ``E_{01} = weak``, ``||E||_2 ~ sqrt(leaves) overlap``, and the centre's row sums to ``leaves overlap + weak``.
    """
    check_int("leaves", leaves, low=1)
    if not (0 < weak < link < 1 and overlap > 0 and leaves * overlap**2 + link**2 < 1):
        raise ValueError(f"overlap, weak, link: need 0 < weak < link < 1 and leaves overlap^2 + link^2 < 1; got "
                         f"{overlap}, {weak}, {link}")
    F = np.zeros((leaves + 3, leaves + 2))
    F[:leaves, 1], F[leaves, 1] = overlap, link
    F[leaves + 1, 1] = math.sqrt(1 - leaves * overlap**2 - link**2)
    F[leaves, 0], F[leaves + 2, 0] = weak / link, math.sqrt(1 - (weak / link) ** 2)
    F[np.arange(leaves), 2 + np.arange(leaves)] = 1.0
    return F
