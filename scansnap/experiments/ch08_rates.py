"""Chapter 8's Figure 10: held-out attention entropy of WikiText-2 language models against the learning rate (C41).

:data:`RATES` (``fig-paper-10``) trains the standard model (:class:`scansnap.lm.TransformerLM`, the settings of
:class:`~scansnap.experiments.ch08_wikitext.WikiConfig`) with 1 layer and with ``multi_layers`` layers at every
learning rate of a log grid and several seeds, SGD without momentum at that constant rate, and measures the
mean entropy of the first layer's attention rows on held-out windows at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scansnap import lm_train, token_stats
from scansnap._checks import check_int, check_positive
from scansnap._threads import one_thread
from scansnap.experiments import wikitext_figures as figs
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.ch08_wikitext import _BOOK, _SMOKE, CHAPTER, WikiConfig
from scansnap.verdicts import Rule, Verdict, at_least, at_most


@dataclass(frozen=True)
class RatesConfig(WikiConfig):
    """Figure 10's grid.

    Attributes:
        lrs: learning rates (a log grid); steps: SGD steps of every run (the paper trains "until convergence").
        seeds: seeds of the 1-layer runs; multi_seeds: seeds of the multi-layer runs.
    """

    lrs: tuple[float, ...] = (0.625, 1.25, 2.5, 5.0, 10.0)
    steps: int = 15_000
    seeds: tuple[int, ...] = (0, 1)
    multi_seeds: tuple[int, ...] = (0, 1)
    PRESETS = {
        "smoke": dict(_SMOKE, lrs=(0.5, 2.0, 8.0), steps=4, seeds=(0, 1), multi_seeds=(0,)),
        "book": dict(_BOOK, steps=120, seeds=(0, 1), multi_seeds=(0,)),
        "paper": {},
    }

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


@dataclass(frozen=True)
class RatesResult:
    """Figure 10's grid. ``R`` learning rates; ``S1``, ``S2`` seeds of the 1-layer and multi-layer runs.

    Attributes:
        config: the configuration; note: splits and vocabulary, in words.
        entropy_one, entropy_multi: ``(R, S1)``, ``(R, S2)`` held-out first-layer entropy at the end.
        loss_one, loss_multi: the held-out loss at the end, same shapes.
        start_entropy: ``(2,)`` held-out entropy at initialization (seed of the first run), 1 layer and multi-layer.
    """

    config: RatesConfig
    note: str
    entropy_one: np.ndarray
    entropy_multi: np.ndarray
    loss_one: np.ndarray
    loss_multi: np.ndarray
    start_entropy: np.ndarray


def run_rates(config: RatesConfig, progress: Progress | None = None) -> RatesResult:
    """Train every (depth, learning rate, seed) run (one intra-op thread)."""
    c = config
    out = {}
    with one_thread():
        data, note = c.corpus()
        for key, layers, seeds in (("one", 1, c.seeds), ("multi", c.multi_layers, c.multi_seeds)):
            ent, loss = np.zeros((len(c.lrs), len(seeds))), np.zeros((len(c.lrs), len(seeds)))
            for i, lr in enumerate(c.lrs):
                for j, seed in enumerate(seeds):
                    model = c.model(len(data.vocab), layers, seed)
                    tr = lm_train.train(model, data, lr=lr, steps=c.steps, checkpoints=[0, c.steps], bptt=c.bptt,
                                        clip=c.clip, seed=seed, progress=progress)
                    ent[i, j], loss[i, j] = tr.entropy[-1], tr.heldout_loss[-1]
                    out.setdefault(f"start_{key}", tr.entropy[0])
            out[f"entropy_{key}"], out[f"loss_{key}"] = ent, loss
    return RatesResult(c, note, out["entropy_one"], out["entropy_multi"], out["loss_one"], out["loss_multi"],
                       np.array([out["start_one"], out["start_multi"]]))


def rates_work(c: RatesConfig) -> int:
    return len(c.lrs) * (len(c.seeds) + len(c.multi_seeds)) * c.steps


def rates_numbers(r: RatesResult) -> dict[str, float]:
    """C41's numbers for the 1-layer (``_1``) and multi-layer (``_multi``) runs.

    ``in_order``: share of learning-rate pairs in which the larger rate ends with the lower mean entropy;
    ``spearman``: Spearman's rho between learning rate and final entropy over every run (rates x seeds);
    ``ratio``: mean entropy at the largest rate over that at the smallest.
    """
    lrs, out = np.array(r.config.lrs), {}
    for suffix, ent in (("_1", r.entropy_one), ("_multi", r.entropy_multi)):
        mean = ent.mean(axis=1)
        out[f"in_order{suffix}"] = token_stats.share_decreasing(lrs, mean)
        out[f"spearman{suffix}"] = token_stats.spearman(np.repeat(lrs, ent.shape[1]), ent.reshape(-1))
        out[f"ratio{suffix}"] = float(mean[-1] / mean[0])
    return out


def _c41_criteria(suffix: str, depth: str):
    return (
        at_least(f"in_order{suffix}", f"share of rate pairs with lower entropy at the larger rate ({depth})", 0.9,
                 0.7),
        at_most(f"spearman{suffix}", f"Spearman rho of (rate, final entropy) over runs ({depth})", -0.8, -0.5),
        at_most(f"ratio{suffix}", f"entropy at the largest rate / at the smallest ({depth})", 0.8, 0.95),
    )


RULE_C41 = Rule("C41", "real-data", _c41_criteria("_1", "1 layer") + _c41_criteria("_multi", "multi-layer"),
                note="The entropy is the mean over held-out windows and query positions of the first layer's attention "
                     "rows (dropout off) after a fixed number of steps at each constant rate.")


def rates_verdicts(r: RatesResult) -> list[Verdict]:
    """C41 from the grid."""
    c = r.config
    protocol = (f"WikiText-2, trained on {r.note}; PyTorch-tutorial transformer LM (d = {c.d}, d_hid = {c.d_hid}, "
                f"1 head, dropout {c.dropout}), 1 and {c.multi_layers} layers; SGD without momentum, clip "
                f"{c.clip:g}, batch {c.batch} x bptt {c.bptt}, {c.steps} steps at each constant rate "
                f"{', '.join(f'{x:g}' for x in c.lrs)}; seeds {list(c.seeds)} (1 layer), {list(c.multi_seeds)} "
                f"(multi-layer); held-out entropy on {c.eval_sequences} windows")
    details = (f"mean final entropy by rate: 1 layer {np.round(r.entropy_one.mean(1), 3).tolist()}, multi-layer "
               f"{np.round(r.entropy_multi.mean(1), 3).tolist()} nats (at initialization "
               f"{r.start_entropy[0]:.3f}, {r.start_entropy[1]:.3f}); final held-out loss 1 layer "
               f"{np.round(r.loss_one.mean(1), 2).tolist()}")
    return [RULE_C41.judge(rates_numbers(r), protocol=protocol, details=details, link=f"{CHAPTER}.html#fig-paper-10")]


RATES = Experiment(
    id="ch8-rates", chapter=CHAPTER, config=RatesConfig, result=RatesResult, run=run_rates, verdicts=rates_verdicts,
    work=rates_work,
    figures=(FigureSpec(id="fig-paper-10", claims=("C41",), plot=figs.plot_rates, table=figs.rates_table,
                        caption="Figure 10 of the paper, re-made: held-out attention entropy of the first layer at the "
                                "end of training against the constant SGD learning rate, for 1-layer and multi-layer "
                                "models on WikiText-2 (one point per seed, line through the means)."),),
)

EXPERIMENTS = [RATES]
RULES = [RULE_C41]
