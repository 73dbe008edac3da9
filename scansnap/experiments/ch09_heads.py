"""Chapter 9's experiment on several heads (paper Sec. 5, "initial value as prior"; claims X4-X6).

:data:`HEADS` (``fig-ch9-heads``) trains ``H`` heads on Syn-Medium in the long-sequence limit from ``Y(0) = 0`` and
random ``Z_h(0) ~ N(0, sigma^2)``, for several scales ``sigma``: once with independent draws per head and once
with every head started from one draw (tied: one head of the same total width, see
:mod:`scansnap.model_options`). It measures what the heads pick (:mod:`scansnap.heads`): the Jaccard similarity
of their picked sets (X4), whether each head's winner is C22's ``argmax P(l|n) exp(z(0))`` (X5), and how many
distinct tokens the heads cover together (X6); all **training-population** evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, heads, stats, train
from scansnap._checks import check_fraction, check_int, check_positive, check_seeds
from scansnap._threads import one_thread
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.ch09_beyond import CHAPTER
from scansnap.model_options import ModelOptions, head_params
from scansnap.results import Config
from scansnap.verdicts import Rule, Verdict, at_least, at_most

LINK = f"{CHAPTER}.html#several-heads"


@dataclass(frozen=True)
class HeadsConfig(Config):
    """Syn-Medium with ``num_query`` queries; ``heads`` heads; initial logit scales ``scales``; ``seeds``; ``steps``
    of SGD (``momentum``) at ``eta_Y``, ``eta_Z`` in the long-sequence limit; picked sets hold ``mass`` of the
    distinct attention."""

    num_query: int = 2
    heads: int = 4
    scales: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0)
    seeds: tuple[int, ...] = tuple(range(1, 11))
    steps: int = 300
    eta_Y: float = 1.0
    eta_Z: float = 1.0
    momentum: float = 0.9
    mass: float = 0.5
    PRESETS = {"smoke": dict(heads=2, scales=(0.1, 0.3, 1.0), seeds=(1, 2), steps=20),
               "book": dict(seeds=tuple(range(1, 7)), steps=200), "paper": {}}

    def __post_init__(self) -> None:
        check_int("num_query", self.num_query, low=1)
        check_int("heads", self.heads, low=2)
        if len(self.scales) < 3 or min(self.scales) <= 0 or list(self.scales) != sorted(set(self.scales)):
            raise ValueError(f"scales: must be at least 3 increasing scales > 0; got {self.scales}")
        check_seeds("seeds", self.seeds)
        check_int("steps", self.steps, low=1)
        check_positive("eta_Y", self.eta_Y)
        check_positive("eta_Z", self.eta_Z)
        check_fraction("momentum", self.momentum)
        if not 0 < self.mass <= 1:
            raise ValueError(f"mass: must be in (0, 1]; got {self.mass}")


@dataclass(frozen=True)
class HeadsResult:
    """Per (variant: independent, tied; scale; seed): ``jaccard`` and ``coverage`` ``(2, N, S)``; ``agreement``
    ``(2, N, S)``: share of (head, class) whose winner is C22's prediction; ``final_loss`` ``(2, N, S)``."""

    config: HeadsConfig
    jaccard: np.ndarray
    coverage: np.ndarray
    agreement: np.ndarray
    final_loss: np.ndarray


@one_thread()  # tiny tensors: a second thread only adds contention (and changes the sums' order)
def run_heads(config: HeadsConfig, progress: Progress | None = None) -> HeadsResult:
    """One stacked training (all seeds) per variant and scale."""
    c = config
    classes = data.syn_medium(c.num_query)
    out = np.zeros((4, 2, len(c.scales), len(c.seeds)))
    for v, tied in enumerate((False, True)):
        for i, scale in enumerate(c.scales):
            options = ModelOptions(heads=c.heads, z_std=scale, tied=tied)
            h = train.train(classes, c.eta_Y, c.eta_Z, steps=c.steps, momentum=c.momentum, limit="population",
                            seed=list(c.seeds), snapshot_steps=[c.steps], options=options)
            for j, seed in enumerate(c.seeds):
                Z0 = head_params(classes.M, options, "zero", torch.Generator().manual_seed(seed))[1]
                picks = heads.head_picks(h.attention[-1][j], Z0, classes, c.mass)
                out[:, v, i, j] = (picks.jaccard, picks.coverage, (picks.winners == picks.predicted).mean(),
                                   float(h.loss[j, -1]))
            if progress is not None:
                progress(1)
    return HeadsResult(c, *out)


RULE_X4 = Rule("X4", "training-population", (
    at_most("jaccard_largest", "mean Jaccard similarity of the heads' picked sets at the largest scale", 0.5, 0.8),
    at_most("trend", "rank correlation of the mean Jaccard similarity with the initialization scale", -0.9, -0.5),
))
RULE_X5 = Rule("X5", "training-population", (
    at_least("agreement", "share of (seed, scale, head, class) whose winner is argmax P(l|n) exp(z(0))", 0.9, 0.7),
    at_least("cases", "number of (seed, scale, head, class) cases", 50, 10),
), note="Independent heads at every scale.")
RULE_X6 = Rule("X6", "training-population", (
    at_least("coverage_ratio", "distinct tokens picked by some head per class, independent over tied heads, at the "
             "largest scale", 1.5, 1.1),
))


def head_verdicts(r: HeadsResult) -> list[Verdict]:
    """X4-X6."""
    c = r.config
    protocol = (f"Syn-Medium ({c.num_query} queries), {c.heads} heads, Y(0) = 0, Z_h(0) ~ N(0, s^2) for s in "
                f"{list(c.scales)}, independent or tied, seeds {list(c.seeds)}, long-sequence limit, {c.steps} SGD "
                f"steps (momentum {c.momentum}), eta_Y = {c.eta_Y}, eta_Z = {c.eta_Z}; picked set: the fewest "
                f"distinct tokens holding {c.mass} of the distinct attention")
    jac = r.jaccard[0].mean(1)
    K = 2 * c.num_query
    return [
        RULE_X4.judge({"jaccard_largest": float(jac[-1]), "trend": stats.spearman(np.array(c.scales), jac),
                       "jaccard_smallest": float(jac[0]), "jaccard_tied": float(r.jaccard[1].mean())},
                      protocol=protocol, link=LINK),
        RULE_X5.judge({"agreement": float(r.agreement[0].mean()), "cases": len(c.scales) * len(c.seeds) * c.heads * K,
                       "agreement_tied": float(r.agreement[1].mean())}, protocol=protocol, link=LINK),
        RULE_X6.judge({"coverage_ratio": float(r.coverage[0, -1].mean() / r.coverage[1, -1].mean()),
                       "coverage_independent": float(r.coverage[0, -1].mean()),
                       "coverage_tied": float(r.coverage[1, -1].mean())}, protocol=protocol, link=LINK),
    ]


def heads_table(r: HeadsResult) -> dict[str, np.ndarray]:
    """Per scale: means over seeds of each measure, independent and tied heads."""
    out = {"scale": np.array(r.config.scales)}
    for v, name in enumerate(("independent", "tied")):
        for key in ("jaccard", "coverage", "agreement"):
            out[f"{key}_{name}"] = getattr(r, key)[v].mean(1)
        out[f"jaccard_{name}_std"] = r.jaccard[v].std(1)
    return out


def plot_heads(r: HeadsResult) -> Figure:
    """Jaccard similarity and coverage of the heads' picks against the initialization scale."""
    figures.set_style()
    d = heads_table(r)
    fig, (ax_j, ax_c) = plt.subplots(1, 2, figsize=(10, 3.4))
    for name, style in (("independent", "-o"), ("tied", "--s")):
        ax_j.errorbar(d["scale"], d[f"jaccard_{name}"], yerr=d[f"jaccard_{name}_std"], fmt=style, capsize=3,
                      label=f"{name} heads")
        ax_c.plot(d["scale"], d[f"coverage_{name}"], style, label=f"{name} heads")
    ax_j.set(xscale="log", xlabel="initialization scale sigma of Z(0)", ylabel="mean Jaccard similarity",
             title="how alike the heads' picks are", ylim=(0, 1.05))
    ax_c.set(xscale="log", xlabel="initialization scale sigma of Z(0)", ylabel="distinct tokens picked per class",
             title="tokens covered by the heads together")
    ax_j.legend(fontsize="small")
    fig.tight_layout()
    return fig


HEADS = Experiment(
    id="ch9-heads", chapter=CHAPTER, config=HeadsConfig, result=HeadsResult, run=run_heads, verdicts=head_verdicts,
    work=lambda c: 2 * len(c.scales),
    figures=(FigureSpec(
        id="fig-ch9-heads",
        caption="Several heads trained on Syn-Medium in the long-sequence limit from random initial attention "
                "logits of scale sigma, each head from its own draw (independent) or all from one draw (tied: one "
                "head of the same total width). Left: mean Jaccard similarity of the sets of distinct tokens the "
                "heads pick (bars: standard deviation over seeds). Right: distinct tokens per class picked by at "
                "least one head.",
        claims=("X4", "X6"), plot=plot_heads, table=heads_table),),
)

EXPERIMENTS = [HEADS]
RULES = [RULE_X4, RULE_X5, RULE_X6]
