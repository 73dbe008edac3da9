"""The residual connection (paper Sec. 7; claims C33a and C33b; Chapter 9): Theorem 1's quantities and Eqn 10 with it.

With the residual connection the decoder reads ``v~_n = v_n / ||v_n||_2``, ``v_n = f_n + e_{psi(n)}``, instead of
``f~_n`` (long-sequence limit, Lemma 2). Its overlaps are (:func:`residual_overlap_formula`, derived in the
chapter)::

    E_nk = (f_n . f_k + 1[psi(n) = psi(k)]) / sqrt((1 + ||f_n||^2)(1 + ||f_k||^2))

when no query is a contextual token: classes of one query overlap almost fully through their shared
``e_m``, classes of different queries only through ``f_n . f_k``, shrunk by ``||f_n|| ||f_k||`` against the
overlap ``f~_n . f~_k`` without the residual. With Theorem 1's back-propagated gradient
``g_n = gamma V (I + E)^{-1} (e_n - 1/M)`` (``V = [v~_1 .. v~_K]``; exact at :func:`residual_decoder`), the
attention velocity is (:func:`residual_zdot`)::

    z-dot_m = eta_Z gamma sum_{n in psi^-1(m)} pi_n / ||v_n|| (diag(f_n) - f_n f_n^T)
              sum_{k != n} beta_nk (E_nk v~_n - v~_k),

where ``e_{psi(k)}`` in ``v~_k`` drops out (``f_n`` is 0 on query tokens), so class ``k`` reaches query ``m``'s
logits only through ``beta_nk``. :func:`residual_zdot` splits the velocity into the part from classes of
the same query and the part from classes of other queries (the coupling that the residual removes).
:func:`token_roles` gives each (query, token) pair its global role (Theorem 2's labels applied over all classes:
a baseline of Chapter 9, not a theorem) and its local role (over the classes of that query only).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from scansnap._checks import check_positive, check_tensor
from scansnap.data import SequenceClasses
from scansnap.theory import decoder

__all__ = [
    "COMMON",
    "DISTINCT",
    "cross_query_family",
    "residual_decoder",
    "residual_inputs",
    "residual_overlap_formula",
    "residual_zdot",
    "role_agreement",
    "token_roles",
]

DISTINCT, COMMON = 1, -1
"""Roles of a token in a query's row: distinct (Theorem 2(a): its logit rises) or common (it falls); 0: absent."""


def _attended(classes: SequenceClasses, Z: torch.Tensor | None) -> torch.Tensor:
    Z = torch.zeros(classes.M, classes.M, dtype=torch.float64) if Z is None else check_tensor(
        "Z", Z, shape=(classes.M, classes.M), floating=True).to(torch.float64)
    return classes.population(Z)


def residual_inputs(classes: SequenceClasses, Z: torch.Tensor | None = None) -> torch.Tensor:
    """``V`` ``(M, K)``: the decoder's inputs with the residual connection of Sec. 7, columns ``v~_n`` (default
    ``Z = 0``); they replace Theorem 1's ``F``."""
    f = _attended(classes, Z)
    v = f + torch.nn.functional.one_hot(classes.query, classes.M).to(torch.float64)
    return (v / torch.linalg.vector_norm(v, dim=-1, keepdim=True)).T


def residual_overlap_formula(classes: SequenceClasses, Z: torch.Tensor | None = None) -> torch.Tensor:
    """The derived closed form of the overlaps ``E`` ``(K, K)`` with the residual (module docstring; Sec. 7,
    claim C33a), from the attention ``f_n`` alone; valid when no query token is a contextual token of any class."""
    f = _attended(classes, Z)
    same = (classes.query[:, None] == classes.query[None, :]).to(torch.float64)
    sq = 1 + (f * f).sum(-1)
    E = (f @ f.T + same) / torch.sqrt(sq[:, None] * sq[None, :])
    return E - torch.diag_embed(torch.diagonal(E))


def residual_decoder(classes: SequenceClasses, Z: torch.Tensor, h: float) -> torch.Tensor:
    """``Y = V (I + E)^{-1} W`` ``(M, M)``: class ``n``'s logits are ``Y^T v~_n = w_n = h (M e_{next(n)} - 1)``,
    so its back-propagated gradient is exactly Theorem 1's ``gamma V (I + E)^{-1} (e_n - 1/M)`` with
    ``gamma = M^2 h / (exp(M h) + M - 1)`` (Theorem 5 with the residual inputs)."""
    if not h >= 0:
        raise ValueError(f"h: must be >= 0; got {h}")
    M = classes.M
    V = residual_inputs(classes, Z)
    W = h * (M * torch.nn.functional.one_hot(classes.next, M).to(torch.float64) - 1.0)
    return V @ torch.linalg.solve(V.T @ V, W)


def residual_zdot(
    classes: SequenceClasses, Z: torch.Tensor, gamma: float, eta_Z: float = 1.0, residual: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eqn 10 with (or, ``residual=False``, without) the residual connection, split by the classes' queries.

    Args:
        classes: the family; Z: ``(M, M)``; gamma: Theorem 1's ``gamma >= 0``; eta_Z: > 0.
        residual: use the residual inputs ``v~_n`` (else ``f~_n``: the paper's Eqn 10).

    Returns:
        ``(same, cross)``, each ``(M, M)``: the velocity ``z-dot`` from the terms ``k`` with ``psi(k) = psi(n)``
        and from those with ``psi(k) != psi(n)``; classes weighted ``pi_n = 1/K``, as in training.
    """
    check_positive("eta_Z", eta_Z)
    if not gamma >= 0:
        raise ValueError(f"gamma: must be >= 0; got {gamma}")
    f = _attended(classes, Z)  # (K, M)
    v = f + torch.nn.functional.one_hot(classes.query, classes.M).to(torch.float64) if residual else f
    norm = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    vt = v / norm
    E = vt @ vt.T
    _, beta = decoder.theorem1_coefficients((E - torch.diag_embed(torch.diagonal(E))).numpy(), classes.M)
    beta = torch.from_numpy(beta)
    K = classes.K
    same_q = classes.query[:, None] == classes.query[None, :]
    parts = []
    for mask in (same_q, ~same_q):
        b = beta * mask
        inner = (b * E).sum(-1, keepdim=True) * vt - b @ vt  # sum_k beta_nk (E_nk v~_n - v~_k), (K, M)
        jac = f * inner - f * (f * inner).sum(-1, keepdim=True)  # (diag(f_n) - f_n f_n^T) inner
        per_class = eta_Z * gamma / K * jac / norm
        parts.append(torch.zeros(classes.M, classes.M, dtype=torch.float64).index_add_(0, classes.query, per_class))
    return parts[0], parts[1]


def token_roles(classes: SequenceClasses) -> tuple[torch.Tensor, torch.Tensor]:
    """Roles of every (query row ``m``, token ``l``) entry under the global and the local rule.

    Global rule (Theorem 2's labels over all classes, Chapter 9's baseline; Theorem 2 proves the fall of a single
    common token only): ``l`` is distinct in row ``m`` when exactly one class holds it
    and that class has query ``m``; common when two or more classes hold it and one of them has query ``m``.
    Local rule (the residual's, paper Sec. 7): the same over the classes of query ``m`` only.

    Returns:
        ``(global_roles, local_roles)``, each ``(M, M)`` long with :data:`DISTINCT`, :data:`COMMON` or 0 (the
        token is in no class of query ``m``).
    """
    support = classes.support().to(torch.long)  # (K, M)
    rows = torch.zeros(classes.M, classes.M, dtype=torch.long).index_add_(0, classes.query, support)  # per query
    present = rows > 0
    total = support.sum(0, keepdim=True).expand_as(rows)

    def role(count: torch.Tensor) -> torch.Tensor:
        return torch.where(present, torch.where(count == 1, DISTINCT, COMMON), 0)

    return role(total), role(rows)


def role_agreement(dz: torch.Tensor, roles: torch.Tensor, tol: float = 0.0) -> np.ndarray:
    """Whether each entry moved as its role predicts (Theorem 2's fates, global or local to a query: claims
    C33a and C33b):
    ``dz`` ``(..., M, M)`` logit changes, ``roles`` ``(M, M)``.

    Returns:
        ``(..., E)`` bool over the ``E`` entries with a role (row-major order): distinct entries with
        ``dz > tol``, common ones with ``dz < -tol``.
    """
    check_tensor("dz", dz, shape=(..., *roles.shape), floating=True)
    mask = roles != 0
    want = roles[mask].to(dz.dtype)
    return ((dz[..., mask] * want) > tol).numpy()


def cross_query_family(distinct: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0), shared: float = 1.0) -> SequenceClasses:
    """Two queries A, B with two classes each (A1, A2, B1, B2). Token 0 is held by A1 and B1, token 1 by A2
    and B2 (each locally distinct, globally common); token 2 by A1 and A2, token 3 by B1 and B2 (common
    within one query, absent from the other); then each class's own distinct tokens with weights ``distinct``
    (token 0 to 3 weighted ``shared``). The four entries (A, 0), (A, 1), (B, 0), (B, 1) are where the global and
    the local rule of :func:`token_roles` disagree (Chapter 9). ``distinct``: non-empty, each weight ``> 0``;
    ``shared > 0``."""
    if isinstance(distinct, str) or not isinstance(distinct, Sequence) or not distinct:
        raise ValueError(f"distinct: must be a non-empty tuple of weights > 0; got {distinct!r}")
    distinct = tuple(check_positive("distinct", w) for w in distinct)
    shared = check_positive("shared", shared)
    L = 4 + 4 * len(distinct)
    w = torch.zeros(4, L, dtype=torch.float64)
    for n, (s, c) in enumerate(((0, 2), (1, 2), (0, 3), (1, 3))):
        w[n, s] = w[n, c] = shared
        w[n, 4 + n * len(distinct): 4 + (n + 1) * len(distinct)] = torch.tensor(distinct, dtype=torch.float64)
    M = L + 2 + 4
    probs = torch.zeros(4, M, dtype=torch.float64)
    probs[:, :L] = w / w.sum(1, keepdim=True)
    return SequenceClasses(M=M, query=torch.tensor([L, L, L + 1, L + 1]), next=torch.arange(L + 2, M), probs=probs)
