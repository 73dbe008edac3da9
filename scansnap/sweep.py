"""Learning-rate sweeps: a grid of (``eta_Z``, ``eta_Y / eta_Z``, seed) configurations trained on one
dataset in ONE batched :func:`scansnap.train.train` call (the protocol of the paper's Figure 6).

:class:`GridConfig` is the grid and the authors' released protocol (``figure_6.log``: SGD with momentum
0.9, batch 128, ``T = 128``, 100 steps, torch's default uniform initialization); experiments derive
their configurations from it. :func:`train_grid` trains every configuration of a dataset at once
(runs with the same seed share their initialization and batches, as in the authors' protocol where
the seed fixes both) and measures the entropy of Figure 6 (:func:`scansnap.metrics.attention_entropy`).
:func:`sequence_counts` draws the evaluation sequences of the per-entry recall of Figures 11-12.

Training runs on one intra-op thread (:func:`scansnap._threads.one_thread`): float32 results then do not
depend on the machine's core count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from scansnap import data, metrics, train
from scansnap._checks import check_int
from scansnap._threads import one_thread
from scansnap.params import Choice, Each, Fraction, Int, Positive, Seeds, listed, param, seed_list
from scansnap.results import Config

__all__ = ["GridConfig", "GridRun", "configurations", "sequence_counts", "train_grid"]


@dataclass(frozen=True)
class GridConfig(Config):
    """A batched Syn-Medium grid with the authors' protocol (paper Fig. 6; their ``figure_6.log``).

    Attributes:
        num_query: datasets ``syn_medium(q)``; eta_Z: attention learning rates; ratio: ``eta_Y / eta_Z``
            (each a non-empty increasing tuple).
        seeds: one run per seed and cell (same seed: same initialization and batches).
        steps, batch, T, momentum: SGD steps, sequences per step, their length, heavy-ball momentum.
        init: ``"uniform"`` (torch's default, as in the authors' sweep) or ``"zero"``.
        dtype: ``"float32"`` (the precision of the authors' runs) or ``"float64"``.
    """

    num_query: tuple[int, ...] = param((1, 3, 5, 10), Each(Int(low=1), increasing=True), listed)
    eta_Z: tuple[float, ...] = param((0.5, 1.0, 2.0, 3.0), Each(Positive(), increasing=True), listed)
    ratio: tuple[float, ...] = param((1.0, 2.0, 5.0, 10.0), Each(Positive(), increasing=True), listed)
    seeds: tuple[int, ...] = param(tuple(range(1, 11)), Seeds(increasing=True), seed_list)
    steps: int = param(100, Int(low=1))
    batch: int = param(128, Int(low=1))
    T: int = param(128, Int(low=2))
    momentum: float = param(0.9, Fraction())
    init: str = param("uniform", Choice("zero", "uniform"))
    dtype: str = param("float32", Choice("float32", "float64"))
    PROTOCOL = ("Syn-Medium q in {num_query}, eta_Z in {eta_Z}, eta_Y/eta_Z in {ratio}, {seeds}: {steps} SGD steps "
                "(momentum {momentum:g}), batch {batch}, T = {T}, {init} initialization, {dtype}; entropy of f_n over "
                "the distinct tokens after the last step")

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(nZ, nR, nS)``: the axes of every per-run array."""
        return len(self.eta_Z), len(self.ratio), len(self.seeds)

    def eta_Y(self) -> np.ndarray:
        """``(nZ, nR)`` decoder learning rates ``eta_Z * ratio`` of the cells."""
        return np.outer(self.eta_Z, self.ratio)


@dataclass(frozen=True)
class GridRun:
    """One dataset's batched run; arrays indexed ``[eta_Z, ratio, seed]``.

    Attributes:
        num_query: the dataset ``syn_medium(num_query)``.
        entropy, entropy_init: ``(nZ, nR, nS)`` entropy of ``f_n`` over the distinct tokens, mean over ``n``,
            after the last step and at step 0 (paper Fig. 6).
        loss: ``(nZ, nR, nS)`` training loss of the last step.
    """

    num_query: int
    entropy: np.ndarray
    entropy_init: np.ndarray
    loss: np.ndarray


def configurations(c: GridConfig) -> dict[str, torch.Tensor]:
    """Every (``eta_Z``, ratio, seed) of ``c``, flattened in that order (seed fastest): ``eta_Y``
    (``eta_Z * ratio``), ``eta_Z`` and ``seed``, each ``(C,)``: the grid of the paper's Figure 6."""
    z, r, s = np.meshgrid(np.asarray(c.eta_Z), np.asarray(c.ratio), np.asarray(c.seeds), indexing="ij")
    return {"eta_Y": torch.tensor((z * r).ravel()), "eta_Z": torch.tensor(z.ravel()),
            "seed": torch.tensor(s.ravel(), dtype=torch.long)}


def train_grid(
    num_query: int, c: GridConfig, progress: Callable[[int], None] | None = None
) -> tuple[GridRun, torch.Tensor]:
    """Train every configuration of ``c`` on ``syn_medium(num_query)`` in ONE :func:`~scansnap.train.train` call.

    Args:
        num_query: the dataset; c: the grid and protocol; progress: called once per SGD step.

    Returns:
        the :class:`GridRun`, and the final attention ``f_n`` (Lemma 2) ``(nZ, nR, nS, K, M)``, float64.
    """
    check_int("num_query", num_query, low=1)
    classes, cfg = data.syn_medium(num_query), configurations(c)
    with one_thread():
        hist = train.train(classes, cfg["eta_Y"], cfg["eta_Z"], seed=cfg["seed"], steps=c.steps, batch=c.batch,
                           T=c.T, optimizer="sgd", momentum=c.momentum, init=c.init, limit="sampled",
                           snapshot_steps=[0, c.steps], dtype=getattr(torch, c.dtype), progress=progress)
    f0, f = hist.attention[0].double(), hist.attention[-1].double()
    run = GridRun(num_query=num_query, entropy=metrics.attention_entropy(f, classes).numpy().reshape(c.shape),
                  entropy_init=metrics.attention_entropy(f0, classes).numpy().reshape(c.shape),
                  loss=hist.loss[:, -1].double().numpy().reshape(c.shape))
    return run, f.reshape(*c.shape, classes.K, classes.M)


def sequence_counts(classes: data.SequenceClasses, sequences: int, T: int, seed: int) -> torch.Tensor:
    """Token counts ``(sequences, K, M)`` (float64) of ``sequences`` sampled sequences of every class, each with
    ``T - 1`` contextual tokens drawn i.i.d. from ``P(l|n)`` (torch seed ``seed``): the evaluation sequences of
    the per-entry recall of Figures 11-12."""
    check_int("sequences", sequences, low=1)
    check_int("T", T, low=2)
    check_int("seed", seed, low=0)
    gen = torch.Generator().manual_seed(seed)
    x = torch.multinomial(classes.probs.repeat(sequences, 1), T - 1, replacement=True, generator=gen)
    counts = torch.zeros(sequences * classes.K, classes.M, dtype=torch.float64)
    counts.scatter_add_(1, x, torch.ones_like(x, dtype=torch.float64))
    return counts.reshape(sequences, classes.K, classes.M)
