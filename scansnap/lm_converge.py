"""Training Chapter 8's language model "until convergence" by a rule fixed before the run (the paper's Figure 10).

The paper trains each learning rate of its Figure 10 "until convergence" and plots the held-out attention entropy
then. :class:`Convergence` is that phrase made a rule: the held-out loss is measured every ``every`` steps; a run
has **converged** at the first measurement ``s >= min_steps`` where the loss improved by less than ``tolerance``
(relative) over the last fifth of the run (from the measurement at ``s - s // 5``, rounded down to the grid);
it has **diverged** at the first measurement where the held-out loss is not finite or above its value at step 0
(the untrained model's); a run that does neither stops at ``cap`` steps, **not converged**. Nothing in a run
depends on its cap except where it stops, so the first ``n`` steps of a run with cap ``n`` are those of a longer one
(what ``python -m scansnap store verify`` re-runs).

:func:`authors_entropy` is the held-out attention entropy as the authors' ``decoder_wiki.py`` computes it
(``-(a * log(a + 1e-8)).sum(-1).mean()``: every query row, masked keys included with weight 0, so row 0's
zero entropy is in the mean); :func:`causal_entropy` is the same rows measured on their causal support only:
rows ``i >= 1``, each as a share of its largest possible value ``ln(i + 1)`` (0: one key, 1: uniform).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from scansnap import device as device_mod
from scansnap import lm, lm_train, wikitext
from scansnap._checks import check_fraction, check_int, check_positive

__all__ = ["CONVERGED", "Convergence", "DIVERGED", "NOT_CONVERGED", "STATUS", "Run", "authors_entropy",
           "causal_entropy", "train_to_convergence"]

CONVERGED, NOT_CONVERGED, DIVERGED = 0, 1, 2
"""The three ends of a run (:attr:`Run.status`): converged by the rule, stopped at the cap, diverged."""
STATUS = ("converged", "stopped at the cap, not converged", "diverged")


@dataclass(frozen=True)
class Convergence:
    """The stopping rule of Figure 10's runs (fixed before the run; module docstring).

    Attributes:
        every: steps between held-out measurements; min_steps: no stop before this step; cap: the most steps.
        tolerance: the relative improvement of the held-out loss over the last fifth of the run below which it
            has converged.
    """

    every: int = 100
    min_steps: int = 600
    cap: int = 2000
    tolerance: float = 0.01

    def __post_init__(self) -> None:
        check_int("every", self.every, low=1)
        check_int("min_steps", self.min_steps, low=self.every)
        check_int("cap", self.cap, low=self.every)
        check_fraction("tolerance", self.tolerance)

    def status(self, steps: np.ndarray, loss: np.ndarray) -> int | None:
        """The end of a run measured at ``steps`` ``(E,)`` (multiples of :attr:`every`, from 0) with held-out
        ``loss`` ``(E,)``, judged at its last measurement; ``None``: go on."""
        s, now = int(steps[-1]), float(loss[-1])
        if not math.isfinite(now) or now > loss[0]:
            return DIVERGED
        if s >= self.min_steps:
            back = float(loss[int((s - s // 5) // self.every)])
            if back - now < self.tolerance * back:
                return CONVERGED
        return NOT_CONVERGED if s >= self.cap else None


def authors_entropy(maps: torch.Tensor) -> float:
    """Mean entropy of attention rows ``(S, T, T)`` as the authors' Figure 10 script computes it:
    ``-(a * log(a + 1e-8)).sum(-1).mean()`` over every window and query (masked keys carry ``a = 0``)."""
    return -(maps * (maps + 1e-8).log()).sum(-1).mean().item()


def causal_entropy(maps: torch.Tensor) -> float:
    """Mean over windows and rows ``i >= 1`` of causal attention rows ``(S, T, T)`` of the row entropy over keys
    ``0..i`` divided by ``ln(i + 1)`` (the uniform row's): 0 when each query attends to one key, 1 when uniform
    (Figure 10's normalized entropy)."""
    t = maps.shape[-1]
    rows = -torch.xlogy(maps, maps).sum(-1)[:, 1:]
    return (rows / torch.log(torch.arange(2, t + 1, dtype=maps.dtype, device=maps.device))).mean().item()


@dataclass(frozen=True)
class Run:
    """One run of Figure 10 to convergence, measured every :attr:`Convergence.every` steps (``E`` measurements).

    Attributes:
        steps: ``(E,)`` measurement steps (0 = before training; the last is where the run stopped).
        heldout_loss: ``(E,)`` held-out next-token loss (dropout off).
        entropy: ``(E,)`` :func:`authors_entropy` of the first layer's held-out maps; causal: ``(E,)``
            :func:`causal_entropy` of the same maps.
        train_loss: ``(steps[-1],)`` the training loss of every step (dropout on).
        status: :data:`CONVERGED`, :data:`NOT_CONVERGED` or :data:`DIVERGED`.
    """

    steps: np.ndarray
    heldout_loss: np.ndarray
    entropy: np.ndarray
    causal: np.ndarray
    train_loss: np.ndarray
    status: int


def train_to_convergence(model: lm.TransformerLM, data: lm_train.Corpus, *, lr: float, rule: Convergence,
                         bptt: int = 35, clip: float = 0.5, seed: int = 0,
                         progress: Callable[[int], None] | None = None,
                         device: str | torch.device | None = None) -> Run:
    """Train ``model`` in place with SGD at the one constant rate ``lr`` (no momentum, every parameter at
    ``lr``: the authors' Figure 10 script at ``lr_y_multi_on_z = 1``; clip ``clip``; the training chunks in order,
    epoch after epoch; ``seed`` seeds the dropout draws) until ``rule`` stops it, and measure it on the held-out
    windows of ``data`` at every ``rule.every`` steps (Figure 10, C41). ``device``: where to train, as in
    :func:`scansnap.lm_train.train` (the model and data moved there, TF32 off, the model moved back after)."""
    check_positive("lr", lr)
    with device_mod.model_on(model, device) as dev:
        return _train(model, data, dev, lr=lr, rule=rule, bptt=bptt, clip=clip, seed=seed, progress=progress)


def _train(model: lm.TransformerLM, data: lm_train.Corpus, dev: torch.device, *, lr: float, rule: Convergence,
           bptt: int, clip: float, seed: int, progress: Callable[[int], None] | None) -> Run:
    """:func:`train_to_convergence`'s run, with ``model`` on ``dev`` already (the data moved there)."""
    chunks = list(wikitext.chunks(data.streams.to(dev), bptt))
    heldout = data.heldout.to(dev)
    torch.manual_seed(seed)
    losses: list[float] = []
    m: dict[str, list[float]] = {"held": [], "ent": [], "causal": []}
    step = 0
    while True:
        if step % rule.every == 0:
            loss, maps = lm_train.evaluate(model, heldout)
            m["held"].append(loss)
            m["ent"].append(authors_entropy(maps))
            m["causal"].append(causal_entropy(maps))
            status = rule.status(np.arange(len(m["held"])) * rule.every, np.array(m["held"]))
            if status is not None:
                break
        x, y = chunks[step % len(chunks)]
        losses.append(lm.sgd_step(model, x, y, lr, clip))
        step += 1
        if progress is not None:
            progress(1)
    return Run(np.arange(len(m["held"])) * rule.every, np.array(m["held"]), np.array(m["ent"]),
               np.array(m["causal"]), np.array(losses), status)
