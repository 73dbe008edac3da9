"""The fates of contextual tokens (paper Sec. 5): the attention dynamics of Eqn 10, Theorem 2 and
Corollary 2.

Setting. Class ``n`` (next token) has query ``m = psi(n)``; in the long-sequence limit (Lemma 2) its
attention is ``f~_n = c_n / ||c_n||_2`` with ``c_{l|n} = P(l|n) exp(z_ml)``. ``F = [f~_1 .. f~_K]`` and
the overlap (Gram) matrix is ``E = F^T F - I`` (zero diagonal). Theorem 1 writes the back-propagated
gradient of class ``n`` as ``g_n = gamma(t) (iota_n f~_n - sum_{n' != n} beta_{nn'} f~_n')`` with

* ``[iota_n; -beta_{n.}] = (I + E)^{-1} (e_n - 1/M)`` (``M`` the size of the decoder's softmax),
* ``gamma = M^2 h / (exp(M h) + M - 1)`` and ``h = h(t/K)`` of Lemma 6:
  ``(exp(M h) - 1)/M + (M - 1) h = eta_Y s``,
* ``xi_n = sum_{n' != n} beta_{nn'} E_{nn'}``.

Eqn 10, the population dynamics of ``Z`` (Lemma 1 averaged over classes with weights ``pi_n``)::

    z-dot_m = eta_Z gamma sum_{n in psi^-1(m)} pi_n diag(f~_n) sum_{n' != n} beta_{nn'} (E_{nn'} f~_n - f~_n')

(``iota_n`` drops out because ``P_perp(f~_n) f~_n = 0``). Theorem 2: (a) a distinct token ``l`` of
``n`` has ``z-dot_ml = eta_Z gamma pi_n xi_n f~_nl^2 > 0``; (b) a single common token ``c`` has
``z-dot_mc = -eta_Z gamma sum_{n in psi^-1(m)} pi_n xi_n (1 - f~_nc^2) < 0``. Corollary 2 (one query,
a ``P``-preserving bijection between the distinct tokens of any two classes, global common tokens
with ``P(l|n) = P_l``, symmetric ``Z``): every common token ``l`` has
``z-dot_ml = -eta_Z gamma (sum_n pi_n) (K - 1) beta eps_l^2 (1 - S) < 0`` with ``eps_l = f~_nl``,
``S = sum_{c common} eps_c^2`` and ``beta`` of :func:`corollary2_beta`.

Theorem 1's quantities are defined once, in :mod:`scansnap.theory.decoder` (``gram``,
``theorem1_coefficients``, ``xi``, ``gamma``, ``gamma_of_h``; numpy columns, or torch with leading axes);
here ``f~_n`` are the rows of :func:`unit_scores` ``(..., K, M)``, so ``E = gram(ft.mT)``. Everything here is
torch float64; ``Z`` is ``(M, M)`` (``Z[m, l]``: key ``l`` for query ``m``) with optional leading axes where
stated. :func:`population_zdot` is the exact gradient of the model's population loss (no Theorem 1), the
reference Eqn 10 is checked against. The families the checks use live in :mod:`scansnap.theory.families`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from scansnap._checks import check_int, check_positive, check_tensor
from scansnap.data import SequenceClasses
from scansnap.model import YZModel
from scansnap.theory.decoder import backprop_gradient, gram, theorem1_coefficients, unit_inputs, xi

__all__ = [
    "FateCounts",
    "class_gradients",
    "corollary2_beta",
    "corollary2_rate",
    "eqn10_zdot",
    "fate_counts",
    "logits_from_attention",
    "population_zdot",
    "single_common_rate",
    "span_coefficients",
    "theorem1_decoder",
    "unit_scores",
]



# ----------------------------------------------------------------------------------------------
# Lemma 2's unit attention, and the decoder for which Theorem 1 is exact
# ----------------------------------------------------------------------------------------------


def unit_scores(classes: SequenceClasses, Z: torch.Tensor) -> torch.Tensor:
    """Lemma 2's ``f~_n = c_n / ||c_n||_2`` of every class: ``Z`` ``(..., M, M)`` -> ``(..., K, M)`` float64
    (row ``n`` is column ``n`` of :func:`scansnap.theory.decoder.unit_inputs`'s ``F``)."""
    f = classes.population(Z.to(torch.float64))
    return f / torch.linalg.vector_norm(f, dim=-1, keepdim=True)


def theorem1_decoder(classes: SequenceClasses, Z: torch.Tensor, h: float) -> torch.Tensor:
    """The decoder ``Y = F (I + E)^{-1} W`` of Theorem 5, for which class ``n``'s logits are
    ``Y^T f~_n = w_n = h (M e_{next(n)} - 1)`` and the back-propagated gradient is exactly Theorem 1's
    ``Y (e_n - alpha_n) = gamma F (I + E)^{-1} (e_n - 1/M)`` with ``gamma = gamma_of_h(h, M)``
    (:func:`scansnap.theory.decoder.gamma_of_h`).

    Args:
        classes: the family (``M`` tokens, ``K`` classes).
        Z: ``(M, M)`` attention logits (they fix ``F``).
        h: decoder state ``>= 0`` (Lemma 5/6), the same for every class.

    Returns:
        ``Y`` ``(M, M)`` float64.
    """
    check_tensor("Z", Z, shape=(classes.M, classes.M), floating=True)
    if not h >= 0:
        raise ValueError(f"h: must be >= 0; got {h}")
    M = classes.M
    ft = unit_scores(classes, Z.to(torch.float64))  # (K, M)
    W = h * (M * torch.nn.functional.one_hot(classes.next, M).to(torch.float64) - 1.0)  # (K, M), rows w_n
    return ft.T @ torch.linalg.solve(gram(ft.T) + torch.eye(classes.K, dtype=torch.float64), W)


# ----------------------------------------------------------------------------------------------
# Eqn 10 and Theorem 2
# ----------------------------------------------------------------------------------------------


def _pi(classes: SequenceClasses, pi: torch.Tensor | None) -> torch.Tensor:
    if pi is None:
        return torch.full((classes.K,), 1.0 / classes.K, dtype=torch.float64)
    pi = torch.as_tensor(pi, dtype=torch.float64)
    return check_tensor("pi", pi, shape=(classes.K,), low=0.0)


def _scatter_rows(per_class: torch.Tensor, classes: SequenceClasses) -> torch.Tensor:
    """``(..., K, M)`` per-class rows -> ``(..., M, M)``: row ``m`` sums the classes with query ``m``."""
    out = torch.zeros(*per_class.shape[:-2], classes.M, classes.M, dtype=per_class.dtype)
    return out.index_add_(-2, classes.query, per_class)


def eqn10_zdot(
    classes: SequenceClasses,
    Z: torch.Tensor,
    gamma: float | torch.Tensor,
    eta_Z: float = 1.0,
    pi: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
) -> torch.Tensor:
    """Eqn 10: ``dZ/dt``, with Theorem 1's back-propagated gradient and Lemma 2's attention.

    ``z-dot_m = eta_Z gamma sum_{n in psi^-1(m)} pi_n diag(f~_n) sum_{n' != n} beta_{nn'} (E_{nn'} f~_n - f~_n')``;
    rows of ``Z`` that are no class's query do not move.

    Args:
        classes: the family.
        Z: ``(..., M, M)`` attention logits.
        gamma: speed-control coefficient ``>= 0`` (scalar, or broadcastable to the leading axes).
        eta_Z: attention learning rate ``> 0``.
        pi: ``(K,)`` class weights (default uniform ``1/K``, as in training).
        beta: ``(..., K, K)`` coefficients to use instead of Theorem 1's (e.g. those of a measured
            gradient, :func:`span_coefficients`); Eqn 10's structure holds for any ``g_n`` in the span
            of ``F``, since ``iota_n`` drops out.

    Returns:
        ``(..., M, M)``.
    """
    check_positive("eta_Z", eta_Z)
    check_tensor("Z", Z, shape=(..., classes.M, classes.M), floating=True)
    gamma = torch.as_tensor(gamma, dtype=torch.float64)
    check_tensor("gamma", gamma, low=0.0)
    ft = unit_scores(classes, Z)
    E = gram(ft.mT)  # once per call
    if beta is None:
        _, beta = theorem1_coefficients(E, classes.M)
    else:
        check_tensor("beta", beta, shape=(..., classes.K, classes.K), floating=True)
        beta = beta.to(torch.float64) * (1 - torch.eye(classes.K, dtype=torch.float64))
    xi_n = (beta * E).sum(-1)  # Theorem 1(a)'s definition, for any beta
    # sum_{n'} beta_{nn'} (E_{nn'} f~_n - f~_n') = xi_n f~_n - (beta F^T)_n
    per_class = _pi(classes, pi)[:, None] * ft * (xi_n[..., None] * ft - beta @ ft)
    return eta_Z * gamma[..., None, None] * _scatter_rows(per_class, classes)


def population_zdot(classes: SequenceClasses, Y: torch.Tensor, Z: torch.Tensor, eta_Z: float = 1.0) -> torch.Tensor:
    """The exact gradient-flow velocity ``-eta_Z dL/dZ`` of the population loss (Lemma 2 limit, classes
    weighted ``1/K``), from :meth:`scansnap.model.YZModel.loss_and_gradients`: no Theorem 1.

    Args:
        Y, Z: ``(M, M)`` or ``(C, M, M)``.

    Returns:
        Same shape as ``Z``.
    """
    check_positive("eta_Z", eta_Z)
    squeeze = Z.ndim == 2
    Y3, Z3 = (Y[None], Z[None]) if squeeze else (Y, Z)
    model = YZModel.from_params(Y3.to(torch.float64), Z3.to(torch.float64))
    _, _, gZ = model.loss_and_gradients(classes.query, classes.probs, classes.next)
    out = -eta_Z * gZ
    return out[0] if squeeze else out


def class_gradients(classes: SequenceClasses, Y: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    """The back-propagated gradients ``g_n = Y (e_n - alpha_n)`` of every class (Theorem 1's ``g``) in the
    long-sequence limit, with ``alpha_n = softmax(Y^T f~_n)``: ``Y``, ``Z`` ``(M, M)`` -> ``(K, M)`` (row ``n`` is
    ``g_n``); :func:`scansnap.theory.decoder.backprop_gradient` at :func:`scansnap.theory.decoder.unit_inputs`."""
    check_tensor("Y", Y, shape=(classes.M, classes.M), floating=True)
    F, targets = unit_inputs(classes, Z.detach())
    return torch.from_numpy(backprop_gradient(Y.detach().to(torch.float64).numpy(), F, targets))


def span_coefficients(ft: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Least-squares coefficients of each ``g_n`` on ``f~_1 .. f~_K``: ``g_n ~ sum_k A[n, k] f~_k``.

    Theorem 1 says ``A[n, n] = gamma iota_n`` and ``A[n, k] = -gamma beta_{nk}``.

    Args:
        ft: ``(K, M)`` unit rows ``f~_n``; g: ``(K, M)`` rows ``g_n``.

    Returns:
        ``A`` ``(K, K)`` and the relative residual ``||g - A F^T|| / ||g||`` (0 if ``g`` lies in ``span F``).
    """
    check_tensor("ft", ft, shape=(-1, -1), floating=True)
    check_tensor("g", g, shape=tuple(ft.shape), floating=True)
    A = torch.linalg.solve(ft @ ft.T, ft @ g.T).T
    return A, torch.linalg.norm(g - A @ ft) / torch.linalg.norm(g)


def single_common_rate(
    classes: SequenceClasses, Z: torch.Tensor, gamma: float, eta_Z: float = 1.0, pi: torch.Tensor | None = None
) -> torch.Tensor:
    """Theorem 2(b)'s closed form for a family with exactly one common token ``c``:
    ``z-dot_mc = -eta_Z gamma sum_{n in psi^-1(m)} pi_n xi_n (1 - f~_nc^2)`` for every query ``m``.

    Args:
        classes: a family with ``|G_CT| = 1``; Z: ``(M, M)``; gamma ``>= 0``; eta_Z ``> 0``; pi: ``(K,)``.

    Returns:
        ``(M,)``: entry ``m`` is ``z-dot_mc`` (0 for tokens that are no query).
    """
    common = classes.common()
    if len(common) != 1:
        raise ValueError(f"classes: Theorem 2(b) needs exactly one common token; got {common.tolist()}")
    check_positive("eta_Z", eta_Z)
    if not gamma >= 0:
        raise ValueError(f"gamma: must be >= 0; got {gamma}")
    ft = unit_scores(classes, Z.to(torch.float64))
    c = int(common[0])
    has_c = (classes.probs[:, c] > 0).to(torch.float64)  # the sum is over classes whose support holds c
    per_class = -eta_Z * gamma * _pi(classes, pi) * xi(gram(ft.T), classes.M) * (1 - ft[:, c] ** 2) * has_c
    return torch.zeros(classes.M, dtype=torch.float64).index_add_(0, classes.query, per_class)


def corollary2_beta(S: torch.Tensor | float, K: int, M: int) -> torch.Tensor:
    """Corollary 2's common ``beta = beta_{nn'}`` when ``E = S (1 1^T - I)`` (every overlap equal to ``S``):
    ``beta = S / ((1 - S)(1 + (K - 1) S)) + 1 / (M (1 + (K - 1) S))``, for ``0 <= S < 1``."""
    check_int("K", K, low=2)
    check_int("M", M, low=2)
    S = torch.as_tensor(S, dtype=torch.float64)
    check_tensor("S", S, low=0.0)
    if not (S < 1).all():
        raise ValueError(f"S: must be < 1 (I + E positive definite); got max {S.max().item()}")
    return S / ((1 - S) * (1 + (K - 1) * S)) + 1 / (M * (1 + (K - 1) * S))


def corollary2_rate(
    eps: torch.Tensor, K: int, M: int, gamma: float, eta_Z: float = 1.0, pi_sum: float = 1.0
) -> torch.Tensor:
    """Corollary 2: ``z-dot_ml = -eta_Z gamma (sum_n pi_n) (K - 1) beta eps_l^2 (1 - S)`` for each common
    token ``l``, with ``S = sum_c eps_c^2`` and ``beta = corollary2_beta(S, K, M)``.

    Args:
        eps: ``(..., |G_CT|)`` the attention ``f~_nl`` of each common token (the same for every class).
        K, M: number of classes and vocabulary size; gamma ``>= 0``; eta_Z ``> 0``;
        pi_sum: ``sum_n pi_n`` (1 for the uniform class weights of training; ``K`` in the paper's convention).

    Returns:
        ``(..., |G_CT|)``.
    """
    eps = torch.as_tensor(eps, dtype=torch.float64)
    check_tensor("eps", eps, low=0.0, high=1.0)
    S = (eps**2).sum(-1, keepdim=True)
    return -eta_Z * gamma * pi_sum * (K - 1) * corollary2_beta(S, K, M) * eps**2 * (1 - S)


# ----------------------------------------------------------------------------------------------
# Reading the logits back from training snapshots, and counting fates
# ----------------------------------------------------------------------------------------------


def _components(classes: SequenceClasses) -> list[tuple[list[int], list[int]]]:
    """For each query, the connected groups of (classes, tokens) linked by shared support."""
    support = classes.support()
    groups = []
    for m in torch.unique(classes.query).tolist():
        todo = set(torch.nonzero(classes.query == m).flatten().tolist())
        while todo:
            members, frontier, tokens = set(), {todo.pop()}, set()
            while frontier:
                n = frontier.pop()
                members.add(n)
                new = set(torch.nonzero(support[n]).flatten().tolist()) - tokens
                tokens |= new
                for l in new:
                    frontier |= set(torch.nonzero(support[:, l]).flatten().tolist()) & todo
                todo -= frontier
            groups.append((sorted(members), sorted(tokens)))
    return groups


def logits_from_attention(f: torch.Tensor, classes: SequenceClasses) -> torch.Tensor:
    """Invert Lemma 2: the logits ``Z`` ``(..., M, M)`` behind attention snapshots ``f`` ``(..., K, M)``.

    ``log f_nl = log P(l|n) + z_{psi(n) l} - a_n`` fixes the logits on ``supp(n)`` up to one constant per
    group of classes of a query linked by shared tokens. The constant is fixed by the invariant of
    gradient training (Lemma 1): each class's update sums to 0 over its support, so the logits of
    each group keep their initial sum, 0 from ``Z(0) = 0``. Logits outside every support of a query
    never move and are returned as 0 (their value from ``Z(0) = 0``). Hence the result equals ``Z``
    exactly when training started from ``Z(0) = 0``, and differs from ``Z`` by a constant per group
    (so differences between snapshots are exact) from any other start.

    Args:
        f: ``(..., K, M)`` attention distributions (e.g. :attr:`scansnap.train.History.attention`),
            positive on each class's support.
        classes: the family.
    """
    check_tensor("f", f, shape=(..., classes.K, classes.M), floating=True, low=0.0)
    support = classes.support()
    if not (f[..., support] > 0).all():
        raise ValueError("f: must be positive on every class's support (log of 0)")
    lead = f.shape[:-2]
    Z = torch.zeros(*lead, classes.M, classes.M, dtype=torch.float64)
    logp = torch.log(torch.where(support, classes.probs, 1.0))
    rhs_all = torch.log(torch.where(support, f.to(torch.float64), 1.0)) - logp  # (..., K, M)
    for members, tokens in _components(classes):
        # walk the group class by class, each sharing a token with those before (its shift a_n follows
        # from that token); elementwise operations only, so the result does not depend on the number
        # of threads (no BLAS)
        known: dict[int, torch.Tensor] = {}
        pending = list(members)
        while pending:
            for n in pending:
                supp = torch.nonzero(support[n]).flatten().tolist()
                shared = [l for l in supp if l in known]
                if known and not shared:
                    continue
                shift = known[shared[0]] - rhs_all[..., n, shared[0]] if shared else 0.0
                for l in supp:
                    if l not in known:
                        known[l] = rhs_all[..., n, l] + shift
                pending.remove(n)
                break
        total = torch.zeros(lead, dtype=torch.float64)
        for l in tokens:  # a fixed order of summation
            total = total + known[l]
        mean = total / len(tokens)  # the group's logits sum to 0
        m = int(classes.query[members[0]])
        for l in tokens:
            Z[..., m, l] = known[l] - mean
    return Z


@dataclass(frozen=True)
class FateCounts:
    """How the logits ``z_{psi(n) l}`` moved between consecutive snapshots, counted over
    (step, class, token) entries: up (``> tol``), down (``< -tol``) or still (``|dz| <= tol``); Theorem 2
    and Corollary 2 predict the distinct ones up and the common ones down (:func:`fate_counts`).

    Attributes:
        distinct: ``(up, down, still)`` over distinct tokens ``l in G_DT(n)``.
        common: ``(up, down, still)`` over common tokens ``l in G_CT`` in ``supp(n)``.
        min_distinct_move, max_common_move: ``min`` of ``dz`` over distinct and ``max`` over common entries.
    """

    distinct: tuple[int, int, int]
    common: tuple[int, int, int]
    min_distinct_move: float
    max_common_move: float


def fate_counts(Z: torch.Tensor, classes: SequenceClasses, tol: float = 1e-12) -> FateCounts:
    """Count Theorem 2's predicted moves in a trajectory ``Z`` ``(S, M, M)`` (``S >= 2`` snapshots).

    Theorem 2 predicts every distinct entry up and (for one common token, or in Corollary 2's
    symmetric case) every common entry down; ``still`` entries (e.g. the first step from
    ``Y(0) = 0``, where ``gamma = 0``) are neither.
    """
    check_tensor("Z", Z, shape=(-1, classes.M, classes.M), floating=True)
    if Z.shape[0] < 2:
        raise ValueError(f"Z: need at least 2 snapshots; got {Z.shape[0]}")
    tol = check_positive("tol", tol)
    dz = torch.diff(Z[:, classes.query, :], dim=0)  # (S-1, K, M): moves of z_{psi(n) l}
    dmask = classes.distinct_mask()
    cmask = torch.zeros_like(dmask)
    cmask[:, classes.common()] = True
    cmask &= classes.support()

    def count(mask: torch.Tensor) -> tuple[int, int, int]:
        v = dz[:, mask]
        return int((v > tol).sum()), int((v < -tol).sum()), int((v.abs() <= tol).sum())

    dmin = float(dz[:, dmask].min()) if dmask.any() else float("nan")
    cmax = float(dz[:, cmask].max()) if cmask.any() else float("nan")
    return FateCounts(distinct=count(dmask), common=count(cmask), min_distinct_move=dmin, max_common_move=cmax)
