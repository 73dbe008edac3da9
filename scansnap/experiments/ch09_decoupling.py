"""Chapter 9's training test of C33a: the cross-query share of the attention velocity at the **trained** decoder.

The derivation of C33a (:mod:`scansnap.experiments.ch09_beyond`) reads the share of Eqn 10's velocity that comes from
classes of other queries at Theorem 1's decoder ``Y = V (I + E)^{-1} W`` at ``Z = 0``, where ``I + E`` with the
residual is nearly singular (``lambda_min ~ 0.015`` on Syn-Medium): a decoder training never reaches. Here the share
is read at the decoders training does reach.

From ``Y(0) = 0`` the decoder is a sum of the updates each class made, and SGD with momentum is linear in the
gradients, so ``Y(t) = sum_q Y_q(t)`` exactly, with ``Y_q`` the part built by the samples whose query is ``q``
(:func:`train_by_query` tracks it beside the trainer's own update). The attention velocity of query ``m``
(Lemma 1 extended, summed over the classes ``n`` of ``m`` in the long-sequence limit) is linear in the decoder through
``g_n = Y D_n``; splitting ``Y = Y_m + (Y - Y_m)`` splits it into the part from classes of the same query and the part
from classes of other queries (:func:`velocity_by_query`). :data:`DECOUPLING` trains Syn-Medium, with and without the
residual, in the long-sequence limit and on sampled sequences, over seeds (``Z(0) ~ N(0, z_std^2)``, so that runs in
the limit differ too), and measures that share at the end and after the first update; **training** evidence on C33a
(a claim of the theory, so shown beside its derivation), judged against the arm without the residual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, stats, train
from scansnap._threads import one_thread
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.model import token_counts
from scansnap.model_options import ModelOptions, OptionsModel, head_params
from scansnap.params import Fraction, Int, Positive, Seeds, param, seed_list
from scansnap.results import Config
from scansnap.verdicts import Rule, Verdict, at_most

ARMS = ("no residual", "residual")
LIMITS = ("population", "sampled")


@dataclass(frozen=True)
class DecouplingConfig(Config):
    """Syn-Medium with ``num_query`` queries; ``steps`` of SGD (``momentum``) at ``eta_Y``, ``eta_Z`` from ``Y(0) = 0``
    and ``Z(0) ~ N(0, z_std^2)``, one run per seed of ``seeds``; sampled runs draw ``batch`` sequences of length
    ``T`` per step."""

    num_query: int = param(3, Int(low=2))
    steps: int = param(300, Int(low=1))
    eta_Y: float = param(1.0, Positive())
    eta_Z: float = param(1.0, Positive())
    momentum: float = param(0.9, Fraction())
    z_std: float = param(0.1, Positive())  # > 0: runs in the long-sequence limit differ only by Z(0)
    seeds: tuple[int, ...] = param(tuple(range(1, 11)), Seeds(), seed_list)
    batch: int = param(128, Int(low=1))
    T: int = param(128, Int(low=2))
    PROTOCOL = ("Syn-Medium ({num_query} queries), with and without the residual, Y(0) = 0, Z(0) ~ N(0, {z_std:g}^2), "
                "{seeds}, {steps} SGD steps (momentum {momentum}), eta_Y = {eta_Y}, eta_Z = {eta_Z}; long-sequence "
                "limit and sampled (batch {batch}, T = {T}); decoder split by the query of the samples that built it")
    PRESETS = {"smoke": dict(steps=20, seeds=(1, 2, 3), batch=32, T=32), "book": {}, "paper": {}}
    GATED: ClassVar[tuple[str, ...]] = ("steps", "seeds", "batch", "T")
    """This book's full protocol (the paper ran no such experiment): a run below it carries the cuts."""


@dataclass(frozen=True)
class Traced:
    """A stacked training run with its decoder split by query: ``Y``, ``Z`` ``(C, M, M)`` at the end, ``parts``
    ``(C, Q, M, M)`` (``parts.sum(1) == Y``), and the same after the first update (``Y1``, ``Z1``, ``parts1``)."""

    Y: torch.Tensor
    Z: torch.Tensor
    parts: torch.Tensor
    Y1: torch.Tensor
    Z1: torch.Tensor
    parts1: torch.Tensor


def _decoder_grads_by_query(model: OptionsModel, query: torch.Tensor, weights: torch.Tensor, target: torch.Tensor,
                            queries: torch.Tensor) -> torch.Tensor:
    """``dL/dY`` ``(C, Q, M, M)`` from the samples of each query of ``queries`` ``(Q,)``: Lemma 1's ``v~ D^T``
    summed over those samples (batch mean), one head; the parts sum to the whole gradient."""
    C, M = model.configs, model.M
    Y, Z = model.Y.detach(), model.Z.detach()
    query = query.expand(C, -1)
    f = data.attended(Z[torch.arange(C)[:, None], query], weights.expand(C, -1, -1))  # (C, B, M)
    v = f + torch.nn.functional.one_hot(query, M).to(f.dtype) if model.options.residual else f
    vt = v / v.norm(dim=-1, keepdim=True)
    D = torch.softmax(torch.einsum("cbm,cmj->cbj", vt, Y), -1) - torch.nn.functional.one_hot(
        target.expand(C, -1), M).to(f.dtype)
    mask = (query[:, None, :] == queries[None, :, None]).to(f.dtype)  # (C, Q, B)
    return torch.einsum("cqb,cbm,cbj->cqmj", mask, vt, D) / query.shape[1]


def train_by_query(classes: data.SequenceClasses, options: ModelOptions, c: DecouplingConfig, limit: str) -> Traced:
    """Train every seed of ``c`` at once (the trainer's rule: :class:`scansnap.train.MomentumSGD`, Lemma 1's
    gradients, the same draws from each seed's generator as :func:`scansnap.train.train`) and carry beside ``Y`` its
    parts built by the samples of each query (momentum applied to each part's gradients, so the parts sum to ``Y``)."""
    gens = [torch.Generator().manual_seed(s) for s in c.seeds]
    inits = [head_params(classes.M, options, "zero", g) for g in gens]
    model = OptionsModel.from_params(torch.stack([p[0] for p in inits]), torch.stack([p[1] for p in inits]), options)
    C, queries = len(c.seeds), torch.unique(classes.query)
    rates = [torch.full((C,), c.eta_Y, dtype=torch.float64), torch.full((C,), c.eta_Z, dtype=torch.float64)]
    opt = train.MomentumSGD([model.Y, model.Z], rates, momentum=c.momentum)
    parts = torch.zeros(C, len(queries), classes.M, classes.M, dtype=torch.float64)
    buf, first = None, None
    for t in range(c.steps):
        if limit == "population":
            query, weights, target = (classes.query.expand(C, -1), classes.probs.expand(C, -1, -1),
                                      classes.next.expand(C, -1))
        else:
            drawn = [classes.sample(c.batch, c.T, g) for g in gens]
            x, n = torch.stack([d[0] for d in drawn]), torch.stack([d[1] for d in drawn])
            query, weights, target = x[..., -1], token_counts(x[..., :-1], classes.M).to(torch.float64), classes.next[n]
        grad = _decoder_grads_by_query(model, query, weights, target, queries)
        _, model.Y.grad, model.Z.grad = model.loss_and_gradients(query, weights, target)
        opt.step()
        buf = grad if buf is None else buf.mul_(c.momentum).add_(grad)
        parts -= c.eta_Y * buf
        if t == 0:
            first = (model.Y.detach().clone(), model.Z.detach().clone(), parts.clone())
    return Traced(model.Y.detach().clone(), model.Z.detach().clone(), parts, *first)


def velocity_by_query(classes: data.SequenceClasses, Y: torch.Tensor, Z: torch.Tensor, parts: torch.Tensor,
                      residual: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The long-sequence attention velocity (minus the gradient of the loss in ``Z``, classes weighted ``1/K``) of
    each query's row, split by who built the decoder.

    Args:
        classes: the family; ``Y``, ``Z`` ``(C, M, M)``; ``parts`` ``(C, Q, M, M)``, the decoder's parts per query
            (in the order of ``torch.unique(classes.query)``); residual: the model's option.

    Returns:
        ``(same, cross)``, each ``(C, Q, M)``: query ``q``'s velocity row from ``parts[:, q]`` (classes of the same
        query) and from ``Y - parts[:, q]`` (classes of other queries); they sum to the whole velocity.
    """
    f = classes.population(Z)  # (C, K, M)
    v = f + torch.nn.functional.one_hot(classes.query, classes.M).to(f.dtype) if residual else f
    norm = v.norm(dim=-1, keepdim=True)
    vt = v / norm
    D = torch.nn.functional.one_hot(classes.next, classes.M).to(f.dtype) - torch.softmax(
        torch.einsum("ckm,cmj->ckj", vt, Y), -1)  # e_n - alpha: the descent direction
    q_of = torch.searchsorted(torch.unique(classes.query), classes.query)  # (K,) index of each class's query
    out = []
    for decoder in (parts[:, q_of], Y[:, None] - parts[:, q_of]):  # (C, K, M, M): same-query, other-query part
        g = torch.einsum("ckmj,ckj->ckm", decoder, D)
        r = (g - vt * (vt * g).sum(-1, keepdim=True)) / norm
        rows = f * (r - (f * r).sum(-1, keepdim=True)) / classes.K
        out.append(torch.zeros(Y.shape[0], parts.shape[1], classes.M, dtype=f.dtype).index_add_(1, q_of, rows))
    return out[0], out[1]


def cross_shares(classes: data.SequenceClasses, Y: torch.Tensor, Z: torch.Tensor, parts: torch.Tensor,
                 residual: bool) -> np.ndarray:
    """``(C, Q)``: share ``||cross|| / (||same|| + ||cross||)`` of each query's velocity row from classes of other
    queries (:func:`velocity_by_query`)."""
    same, cross = velocity_by_query(classes, Y, Z, parts, residual)
    s, x = same.norm(dim=-1), cross.norm(dim=-1)
    return (x / (s + x)).numpy()


@dataclass(frozen=True)
class DecouplingResult:
    """Per (arm: no residual, residual; limit: population, sampled; seed; query), each ``(2, 2, S, Q)``:
    ``share`` (cross-query share of the velocity at the trained decoder), ``share_first`` (after the first update);
    ``lambda_min`` ``(2, 2, S)``: smallest eigenvalue of ``I + E`` at the trained attention (E of the arm's inputs)."""

    config: DecouplingConfig
    share: np.ndarray
    share_first: np.ndarray
    lambda_min: np.ndarray


def _lambda_min(classes: data.SequenceClasses, Z: torch.Tensor, residual: bool) -> np.ndarray:
    f = classes.population(Z)
    v = f + torch.nn.functional.one_hot(classes.query, classes.M).to(f.dtype) if residual else f
    vt = v / v.norm(dim=-1, keepdim=True)
    return torch.linalg.eigvalsh(vt @ vt.mT).min(-1).values.numpy()  # I + E = V^T V


@one_thread()  # small tensors: a second thread only adds contention (and changes the sums' order)
def run_decoupling(config: DecouplingConfig, progress: Progress | None = None) -> DecouplingResult:
    """Both arms, both limits, all seeds stacked per (arm, limit)."""
    classes = data.syn_medium(config.num_query)
    S, Q = len(config.seeds), config.num_query
    share, share1, lam = np.zeros((2, 2, S, Q)), np.zeros((2, 2, S, Q)), np.zeros((2, 2, S))
    for a, residual in enumerate((False, True)):
        options = ModelOptions(residual=residual, z_std=config.z_std)
        for i, limit in enumerate(LIMITS):
            tr = train_by_query(classes, options, config, limit)
            share[a, i] = cross_shares(classes, tr.Y, tr.Z, tr.parts, residual)
            share1[a, i] = cross_shares(classes, tr.Y1, tr.Z1, tr.parts1, residual)
            lam[a, i] = _lambda_min(classes, tr.Z, residual)
            if progress is not None:
                progress(1)
    return DecouplingResult(config, share, share1, lam)


@dataclass(frozen=True)
class TrainedDecoupling:
    """C33a's measures at the trained decoders of one arm and limit, over runs (seeds): ``cross_share_hi`` (per run
    the largest share over queries of the velocity from classes of other queries; upper end of its 95% t interval
    over runs), ``reduction_hi`` (per run that share over the same share in the run without the residual, same seed;
    upper end), ``cross_share`` (mean), ``cross_share_other_arm`` (mean in the other arm), ``cross_share_first``
    (mean after the first update), ``lambda_min`` (mean smallest eigenvalue of ``I + E`` at the trained attention),
    ``runs``, ``entries`` (runs times queries)."""

    cross_share_hi: float
    reduction_hi: float
    cross_share: float
    cross_share_other_arm: float
    cross_share_first: float
    lambda_min: float
    runs: int
    entries: int


def trained_decoupling(r: DecouplingResult, limit: str, *, residual: bool = True) -> TrainedDecoupling:
    """:class:`TrainedDecoupling` of one arm (``residual``; the other arm is the control) in ``limit``."""
    i, a = LIMITS.index(limit), int(residual)
    share, plain = r.share[a, i].max(-1), r.share[0, i].max(-1)  # (S,): largest over queries
    return TrainedDecoupling(stats.t_interval(share)[2], stats.t_interval(share / plain)[2], float(share.mean()),
                             float(r.share[1 - a, i].max(-1).mean()), float(r.share_first[a, i].max(-1).mean()),
                             float(r.lambda_min[a, i].mean()), share.size, r.share[a, i].size)


_CRITERIA = (
    at_most("cross_share_hi", "largest share (over queries) of the attention velocity from classes of other queries "
            "at the trained decoder, with the residual: upper end of its 95% interval over runs", 0.05, 0.2),
    at_most("reduction_hi", "that share over the share without the residual (same seed): upper end of its 95% "
            "interval over runs", 0.1, 0.3),
)
_ALTERNATIVE = ("no decoupling: at the decoders training reaches, classes of other queries move a query's attention "
                "about as much as without the residual (a ratio near 1)")
_CONTROL = ("the other arm: the same measures on the model trained without the residual (same family, rates and "
            "seeds), where the classes of all queries share the common tokens")
PREMISE = ("Theorem 1's coupling (C9), through which the derivation reads the decoupling: it describes the decoder "
           "of Theorem 5 at Z = 0, with an ill-conditioned I + E, not the decoder training reaches")
_NOTE = ("The thresholds are those of C33a's derivation rule, read here at the far end of the interval over runs; the "
         "decoder is split exactly by the query of the samples that built it (from Y(0) = 0, momentum SGD is linear "
         "in the gradients). Step 0 is no control here: with Y(0) = 0 the velocity is zero; the share after the first "
         "update is kept as context.")
_STEPS = {"steps": "the decoupling forms as the decoder learns to tell the queries apart (after the first update the "
                   "cross-query share is still large); after fewer steps the decoder has not done so"}
RULE_C33A_POPULATION = Rule("C33a", "training-population", TrainedDecoupling, _CRITERIA, _ALTERNATIVE,
                            control=_CONTROL, premise=PREMISE, note=_NOTE, depends_on=_STEPS)
RULE_C33A_SAMPLED = Rule("C33a", "training-sampled", TrainedDecoupling, _CRITERIA, _ALTERNATIVE, control=_CONTROL,
                         premise=PREMISE + "; and the long-sequence limit (Lemma 2; here T is finite)", note=_NOTE,
                         depends_on=_STEPS)


def decoupling_verdicts(r: DecouplingResult) -> list[Verdict]:
    """C33a on training evidence, in the limit and sampled, each against the arm without the residual."""
    return [rule.judge(trained_decoupling(r, limit), r.config, control=trained_decoupling(r, limit, residual=False),
                       scope=scope, link=DECOUPLING.link())
            for rule, limit, scope in ((RULE_C33A_POPULATION, "population", "long-sequence limit"),
                                       (RULE_C33A_SAMPLED, "sampled", "sampled"))]


def decoupling_table(r: DecouplingResult) -> dict[str, np.ndarray]:
    """Per (arm, limit): the mean over runs of the largest cross-query share, at the end and after the first update,
    with the run-to-run standard deviation."""
    out: dict[str, list] = {k: [] for k in ("arm", "limit", "share", "share_std", "share_first", "lambda_min")}
    for a, arm in enumerate(ARMS):
        for i, limit in enumerate(LIMITS):
            s = r.share[a, i].max(-1)
            for key, value in (("arm", arm), ("limit", limit), ("share", s.mean()), ("share_std", s.std()),
                               ("share_first", r.share_first[a, i].max(-1).mean()),
                               ("lambda_min", r.lambda_min[a, i].mean())):
                out[key].append(value)
    return {k: np.array(v) for k, v in out.items()}


def plot_decoupling(r: DecouplingResult) -> Figure:
    """Cross-query share of the attention velocity per arm and limit (log scale), after the first update and at the
    end."""
    figures.set_style()
    d = decoupling_table(r)
    fig, ax = plt.subplots(figsize=(6.5, 3.7), layout="constrained")
    x = np.arange(len(LIMITS))
    for a, arm in enumerate(ARMS):
        rows = d["arm"] == arm
        ax.bar(x + (a - 0.5) * 0.38, d["share"][rows], 0.36, yerr=d["share_std"][rows], capsize=3,
               label=f"{arm}, trained")
        ax.plot(x + (a - 0.5) * 0.38, d["share_first"][rows], "k_", ms=18, mew=2,
                label="after the first update" if a else None)
    ax.set_xticks(x, ["long-sequence limit", f"sampled (T = {r.config.T})"])
    ax.set(ylabel="cross-query share of the velocity (log)", yscale="log", ylim=(1e-5, 2),
           title="Syn-Medium: who moves a query's attention")
    fig.legend(loc="outside lower center", ncol=3, fontsize="small")  # below the axes: inside, it sat on a bar
    return fig


DECOUPLING = Experiment(
    id="ch9-decoupling", config=DecouplingConfig, result=DecouplingResult, run=run_decoupling,
    verdicts=decoupling_verdicts, work=lambda c: 2 * len(LIMITS),
    figures=(FigureSpec(
        id="fig-ch9-decoupling",
        caption="Share of the attention velocity of a query that comes from the part of the decoder built by "
                "classes of other queries, at the decoders training reaches on Syn-Medium, without and with the "
                "residual connection, in the long-sequence limit and with sampled sequences (log scale; bars: mean "
                "over runs of the largest share over queries, with its standard deviation; dashes: after the first "
                "update).",
        claims=("C33a",), plot=plot_decoupling, table=decoupling_table),),
)

EXPERIMENTS = [DECOUPLING]
RULES = [RULE_C33A_POPULATION, RULE_C33A_SAMPLED]
