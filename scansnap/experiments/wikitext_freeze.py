"""The drift ratio of Figure 7's held-out maps against their jitter floor: the measures of the retired ``RULE_C40``.

Issue 26 retired ``RULE_C40`` (the claim is now C40a and C40b, judged by the bounded measures of
:mod:`scansnap.experiments.wikitext_snap`): its drift-ratio criterion passes in the learning phase too (first window
0.16, last 0.21 on the stored paper-protocol runs, bar 3), so it cannot tell learning from frozen. The measures stay
as reported context (the figure's drift panel, the verdicts' details). What they were:

* **The freeze, against a noise floor fixed before the run** (:func:`drift_ratio`). At a constant learning rate SGD
  never stops moving the weights, so "frozen" cannot mean "no change". It means: over the last window of ``W``
  steps the held-out maps moved no further than the step-to-step jitter of SGD would carry them if that jitter were
  a random walk. With ``D`` the distance (:func:`scansnap.lm_train.map_distance`) of the held-out maps at the last
  checkpoint from those ``W`` steps earlier, and ``j`` the root mean square of the one-step distances measured at
  the checkpoints inside that window (``s -> s + 1``), a random walk of independent steps of size ``j`` travels
  ``sqrt(W) j`` in root mean square, so the ratio ``R = D / (sqrt(W) j)`` is about 1 for jitter alone (below 1 when
  the maps fluctuate around a fixed point) and up to ``sqrt(W)`` (22 at ``W = 500``) for steady motion in one
  direction.
* **Learning goes on**: the held-out loss over the same window must still fall, or "frozen while learning" means
  nothing (training might simply have stopped).
* **Slowing down**: the drift over the last window is a fraction of that over the first (the jitter floor alone
  cannot tell learning from frozen when one step's jitter is mostly oscillation that does not accumulate).
* **Sparsity**: the held-out attention entropy falls from step 0.

Each is measured per seed of the 1-layer model (experiment ``ch8-freeze``) and judged at the end of its 95% t
interval over seeds (:func:`scansnap.stats.t_interval`) that is far from the alternative (with fewer than 2 seeds
there is no interval and the criterion cannot pass); the multi-layer model (experiment ``ch8-freeze-deep``, one
seed, its first layer) is judged on its values. (:func:`held_at_start`, the retired
rule's control, is kept for tests: a run that never moves.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from scansnap import stats
from scansnap.lm_train import Trajectory

__all__ = ["Freeze", "PerRun", "drift_ratio", "freeze_measures", "held_at_start", "per_run"]


def drift_ratio(tr: Trajectory, end: int = -1) -> float:
    """Figure 7's drift (C40b) ratio ``R = D / (sqrt(W) j)`` at checkpoint index ``end`` (module docstring): the drift
    of the held-out maps over the ``W = tr.window`` steps before it over the drift a random walk of the per-step
    jitter measured inside that window would give. nan when there is no drift (``s < W``) or no jitter (the maps
    did not move at all)."""
    s = int(tr.steps[end])
    inside = (tr.jitter_steps >= s - tr.window) & (tr.jitter_steps < s)
    j = float(np.sqrt(np.mean(tr.jitter[inside] ** 2))) if inside.any() else float("nan")
    D = float(tr.drift[end])
    return D / (np.sqrt(tr.window) * j) if np.isfinite(D) and j > 0 else float("nan")


@dataclass(frozen=True)
class PerRun:
    """C40b context: numbers of one run (one seed, the first layer; :func:`per_run`).

    Attributes:
        entropy_fall: relative fall of the held-out attention entropy from step 0 to the end.
        late_drift: :func:`drift_ratio` at the last checkpoint (the last window).
        early_drift: :func:`drift_ratio` at the first checkpoint that is ``W`` steps in (the first window:
            what the same measure gives while the maps are still being learned; reported, not judged).
        loss_fall: relative fall of the held-out loss over the last window (from ``W`` steps before the end).
        drift_decay: the drift ``D`` of the last window over that of the first window (nan when the maps did not
            move in the first): whether the maps slowed down, whatever the jitter.
    """

    entropy_fall: float
    late_drift: float
    early_drift: float
    loss_fall: float
    drift_decay: float


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den > 0 else float("nan")


def per_run(tr: Trajectory) -> PerRun:
    """C40b context: :class:`PerRun` (Figure 7) of one trajectory (its ``window`` a multiple of the checkpoint
    spacing)."""
    H, L, steps = tr.entropy, tr.heldout_loss, tr.steps
    start = np.flatnonzero(steps == steps[-1] - tr.window)
    first = np.flatnonzero(steps == tr.window)
    loss_fall = _ratio(L[start[0]] - L[-1], L[start[0]]) if start.size else float("nan")
    early = float(tr.drift[first[0]]) if first.size else float("nan")
    return PerRun(_ratio(H[0] - H[-1], H[0]), drift_ratio(tr), drift_ratio(tr, int(first[0])) if first.size
                  else float("nan"), loss_fall, _ratio(float(tr.drift[-1]), early) if np.isfinite(early)
                  else float("nan"))


@dataclass(frozen=True)
class Freeze:
    """C40b context: measures: the 1-layer model over seeds (``_1``, experiment ``ch8-freeze``) and the first layer
    of the multi-layer model (``_multi``, experiment ``ch8-freeze-deep``, one seed).

    Attributes:
        entropy_fall_1_low: lower end of the 95% t interval over seeds of :attr:`PerRun.entropy_fall`.
        late_drift_1_high: upper end of that of :attr:`PerRun.late_drift`.
        loss_fall_1_low: lower end of that of :attr:`PerRun.loss_fall`.
        drift_decay_1_high: upper end of that of :attr:`PerRun.drift_decay`.
        entropy_fall_multi, late_drift_multi, loss_fall_multi, drift_decay_multi: the multi-layer model's values.
        entropy_fall_1, late_drift_1, early_drift_1, loss_fall_1: the 1-layer means over seeds; seeds_1: how many.
        early_drift_multi: the multi-layer model's :attr:`PerRun.early_drift`.
    """

    entropy_fall_1_low: float
    late_drift_1_high: float
    loss_fall_1_low: float
    drift_decay_1_high: float
    entropy_fall_multi: float
    late_drift_multi: float
    loss_fall_multi: float
    drift_decay_multi: float
    entropy_fall_1: float
    late_drift_1: float
    early_drift_1: float
    loss_fall_1: float
    seeds_1: int
    early_drift_multi: float


def freeze_measures(one: Sequence[Trajectory], multi: Trajectory) -> Freeze:
    """C40b context: :class:`Freeze` (Figure 7) from the 1-layer trajectories (one per seed) and the multi-layer
    one."""
    runs = [per_run(tr) for tr in one]
    col = {name: np.array([getattr(r, name) for r in runs]) for name in ("entropy_fall", "late_drift",
                                                                          "early_drift", "loss_fall", "drift_decay")}
    ent, drift, loss, decay = (stats.t_interval(col[k]) for k in ("entropy_fall", "late_drift", "loss_fall",
                                                                   "drift_decay"))
    m = per_run(multi)
    return Freeze(ent[1], drift[2], loss[1], decay[2], m.entropy_fall, m.late_drift, m.loss_fall, m.drift_decay,
                  ent[0], drift[0],
                  float(np.nanmean(col["early_drift"])) if np.isfinite(col["early_drift"]).any() else float("nan"),
                  loss[0], len(runs), m.early_drift)


def held_at_start(tr: Trajectory) -> Trajectory:
    """C40b context: control: the trajectory of the same model held at step 0 (no update): every checkpoint is step
    0's (the same maps, entropy and held-out loss; no drift, no jitter), and the loss of a model that is not updated
    does not fall (its training loss is taken as its step-0 held-out loss at every step)."""
    C = len(tr.steps)
    return replace(tr, train_loss=np.full_like(tr.train_loss, tr.heldout_loss[0]),
                   heldout_loss=np.full(C, tr.heldout_loss[0]), entropy=np.full(C, tr.entropy[0]),
                   freeze=np.zeros_like(tr.freeze), probe_maps=np.repeat(tr.probe_maps[:1], C, axis=0),
                   train_maps=np.repeat(tr.train_maps[:1], C, axis=0), diagonal=np.full(C, tr.diagonal[0]),
                   unk=np.full(C, tr.unk[0]), jitter=np.zeros_like(tr.jitter),
                   drift=np.where(np.isfinite(tr.drift), 0.0, np.nan))
