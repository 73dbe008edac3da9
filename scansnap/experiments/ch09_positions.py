"""Chapter 9's experiment on a learnable positional bias (paper Sec. 7; claims X2, X3).

:data:`POSITIONS` (``fig-ch9-positions``) uses :func:`scansnap.positions.margin_family`: one query per margin
``rho``, whose classes hold far tokens (common and distinct) and near distinct tokens, the strongest near one
``rho`` times as frequent as the strongest far one. It checks the long-sequence form of the bias (X2,
**derivation**: the bias is an additive prior for tokens of one zone, and cancels on bag-of-tokens data), and
trains four models on the same seeds (X3, **training-sampled**): with and without the bias, on the family and
on the same family with each sequence shuffled. Runs with the same seed see the same batches with and without
the bias (zero initialization draws nothing), so the comparisons are paired. X3's control is the shuffled arm (the
same measures on the same family with each sequence shuffled, where position carries nothing), not step 0 (where
the bias is zero by construction). The paper did not run this: the ``paper`` preset is this book's full protocol
(``PositionsConfig.GATED``): a run below it carries the cuts, and with fewer steps X3 is inconclusive either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import figures, positions, train
from scansnap._threads import one_thread
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.model import cross_entropy
from scansnap.model_options import ModelOptions
from scansnap.params import Each, Fraction, Int, Positive, Real, Seeds, listed, param, seed_list
from scansnap.results import Config
from scansnap.verdicts import Rule, Verdict, at_least, at_most

VARIANTS = ("positions, bias", "positions, no bias", "shuffled, bias", "shuffled, no bias")
Z95 = 1.96  # two-sided 95% normal quantile


@dataclass(frozen=True)
class PositionsConfig(Config):
    """The margin family (``margins``, ``near`` fraction of positions), trained sampled (``T``, ``batch``,
    ``steps``, SGD with ``momentum``, ``eta_Y``, ``eta_Z``; the bias at ``eta_Z``) on ``seeds``; ``instances``
    random checks of the long-sequence form (torch ``seed``)."""

    margins: tuple[float, ...] = param((0.6, 0.7, 0.8, 0.9, 0.95), Each(Positive()), listed)
    near: float = param(0.125, Real(0, 1, open="both"))
    T: int = param(65, Int(low=3))
    batch: int = param(128, Int(low=1))
    steps: int = param(300, Int(low=1))
    seeds: tuple[int, ...] = param((1, 2, 3, 4, 5, 6), Seeds(), seed_list)
    eta_Y: float = param(1.0, Positive())
    eta_Z: float = param(1.0, Positive())
    momentum: float = param(0.9, Fraction())
    instances: int = param(50, Int(low=1))
    seed: int = param(0, Int(low=0))
    PROTOCOL = ("margin_family(margins {margins}, near {near}), T = {T}, batch {batch}, {steps} SGD steps (momentum "
                "{momentum}), eta_Y = {eta_Y}, eta_Z = {eta_Z} (bias too), zero init, {seeds}; with and without the "
                "bias, positions kept and shuffled; {instances} random (Z, Y, bias) for the long-sequence form (seed "
                "{seed})")
    PRESETS = {"smoke": dict(margins=(0.7, 0.95), T=17, batch=16, steps=10, seeds=(1, 2), instances=5),
               "book": dict(seeds=(1, 2, 3), instances=20), "paper": {}}
    GATED: ClassVar[tuple[str, ...]] = ("steps", "seeds", "T", "batch", "margins")
    """This book's full protocol (the ``paper`` preset): a run below it carries the cuts; X3 depends on the steps."""
    NOT_GATED: ClassVar[dict[str, str]] = {
        "instances": "only X2's derivation check reads it, and its rule counts the instances itself (verified at >= "
                     "20, which the book's 20 meet); X3's training does not use them"}
    """The book's fewer random checks of X2, which its rule counts itself."""


@dataclass(frozen=True)
class PositionsResult:
    """``prior_error``: max ``|biased limit - limit with logits shifted by log A_zone|`` over the instances;
    ``bag_gradient``: max ``|d loss / d bias|`` of the limit on bag-of-tokens data; ``bias`` ``(2, S, T-1)`` final
    bias (positions, shuffled); ``share`` ``(4, S, K)`` share of the distinct attention on near tokens and
    ``near_win`` ``(4, S, K)`` whether the winner is a near token, per variant of :data:`VARIANTS`."""

    config: PositionsConfig
    prior_error: float
    bag_gradient: float
    bias: np.ndarray
    share: np.ndarray
    near_win: np.ndarray


def _limit_checks(pc: positions.PositionalClasses, config: PositionsConfig) -> tuple[float, float]:
    gen = torch.Generator().manual_seed(config.seed)
    bag = positions.PositionalClasses(M=pc.M, query=pc.query, next=pc.next, probs=pc.probs, near_probs=pc.probs,
                                      far_probs=pc.probs, near=pc.near)
    L = config.T - 1
    W = positions.near_count(config.T, pc.near)
    in_near = pc.near_probs.sum(0) > 0
    prior, grad = 0.0, 0.0
    for _ in range(config.instances):
        Z, Y = (torch.randn(pc.M, pc.M, generator=gen, dtype=torch.float64) for _ in range(2))
        bias = torch.randn(L, generator=gen, dtype=torch.float64, requires_grad=True)
        a_near, a_far = bias[L - W:].exp().sum().detach(), bias[: L - W].exp().sum().detach()
        shift = torch.where(in_near, torch.log(a_near / pc.near), torch.log(a_far / (1 - pc.near)))
        prior = max(prior, float((pc.population(Z, bias.detach()) - pc.population(Z + shift)).abs().max()))
        f = bag.population(Z, bias)
        ft = f / f.norm(dim=-1, keepdim=True)
        cross_entropy((ft @ Y)[None], pc.next).sum().backward()
        grad = max(grad, float(bias.grad.abs().max()))
    return prior, grad


@one_thread()  # tiny tensors: a second thread only adds contention (and changes the sums' order)
def run_positions(config: PositionsConfig, progress: Progress | None = None) -> PositionsResult:
    """The limit checks, then the four trainings (each stacked over the seeds)."""
    c = config
    pc = positions.margin_family(c.margins, c.near)
    prior, grad = _limit_checks(pc, c)
    bias, share, win = [], [], []
    for classes in (pc, positions.shuffled(pc)):
        for options in (ModelOptions(positions=c.T - 1), None):
            h = train.train(classes, c.eta_Y, c.eta_Z, steps=c.steps, batch=c.batch, T=c.T, seed=list(c.seeds),
                            momentum=c.momentum, snapshot_steps=[c.steps], options=options,
                            progress=progress)
            f = h.attention[-1]  # long-sequence attention on this data, with the learned bias
            share.append(positions.near_share(f, pc).numpy())
            win.append(positions.near_winner(f, pc).numpy())
            if h.bias is not None:
                bias.append(h.bias.numpy())
    return PositionsResult(c, prior, grad, np.stack(bias), np.stack(share), np.stack(win))


@dataclass(frozen=True)
class BiasForm:
    """X2's measures: ``prior_error`` (max ``|biased limit - limit with each zone's logits shifted by log A_zone|``),
    ``bag_gradient`` (max ``|d loss / d bias|`` on bag-of-tokens data), ``instances``."""

    prior_error: float
    bag_gradient: float
    instances: int


RULE_X2 = Rule("X2", "derivation", BiasForm, (
    at_most("prior_error", "max |biased limit - limit with each zone's logits shifted by log A_zone| (attention, "
            "O(1))", 1e-12, 1e-8),
    at_most("bag_gradient", "max |d loss / d bias| of the limit on bag-of-tokens data", 1e-12, 1e-8),
    at_least("instances", "random instances (logits, decoder, bias)", 20, 5),
), alternative="the bias acts otherwise than through the zone masses: errors and gradients at the scale of the "
               "attention and its gradient (O(0.1-1)), not of float64 round-off",
   note="The chapter's sympy cells prove both statements; this rule judges the library's long-sequence form.")


@dataclass(frozen=True)
class BiasEffect:
    """X3's measures on one arm (positions kept, or shuffled: the control), each with and without the bias on the
    same seeds: ``bias_gap_lo`` (learned prior of near over far positions, log-mean-exp gap, lower end of its 95%
    interval over seeds), ``near_shift_lo`` (paired rise of the near tokens' share of the distinct attention, bias
    vs none, mean over classes per seed; lower end of its 95% interval over seeds), ``winner_shift`` (share of
    (seed, class) whose winner moves from a far to a near token with the bias), ``bias_gap``, ``near_shift`` (means),
    ``winner_shift_back`` (near to far), ``seeds``."""

    bias_gap_lo: float
    near_shift_lo: float
    winner_shift: float
    bias_gap: float
    near_shift: float
    winner_shift_back: float
    seeds: int


RULE_X3 = Rule("X3", "training-sampled", BiasEffect, (
    at_least("bias_gap_lo", "learned prior of near over far positions, log-mean-exp gap: lower end of its 95% "
             "interval over seeds", 0.2, 0.05),
    at_least("near_shift_lo", "paired rise of the near tokens' share of the distinct attention, bias vs none: lower "
             "end of its 95% interval over seeds", 0.02, 0.005),
    at_least("winner_shift", "share of (seed, class) whose winner moves from a far to a near token with the bias",
             0.1, 0.02, required=False),
), alternative="the bias learns no prior for the near positions (or one that is as large when position carries no "
               "information) and moves no attention toward the near tokens",
   control="the shuffled arm: the same measures on the same family with every sequence shuffled (position carries "
           "nothing), same seeds and batches; the claim says the bias stays near zero there",
   depends_on={"steps": "the bias starts at zero and is learned during training: after fewer steps it has not had "
                         "the time to grow, and the shift it would cause cannot be seen"},
   note="Each variant is trained on the same seeds; with and without the bias the batches are identical. Step 0 is no "
        "null here: the bias starts at zero by construction.")


def _lower(values: np.ndarray) -> float:
    """Mean over seeds minus 1.96 standard errors (nan with one seed)."""
    S = len(values)
    return float(values.mean() - Z95 * values.std(ddof=1) / np.sqrt(S)) if S > 1 else float("nan")


def bias_effect(r: PositionsResult, shuffled: bool = False) -> BiasEffect:
    """X3's measures on the positional arm, or (``shuffled``) on the shuffled arm, the control."""
    a = 2 if shuffled else 0  # index of the arm's "bias" variant in VARIANTS; a + 1 is its "no bias"
    gaps = positions.zone_bias_gap(torch.from_numpy(r.bias[a // 2]), r.config.near).numpy()  # (S,)
    shift = (r.share[a] - r.share[a + 1]).mean(-1)  # (S,) per seed, mean over classes
    return BiasEffect(_lower(gaps), _lower(shift), float((r.near_win[a] & ~r.near_win[a + 1]).mean()),
                      float(gaps.mean()), float(shift.mean()), float((~r.near_win[a] & r.near_win[a + 1]).mean()),
                      len(r.config.seeds))


def position_verdicts(r: PositionsResult) -> list[Verdict]:
    """X2 (derivation) and X3 (training, sampled; control: the shuffled arm)."""
    c = r.config
    return [
        RULE_X2.judge(BiasForm(r.prior_error, r.bag_gradient, c.instances), c,
                      link=POSITIONS.link("positional-bias-as-a-prior")),
        RULE_X3.judge(bias_effect(r), c, control=bias_effect(r, shuffled=True),
                      link=POSITIONS.link("training-a-positional-bias")),
    ]


def positions_table(r: PositionsResult) -> dict:
    """Mean learned bias per position (both data) and, per margin, the near share and near-winner share of each
    variant (means over seeds and the two classes of the margin's query)."""
    by_margin = lambda a: a.reshape(*a.shape[:2], -1, 2).mean(axis=(1, 3))  # noqa: E731  (4, R)
    out = {"position": list(range(r.bias.shape[-1])), "bias_positions": r.bias[0].mean(0).tolist(),
           "bias_shuffled": r.bias[1].mean(0).tolist(), "margin": list(r.config.margins)}
    for i, name in enumerate(VARIANTS):
        key = name.replace(", ", "_").replace(" ", "_")
        out[f"near_share_{key}"] = by_margin(r.share)[i].tolist()
        out[f"near_winner_{key}"] = by_margin(r.near_win.astype(float))[i].tolist()
    return out


def plot_positions(r: PositionsResult) -> Figure:
    """Learned bias against the distance to the query, and the near share against the margin."""
    figures.set_style()
    d = positions_table(r)
    fig, (ax_b, ax_s) = plt.subplots(1, 2, figsize=(10, 3.4))
    L = len(d["position"])
    dist = L - np.arange(L)
    W = positions.near_count(L + 1, r.config.near)
    ax_b.plot(dist, d["bias_positions"], label="positions carry information")
    ax_b.plot(dist, d["bias_shuffled"], label="shuffled (bag of tokens)")
    ax_b.axvspan(0.5, W + 0.5, color="C2", alpha=0.15, label="near zone")
    ax_b.set(xlabel="distance to the query", ylabel="learned bias p", title="positional bias (mean over seeds)")
    ax_b.legend(fontsize="small")
    for name, style in zip(VARIANTS, ("-o", "--o", "-s", "--s"), strict=True):
        key = name.replace(", ", "_").replace(" ", "_")
        ax_s.plot(d["margin"], d[f"near_share_{key}"], style, label=name)
    ax_s.set(xlabel="frequency margin rho (near / far)", ylabel="near share of distinct attention",
             title="attention on near distinct tokens")
    ax_s.legend(fontsize="small")
    fig.tight_layout()
    return fig


POSITIONS = Experiment(
    id="ch9-positions", config=PositionsConfig, result=PositionsResult, run=run_positions,
    verdicts=position_verdicts, work=lambda c: 4 * c.steps,
    figures=(FigureSpec(
        id="fig-ch9-positions",
        caption="A learnable positional bias on data whose distinct tokens partly sit next to the query. Left: "
                "the learned bias against the distance to the query, when positions carry information and when "
                "each sequence is shuffled. Right: the share of each class's attention over distinct tokens that "
                "lies on near tokens, against the frequency margin of the strongest near token over the strongest "
                "far one, for the four variants.",
        claims=("X3",), plot=plot_positions, table=positions_table),),
)

EXPERIMENTS = [POSITIONS]
RULES = [RULE_X2, RULE_X3]
