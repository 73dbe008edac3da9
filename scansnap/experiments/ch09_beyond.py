"""Chapter 9's experiments on Lemma 1 with the model options (X1) and on the residual connection (C33).

* :data:`GRADIENTS` (no figure): Lemma 1 extended to the residual connection, the positional bias and
  several heads (:meth:`scansnap.model_options.OptionsModel.loss_and_gradients`) against autograd on random
  float64 instances; **derivation** evidence for X1.
* :data:`OVERLAPS` (``fig-ch9-overlaps``): Theorem 1's overlaps ``E`` and Eqn 10's attention velocity with and
  without the residual on Syn-Medium (:mod:`scansnap.theory.residual`); **derivation** evidence for C33.
* :data:`FATES` (``fig-ch9-fates``): a family where a token is shared by classes of different queries
  (locally distinct, globally common) and a token is common among the classes of one query only, trained with
  and without the residual, in the long-sequence limit and sampled; **training** evidence for C33.

The positional bias and the heads have their own modules (``ch09_positions``, ``ch09_heads``).
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, train
from scansnap._checks import check_int, check_positive
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.model import cross_entropy, token_counts
from scansnap.model_options import ModelOptions, OptionsModel
from scansnap.results import Config
from scansnap.theory import decoder
from scansnap.theory import residual as res
from scansnap.verdicts import Rule, Verdict, at_least, at_most

CHAPTER = "book/chapters/09-beyond"
OPTION_SETS = ("residual", "positional bias", "heads", "all three")


def _check_seeds(seeds: tuple[int, ...]) -> None:
    if not seeds:
        raise ValueError("seeds: must hold at least one seed")
    for s in seeds:
        check_int("seeds", s, low=0)


# ------------------------------------------------------------------------------------------------
# X1: Lemma 1 with the options, against autograd
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GradientConfig(Config):
    """Random instances per option set: ``instances`` of ``configs`` stacked models, ``M`` tokens, length ``T``,
    1..``max_batch`` sequences each (one batch per configuration), 2 heads, torch ``seed``."""

    instances: int = 300
    M: int = 11
    T: int = 9
    max_batch: int = 6
    configs: int = 2
    seed: int = 0
    PRESETS = {"smoke": dict(instances=8), "book": dict(instances=100), "paper": {}}

    def __post_init__(self) -> None:
        check_int("instances", self.instances, low=1)
        check_int("M", self.M, low=2)
        check_int("T", self.T, low=2)
        check_int("max_batch", self.max_batch, low=1)
        check_int("configs", self.configs, low=1)
        check_int("seed", self.seed, low=0)

    def options(self) -> tuple[ModelOptions, ...]:
        """The option sets, in the order of :data:`OPTION_SETS`."""
        L = self.T - 1
        return (ModelOptions(residual=True), ModelOptions(positions=L), ModelOptions(heads=2),
                ModelOptions(residual=True, positions=L, heads=2))


@dataclass(frozen=True)
class GradientCheck:
    """``errors`` ``(len(OPTION_SETS), instances)``: max abs difference of loss and every gradient."""

    config: GradientConfig
    errors: np.ndarray


def run_gradients(config: GradientConfig, progress: Progress | None = None) -> GradientCheck:
    """Gaussian parameters (scale 2) and uniform tokens; closed form against autograd of ``forward``."""
    gen = torch.Generator().manual_seed(config.seed)
    c, errors = config, []
    for options in c.options():
        lead = (c.configs, options.heads) if options.heads > 1 else (c.configs,)
        row = []
        for _ in range(c.instances):
            B = int(torch.randint(1, c.max_batch + 1, (), generator=gen))
            Y, Z = (2 * torch.randn(*lead, c.M, c.M, generator=gen, dtype=torch.float64) for _ in range(2))
            P = torch.randn(*lead, options.positions, generator=gen, dtype=torch.float64) if options.positions else None
            x = torch.randint(c.M, (c.configs, B, c.T), generator=gen)
            n = torch.randint(c.M, (c.configs, B), generator=gen)
            model = OptionsModel.from_params(Y, Z, options, P)
            closed = model.loss_and_gradients(x[..., -1], x[..., :-1] if P is not None else
                                              token_counts(x[..., :-1], c.M), n)
            loss = cross_entropy(model(x)[0], n)
            loss.sum().backward()
            auto = [loss.detach()] + [p.grad for p in model.parameters_list()]
            row.append(max(float((a - b).abs().max()) for a, b in zip(closed, auto, strict=True)))
            if progress is not None:
                progress(1)
        errors.append(row)
    return GradientCheck(config, np.array(errors))


RULE_X1 = Rule("X1", "derivation", (
    at_most("max_error", "max |closed form - autograd| over option sets and instances (float64)", 1e-10, 1e-6),
    at_least("instances", "random instances per option set", 100, 10),
), note="The chapter's sympy cells prove the extended identities; this rule judges the library code.")


def gradient_verdicts(check: GradientCheck) -> list[Verdict]:
    """X1 from the comparison (the error of each option set is kept as context)."""
    c = check.config
    protocol = (f"{c.instances} random float64 instances per option set ({', '.join(OPTION_SETS)}): M = {c.M}, "
                f"T = {c.T}, {c.configs} stacked configurations with their own 1-{c.max_batch} sequences, Gaussian "
                f"Y, Z, bias (scale 2, 1), 2 heads, torch seed {c.seed}; closed form vs autograd")
    per = {f"error_{name.split()[0]}": float(e.max()) for name, e in zip(OPTION_SETS, check.errors, strict=True)}
    numbers = {"max_error": float(check.errors.max()), "instances": c.instances, **per}
    return [RULE_X1.judge(numbers, protocol=protocol, link=f"{CHAPTER}.html#lemma-1-extended")]


GRADIENTS = Experiment(id="ch9-gradients", chapter=CHAPTER, config=GradientConfig, result=GradientCheck,
                       run=run_gradients, verdicts=gradient_verdicts, work=lambda c: 4 * c.instances)

# ------------------------------------------------------------------------------------------------
# C33, derivation: Theorem 1's overlaps and Eqn 10 with the residual
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OverlapConfig(Config):
    """Syn-Medium with ``num_queries`` queries; attention logits 0 and Gaussian of each of ``z_scales``
    (torch ``seed``); Theorem 1's decoder at state ``h``."""

    num_queries: tuple[int, ...] = (3, 5, 10)
    z_scales: tuple[float, ...] = (0.0, 0.3, 1.0)
    h: float = 0.05
    seed: int = 0
    PRESETS = {"smoke": dict(num_queries=(3,), z_scales=(0.0, 0.3)), "book": dict(num_queries=(3, 5)), "paper": {}}

    def __post_init__(self) -> None:
        for q in self.num_queries:
            check_int("num_queries", q, low=2)
        if not self.num_queries or not self.z_scales or min(self.z_scales) < 0:
            raise ValueError("z_scales: must hold at least one scale >= 0 (and num_queries one count)")
        check_positive("h", self.h)
        check_int("seed", self.seed, low=0)


@dataclass(frozen=True)
class OverlapResult:
    """One row per (number of queries, logit scale): ``queries``, ``scales``; ``formula_error`` (derived
    ``E`` vs ``V^T V - I``), ``eqn10_error`` (residual Eqn 10 vs the exact gradient, relative),
    ``cross_plain``, ``cross_residual`` (share of the attention velocity from classes of other queries);
    ``E_plain``, ``E_residual`` ``(K, K)``: overlaps of the first family at ``Z = 0``."""

    config: OverlapConfig
    queries: np.ndarray
    scales: np.ndarray
    formula_error: np.ndarray
    eqn10_error: np.ndarray
    cross_plain: np.ndarray
    cross_residual: np.ndarray
    E_plain: np.ndarray
    E_residual: np.ndarray


def _cross_share(same: torch.Tensor, cross: torch.Tensor) -> float:
    return float(cross.norm() / (same.norm() + cross.norm()))


def run_overlaps(config: OverlapConfig, progress: Progress | None = None) -> OverlapResult:
    """Every (q, scale): the derived overlaps, residual Eqn 10 against the exact gradient of the model with the
    residual at Theorem 1's decoder, and the cross-query share of the velocity with and without the residual."""
    gen = torch.Generator().manual_seed(config.seed)
    rows, Es = [], []
    for q in config.num_queries:
        classes = data.syn_medium(q)
        M = classes.M
        gamma = float(decoder.gamma_of_h(config.h, M))
        for scale in config.z_scales:
            Z = scale * torch.randn(M, M, generator=gen, dtype=torch.float64)
            V = res.residual_inputs(classes, Z)
            E = V.T @ V - torch.eye(classes.K, dtype=torch.float64)
            formula = float((E - res.residual_overlap_formula(classes, Z)).abs().max())
            model = OptionsModel.from_params(res.residual_decoder(classes, Z, config.h)[None], Z[None],
                                             ModelOptions(residual=True))
            gZ = model.loss_and_gradients(classes.query, classes.probs, classes.next)[2][0]
            same, cross = res.residual_zdot(classes, Z, gamma)
            eqn10 = float((same + cross + gZ).abs().max() / gZ.abs().max())
            plain = res.residual_zdot(classes, Z, gamma, residual=False)
            rows.append((q, scale, formula, eqn10, _cross_share(*plain), _cross_share(same, cross)))
            if not Es:
                Es = [torch.from_numpy(decoder.gram(decoder.unit_inputs(classes, Z)[0])).numpy(), E.numpy()]
            if progress is not None:
                progress(1)
    cols = list(zip(*rows, strict=True))
    return OverlapResult(config, *(np.array(c) for c in cols), E_plain=Es[0], E_residual=Es[1])


RULE_C33_DERIVATION = Rule("C33", "derivation", (
    at_most("formula_error", "max |derived overlap E with the residual - V^T V + I|", 1e-12, 1e-8),
    at_most("eqn10_error", "max relative |residual Eqn 10 - exact gradient| at Theorem 1's decoder", 1e-10, 1e-6),
    at_most("cross_residual", "largest share of the attention velocity from classes of other queries, with the "
            "residual", 0.05, 0.2),
    at_most("cross_reduction", "that share with the residual over the share without it (smallest family)", 0.1, 0.3),
), note="Theorem 1's form of the back-propagated gradient is exact at the decoder used (Theorem 5), so the "
        "split of Eqn 10 by queries is exact; the shares are measured on Syn-Medium.")


def overlap_verdicts(r: OverlapResult) -> list[Verdict]:
    """C33 on derivation evidence."""
    c = r.config
    protocol = (f"Syn-Medium with q in {list(c.num_queries)} queries, Z = 0 and Gaussian Z of scales "
                f"{list(c.z_scales)} (seed {c.seed}), Theorem 1's decoder at h = {c.h}; sympy derivation in the "
                "chapter, closed forms against the model's exact gradient")
    ratio = float(np.max(r.cross_residual / r.cross_plain))
    numbers = {"formula_error": float(r.formula_error.max()), "eqn10_error": float(r.eqn10_error.max()),
               "cross_residual": float(r.cross_residual.max()), "cross_reduction": ratio,
               "cross_plain_min": float(r.cross_plain.min())}
    return [RULE_C33_DERIVATION.judge(numbers, protocol=protocol, link=f"{CHAPTER}.html#numerical-check")]


def overlap_table(r: OverlapResult) -> dict:
    """Per (q, scale): the errors and cross-query shares; and the two overlap matrices of the figure."""
    return {"rows": {"num_queries": r.queries.tolist(), "z_scale": r.scales.tolist(),
                     "formula_error": r.formula_error.tolist(), "eqn10_error": r.eqn10_error.tolist(),
                     "cross_share_plain": r.cross_plain.tolist(), "cross_share_residual": r.cross_residual.tolist()},
            "E_plain": r.E_plain.tolist(), "E_residual": r.E_residual.tolist()}


def plot_overlaps(r: OverlapResult) -> Figure:
    """Overlaps without and with the residual, and the cross-query share of the attention velocity."""
    figures.set_style()
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), gridspec_kw={"width_ratios": [1, 1, 1.3]})
    for ax, E, title in ((axes[0], r.E_plain, "no residual"), (axes[1], r.E_residual, "residual")):
        im = ax.imshow(E, vmin=0, vmax=1, cmap="viridis")
        ax.set(title=f"overlaps E, {title}", xlabel="class k", ylabel="class n")
    fig.colorbar(im, ax=axes[1], fraction=0.046)
    labels = [f"q={q}, s={s:g}" for q, s in zip(r.queries, r.scales, strict=True)]
    x = np.arange(len(labels))
    axes[2].bar(x - 0.2, r.cross_plain, 0.4, label="no residual")
    axes[2].bar(x + 0.2, r.cross_residual, 0.4, label="residual")
    axes[2].set_xticks(x, labels, rotation=45, ha="right", fontsize="small")
    axes[2].set(ylabel="cross-query share", title="Eqn 10 velocity from other queries", ylim=(0, 1))
    axes[2].legend(fontsize="small")
    fig.tight_layout()
    return fig


OVERLAPS = Experiment(
    id="ch9-overlaps", chapter=CHAPTER, config=OverlapConfig, result=OverlapResult, run=run_overlaps,
    verdicts=overlap_verdicts, work=lambda c: len(c.num_queries) * len(c.z_scales),
    figures=(FigureSpec(
        id="fig-ch9-overlaps",
        caption="Theorem 1's overlaps between the classes of Syn-Medium at uniform attention, without and with "
                "the residual connection, and the share of Eqn 10's attention velocity that comes from classes "
                "of other queries, per number of queries and scale of the attention logits.",
        claims=("C33",), plot=plot_overlaps, table=overlap_table),),
)

# ------------------------------------------------------------------------------------------------
# C33, training: local and global fates
# ------------------------------------------------------------------------------------------------


def cross_query_family(distinct: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0), shared: float = 1.0):
    """Two queries A, B with two classes each (A1, A2, B1, B2). Token 0 is held by A1 and B1, token 1 by A2
    and B2 (each locally distinct, globally common); token 2 by A1 and A2, token 3 by B1 and B2 (common
    within one query, absent from the other); then each class's own distinct tokens with weights ``distinct``."""
    L = 4 + 4 * len(distinct)
    w = torch.zeros(4, L, dtype=torch.float64)
    for n, (s, c) in enumerate(((0, 2), (1, 2), (0, 3), (1, 3))):
        w[n, s] = w[n, c] = shared
        w[n, 4 + n * len(distinct): 4 + (n + 1) * len(distinct)] = torch.tensor(distinct, dtype=torch.float64)
    M = L + 2 + 4
    probs = torch.zeros(4, M, dtype=torch.float64)
    probs[:, :L] = w / w.sum(1, keepdim=True)
    return data.SequenceClasses(M=M, query=torch.tensor([L, L, L + 1, L + 1]), next=torch.arange(L + 2, M),
                                probs=probs)


@dataclass(frozen=True)
class FatesConfig(Config):
    """Training on :func:`cross_query_family` from ``Z(0) = Y(0) = 0``, SGD with momentum: in the limit with each
    ``(eta_Y, eta_Z)`` of ``etas``, and sampled (``batch``, ``T``) with ``seeds`` at the first pair."""

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
        _check_seeds(self.seeds)
        check_int("batch", self.batch, low=1)
        check_int("T", self.T, low=2)
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum: must be in [0, 1); got {self.momentum}")


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


def run_fates(config: FatesConfig, progress: Progress | None = None) -> FatesResult:
    """Each variant (no residual, residual) in the limit (all pairs stacked) and sampled (all seeds stacked)."""
    classes, c = cross_query_family(), config
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
    base = (f"cross_query_family (2 queries x 2 classes, M = {r.global_roles.shape[0]}), zero init, SGD momentum "
            f"{c.momentum}, {c.steps} steps, with and without the residual")
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

EXPERIMENTS = [GRADIENTS, OVERLAPS, FATES]
RULES = [RULE_X1, RULE_C33_DERIVATION, RULE_C33_POPULATION, RULE_C33_SAMPLED]
