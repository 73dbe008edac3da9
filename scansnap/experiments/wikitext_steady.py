"""Figure 10's stored runs read again (issue 26): a convergence rule that noise cannot trigger, the entropy at
matched ``eta * t``, the null in which the entropy depends on ``eta * t`` only, and the degenerate regime.

The stored runs (``stores/ch8-rates``) stopped by :class:`scansnap.lm_converge.Convergence`, which stops when the
held-out loss improves by less than 1% over the last fifth of the run: with 50-step held-out differences of 1.25-2%
(one standard deviation) that rule stops on noise (5 of 15 runs stopped on an uptick). :class:`SteadyStop` is the
rule fixed for a re-run: the held-out loss **smoothed** over ``width`` measurements must fail to beat its best so far
by ``tolerance`` (relative) at ``patience`` successive measurements. Its stop depends only on the measured curve, so
it can be applied post hoc to stored arrays, up to where they end (:func:`steady_stops`).

A larger rate travels further per step: after the same number of steps it has gone ``eta * t`` further, and the
theory's ``B_n`` grows with ``eta * t`` (C28). :func:`matched` reads every run's entropy at the largest ``eta * t``
that every judged run reaches; :func:`eta_t_null` is the C41/X7 control: the entropy each run would have if it
depended on ``eta * t`` only (the largest judged rate's curve, one seed per rate, read at the run's ``eta * t``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scansnap.params import Fraction, Int, param, validate

__all__ = ["DEGENERATE", "SteadyStop", "degenerate", "eta_t_null", "late_change_table", "matched", "step_noise",
           "steady_stops"]

DEGENERATE = 0.05
"""A learning rate is the degenerate regime when it is larger than the rate with the lowest mean held-out loss at
the step every run reaches (the earliest stop) and its own mean there is more than this share above that: too large
a rate (the stored grid's rate 8: 6.45-6.56 at step 600 against 5.95-6.07; 6.34-6.66 where its runs stopped against
5.8-5.95 for the others). A smaller rate that is behind is slower, not degenerate."""


@dataclass(frozen=True)
class SteadyStop:
    """Converged at the first measurement ``s >= min_steps`` at which, for ``patience`` successive measurements, the
    held-out loss averaged over the last ``width`` measurements has not fallen below ``(1 - tolerance)`` times its
    best earlier average (Figure 10: C41, X7)."""

    width: int = param(3, Int(low=1))
    patience: int = param(3, Int(low=1))
    tolerance: float = param(0.005, Fraction())
    min_steps: int = param(600, Int(low=0))

    def __post_init__(self) -> None:
        validate(self)

    def stop(self, steps: np.ndarray, loss: np.ndarray) -> int | None:
        """The step ``(E,)`` ``steps`` at which a run with held-out ``loss`` ``(E,)`` has converged (``None``: not
        within the measurements; nan entries, after a stored run ended, are left out)."""
        ok = np.isfinite(loss)
        steps, loss = np.asarray(steps)[ok], np.asarray(loss, float)[ok]
        if len(loss) < self.width:
            return None
        smooth = np.convolve(loss, np.ones(self.width) / self.width, "valid")
        best, idle = np.inf, 0
        for i, value in enumerate(smooth):
            if value < best * (1 - self.tolerance):
                best, idle = value, 0
            else:
                idle += 1
            s = int(steps[i + self.width - 1])
            if s >= self.min_steps and idle >= self.patience:
                return s
        return None


def steady_stops(loss: np.ndarray, every: int, rule: SteadyStop) -> np.ndarray:
    """``(R, S)`` the step at which :class:`SteadyStop` says each run of held-out ``loss`` ``(R, S, E)`` (measured
    every ``every`` steps, nan after it ended) converged; -1 where it had not by the end of its stored curve.
    (Figure 10: C41, X7)"""
    out = np.full(loss.shape[:2], -1, dtype=np.int64)
    steps = np.arange(loss.shape[2]) * every
    for i, j in np.ndindex(*loss.shape[:2]):
        s = rule.stop(steps, loss[i, j])
        out[i, j] = -1 if s is None else s
    return out


def degenerate(loss: np.ndarray, stop: np.ndarray, every: int, share: float = DEGENERATE) -> np.ndarray:
    """``(R,)``: the rates (increasing) above the one with the lowest mean over seeds of the held-out loss ``(R, S, E)``
    (measured every ``every`` steps) at the earliest stop of ``stop`` ``(R, S)``, whose own mean there is more than
    ``share`` above it (Figure 10: C41, X7)."""
    at = int(stop.min())
    mean = np.array([[_read(loss[i, j], every, at) for j in range(loss.shape[1])] for i in range(loss.shape[0])])
    mean = mean.mean(axis=1)
    best = int(np.nanargmin(mean))
    return (np.arange(len(mean)) > best) & (mean > (1 + share) * mean[best])


def _read(curve: np.ndarray, every: int, step: float) -> float:
    """``curve`` ``(E,)`` (measured every ``every`` steps, nan after it ended) read at ``step`` (linear; clamped)."""
    n = int(np.isfinite(curve).sum())
    return float(np.interp(step, np.arange(n) * every, curve[:n]))


def matched(lrs: np.ndarray, entropy: np.ndarray, stop: np.ndarray, every: int) -> tuple[float, np.ndarray]:
    """``(eta_t, (R, S))``: the largest ``eta * t`` every run reaches (``min lr * stop``) and each run's entropy
    ``(R, S, E)`` read there (at step ``eta_t / lr``) (Figure 10: C41, X7)."""
    lrs = np.asarray(lrs, float)
    eta_t = float(np.min(lrs[:, None] * stop))
    return eta_t, np.array([[_read(entropy[i, j], every, eta_t / lr) for j in range(entropy.shape[1])]
                            for i, lr in enumerate(lrs)])


def eta_t_null(lrs: np.ndarray, entropy: np.ndarray, stop: np.ndarray, every: int,
               eta_t: float) -> tuple[np.ndarray, np.ndarray]:
    """C41/X7's control: ``(at the stop, at eta_t)``, each ``(R, S)``: the entropy run ``(k, j)`` would have if the
    entropy depended on ``eta * t`` only: the largest rate's curve of seed ``k mod S`` (one seed per rate, so that
    the null's rates differ by seed noise, as they would without an effect) read at the run's own ``lr * stop``, and
    at ``eta_t``."""
    lrs = np.asarray(lrs, float)
    R, S = stop.shape
    ref = entropy[-1]
    at_stop = np.array([[_read(ref[k % S], every, lrs[k] * stop[k, j] / lrs[-1]) for j in range(S)]
                        for k in range(R)])
    at_eta = np.array([[_read(ref[k % S], every, eta_t / lrs[-1]) for j in range(S)] for k in range(R)])
    return at_stop, at_eta


def late_change_table(lrs: tuple[float, ...], entropy: np.ndarray, stop: np.ndarray, every: int,
                      span: int = 300) -> str:
    """A markdown table, one row per rate of ``entropy`` ``(R, S, E)``: the mean over seeds of the entropy where the
    runs stopped (``stop`` ``(R, S)``) and its relative change over the last ``span`` steps before the stop (what a
    store of entropies alone can say of a freeze: it holds no maps) (Figure 10: C41, X7)."""
    rows = ["| rate | entropy where the runs stopped, nats | its change over the last "
            f"{span} steps |", "|---|---|---|"]
    for i, lr in enumerate(lrs):
        end = np.array([_read(entropy[i, j], every, stop[i, j]) for j in range(stop.shape[1])])
        back = np.array([_read(entropy[i, j], every, max(stop[i, j] - span, 0)) for j in range(stop.shape[1])])
        rows.append(f"| {lr:g} | {end.mean():.3f} | {np.mean((end - back) / back):+.0%} |")
    return "\n".join(rows)


def step_noise(loss: np.ndarray, every: int, start: int = 500) -> float:
    """The standard deviation of the relative change of the held-out loss ``(R, S, E)`` between consecutive
    measurements (``every`` steps apart) from step ``start`` on, over every run: the noise a stopping rule must not
    read as convergence (Figure 10: C41, X7)."""
    change = np.diff(loss, axis=-1) / loss[..., :-1]
    return float(np.nanstd(change[..., start // every:]))
