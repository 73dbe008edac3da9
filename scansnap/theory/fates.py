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

Theorem 1's quantities (``F``, ``E``, ``iota``, ``beta``, ``xi``, ``gamma``, ``g_n``) are defined once, in
:mod:`scansnap.theory.decoder`; the functions here of those names are torch views of them (rows
``f~_n`` instead of columns, optional leading axes). Everything here is torch float64; ``Z`` is
``(M, M)`` (``Z[m, l]``: key ``l`` for query ``m``) with optional leading axes where stated.
:func:`population_zdot` is the exact gradient of the model's population loss (no Theorem 1), the
reference Eqn 10 is checked against.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from scansnap._checks import check_int, check_positive, check_tensor
from scansnap.data import SequenceClasses, sequence_classes, syn_medium, syn_small
from scansnap.model import YZModel
from scansnap.theory import decoder

__all__ = [
    "FateCounts",
    "class_gradients",
    "classes_from_weights",
    "corollary2_beta",
    "corollary2_rate",
    "decoder_coefficients",
    "eqn10_zdot",
    "example_families",
    "fate_counts",
    "logits_from_attention",
    "overlap_gram",
    "population_zdot",
    "random_classes",
    "single_common_rate",
    "span_coefficients",
    "speed_gamma",
    "speed_gamma_at",
    "theorem1_decoder",
    "unit_scores",
    "xi_coefficients",
]

F64 = torch.float64


# ----------------------------------------------------------------------------------------------
# Families
# ----------------------------------------------------------------------------------------------


def classes_from_weights(weights: torch.Tensor | list, query: torch.Tensor | list) -> SequenceClasses:
    """A family of sequence classes from unnormalized weights over ``L`` contextual tokens.

    Layout: contextual tokens ``0 .. L-1``, then one id per distinct query, then the next tokens
    (``M = L + #queries + K``), as in :func:`scansnap.data.sequence_classes`.

    Args:
        weights: ``(K, L)`` non-negative; row ``n`` is proportional to ``P(l | n)``; each row needs a
            positive entry.
        query: ``(K,)`` integers in ``[0, #queries)``: which query each class uses (every query in
            that range must be used).

    Returns:
        :class:`~scansnap.data.SequenceClasses` with float64 ``probs``.
    """
    w = torch.as_tensor(weights, dtype=F64)
    check_tensor("weights", w, shape=(-1, -1), low=0.0)
    K, L = w.shape
    if not (w.sum(1) > 0).all():
        raise ValueError("weights: every row (class) needs a positive weight")
    q = torch.as_tensor(query, dtype=torch.long)
    check_tensor("query", q, shape=(K,), low=0, high=K - 1)
    num_query = int(q.max()) + 1
    if sorted(set(q.tolist())) != list(range(num_query)):
        raise ValueError(f"query: must use every query index 0..{num_query - 1}; got {q.tolist()}")
    M = L + num_query + K
    probs = torch.zeros(K, M, dtype=F64)
    probs[:, :L] = w / w.sum(1, keepdim=True)
    return SequenceClasses(M=M, query=L + q, next=L + num_query + torch.arange(K), probs=probs)


def random_classes(generator: torch.Generator, *, one_common: bool = False) -> SequenceClasses:
    """A random family for checks: 2-5 classes, 1 to ``K`` queries, every class with a distinct token.

    Default: contextual tokens ``0 .. K-1`` are one distinct token per class; up to 14 further tokens
    get random weights in random classes (so some are common, some distinct, some unused). With
    ``one_common``: token 0 is the only common token (held by classes 0 and 1 and by each other class
    with probability 1/2), and each class owns 1-3 distinct tokens. Weights are uniform in
    ``[0.1, 1.1)``.
    """
    g = generator
    K = int(torch.randint(2, 6, (), generator=g))
    if one_common:
        blocks = torch.randint(1, 4, (K,), generator=g).tolist()
        w = torch.zeros(K, 1 + sum(blocks), dtype=F64)
        start = 1
        for n, b in enumerate(blocks):
            w[n, start:start + b] = torch.rand(b, generator=g, dtype=F64) + 0.1
            start += b
        holds = torch.rand(K, generator=g) < 0.5
        holds[:2] = True
        w[:, 0] = (torch.rand(K, generator=g, dtype=F64) + 0.1) * holds
    else:
        extra = int(torch.randint(2, 15, (), generator=g))
        w = torch.zeros(K, K + extra, dtype=F64)
        w[torch.arange(K), torch.arange(K)] = torch.rand(K, generator=g, dtype=F64) + 0.1
        w[:, K:] = (torch.rand(K, extra, generator=g, dtype=F64) + 0.1) * (torch.rand(K, extra, generator=g) < 0.5)
    num_query = int(torch.randint(1, K + 1, (), generator=g))
    query = torch.cat([torch.arange(num_query), torch.randint(num_query, (K - num_query,), generator=g)])
    return classes_from_weights(w, query)


def example_families() -> dict[str, SequenceClasses]:
    """The families of Chapter 4, each with one query for all its classes unless stated:

    * ``"one common token"``: 3 classes share common token 0 with different weights (1, 0.5, 2) and own
      3, 2 and 4 distinct tokens with unequal weights: Theorem 2(b)'s setting, no symmetry.
    * ``"Syn-Medium, one query"``: :func:`scansnap.data.syn_medium` with one query (2 classes, 10
      common, 10 distinct each): Corollary 2's symmetric setting.
    * ``"Syn-Small"``: :func:`scansnap.data.syn_small` (2 classes with their own queries; symmetric).
    * ``"two common, asymmetric"``: 2 classes share tokens 0 and 1; token 0 has weight 1 in class 0 and
      0.02 in class 1 (nearly a distinct token of class 0); token 1 weight 2 in both.
    * ``"common to 2 of 3"``: 3 classes share token 1 (weight 2); token 0 (weight 0.3) is shared by
      classes 0 and 1 only.
    * ``"weak overlap"``: 3 classes, one common token of weight 0.5 and 20 distinct tokens each
      (``E_{nn'} = 0.03``).
    * ``"disjoint"``: 3 classes with 5 distinct tokens each and no common token (``E = 0``).
    """
    one = [[1.0, 0.3, 0.6, 0.9, 0, 0, 0, 0, 0, 0], [0.5, 0, 0, 0, 0.2, 1.0, 0, 0, 0, 0],
           [2.0, 0, 0, 0, 0, 0, 0.4, 0.5, 0.6, 0.7]]
    return {
        "one common token": classes_from_weights(one, [0, 0, 0]),
        "Syn-Medium, one query": syn_medium(1),
        "Syn-Small": syn_small(),
        "two common, asymmetric": classes_from_weights([[1.0, 2.0, 0.5, 0.5, 0, 0], [0.02, 2.0, 0, 0, 0.5, 0.5]],
                                                       [0, 0]),
        "common to 2 of 3": classes_from_weights([[0.3, 2.0, 1, 0, 0], [0.3, 2.0, 0, 1, 0], [0.0, 2.0, 0, 0, 1]],
                                                 [0, 0, 0]),
        "weak overlap": sequence_classes(1, 3, num_common=1, num_distinct=20, common_weight=0.5),
        "disjoint": sequence_classes(1, 3, num_common=0, num_distinct=5),
    }


# ----------------------------------------------------------------------------------------------
# Theorem 1's quantities: torch views (rows ``f~_n``, optional leading axes) of scansnap.theory.decoder
# ----------------------------------------------------------------------------------------------


def _per_item(
    fn: Callable[[np.ndarray], np.ndarray | tuple[np.ndarray, ...]], x: torch.Tensor, core: int
) -> torch.Tensor | tuple[torch.Tensor, ...]:
    """Apply the numpy function ``fn`` to each ``x[i]`` of the leading axes (``core`` trailing axes per item)
    and stack its (tuple of) results as float64 tensors with the same leading axes."""
    lead = x.shape[: x.ndim - core]
    xs = x.detach().to(F64).reshape(-1, *x.shape[x.ndim - core:]).numpy()
    outs = [fn(item) for item in xs]
    single = not isinstance(outs[0], tuple)
    cols = [[o] if single else list(o) for o in outs]
    res = tuple(torch.from_numpy(np.stack([c[j] for c in cols])).reshape(*lead, *np.shape(cols[0][j]))
                for j in range(len(cols[0])))
    return res[0] if single else res


def unit_scores(classes: SequenceClasses, Z: torch.Tensor) -> torch.Tensor:
    """Lemma 2's ``f~_n = c_n / ||c_n||_2`` of every class: ``Z`` ``(..., M, M)`` -> ``(..., K, M)``
    (the rows of :func:`scansnap.theory.decoder.unit_inputs`'s ``F``)."""
    return _per_item(lambda z: decoder.unit_inputs(classes, torch.from_numpy(z))[0].T, Z, 2)


def overlap_gram(ft: torch.Tensor) -> torch.Tensor:
    """``E = F^T F - I`` (zero diagonal, ``E_{nn'} = f~_n . f~_n'``): ``ft`` ``(..., K, M)`` -> ``(..., K, K)``
    (:func:`scansnap.theory.decoder.gram`)."""
    check_tensor("ft", ft, shape=(..., -1, -1), floating=True)
    return _per_item(lambda f: decoder.gram(f.T), ft, 2)


def decoder_coefficients(ft: torch.Tensor, M: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Theorem 1's ``iota`` and ``beta`` (:func:`scansnap.theory.decoder.theorem1_coefficients`): column ``n``
    of ``(I + E)^{-1} (I - 1 1^T / M)`` is ``[.., iota_n at n, .., -beta_{nn'} at n', ..]``.

    Args:
        ft: ``(..., K, M_tokens)`` unit rows ``f~_n``, linearly independent (``I + E`` invertible).
        M: size of the decoder's softmax (the vocabulary size).

    Returns:
        ``iota`` ``(..., K)`` and ``beta`` ``(..., K, K)`` (``beta[..., n, n']``, zero diagonal).
    """
    check_int("M", M, low=2)
    check_tensor("ft", ft, shape=(..., -1, -1), floating=True)
    return _per_item(lambda f: decoder.theorem1_coefficients(decoder.gram(f.T), M), ft, 2)


def xi_coefficients(ft: torch.Tensor, M: int) -> torch.Tensor:
    """Theorem 1(a)'s ``xi_n = sum_{n' != n} beta_{nn'} E_{nn'}`` (:func:`scansnap.theory.decoder.xi`):
    ``ft`` ``(..., K, M_tokens)`` -> ``(..., K)``."""
    check_int("M", M, low=2)
    check_tensor("ft", ft, shape=(..., -1, -1), floating=True)
    return _per_item(lambda f: decoder.xi(decoder.gram(f.T), M), ft, 2)


def speed_gamma(h: torch.Tensor | float, M: int) -> torch.Tensor:
    """Theorem 1's speed-control coefficient ``gamma = M^2 h / (exp(M h) + M - 1)`` (elementwise, ``h >= 0``):
    :func:`scansnap.theory.decoder.gamma_of_h` as a tensor."""
    check_int("M", M, low=2)
    h = torch.as_tensor(h, dtype=F64)
    check_tensor("h", h, low=0.0)
    return torch.as_tensor(decoder.gamma_of_h(h.numpy(), M), dtype=F64)


def speed_gamma_at(t: torch.Tensor | float, M: int, K: int, eta_Y: float) -> torch.Tensor:
    """``gamma(t)`` at SGD step ``t`` with uniform classes (Lemma 6's ``h(t / K)``):
    :func:`scansnap.theory.decoder.gamma` as a tensor."""
    t = torch.as_tensor(t, dtype=F64)
    return torch.as_tensor(decoder.gamma(t.numpy(), M, K, eta_Y), dtype=F64)


def theorem1_decoder(classes: SequenceClasses, Z: torch.Tensor, h: float) -> torch.Tensor:
    """The decoder ``Y = F (I + E)^{-1} W`` of Theorem 5, for which class ``n``'s logits are
    ``Y^T f~_n = w_n = h (M e_{next(n)} - 1)`` and the back-propagated gradient is exactly Theorem 1's
    ``Y (e_n - alpha_n) = gamma F (I + E)^{-1} (e_n - 1/M)`` with ``gamma = speed_gamma(h, M)``.

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
    ft = unit_scores(classes, Z.to(F64))  # (K, M)
    W = h * (M * torch.nn.functional.one_hot(classes.next, M).to(F64) - 1.0)  # (K, M), rows w_n
    return ft.T @ torch.linalg.solve(overlap_gram(ft) + torch.eye(classes.K, dtype=F64), W)


# ----------------------------------------------------------------------------------------------
# Eqn 10 and Theorem 2
# ----------------------------------------------------------------------------------------------


def _pi(classes: SequenceClasses, pi: torch.Tensor | None) -> torch.Tensor:
    if pi is None:
        return torch.full((classes.K,), 1.0 / classes.K, dtype=F64)
    pi = torch.as_tensor(pi, dtype=F64)
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
    gamma = torch.as_tensor(gamma, dtype=F64)
    check_tensor("gamma", gamma, low=0.0)
    ft = unit_scores(classes, Z.to(F64))
    if beta is None:
        _, beta = decoder_coefficients(ft, classes.M)
    else:
        check_tensor("beta", beta, shape=(..., classes.K, classes.K), floating=True)
        beta = beta.to(F64) * (1 - torch.eye(classes.K, dtype=F64))
    xi = (beta * overlap_gram(ft)).sum(-1)
    # sum_{n'} beta_{nn'} (E_{nn'} f~_n - f~_n') = xi_n f~_n - (beta F^T)_n
    per_class = _pi(classes, pi)[:, None] * ft * (xi[..., None] * ft - beta @ ft)
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
    model = YZModel.from_params(Y3.to(F64), Z3.to(F64))
    _, _, gZ = model.loss_and_gradients(classes.query, classes.probs, classes.next)
    out = -eta_Z * gZ
    return out[0] if squeeze else out


def class_gradients(classes: SequenceClasses, Y: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    """The back-propagated gradients ``g_n = Y (e_n - alpha_n)`` of every class in the long-sequence limit,
    with ``alpha_n = softmax(Y^T f~_n)``: ``Y``, ``Z`` ``(M, M)`` -> ``(K, M)`` (row ``n`` is ``g_n``);
    :func:`scansnap.theory.decoder.backprop_gradient` at :func:`scansnap.theory.decoder.unit_inputs`."""
    check_tensor("Y", Y, shape=(classes.M, classes.M), floating=True)
    F, targets = decoder.unit_inputs(classes, Z.detach())
    return torch.from_numpy(decoder.backprop_gradient(Y.detach().to(F64).numpy(), F, targets))


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
    ft = unit_scores(classes, Z.to(F64))
    c = int(common[0])
    has_c = (classes.probs[:, c] > 0).to(F64)  # the sum is over classes whose support holds c
    per_class = -eta_Z * gamma * _pi(classes, pi) * xi_coefficients(ft, classes.M) * (1 - ft[:, c] ** 2) * has_c
    return torch.zeros(classes.M, dtype=F64).index_add_(0, classes.query, per_class)


def corollary2_beta(S: torch.Tensor | float, K: int, M: int) -> torch.Tensor:
    """Corollary 2's common ``beta = beta_{nn'}`` when ``E = S (1 1^T - I)`` (every overlap equal to ``S``):
    ``beta = S / ((1 - S)(1 + (K - 1) S)) + 1 / (M (1 + (K - 1) S))``, for ``0 <= S < 1``."""
    check_int("K", K, low=2)
    check_int("M", M, low=2)
    S = torch.as_tensor(S, dtype=F64)
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
    eps = torch.as_tensor(eps, dtype=F64)
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
    Z = torch.zeros(*lead, classes.M, classes.M, dtype=F64)
    logp = torch.log(torch.where(support, classes.probs, 1.0))
    rhs_all = torch.log(torch.where(support, f.to(F64), 1.0)) - logp  # (..., K, M)
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
        total = torch.zeros(lead, dtype=F64)
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
    (step, class, token) entries: up (``> tol``), down (``< -tol``) or still (``|dz| <= tol``).

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
