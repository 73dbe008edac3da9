"""Chapter 8's Figure 10: held-out attention entropy of WikiText-2 language models against the learning rate (C41, X7).

:data:`RATES` (``fig-paper-10``) trains the standard model (:class:`scansnap.lm.TransformerLM`, the settings of
:class:`~scansnap.experiments.ch08_wikitext.WikiConfig`) with 1 layer and with ``multi_layers`` layers at every
learning rate of a log grid and several seeds, SGD without momentum at that constant rate, and measures the
mean entropy of the first layer's attention rows on held-out windows at step 0 and at the end.

C41 is the paper's claim, about its 1-layer Figure 10, and is judged on the 1-layer runs only; the
multi-layer runs are the book's extension, claim X7, with a rule of its own. Both are judged against the same
runs at step 0, where every learning rate of a seed is the same model: no ordering by the rate can be there.
The paper's protocol ("until convergence": five epochs of the full ``train.txt`` with the full vocabulary in the
authors' script) is the minimum for a negative verdict (``RatesConfig.GATED``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import figures, lm_train, stats, token_stats
from scansnap._checks import check_int, check_positive
from scansnap._threads import one_thread
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.ch08_wikitext import BOOK, CHAPTER, GATED_DATA, SMOKE, WikiConfig
from scansnap.verdicts import Rule, Verdict, at_least, at_most


@dataclass(frozen=True)
class RatesConfig(WikiConfig):
    """Figure 10's grid.

    Attributes:
        lrs: learning rates (a log grid); steps: SGD steps of every run (the paper trains "until convergence":
            15,000 steps are about five epochs of ``train.txt``, the authors' script).
        seeds: seeds of the 1-layer runs; multi_seeds: seeds of the multi-layer runs.
    """

    lrs: tuple[float, ...] = (0.625, 1.25, 2.5, 5.0, 10.0)
    steps: int = 15_000
    seeds: tuple[int, ...] = (0, 1)
    multi_seeds: tuple[int, ...] = (0, 1)
    PRESETS = {
        "smoke": dict(SMOKE, lrs=(0.5, 2.0, 8.0), steps=4, seeds=(0, 1), multi_seeds=(0,)),
        "book": dict(BOOK, steps=120, seeds=(0, 1), multi_seeds=(0,)),
        "paper": {},
    }
    GATED: ClassVar[tuple[str, ...]] = (*GATED_DATA, "steps")
    """The paper's Figure 10 (the tutorial's model on the full training split and vocabulary, trained to
    convergence) is the minimum protocol for a negative verdict on C41 and X7."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.lrs) < 2 or any(b <= a for a, b in zip(self.lrs, self.lrs[1:], strict=False)):
            raise ValueError(f"lrs: must be at least 2 strictly increasing learning rates; got {self.lrs}")
        for lr in self.lrs:
            check_positive("lrs", lr)
        check_int("steps", self.steps, low=1)
        for name in ("seeds", "multi_seeds"):
            seeds = getattr(self, name)
            if not seeds or len(set(seeds)) != len(seeds):
                raise ValueError(f"{name}: must hold at least one seed, each once; got {seeds}")
            for s in seeds:
                check_int(name, s, low=0)

    def protocol(self) -> str:
        return (f"{self.data_protocol()}; 1 and {self.multi_layers} layers, {self.steps} steps at each constant rate "
                f"{', '.join(f'{x:g}' for x in self.lrs)}; seeds {list(self.seeds)} (1 layer), "
                f"{list(self.multi_seeds)} (multi-layer); held-out entropy at step 0 and at the end")


@dataclass(frozen=True)
class RatesResult:
    """Figure 10's grid. ``R`` learning rates; ``S1``, ``S2`` seeds of the 1-layer and multi-layer runs.

    Attributes:
        config: the configuration; note: splits and vocabulary, in words.
        entropy_one, entropy_multi: ``(R, S1)``, ``(R, S2)`` held-out first-layer entropy at the end.
        loss_one, loss_multi: the held-out loss at the end, same shapes.
        start_one, start_multi: the held-out entropy at step 0, same shapes (the control of C41 and X7).
    """

    config: RatesConfig
    note: str
    entropy_one: np.ndarray
    entropy_multi: np.ndarray
    loss_one: np.ndarray
    loss_multi: np.ndarray
    start_one: np.ndarray
    start_multi: np.ndarray


def run_rates(config: RatesConfig, progress: Progress | None = None) -> RatesResult:
    """Train every (depth, learning rate, seed) run (one intra-op thread)."""
    c = config
    out = {}
    with one_thread():
        data, note = c.corpus()
        for key, layers, seeds in (("one", 1, c.seeds), ("multi", c.multi_layers, c.multi_seeds)):
            ent, loss, start = (np.zeros((len(c.lrs), len(seeds))) for _ in range(3))
            for i, lr in enumerate(c.lrs):
                for j, seed in enumerate(seeds):
                    model = c.model(len(data.vocab), layers, seed)
                    tr = lm_train.train(model, data, lr=lr, steps=c.steps, checkpoints=[0, c.steps], bptt=c.bptt,
                                        clip=c.clip, seed=seed, progress=progress)
                    ent[i, j], loss[i, j], start[i, j] = tr.entropy[-1], tr.heldout_loss[-1], tr.entropy[0]
            out[f"entropy_{key}"], out[f"loss_{key}"], out[f"start_{key}"] = ent, loss, start
    return RatesResult(c, note, out["entropy_one"], out["entropy_multi"], out["loss_one"], out["loss_multi"],
                       out["start_one"], out["start_multi"])


def rates_work(c: RatesConfig) -> int:
    return len(c.lrs) * (len(c.seeds) + len(c.multi_seeds)) * c.steps


@dataclass(frozen=True)
class RateOrder:
    """How the held-out entropy of one depth is ordered by the learning rate (C41: 1 layer; X7: multi-layer).

    Attributes:
        in_order: share of learning-rate pairs in which the larger rate has the lower mean entropy over seeds.
        spearman: Spearman's rho between learning rate and entropy over every run (rates x seeds; nan when the
            entropy is the same in every run).
        ratio: mean entropy at the largest rate over that at the smallest.
        entropy_smallest, entropy_largest: the mean entropies at the smallest and the largest rate (nats).
    """

    in_order: float
    spearman: float
    ratio: float
    entropy_smallest: float
    entropy_largest: float


def rate_order(lrs: tuple[float, ...], entropy: np.ndarray) -> RateOrder:
    """:class:`RateOrder` of ``entropy`` ``(R, S)`` (rates x seeds) on the rates ``lrs``."""
    x, mean = np.asarray(lrs, dtype=float), entropy.mean(axis=1)
    return RateOrder(token_stats.share_decreasing(x, mean), stats.spearman(np.repeat(x, entropy.shape[1]),
                                                                           entropy.reshape(-1)),
                     float(mean[-1] / mean[0]), float(mean[0]), float(mean[-1]))


def _criteria(depth: str):
    return (
        at_least("in_order", f"share of rate pairs with lower mean entropy at the larger rate ({depth})", 0.9, 0.7),
        at_most("spearman", f"Spearman rho of (rate, final entropy) over runs ({depth})", -0.8, -0.5),
        at_most("ratio", f"mean entropy at the largest rate / at the smallest ({depth})", 0.8, 0.95),
    )


_CONTROL = ("the same runs at step 0, where every learning rate of a seed is the same model (the same initialization): "
            "no ordering by the rate")
_NOTE = ("The entropy is the mean over held-out windows and query positions of the first layer's attention rows "
         "(dropout off) after a fixed number of steps at each constant rate.")
RULE_C41 = Rule("C41", "real-data", RateOrder, _criteria("1 layer"),
                alternative="the learning rate has no effect on the 1-layer model's held-out attention entropy: "
                            "differences between rates are seed noise (no ordering, ratio near 1)",
                control=_CONTROL, note=_NOTE + " The paper's Figure 10 is a 1-layer model; deeper models are X7.")
RULE_X7 = Rule("X7", "real-data", RateOrder, _criteria("first layer of the multi-layer model"),
               alternative="depth removes the effect: the first-layer held-out entropy of the multi-layer model is "
                           "not ordered by the learning rate (seed noise, ratio near 1)",
               control=_CONTROL, note=_NOTE + " The book's extension of C41 (the paper made no multi-layer Figure 10).")


def rates_verdicts(r: RatesResult) -> list[Verdict]:
    """C41 from the 1-layer runs and X7 from the multi-layer runs, each against the same runs at step 0."""
    c, link = r.config, RATES.link("fig-paper-10")
    details = (f"data: {r.note}; mean final entropy by rate: 1 layer {np.round(r.entropy_one.mean(1), 3).tolist()}, "
               f"multi-layer {np.round(r.entropy_multi.mean(1), 3).tolist()} nats (at step 0 "
               f"{np.round(r.start_one.mean(1), 3).tolist()}, {np.round(r.start_multi.mean(1), 3).tolist()}); final "
               f"held-out loss 1 layer {np.round(r.loss_one.mean(1), 2).tolist()}, multi-layer "
               f"{np.round(r.loss_multi.mean(1), 2).tolist()}")
    return [RULE_C41.judge(rate_order(c.lrs, r.entropy_one), c, control=rate_order(c.lrs, r.start_one),
                           scope="C41: the 1-layer runs", details=details, link=link),
            RULE_X7.judge(rate_order(c.lrs, r.entropy_multi), c, control=rate_order(c.lrs, r.start_multi),
                          scope=f"X7: the {c.multi_layers}-layer runs (first layer)", details=details, link=link)]


def rates_table(r: RatesResult) -> dict[str, np.ndarray]:
    """The data of ``fig-paper-10`` (Figure 10): one row per run: depth (1 or the multi-layer depth), learning
    rate, seed, entropy at step 0 and at the end, and the final held-out loss."""
    c, rows = r.config, []
    for depth, seeds, ent, start, loss in ((1, c.seeds, r.entropy_one, r.start_one, r.loss_one),
                                           (c.multi_layers, c.multi_seeds, r.entropy_multi, r.start_multi,
                                            r.loss_multi)):
        rows += [(depth, lr, s, start[i, j], ent[i, j], loss[i, j]) for i, lr in enumerate(c.lrs)
                 for j, s in enumerate(seeds)]
    cols = list(zip(*rows, strict=True))
    return {"layers": np.array(cols[0]), "lr": np.array(cols[1], dtype=float), "seed": np.array(cols[2]),
            "entropy_start": np.array(cols[3]), "entropy": np.array(cols[4]), "heldout_loss": np.array(cols[5])}


def plot_rates(r: RatesResult) -> Figure:
    """``fig-paper-10`` (Figure 10): final held-out entropy against the learning rate (log axis), both depths."""
    figures.set_style()
    c = r.config
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for ent, label in ((r.entropy_one, "1 layer"), (r.entropy_multi, f"{c.multi_layers} layers (layer 1)")):
        line, = ax.plot(c.lrs, ent.mean(1), marker="o", label=label)
        for j in range(ent.shape[1]):
            ax.scatter(c.lrs, ent[:, j], s=12, color=line.get_color(), alpha=0.5)
    ax.set(xscale="log", xlabel="learning rate (SGD, constant)", ylabel="held-out attention entropy (nats)",
           title=f"after {c.steps} steps")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


RATES = Experiment(
    id="ch8-rates", chapter=CHAPTER, config=RatesConfig, result=RatesResult, run=run_rates, verdicts=rates_verdicts,
    work=rates_work,
    figures=(FigureSpec(id="fig-paper-10", claims=("C41", "X7"), plot=plot_rates, table=rates_table,
                        caption="Figure 10 of the paper, re-made: held-out attention entropy of the first layer at the "
                                "end of training against the constant SGD learning rate, for 1-layer and multi-layer "
                                "models on WikiText-2 (one point per seed, line through the means)."),),
)

EXPERIMENTS = [RATES]
RULES = [RULE_C41, RULE_X7]
