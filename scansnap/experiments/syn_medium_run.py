"""Chapter 7's sweep, the run: Syn-Medium trained on the authors' grid of learning rates (Figure 6), and the two
recall curves of every run (Figures 11-12); what makes the run of :data:`scansnap.experiments.ch07_syn_medium.SWEEP`
(its analysis, verdicts and figures are in :mod:`scansnap.experiments.ch07_syn_medium`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from scansnap import data, metrics, sweep, train
from scansnap._threads import one_thread
from scansnap.experiments.base import Progress
from scansnap.params import Int, Positive, param
from scansnap.sweep import GridConfig, GridRun

__all__ = ["SweepConfig", "SweepResult", "SweepRun", "initial_attention", "run_sweep"]


@dataclass(frozen=True)
class SweepConfig(GridConfig):
    """Chapter 7's sweep: the grid of Figure 6 (:class:`~scansnap.sweep.GridConfig`) plus the recall measurement of
    Figures 11-12.

    Attributes:
        thresholds: number of thresholds per recall curve.
        entry_threshold_max: largest threshold on the per-entry softmax values (the paper's recall).
        fn_threshold_max: largest threshold on ``f_n`` (the book's recall, kept beside the paper's).
        eval_sequences: sampled sequences per class for the per-entry recall (the same for every run).
        eval_seed: torch seed of those sequences.
    """

    thresholds: int = param(101, Int(low=2))
    entry_threshold_max: float = param(0.1, Positive())
    fn_threshold_max: float = param(0.5, Positive())
    eval_sequences: int = param(64, Int(low=1))
    eval_seed: int = param(0, Int(low=0))
    PROTOCOL = GridConfig.PROTOCOL + ("; recall of the distinct-token entries of {eval_sequences} sampled sequences "
                                      "per class (T = {T}, seed {eval_seed}), mean over seeds")
    PRESETS = {"smoke": dict(num_query=(1, 3), eta_Z=(0.5, 2.0), ratio=(1.0, 5.0), seeds=(1, 2), steps=10,
                             batch=32, thresholds=26, eval_sequences=8), "book": {}, "paper": {}}
    GATED: ClassVar[tuple[str, ...]] = ("num_query", "eta_Z", "ratio", "seeds", "steps", "batch", "T", "momentum",
                                        "init")
    """The authors' sweep (``figure_6.log``: 4 datasets x 4 eta_Z x 4 ratios x seeds 1-10, 100 SGD steps with
    momentum 0.9, batch 128, T = 128, uniform initialization) is the paper's protocol: a run below it carries the
    cuts, and with fewer steps its verdicts are inconclusive either way (the rules' ``depends_on``)."""

    def entry_thresholds(self) -> np.ndarray:
        """``linspace(0, entry_threshold_max, thresholds)``."""
        return np.linspace(0.0, self.entry_threshold_max, self.thresholds)

    def fn_thresholds(self) -> np.ndarray:
        """``linspace(0, fn_threshold_max, thresholds)``."""
        return np.linspace(0.0, self.fn_threshold_max, self.thresholds)


@dataclass(frozen=True)
class SweepRun(GridRun):
    """A :class:`~scansnap.sweep.GridRun` with both recall curves of every run (Figures 11-12), after the last step
    and at step 0.

    Attributes:
        recall_entry: ``(nZ, nR, nS, R)`` the paper's recall (per attention entry) on ``entry_thresholds``.
        recall_fn: ``(nZ, nR, nS, R)`` the recall of ``f_n`` on ``fn_thresholds``.
        recall_entry_init, recall_fn_init: the same at step 0 (context).
    """

    recall_entry: np.ndarray
    recall_fn: np.ndarray
    recall_entry_init: np.ndarray
    recall_fn_init: np.ndarray


@dataclass(frozen=True)
class SweepResult:
    """The sweep of Figures 6, 11 and 12: one :class:`SweepRun` per ``num_query``."""

    config: SweepConfig
    runs: tuple[SweepRun, ...]


def initial_attention(num_query: int, c: GridConfig) -> torch.Tensor:
    """``f_n`` at step 0 of every configuration of ``c`` ``(nZ, nR, nS, K, M)``, float64 (Chapter 7): the initialization
    :func:`scansnap.sweep.train_grid` starts from (each seed draws it), read from the step-0 snapshot of a
    one-step run of the same configurations."""
    classes, cfg = data.syn_medium(num_query), sweep.configurations(c)
    with one_thread():
        hist = train.train(classes, cfg["eta_Y"], cfg["eta_Z"], seed=cfg["seed"], steps=1, batch=c.batch, T=c.T,
                           optimizer="sgd", momentum=c.momentum, init=c.init, limit="sampled", snapshot_steps=[0],
                           dtype=getattr(torch, c.dtype))
    return hist.attention[0].double().reshape(*c.shape, classes.K, classes.M)


def run_sweep(c: SweepConfig, progress: Progress | None = None) -> SweepResult:
    """Train Chapter 7's sweep (one batched call per dataset), then measure both recall curves of every run
    (Figures 11-12), after the last step and at step 0."""
    runs = []
    for q in c.num_query:
        run, f = sweep.train_grid(q, c, progress)
        f0, classes = initial_attention(q, c), data.syn_medium(q)
        with one_thread():
            counts = sweep.sequence_counts(classes, c.eval_sequences, c.T, c.eval_seed)
            entry, fn = ([metrics.entry_recall_at_threshold(x, classes, counts, torch.from_numpy(c.entry_thresholds()))
                          .numpy() for x in (f, f0)],
                         [metrics.recall_at_threshold(x, classes, torch.from_numpy(c.fn_thresholds())).numpy()
                          for x in (f, f0)])
        runs.append(SweepRun(**vars(run), recall_entry=entry[0], recall_fn=fn[0], recall_entry_init=entry[1],
                             recall_fn_init=fn[1]))
    return SweepResult(c, tuple(runs))
