"""Chapter 9's experiment on several heads (paper Sec. 5, "initial value as prior"; claims X4-X6).

:data:`HEADS_SAMPLED` (``fig-ch9-heads-sampled``) trains ``H`` heads on Syn-Medium with sampled sequences
(``T = 128``) from ``Y(0) = 0`` and random ``Z_h(0) ~ N(0, sigma^2)``, for several scales ``sigma``: once with
independent draws per head and once with every head started from one draw (tied: one head of the same total width,
see :mod:`scansnap.model_options`), all seeds stacked in one call of :func:`scansnap.train.train`. It measures what
the heads pick (:mod:`scansnap.heads`): the Jaccard similarity of their picked sets (X4), whether each head's winner
is C22's ``argmax P(l|n) exp(z(0))`` and gains the most (X5), and how many distinct tokens the heads cover together
(X6); **training-sampled** evidence, each number with a 95% interval over seeds.

The rules and their controls live in :mod:`scansnap.experiments.heads_rules`: X4 and X6 (the draw's diversity is
still there after training) against the tied arm, X9 (training adds to it) against the same gains between two
untrained draws, X5 against the prediction made from another head's draw.

:data:`HEADS` (``fig-ch9-heads``) is the same run in the long-sequence limit, kept as context and not judged: there
a distinct token's logit velocity grows with its attention, so the flow keeps the order of ``P(l|n) e^{z(0)}`` and
the outcome is fixed at initialization (the predicted token gains the most in every case, by that structure). The
paper did not run these: the ``paper`` preset is this book's full protocol (``HeadsConfig.GATED``): a run below it
carries the cuts, and with fewer steps its verdicts are inconclusive either way (the rules' ``depends_on``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, heads, train
from scansnap._threads import one_thread
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.heads_rules import RULE_X4, RULE_X5, RULE_X6, RULE_X9, head_controls, head_measures
from scansnap.model_options import ModelOptions, head_params
from scansnap.params import Choice, Each, Fraction, Int, Positive, Real, Seeds, listed, param, seed_list
from scansnap.results import Config
from scansnap.verdicts import Verdict


@dataclass(frozen=True)
class HeadsConfig(Config):
    """Syn-Medium with ``num_query`` queries; ``heads`` heads; initial logit scales ``scales``; ``seeds``; ``steps``
    of SGD (``momentum``) at ``eta_Y``, ``eta_Z`` in the long-sequence limit; picked sets hold ``mass`` of the
    distinct attention."""

    num_query: int = param(2, Int(low=1))
    heads: int = param(4, Int(low=2))
    scales: tuple[float, ...] = param((0.03, 0.1, 0.3, 1.0), Each(Positive(), min_len=3, increasing=True), listed)
    seeds: tuple[int, ...] = param(tuple(range(1, 11)), Seeds(), seed_list)
    steps: int = param(300, Int(low=1))
    eta_Y: float = param(1.0, Positive())
    eta_Z: float = param(1.0, Positive())
    momentum: float = param(0.9, Fraction())
    mass: float = param(0.5, Real(0, 1, open="low"))
    limit: str = param("population", Choice(*train.LIMITS))
    batch: int = param(128, Int(low=1))
    T: int = param(128, Int(low=2))
    PROTOCOL = ("Syn-Medium ({num_query} queries), {heads} heads, Y(0) = 0, Z_h(0) ~ N(0, s^2) for s in {scales}, "
                "independent or tied, {seeds}, {data}, {steps} SGD steps (momentum {momentum}), eta_Y = {eta_Y}, eta_Z "
                "= {eta_Z}; picked set: the fewest distinct tokens holding {mass} of the distinct attention")
    PRESETS = {"smoke": dict(heads=2, scales=(0.1, 0.3, 1.0), seeds=(1, 2), steps=20),
               "book": dict(seeds=tuple(range(1, 7)), steps=200), "paper": {}}
    GATED: ClassVar[tuple[str, ...]] = ("steps", "seeds", "heads", "scales", "limit")
    """This book's full protocol (the ``paper`` preset): a run below it carries the cuts; the heads rules depend on
    the steps."""

    @property
    def data(self) -> str:
        """The training data, in words."""
        return ("long-sequence limit" if self.limit == "population" else
                f"sampled sequences (batch {self.batch}, T = {self.T}, one batch stream per seed)")


@dataclass(frozen=True)
class SampledHeadsConfig(HeadsConfig):
    """:class:`HeadsConfig` on sampled sequences (``T = 128``, the trainer's ``limit="sampled"``), 10 seeds: the run
    that judges X4-X6 (the book profile runs the full protocol)."""

    seeds: tuple[int, ...] = tuple(range(1, 11))
    steps: int = 200
    limit: str = "sampled"
    PRESETS = {"smoke": dict(heads=2, scales=(0.1, 0.3, 1.0), seeds=(1, 2, 3), steps=20, batch=32, T=32),
               "book": {}, "paper": {}}


@dataclass(frozen=True)
class HeadsResult:
    """Per (variant: independent, tied; scale; seed), each ``(2, N, S)``: ``jaccard`` and ``coverage`` at the end and
    ``jaccard0``, ``coverage0`` at step 0; ``agreement``: share of (head, class) whose winner is C22's prediction;
    ``gains_most``: share of (head, class) whose prediction gains the most (largest ``log f_l(end) / f_l(0)`` among
    the class's distinct tokens, strictly); ``gains_most_differ``, ``differ``: the same summed (not averaged) over the
    (head, class) pairs where the prediction is not the most frequent distinct token, and their count;
    ``final_loss``; ``agreement0``: ``agreement`` at step 0; ``order_kept``: share of (head, class) whose distinct
    tokens end in the order of their attention at step 0 (all of them in the long-sequence limit, where the flow
    keeps the order of ``P(l|n) exp(z(0))``); ``agreement_other``, ``gains_most_other``, ``gains_most_differ_other``,
    ``differ_other``: ``agreement``, ``gains_most``, ``gains_most_differ``, ``differ`` with each head's prediction made
    from another head's draw (head ``h + 1`` mod ``H``: X5's control); ``jaccard_fresh``, ``coverage_fresh``: the step-0
    picks of a second, untrained draw (seed + :data:`FRESH_DRAW`: X9's control)."""

    config: HeadsConfig
    jaccard: np.ndarray
    coverage: np.ndarray
    agreement: np.ndarray
    gains_most: np.ndarray
    gains_most_differ: np.ndarray
    differ: np.ndarray
    final_loss: np.ndarray
    jaccard0: np.ndarray
    coverage0: np.ndarray
    agreement0: np.ndarray
    order_kept: np.ndarray
    agreement_other: np.ndarray
    gains_most_other: np.ndarray
    gains_most_differ_other: np.ndarray
    differ_other: np.ndarray
    jaccard_fresh: np.ndarray
    coverage_fresh: np.ndarray


def _gains(f0: torch.Tensor, f1: torch.Tensor, predicted: np.ndarray, classes: data.SequenceClasses
           ) -> tuple[float, float, float]:
    """(share of (head, class) whose prediction gains the most, count of those among the pairs where the prediction
    is not the most frequent distinct token, count of such pairs); ``f0 = f1`` gives 0 gains (no strict maximum)."""
    wins, wins_differ, differ = [], 0, 0
    for n in range(classes.K):
        d = classes.distinct(n).numpy()
        frequent = int(d[np.argmax(classes.probs[n, d].numpy())])
        for h in range(f0.shape[0]):
            gain = np.log(f1[h, n, d].numpy() / f0[h, n, d].numpy())
            strict = (gain == gain.max()).sum() == 1
            win = bool(strict and d[int(np.argmax(gain))] == predicted[n, h])
            wins.append(win)
            if predicted[n, h] != frequent:
                differ += 1
                wins_differ += int(win)
    return float(np.mean(wins)), float(wins_differ), float(differ)


def _order_kept(f0: torch.Tensor, f1: torch.Tensor, classes: data.SequenceClasses) -> float:
    """Share of (head, class) whose distinct tokens are in the same order of attention in ``f1`` as in ``f0``
    ``(H, K, M)`` each."""
    kept = [bool((np.argsort(f0[h, n, d].numpy()) == np.argsort(f1[h, n, d].numpy())).all())
            for n in range(classes.K) for d in [classes.distinct(n).numpy()] for h in range(f0.shape[0])]
    return float(np.mean(kept))


FRESH_DRAW = 1000
"""Offset of the seeds of the second, untrained draw of X9's control (fixed before it was first run)."""


@one_thread()  # tiny tensors: a second thread only adds contention (and changes the sums' order)
def run_heads(config: HeadsConfig, progress: Progress | None = None) -> HeadsResult:
    """One stacked training (all seeds) per variant and scale; picks at step 0 and at the end."""
    c = config
    classes = data.syn_medium(c.num_query)
    out = np.zeros((17, 2, len(c.scales), len(c.seeds)))
    fresh_seeds = [s + FRESH_DRAW for s in c.seeds]
    for v, tied in enumerate((False, True)):
        for i, scale in enumerate(c.scales):
            options = ModelOptions(heads=c.heads, z_std=scale, tied=tied)
            h = train.train(classes, c.eta_Y, c.eta_Z, steps=c.steps, momentum=c.momentum, limit=c.limit,
                            batch=c.batch, T=c.T, seed=list(c.seeds), snapshot_steps=[0, c.steps], options=options)
            fresh = train.train(classes, c.eta_Y, c.eta_Z, steps=1, momentum=c.momentum, limit=c.limit, batch=c.batch,
                                T=c.T, seed=fresh_seeds, snapshot_steps=[0], options=options).attention[0]
            for j, seed in enumerate(c.seeds):
                Z0 = head_params(classes.M, options, "zero", torch.Generator().manual_seed(seed))[1]
                f0, f1 = h.attention[0][j], h.attention[-1][j]
                picks, start = heads.head_picks(f1, Z0, classes, c.mass), heads.head_picks(f0, Z0, classes, c.mass)
                other = heads.head_picks(f1, Z0.roll(1, 0), classes, c.mass).predicted  # head h from h - 1's draw
                out[:, v, i, j] = (picks.jaccard, picks.coverage, (picks.winners == picks.predicted).mean(),
                                   *_gains(f0, f1, picks.predicted, classes), float(h.loss[j, -1]), start.jaccard,
                                   start.coverage, (start.winners == start.predicted).mean(),
                                   _order_kept(f0, f1, classes), (picks.winners == other).mean(),
                                   *_gains(f0, f1, other, classes), 0.0, 0.0)
                Z0_fresh = head_params(classes.M, options, "zero", torch.Generator().manual_seed(fresh_seeds[j]))[1]
                second = heads.head_picks(fresh[j], Z0_fresh, classes, c.mass)
                out[15:, v, i, j] = second.jaccard, second.coverage
            if progress is not None:
                progress(1)
    return HeadsResult(c, *out)


def head_verdicts(r: HeadsResult) -> list[Verdict]:
    """X4, X5, X6 and X9 on sampled training, each against its control
    (:func:`~scansnap.experiments.heads_rules.head_controls`)."""
    if r.config.limit != "sampled":
        raise ValueError(f"config: X4-X6 and X9 are judged on sampled sequences; got limit={r.config.limit!r}")
    link = HEADS_SAMPLED.link()
    return [rule.judge(m, r.config, control=m0, link=link) for rule, m, m0 in
            zip(RULES, head_measures(r), head_controls(r), strict=True)]


def heads_table(r: HeadsResult) -> dict[str, np.ndarray]:
    """Per scale: means over seeds of each measure, independent and tied heads, at the end and (``_step0``) at step
    0."""
    out = {"scale": np.array(r.config.scales)}
    for v, name in enumerate(("independent", "tied")):
        for key in ("jaccard", "coverage", "agreement"):
            out[f"{key}_{name}"] = getattr(r, key)[v].mean(1)
        out[f"jaccard_{name}_std"] = r.jaccard[v].std(1)
        out[f"jaccard_{name}_step0"] = r.jaccard0[v].mean(1)
        out[f"coverage_{name}_step0"] = r.coverage0[v].mean(1)
    return out


def plot_heads(r: HeadsResult) -> Figure:
    """Jaccard similarity and coverage of the heads' picks against the initialization scale (dotted: step 0)."""
    figures.set_style()
    d = heads_table(r)
    fig, (ax_j, ax_c) = plt.subplots(1, 2, figsize=(10, 3.4))
    for name, style, color in (("independent", "-o", "C0"), ("tied", "--s", "C1")):
        ax_j.errorbar(d["scale"], d[f"jaccard_{name}"], yerr=d[f"jaccard_{name}_std"], fmt=style, capsize=3,
                      color=color, label=f"{name} heads")
        ax_c.plot(d["scale"], d[f"coverage_{name}"], style, color=color, label=f"{name} heads")
        for ax, key in ((ax_j, "jaccard"), (ax_c, "coverage")):
            ax.plot(d["scale"], d[f"{key}_{name}_step0"], ":", color=color, label=f"{name}, step 0")
    ax_j.set(xscale="log", xlabel="initialization scale sigma of Z(0)", ylabel="mean Jaccard similarity",
             title="how alike the heads' picks are", ylim=(0, 1.05))
    ax_c.set(xscale="log", xlabel="initialization scale sigma of Z(0)", ylabel="distinct tokens picked per class",
             title="tokens covered by the heads together")
    ax_j.legend(fontsize="small")
    fig.tight_layout()
    return fig


_CAPTION = ("from random initial attention logits of scale sigma, each head from its own draw (independent) or all "
            "from one draw (tied: one head of the same total width). Left: mean Jaccard similarity of the sets of "
            "distinct tokens the heads pick (bars: standard deviation over seeds). Right: distinct tokens per class "
            "picked by at least one head. Dotted: the same picks at step 0, before any update.")
HEADS = Experiment(
    id="ch9-heads", config=HeadsConfig, result=HeadsResult, run=run_heads,
    work=lambda c: 2 * len(c.scales),
    figures=(FigureSpec(
        id="fig-ch9-heads", caption="Several heads trained on Syn-Medium in the long-sequence limit " + _CAPTION,
        claims=("X4", "X5", "X6"), plot=plot_heads, table=heads_table),),
)
HEADS_SAMPLED = Experiment(
    id="ch9-heads-sampled", config=SampledHeadsConfig, result=HeadsResult, run=run_heads,
    verdicts=head_verdicts, work=lambda c: 2 * len(c.scales),
    figures=(FigureSpec(
        id="fig-ch9-heads-sampled",
        caption="Several heads trained on Syn-Medium with sampled sequences (T = 128) " + _CAPTION,
        claims=("X4", "X5", "X6"), plot=plot_heads, table=heads_table),),
)

EXPERIMENTS = [HEADS, HEADS_SAMPLED]
RULES = [RULE_X4, RULE_X5, RULE_X6, RULE_X9]
