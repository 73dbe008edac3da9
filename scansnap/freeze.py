"""Whether an attention map has frozen, by bounded measures: one criterion for every chapter (Chapter 6's trained
model, the language models of Chapters 8-9).

An attention map is a set of rows, each a distribution over keys (``(..., R, N)``, rows summing to 1). Between two
checkpoints a row changes by its **total variation** ``TV = 1/2 sum |a - b|`` (in ``[0, 1]``: 0 unchanged, 1 moved
to disjoint keys) and keeps or loses its **attended key** (argmax). :func:`freeze_measures` compares a first and a
last window of the run: the attention's change per step in the last window over the first (a map that snaps and
freezes changes ever more slowly: the ratio falls far below 1; a map that keeps drifting keeps it near 1) and the
share of rows that keep their attended key over the last window. :func:`freeze_criteria` holds them against the
thresholds of Chapter 6's freeze criterion (the freeze rate's drop, ``<= 0.01`` verifies, ``<= 0.1`` partly; set
before any run). :func:`time_shuffled` gives the null these measures are judged against: the same maps with their
order in time permuted (no decay, no persistence beyond chance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from scansnap._checks import check_int, check_tensor
from scansnap.verdicts import Criterion, at_least, at_most

__all__ = ["FREEZE_KEEP", "FREEZE_RATIO", "FreezeMeasures", "freeze_criteria", "freeze_measures", "time_shuffled",
           "total_variation"]

FREEZE_RATIO = (0.01, 0.1)
"""The change per step in the last window over the first that verifies (partly verifies) a freeze: Chapter 6's
thresholds on the freeze rate's drop from its peak (set before any run)."""
FREEZE_KEEP = (0.9, 0.75)
"""The share of rows that keep their attended key over the last window that verifies (partly verifies) a freeze (set
before any run)."""


@dataclass(frozen=True)
class FreezeMeasures:
    """The freeze of an attention map over a run (Chapter 6's freeze criterion; P1, C40b).

    Attributes:
        tv_early: mean over rows of the total variation between the maps at the ends of the first window.
        tv_late: the same over the last window.
        tv_ratio: the change per step in the last window over the first (each window's mean total variation over its
            length in steps): near 1 for a map that keeps drifting, far below 1 for one that freezes.
        keep_share: share of rows whose attended key (argmax) is the same at both ends of the last window.
    """

    tv_early: float
    tv_late: float
    tv_ratio: float
    keep_share: float


def total_variation(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``1/2 sum_k |a_k - b_k|`` over the last axis: ``(..., N)`` twice -> ``(...)`` (in ``[0, 1]`` for
    distributions): the change between two attention maps (Chapter 6's freeze criterion; P1, C40b)."""
    check_tensor("a", a, floating=True)
    check_tensor("b", b, floating=True)
    if a.shape != b.shape:
        raise ValueError(f"b: must have a's shape {tuple(a.shape)}; got {tuple(b.shape)}")
    return 0.5 * (a - b).abs().sum(-1)


def keeps_key(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Whether each row keeps its attended key (argmax over the last axis) from ``a`` to ``b``: ``(..., N)`` twice
    -> ``(...)`` booleans (Chapter 6's and Chapter 8's share of rows that keep their key, C40b, P1)."""
    if a.shape != b.shape:
        raise ValueError(f"b: must have a's shape {tuple(a.shape)}; got {tuple(b.shape)}")
    return a.argmax(-1) == b.argmax(-1)


def _at(steps: np.ndarray, s: float, name: str) -> int:
    hit = np.flatnonzero(steps == s)
    if not hit.size:
        raise ValueError(f"{name}: step {s:g} is not a checkpoint of steps ({steps[0]:g} .. {steps[-1]:g})")
    return int(hit[0])


def freeze_measures(maps: torch.Tensor, steps: object, early: tuple[float, float],
                    late: tuple[float, float]) -> FreezeMeasures:
    """:class:`FreezeMeasures` of ``maps`` between the checkpoints ``early`` = (start, end) and ``late`` (P1).

    Args:
        maps: ``(S, ..., R, N)`` attention at ``S`` checkpoints: rows of ``N`` weights summing to 1 (every axis
            between the first and the last is a row: runs, heads, queries); floating.
        steps: ``(S,)`` the checkpoints' steps (increasing).
        early, late: the first and the last window, each ``(start, end)`` with ``start < end`` two of ``steps``.

    Returns:
        the measures (means and shares over every row).
    """
    check_tensor("maps", maps, floating=True)
    s = np.asarray(steps, dtype=float)
    if maps.ndim < 2 or s.shape != (maps.shape[0],) or not (np.diff(s) > 0).all():
        raise ValueError(f"steps: must be {maps.shape[0]} increasing steps, one per map; got {s.tolist()}")
    (a, b), (c, d) = ((_at(s, x, name), _at(s, y, name)) for name, (x, y) in (("early", early), ("late", late)))
    if not (a < b and c < d):
        raise ValueError(f"early, late: each window must end after it starts; got {early}, {late}")
    tv_early = float(total_variation(maps[a], maps[b]).mean())
    tv_late = float(total_variation(maps[c], maps[d]).mean())
    rate_early, rate_late = tv_early / (s[b] - s[a]), tv_late / (s[d] - s[c])
    ratio = float(rate_late / rate_early) if rate_early > 0 else math.nan
    keep = float(keeps_key(maps[c], maps[d]).double().mean())
    return FreezeMeasures(tv_early, tv_late, ratio, keep)


def time_shuffled(maps: torch.Tensor, seed: int) -> torch.Tensor:
    """``maps`` ``(S, ...)`` with their order in time permuted (``seed``: the permutation's generator): the null
    of :func:`freeze_measures` (no decay of the change per step, no persistence beyond chance): P1's control."""
    check_tensor("maps", maps)
    check_int("seed", seed, low=0)
    perm = torch.randperm(maps.shape[0], generator=torch.Generator().manual_seed(seed))
    return maps[perm]


def freeze_criteria(what: str = "the attention") -> tuple[Criterion, Criterion]:
    """Chapter 6's freeze criterion on :class:`FreezeMeasures` (``tv_ratio``, ``keep_share``), ``what`` naming the
    maps (P1; C40b reuses its bars)."""
    return (at_most("tv_ratio", f"change per step of {what} (mean total variation between the maps at a window's "
                    "ends over its length) in the last window over the first", *FREEZE_RATIO),
            at_least("keep_share", f"share of the rows of {what} that keep their attended key (argmax) over the last "
                     "window", *FREEZE_KEEP))
