"""Nulls for the Syn-Small training rules of Chapter 5 (issue 26: a control that is measured and could pass).

Each null keeps a run's numbers and removes the one thing a claim attributes the effect to:

* :func:`unshared_family`: Syn-Small without the common/distinct structure (C35's control): class 1 keeps its
  tokens and their frequencies, but class 2's ten common tokens are replaced by ten of its own, so tokens 0-9 are
  no longer common.
* :func:`permuted_labels`: the value a run was trained at (``eta_Y / eta_Z``) shuffled across runs, seed by seed
  (C36's control): the same runs, read as if the learning rate had nothing to do with them.
* :func:`shuffled_orders`: ``P(l|n)`` of the distinct tokens permuted run by run (C21's control): an order of
  frequencies unrelated to the tokens (equivalently, by the symmetry of the model in token ids, the same training
  on a family whose distinct frequencies are shuffled, read against the original order).

The permutations come from a generator seeded with :data:`NULL_SEED` (fixed before any run) and are never the
identity, so a null never coincides with the run it is taken from.
"""

from __future__ import annotations

import numpy as np
import torch

from scansnap import data
from scansnap._checks import check_int

__all__ = ["NULL_SEED", "permuted_labels", "permuted_runs", "shuffled_orders", "unshared_family"]

NULL_SEED = 26
"""Seed of the nulls' permutations (fixed before the runs, issue 26)."""


def unshared_family() -> data.SequenceClasses:
    """Syn-Small with class 2's common tokens made its own: ``M = 44``, class 1 on tokens 0-9 (weight 1) and 10-19
    (weights 0.1..1.0), class 2 on 34-43 (weight 1) and 20-29, queries 30, 31, next tokens 32, 33. Class 1's
    ``P(l|n)`` is Syn-Small's; only the sharing of tokens 0-9 is gone (no token is common). C35's control."""
    small = data.syn_small()
    probs = torch.zeros(small.K, small.M + 10, dtype=torch.float64)
    probs[:, :small.M] = small.probs
    probs[1, 34:44], probs[1, :10] = small.probs[1, :10], 0.0
    return data.SequenceClasses(M=small.M + 10, query=small.query.clone(), next=small.next.clone(), probs=probs)


def _permutation(rng: np.random.Generator, n: int) -> np.ndarray:
    """A random permutation of ``range(n)`` other than the identity (``n >= 2``)."""
    while True:
        p = rng.permutation(n)
        if (p != np.arange(n)).any():
            return p


def permuted_labels(R: int, S: int, seed: int = NULL_SEED) -> np.ndarray:
    """``(R, S)`` for each seed ``s`` a permutation of the values ``0..R-1`` (never the identity): run ``(r, s)`` is
    read as if trained at value ``perm[r, s]`` (C36's control, :func:`permuted_runs`)."""
    check_int("R", R, low=2)
    check_int("S", S, low=1)
    rng = np.random.default_rng(seed)
    return np.stack([_permutation(rng, R) for _ in range(S)], axis=1)


def permuted_runs(perm: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each ``(R, S, ...)`` array with run ``(r, s)`` replaced by run ``(perm[r, s], s)`` (:func:`permuted_labels`):
    each seed's runs shuffled across the values (C36's control)."""
    seeds = np.arange(perm.shape[1])
    return tuple(np.asarray(x)[perm, seeds] for x in arrays)


def shuffled_orders(order: object, shape: tuple[int, ...], seed: int = NULL_SEED) -> np.ndarray:
    """``(*shape, L)`` the values ``order`` ``(L,)`` permuted independently for every run (never the identity): C21's
    control."""
    values = np.asarray(order, dtype=float)
    if values.ndim != 1 or len(values) < 2:
        raise ValueError(f"order: must be a 1-d array of at least two values; got shape {values.shape}")
    rng = np.random.default_rng(seed)
    flat = [values[_permutation(rng, len(values))] for _ in range(int(np.prod(shape, dtype=int)))]
    return np.array(flat).reshape(*shape, len(values))
