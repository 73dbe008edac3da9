"""The rules of Chapter 7's claims on the Syn-Medium sweep (the paper's Figures 6, 11 and 12: C38, C39, C42) and
the typed measures they read; :mod:`scansnap.experiments.ch07_syn_medium` computes the measures from its sweep,
after the last step and, for the control, on the same runs with their learning rates permuted.

Every rule is on **training-sampled** evidence. Its control is the same sweep with the learning rates permuted
across runs (:func:`permuted_cells`): per dataset and seed, the trained runs are dealt to the (``eta_Z``, ratio)
cells by a random permutation drawn from :data:`PERMUTATION_SEED` (fixed before any run), each run keeping its
own measurements. That is the sweep a random assignment of rates to runs would give: what "the learning rate has
no effect" predicts, measured on the same trained models (finite, and varying with the permutation). The trend
criteria count what that null would rarely give: a row that moves the claimed way at every step, steps whose
paired t over seeds passes 2, and a median step of a large (Cohen's d 0.8) or at least small (0.2) effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scansnap.verdicts import Rule, at_least

__all__ = ["PERMUTATION_SEED", "RULE_C38", "RULE_C39", "RULE_C42", "EtaZTrend", "RatioTrend", "RecallOrder",
           "permuted_cells"]

PERMUTATION_SEED = 0
"""The seed of the control's permutations (fixed before the control was first run; never tuned)."""


def permuted_cells(arrays: Sequence[np.ndarray], key: int, seed: int = PERMUTATION_SEED) -> list[np.ndarray]:
    """The control's reassignment of runs to learning rates (the null of C38, C39 and C42: Figure 6's sweep with the
    rates dealt to the runs at random).

    Args:
        arrays: each ``(nZ, nR, nS, ...)``, indexed by the same (``eta_Z``, ratio, seed) cells.
        key: an integer told apart per dataset (its ``num_query``), so datasets get different permutations.
        seed: the permutations' seed.

    Returns:
        the arrays, same shapes, where for each seed index ``s`` the ``nZ * nR`` runs of that seed sit in the cells of
        one random permutation (``numpy.random.default_rng([seed, key, s])``), the same for every array: a run keeps
        its own measurements and its seed (the pairing of runs by seed is kept), only its learning rates are dealt
        at random.
    """
    nZ, nR, nS = arrays[0].shape[:3]
    out = [np.empty_like(a) for a in arrays]
    for s in range(nS):
        order = np.random.default_rng([seed, key, s]).permutation(nZ * nR)
        for a, o in zip(arrays, out, strict=True):
            cells = a[:, :, s].reshape(nZ * nR, *a.shape[3:])
            o[:, :, s] = cells[order].reshape(nZ, nR, *a.shape[3:])
    return out


@dataclass(frozen=True)
class EtaZTrend:
    """C38: the entropy along ``eta_Z`` at each (dataset, ratio) row (:func:`scansnap.stats.trend_summary`, "down").

    Attributes:
        share_rows: share of rows whose mean entropy falls at every ``eta_Z`` step.
        share_significant: share of the steps whose fall has a paired t <= -2 over seeds.
        median_effect: median fall per step over the seed spread (Cohen's d).
        rows, steps, steps_falling: the counts behind the shares.
    """

    share_rows: float
    share_significant: float
    median_effect: float
    rows: int
    steps: int
    steps_falling: int


@dataclass(frozen=True)
class RatioTrend:
    """C39: the entropy along the ratios from the threshold ratio on, at each (dataset, ``eta_Z``) row ("up").

    Attributes:
        share_rows, share_significant, median_effect: as :class:`EtaZTrend`, for a rise (paired t >= 2).
        share_near_threshold: share of rows whose least entropy lies within one grid step of the threshold.
        threshold: the threshold ratio (the ratio of least mean entropy most common over the rows).
        rows, steps, steps_rising: the counts behind the shares.
    """

    share_rows: float
    share_significant: float
    median_effect: float
    share_near_threshold: float
    threshold: float
    rows: int
    steps: int
    steps_rising: int


@dataclass(frozen=True)
class RecallOrder:
    """C42: how the recall reach orders the cells (Figures 11-12 against Figure 6).

    Attributes:
        share_fig12: share of (dataset, ratio) rows whose reach rises at every ``eta_Z`` step.
        share_fig11: share of (dataset, ``eta_Z``) rows whose reach falls at every ratio step from the threshold on.
        spearman: mean over datasets of the rank correlation of the reach with minus the Figure 6 entropy.
        share_fig11_all_ratios: ``share_fig11`` over all ratios (context).
        spearman_recall_fn: ``spearman`` for the book's recall on ``f_n`` (context).
    """

    share_fig12: float
    share_fig11: float
    spearman: float
    share_fig11_all_ratios: float
    spearman_recall_fn: float


_MONOTONE, _SIGNIFICANT, _EFFECT = (0.9, 0.5), (0.8, 0.5), (0.8, 0.2)
_PERMUTED = (f"the same sweep with the learning rates permuted across runs (per dataset and seed, the trained runs "
             f"dealt to the (eta_Z, eta_Y/eta_Z) cells at random, permutation seed {PERMUTATION_SEED} fixed in "
             f"advance): the trend a random assignment of rates to runs gives")
_STEPS = ("the sparsity the rates order is the attention's after the authors' 100 steps; after fewer, the attention "
          "has barely left its uniform start and the rates' effect has not had time to form")
RULE_C38 = Rule("C38", "training-sampled", EtaZTrend, (
    at_least("share_rows", "share of (dataset, eta_Y/eta_Z) rows whose mean entropy falls at every eta_Z step",
             *_MONOTONE),
    at_least("share_significant", "share of eta_Z steps whose fall has a paired t <= -2 over seeds", *_SIGNIFICANT),
    at_least("median_effect", "median fall per eta_Z step over the seed spread (Cohen's d)", *_EFFECT),
), alternative="eta_Z has no effect on the final entropy: the changes along eta_Z are seed noise (a row of four "
               "exchangeable points falls at every step about one time in 24, 1/4!, a median effect near 0)",
    control=_PERMUTED, depends_on={"steps": _STEPS},
    note="Runs with the same seed are paired (same initialization and batches). A Cohen's d of 0.8 is a large "
         "effect, 0.2 a small one.")
RULE_C39 = Rule("C39", "training-sampled", RatioTrend, (
    at_least("share_rows", "share of (dataset, eta_Z) rows whose mean entropy rises at every ratio step from the "
             "threshold ratio on", *_MONOTONE),
    at_least("share_significant", "share of those ratio steps whose rise has a paired t >= 2 over seeds",
             *_SIGNIFICANT),
    at_least("median_effect", "median rise per ratio step past the threshold over the seed spread (Cohen's d)",
             *_EFFECT),
    at_least("share_near_threshold", "share of rows whose least entropy lies within one grid step of the "
             "threshold ratio", 0.9, 0.5, required=False),
), alternative="eta_Y has no effect at fixed eta_Z past any threshold: the entropy past the ratio of least entropy "
               "is flat up to seed noise (only the first step up is guaranteed, by the choice of the minimum)",
    control=_PERMUTED, depends_on={"steps": _STEPS},
    note="The threshold ratio is the ratio of least mean entropy most common over the rows (the smallest on a "
         "tie); it is measured, not given.")
RULE_C42 = Rule("C42", "training-sampled", RecallOrder, (
    at_least("share_fig12", "share of (dataset, eta_Y/eta_Z) rows whose recall reach rises at every eta_Z step",
             *_MONOTONE),
    at_least("share_fig11", "share of (dataset, eta_Z) rows whose recall reach falls at every ratio step from the "
             "threshold ratio of Figure 6 on", *_MONOTONE),
    at_least("spearman", "mean over datasets of the rank correlation of the reach with minus the Figure 6 entropy",
             0.8, 0.5),
), alternative="the recall curves are not ordered by the learning rates as the entropies of Figure 6 are (the reach "
               "unrelated to eta_Z, eta_Y and the entropy: rank correlation near 0)",
    control=_PERMUTED + " (each run's recall curves dealt with it)", depends_on={"steps": _STEPS},
    note="Recall the paper's way: every attention entry (the query's softmax value on a position of a sampled "
         "sequence) at or above a threshold is tagged 1; the reach is the threshold where the mean recall of the "
         "distinct-token entries falls below 1/|G_DT(n)|: the longer the tail, the sparser the attention. The "
         "fall with eta_Y is asked from the threshold ratio of Figure 6 on (below it Figure 6 falls too). "
         "Post hoc: this reading was chosen when the sweep's counts were already known (Chapter 7's history), "
         "and the claim's statement says so (\"past Figure 6's threshold ratio\"); the share over all ratios "
         "(share_fig11_all_ratios) stays beside it for a reader who prefers that reading.")
