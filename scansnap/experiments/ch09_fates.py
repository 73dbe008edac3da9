"""Chapter 9's training runs on the residual connection (claim C33, **training** evidence).

:data:`FATES` (``fig-ch9-fates``) trains :func:`scansnap.theory.residual.cross_query_family`, a family where a token
is shared by classes of different queries (locally distinct, globally common) and a token is common among the
classes of one query only, with and without the residual, in the long-sequence limit and sampled, and records
the sign of every (query row, token) entry's net logit change against the global and the local rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import figures, train
from scansnap._checks import check_fraction, check_int, check_positive, check_seeds
from scansnap._threads import one_thread
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.ch09_beyond import CHAPTER
from scansnap.model_options import ModelOptions
from scansnap.results import Config
from scansnap.theory import residual as res
from scansnap.verdicts import Rule, Verdict, at_least


@dataclass(frozen=True)
class FatesConfig(Config):
    """Training on :func:`~scansnap.theory.residual.cross_query_family` from ``Z(0) = Y(0) = 0``, SGD with
    momentum: in the limit with each ``(eta_Y, eta_Z)`` of ``etas``, and sampled (``batch``, ``T``) with ``seeds``
    at the first pair."""

    steps: int = 300
    etas: tuple[tuple[float, float], ...] = ((1.0, 1.0), (2.0, 0.5), (1.0, 0.25))
    seeds: tuple[int, ...] = tuple(range(1, 9))
    batch: int = 128
    T: int = 128
    momentum: float = 0.9
    PRESETS = {"smoke": dict(steps=20, seeds=(1, 2), batch=32, T=64),
               "book": dict(etas=((1.0, 1.0), (2.0, 0.5)), seeds=(1, 2, 3, 4)), "paper": {}}

    def __post_init__(self) -> None:
        check_int("steps", self.steps, low=1)
        if not self.etas:
            raise ValueError("etas: must hold at least one (eta_Y, eta_Z) pair")
        for pair in self.etas:
            for v in pair:
                check_positive("etas", v)
        check_seeds("seeds", self.seeds)
        check_int("batch", self.batch, low=1)
        check_int("T", self.T, low=2)
        check_fraction("momentum", self.momentum)


@dataclass(frozen=True)
class FatesResult:
    """Net logit changes ``z(final) - z(0)``: ``population`` ``(2, P, M, M)`` (no residual, residual; one per
    learning-rate pair), ``sampled`` ``(2, S, M, M)`` (one per seed); ``global_roles``, ``local_roles``
    ``(M, M)`` (:func:`scansnap.theory.residual.token_roles`)."""

    config: FatesConfig
    population: np.ndarray
    sampled: np.ndarray
    global_roles: np.ndarray
    local_roles: np.ndarray


@one_thread()  # tiny tensors: a second thread only adds contention (and changes the sums' order)
def run_fates(config: FatesConfig, progress: Progress | None = None) -> FatesResult:
    """Each variant (no residual, residual) in the limit (all pairs stacked) and sampled (all seeds stacked)."""
    classes, c = res.cross_query_family(), config
    glob, loc = res.token_roles(classes)
    pop, smp = [], []
    for options in (None, ModelOptions(residual=True)):
        kw = dict(steps=c.steps, momentum=c.momentum, snapshot_steps=[0, c.steps], options=options, callback=progress)
        eY, eZ = [e[0] for e in c.etas], [e[1] for e in c.etas]
        pop.append(train.train(classes, eY, eZ, limit="population", **kw).Z.numpy())
        smp.append(train.train(classes, c.etas[0][0], c.etas[0][1], seed=list(c.seeds), batch=c.batch, T=c.T,
                               **kw).Z.numpy())
    return FatesResult(c, np.stack(pop), np.stack(smp), glob.numpy(), loc.numpy())


def fate_numbers(dz: np.ndarray, r: FatesResult) -> dict[str, float]:
    """Shares over runs and entries: ``disc_local`` (entries locally distinct but globally common that rise,
    with the residual), ``disc_global_plain`` (the same entries fall without it), ``local_all`` (every entry
    follows the local rule, with the residual), ``global_all_plain`` (the global rule, without it)."""
    glob, loc = torch.from_numpy(r.global_roles), torch.from_numpy(r.local_roles)
    disc = ((glob != loc)[loc != 0]).numpy()
    plain, resid = torch.from_numpy(dz[0]), torch.from_numpy(dz[1])
    local_res = res.role_agreement(resid, loc)
    return {"disc_local": float(local_res[:, disc].mean()),
            "disc_global_plain": float(res.role_agreement(plain, glob)[:, disc].mean()),
            "local_all": float(local_res.mean()),
            "global_all_plain": float(res.role_agreement(plain, glob).mean()),
            "runs": int(dz.shape[1]), "discriminating_entries": int(disc.sum())}


_FATE_CRITERIA = (
    at_least("disc_local", "share of locally distinct, globally common entries that rise with the residual", 0.9, 0.6),
    at_least("disc_global_plain", "share of the same entries that fall without the residual (the contrast)", 0.9, 0.6,
             required=False),
    at_least("local_all", "share of all entries that follow the local rule with the residual (Theorem 2 per "
             "query)", 0.9, 0.6, required=False),
)
_FATE_NOTE = ("Fate = sign of the net logit change of each (query row, token) entry; the local rule classifies a "
              "token over the classes of that query only, the global rule over all classes.")
RULE_C33_POPULATION = Rule("C33", "training-population", _FATE_CRITERIA, note=_FATE_NOTE)
RULE_C33_SAMPLED = Rule("C33", "training-sampled", _FATE_CRITERIA, note=_FATE_NOTE)


def fate_verdicts(r: FatesResult) -> list[Verdict]:
    """C33 on training evidence, in the limit and sampled."""
    c, link = r.config, f"{CHAPTER}.html#training-local-or-global-fates"
    base = (f"theory.residual.cross_query_family (2 queries x 2 classes, M = {r.global_roles.shape[0]}), zero init, "
            f"SGD momentum {c.momentum}, {c.steps} steps, with and without the residual")
    return [
        RULE_C33_POPULATION.judge(fate_numbers(r.population, r), link=link,
                                  protocol=f"{base}; long-sequence limit, (eta_Y, eta_Z) in {list(c.etas)}"),
        RULE_C33_SAMPLED.judge(fate_numbers(r.sampled, r), link=link,
                               protocol=f"{base}; sampled, batch {c.batch}, T = {c.T}, eta = {c.etas[0]}, "
                                        f"seeds {list(c.seeds)}"),
    ]


def fates_table(r: FatesResult) -> dict[str, np.ndarray]:
    """Row A's entries: token, roles, net changes (limit, first pair; sampled, mean over seeds) per variant."""
    row = int(np.nonzero(r.local_roles.any(1))[0][0])
    tokens = np.nonzero(r.local_roles[row])[0]
    return {"token": tokens, "global_role": r.global_roles[row, tokens], "local_role": r.local_roles[row, tokens],
            "dz_plain_limit": r.population[0, 0, row, tokens], "dz_residual_limit": r.population[1, 0, row, tokens],
            "dz_plain_sampled": r.sampled[0][:, row, tokens].mean(0),
            "dz_residual_sampled": r.sampled[1][:, row, tokens].mean(0)}


def plot_fates(r: FatesResult) -> Figure:
    """Net logit change of query A's tokens without and with the residual (limit and sampled)."""
    figures.set_style()
    d = fates_table(r)
    names = ["s1", "s2", "c_A"] + [f"d{i}" for i in range(len(d["token"]) - 3)]
    x = np.arange(len(names))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), sharey=True)
    for ax, kind in zip(axes, ("limit", "sampled"), strict=True):
        ax.bar(x - 0.2, d[f"dz_plain_{kind}"], 0.4, label="no residual")
        ax.bar(x + 0.2, d[f"dz_residual_{kind}"], 0.4, label="residual")
        ax.axhline(0, color="k", lw=0.8)
        ax.set_xticks(x, names, fontsize="small")
        ax.set(title=f"query A, {kind}", xlabel="token", ylabel="net change of z")
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    return fig


FATES = Experiment(
    id="ch9-fates", chapter=CHAPTER, config=FatesConfig, result=FatesResult, run=run_fates, verdicts=fate_verdicts,
    work=lambda c: 4 * c.steps,
    figures=(FigureSpec(
        id="fig-ch9-fates",
        caption="Net change of query A's attention logits after training, without and with the residual "
                "connection, in the long-sequence limit and with sampled sequences (mean over seeds). s1, s2: "
                "tokens shared with a class of query B (locally distinct, globally common); c_A: common to both "
                "classes of query A and absent from B; d: distinct tokens of A1 and A2.",
        claims=("C33",), plot=plot_fates, table=fates_table),),
)

EXPERIMENTS = [FATES]
RULES = [RULE_C33_POPULATION, RULE_C33_SAMPLED]
