"""Figure 10's runs (Chapter 8): the grid of learning rates and seeds, each trained to convergence, and its result.

:class:`RatesConfig` (the paper's 1-layer model) and :class:`DeepRatesConfig` (the book's deeper model, claim X7)
configure :func:`run_rates`, which trains every (learning rate, seed) run with
:func:`scansnap.lm_converge.train_to_convergence` and gathers the runs in a :class:`RatesResult`. The experiments,
figures and verdicts that read these results live in :mod:`scansnap.experiments.ch08_rates`; this module holds only
what makes a run, so that a stored run (``stores/ch8-rates/paper``) stays current while its figure or rule is
edited (its code hash covers the functions the run executes, :func:`scansnap.store.code`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import ClassVar

import numpy as np

from scansnap import device, lm_converge, lm_train, parallel
from scansnap._checks import check_int
from scansnap._threads import one_thread
from scansnap.experiments.base import Progress
from scansnap.experiments.ch08_wikitext import BOOK, GATED_DATA, SMOKE, WikiConfig
from scansnap.params import Each, Int, Positive, Seeds, param, seed_list

__all__ = ["DeepRatesConfig", "RatesConfig", "RatesResult", "rates_checkpoints", "rates_prefix", "rates_work",
           "run_rates"]


@dataclass(frozen=True)
class RatesConfig(WikiConfig):
    """Figure 10's grid (defaults: the ``paper`` preset).

    Attributes:
        lrs: learning rates (a log grid of factor about 1.6, inside the range where the model trains: in a 300-step
            pilot made before this grid was fixed, rates 14 and 20 sent the held-out loss above its initial value).
        seeds: the seeds (each seeds the initialization and the dropout draws); layers: depth of the model.
        every, min_steps, steps, tolerance: the convergence rule (:class:`scansnap.lm_converge.Convergence`;
            ``steps`` is its cap).
        min_rates: the fewest learning rates with every seed converged that C41 (X7) is judged on.
    """

    lrs: tuple[float, ...] = param((1.25, 2.0, 3.2, 5.0, 8.0), Each(Positive(), min_len=2, increasing=True),
                                   lambda v: ", ".join(f"{x:g}" for x in v))
    seeds: tuple[int, ...] = param((1, 2, 3), Seeds(distinct=True), seed_list)
    layers: int = param(1, Int(low=1), lambda n: f"{n} layer{'s' if n > 1 else ''}")
    every: int = 100
    min_steps: int = 600
    steps: int = 2000
    tolerance: float = 0.01
    min_rates: int = 3
    PROTOCOL = ("{data_protocol}; {layers}, SGD at each constant rate {lrs} on every parameter, {seeds}; each run "
                "until the held-out loss improves by less than {tolerance:.0%} over the last fifth of its steps "
                "(measured every {every}, from step {min_steps}; cap {steps} steps), diverged when it exceeds its "
                "step-0 value; held-out entropy of the first layer at step 0 and where the run stops")
    PRESETS = {
        "smoke": dict(SMOKE, lrs=(0.5, 2.0, 8.0), seeds=(1,), every=2, min_steps=2, steps=4),
        "book": dict(BOOK, seeds=(1,), every=40, min_steps=80, steps=120),
        "paper": {},
    }
    GATED: ClassVar[tuple[str, ...]] = (*GATED_DATA, "steps", "seeds")
    """The paper's Figure 10 (its model on the full training split and vocabulary, trained to convergence): a run
    below it labels C41/X7 with its cuts in both directions."""
    NOT_GATED: ClassVar[dict[str, str]] = {
        "eval_split": "the held-out text follows from the training text (the book profile trains on valid.txt, so it "
                      "holds out test.txt): the training text is the gated cut (train_split)",
        "eval_sequences": "how many held-out windows the entropy and loss average over (200 against 400): the "
                          "precision of a mean over windows, not the mechanism",
        "every": "the spacing of the held-out measurements, part of the stopping rule whose reach is the gated cap "
                 "steps; C41's rule reads the entropy at each run's stop and at matched eta*t, wherever they fall",
        "min_steps": "the earliest stop of the convergence rule, scaled with the gated cap steps (about a third)",
    }

    def validate(self) -> None:
        check_int("min_rates", self.min_rates, low=2, high=len(self.lrs))
        self.rule()  # checks every, min_steps, steps and tolerance

    def rule(self) -> lm_converge.Convergence:
        """The convergence rule of every run."""
        return lm_converge.Convergence(self.every, self.min_steps, self.steps, self.tolerance)



@dataclass(frozen=True)
class RatesResult:
    """Figure 10's grid: ``R`` learning rates x ``S`` seeds, each measured at ``E = steps // every + 1`` steps
    (nan after the run stopped).

    Attributes:
        config: the configuration; note: splits and vocabulary, in words.
        heldout_loss, entropy, causal: ``(R, S, E)`` held-out loss, :func:`~scansnap.lm_converge.authors_entropy`
            and :func:`~scansnap.lm_converge.causal_entropy` of the first layer's held-out maps.
        train_loss: ``(R, S, steps)`` the training loss of every step.
        status: ``(R, S)`` how each run ended (:data:`scansnap.lm_converge.STATUS`); stop: ``(R, S)`` its last step.
    """

    config: RatesConfig
    note: str
    heldout_loss: np.ndarray
    entropy: np.ndarray
    causal: np.ndarray
    train_loss: np.ndarray
    status: np.ndarray
    stop: np.ndarray

    def final(self, curve: str) -> np.ndarray:
        """``(R, S)``: ``curve`` (``"entropy"``, ``"causal"``, ``"heldout_loss"``) where each run stopped."""
        v = getattr(self, curve)
        return v[np.arange(v.shape[0])[:, None], np.arange(v.shape[1]), self.stop // self.config.every]


def _one_run(c: RatesConfig, where: str, job: tuple[float, int], data: lm_train.Corpus | None = None,
             progress: Progress | None = None) -> lm_converge.Run:
    """The run of :func:`run_rates` at ``job = (learning rate, seed)`` on the device ``where`` (reads the corpus
    unless given it)."""
    lr, seed = job
    data = data if data is not None else c.corpus()[0]
    model = c.model(len(data.vocab), c.layers, seed)
    return lm_converge.train_to_convergence(model, data, lr=lr, rule=c.rule(), bptt=c.bptt, clip=c.clip, seed=seed,
                                            progress=progress, device=where)


def run_rates(config: RatesConfig, progress: Progress | None = None) -> RatesResult:
    """Figure 10's grid: train every (learning rate, seed) run to convergence, the runs fanned out by
    :func:`scansnap.parallel.fan_out` (one intra-op thread per run; ``--jobs`` / ``$SCANSNAP_JOBS`` at once, or a
    Dask cluster; slowest rates first) on the device of ``$SCANSNAP_DEVICE``."""
    c, where = config, str(device.resolve())
    jobs = [(lr, seed) for lr in c.lrs for seed in c.seeds]
    with one_thread():
        data, note = c.corpus()
        runs = parallel.fan_out(partial(_one_run, c, where), jobs,
                                here=partial(_one_run, c, where, data=data, progress=progress)).results
    shape, e = (len(c.lrs), len(c.seeds)), c.steps // c.every + 1
    out = {k: np.full((*shape, e), np.nan) for k in ("heldout_loss", "entropy", "causal")}
    train = np.full((*shape, c.steps), np.nan)
    status, stop = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64)
    for k, run in enumerate(runs):
        i, j = divmod(k, len(c.seeds))
        n = len(run.steps)
        out["heldout_loss"][i, j, :n], out["entropy"][i, j, :n], out["causal"][i, j, :n] = (
            run.heldout_loss, run.entropy, run.causal)
        train[i, j, : len(run.train_loss)] = run.train_loss
        status[i, j], stop[i, j] = run.status, run.steps[-1]
    return RatesResult(c, note, out["heldout_loss"], out["entropy"], out["causal"], train, status, stop)


def rates_work(c: RatesConfig) -> int:
    """Units of progress of Figure 10's grid: one per step of every run at its cap."""
    return len(c.lrs) * len(c.seeds) * c.steps


def rates_prefix(c: RatesConfig, steps: int) -> RatesConfig:
    """Figure 10's grid cut to the first ``steps`` steps of the first seed's run at every rate, measured at step 0 and
    at ``steps`` only:
    what ``python -m scansnap store verify`` re-runs (a run's steps do not depend on its cap or on where it is
    measured)."""
    n = max(1, min(steps, c.steps))
    return replace(c, steps=n, every=n, seeds=c.seeds[:1], min_steps=n)


def rates_checkpoints(r: RatesResult) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Figure 10's checkpoints: every run's held-out curves at its measurements and its training loss at every
    step, named ``"lr<rate>.seed<s>.<curve>"``: what ``store verify`` compares."""
    c, out = r.config, {}
    for i, lr in enumerate(c.lrs):
        for j, seed in enumerate(c.seeds):
            n = int(r.stop[i, j])
            key = f"lr{lr:g}.seed{seed}"
            for name in ("heldout_loss", "entropy", "causal"):
                out[f"{key}.{name}"] = (np.arange(0, n + 1, c.every), getattr(r, name)[i, j, : n // c.every + 1])
            out[f"{key}.train_loss"] = (np.arange(1, n + 1), r.train_loss[i, j, :n])
    return out


@dataclass(frozen=True)
class DeepRatesConfig(RatesConfig):
    """X7's grid: :class:`RatesConfig` with a deeper model (the book's extension; the paper made no multi-layer
    Figure 10)."""

    layers: int = 3
    GATED: ClassVar[tuple[str, ...]] = (*RatesConfig.GATED, "lrs")
    """As :class:`RatesConfig`, and the grid: the book profile's 4 rates against the paper preset's 5 is a cut."""
    PRESETS = {
        "smoke": dict(RatesConfig.PRESETS["smoke"], layers=2),
        "book": dict(RatesConfig.PRESETS["book"], lrs=(1.25, 2.5, 5.0, 10.0)),
        "paper": {},
    }
