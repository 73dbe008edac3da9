"""Chapter 4's training experiment: the signs of Theorem 2 and Corollary 2 along training (C16-C18).

:data:`TRAINING` (``fig-ch4-fates``, ``fig-ch4-violations``) trains the families of
:func:`scansnap.theory.families.example_families` with the trainer (:func:`scansnap.train.train`) under
three protocols: the theorem's setting (gradient descent, ``eta_Y = 1 >> eta_Z = 0.1``, Assumption 1(c)),
equal learning rates, and the authors' released protocol (equal rates and momentum 0.9); each in the long-sequence
limit (``T = inf``) and with sampled sequences. It reads the logits back from the attention snapshots
(:func:`scansnap.theory.fates.logits_from_attention`) and counts how each logit moved between
consecutive steps (:func:`scansnap.theory.fates.fate_counts`). Its verdicts judge C16-C18 on
**training-population** evidence in the theorem's own setting (Theorem 2 is a statement about the
long-sequence limit); the sampled runs and the other protocols are reported with them, as measured context.
Each is also judged on a control from the same run, the same share on the *other* kind of token (a sign rule
blind to a token's kind would give the same share), and names the premise of Theorem 2 a miss points to.

The check of the statements themselves against the exact gradient (derivation evidence) and the
comparison of Eqn 10 with training (C15) are in :mod:`scansnap.experiments.ch04_eqn10`.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scansnap import figures
from scansnap.experiments.base import Experiment, FigureSpec
from scansnap.experiments.fates_training import LIMITS, TrainingConfig, TrainingResult, run_training, training_work
from scansnap.verdicts import Rule, Verdict, at_least, at_most


def wrong_share(counts: np.ndarray, wrong: str) -> float:
    """Share of moves (up or down; still entries excluded) that went ``wrong`` (``"up"`` or ``"down"``), over
    ``counts`` ``(..., 3)`` summed; nan if nothing moved."""
    total = np.asarray(counts).reshape(-1, 3).sum(0)
    moved = total[0] + total[1]
    return float(total[0 if wrong == "up" else 1] / moved) if moved else float("nan")


def rise_share(r: TrainingResult, family: str, token: int) -> float:
    """Share of steps (after the first, where ``gamma(0) = 0``) at which ``token``'s logit rose, ``T = inf``."""
    fl = next((x for x in r.logits if x.family == family), None)
    if fl is None or token not in fl.tokens.tolist():
        return float("nan")
    dz = np.diff(fl.population[:, fl.tokens.tolist().index(token)])[1:]
    return float((dz > r.config.tol).mean())


def shares(r: TrainingResult, kind: str, protocol: str, limit: str, families: tuple[str, ...] | None = None,
           wrong: str | None = None) -> float:
    """:func:`wrong_share` of distinct (``kind="distinct"``: down) or common (``"common"``: up) moves; ``wrong``
    (``"up"``/``"down"``) counts the other direction instead (the rules' controls)."""
    c = r.config
    j, k = [p.name for p in c.protocols].index(protocol), LIMITS.index(limit)
    rows = [c.counted.index(f) for f in (families or c.counted) if f in c.counted]
    counts = (r.distinct if kind == "distinct" else r.common)[rows, j, k]
    return wrong_share(counts, wrong or ("down" if kind == "distinct" else "up"))


@dataclass(frozen=True)
class DistinctSigns:
    """C16 in training: ``distinct_down_share``, the share of distinct-token logit moves that went down."""
    distinct_down_share: float


@dataclass(frozen=True)
class CommonSigns:
    """C17 in training: ``common_up_share``, the share of the single common token's logit moves that went up."""
    common_up_share: float


@dataclass(frozen=True)
class Corollary2Signs:
    """C18 in training: ``common_up_share`` (share of common-token logit moves that went up, symmetric family);
    ``asymmetric_rise_share`` (share of steps at which common token 0 of 'two common, asymmetric' rose)."""

    common_up_share: float
    asymmetric_rise_share: float


_WRONG = ("A wrong-way move is a logit step against the theorem's sign (|dz| > 1e-12; still entries, e.g. the "
          "first step from Y(0) = 0 where gamma = 0, are neither). The theorem claims every move has its sign: "
          "at most 1 in 1000 wrong verifies; up to 5% (a few noisy moves) partly verifies. Judged in the "
          "theorem's setting (T = inf, gradient descent, eta_Y >> eta_Z); sampled sequences and the authors' "
          "released protocol are outside its assumptions and are reported beside the verdict.")
_KIND = ("the same share on the other kind of token in the same run (theorem's setting, T = inf): a sign rule blind "
         "to a token's kind gives the same share")
_PREMISE = ("Theorem 1's back-propagated gradient in span F with positive beta (C9), under Assumption 1(c) "
            "(eta_Y >> eta_Z) in the long-sequence limit")
RULE_C16 = Rule("C16", "training-population", DistinctSigns, (
    at_most("distinct_down_share", "share of distinct-token logit moves that went down (theorem's setting, T = inf, "
            "all counted families)", 0.001, 0.05),),
    alternative="distinct logits that move either way (no sign rule): about half the moves down",
    control=_KIND + " (the common tokens' moves that went down)", premise=_PREMISE, note=_WRONG)
RULE_C17 = Rule("C17", "training-population", CommonSigns, (
    at_most("common_up_share", "share of moves of the single common token's logit that went up ('one common "
            "token', theorem's setting, T = inf)", 0.001, 0.05),),
    alternative="a single common token whose logit moves either way, or rises",
    control=_KIND + " (the distinct tokens' moves of 'one common token' that went up)", premise=_PREMISE, note=_WRONG)
RULE_C18 = Rule("C18", "training-population", Corollary2Signs, (
    at_most("common_up_share", "share of common-token logit moves that went up in the symmetric family "
            "('Syn-Medium, one query', theorem's setting, T = inf)", 0.001, 0.05),
    at_least("asymmetric_rise_share", "share of steps at which common token 0 of 'two common, asymmetric' rose "
             "(the claimed failure without symmetry)", 0.9, 0.5),
), alternative="common tokens that rise under symmetry, or symmetry that is not needed (the asymmetric common token "
               "falls like the symmetric ones)",
    control=_KIND + " (the distinct tokens' moves of 'Syn-Medium, one query' that went up; the rise share of its "
                    "symmetric common token 0)",
    premise=_PREMISE + ", and Corollary 2's symmetry conditions", note=_WRONG + " The second number judges 'without "
    "symmetry this can fail': the counterexample must rise at most steps (90% verifies, half partly), not once by "
    "noise.")


def training_verdicts(r: TrainingResult) -> list[Verdict]:
    c = r.config
    ctx = []
    for p in c.protocols:
        for limit in LIMITS:
            if p.name != "theorem" or limit != "population":
                ctx.append(f"{p.name} ({p.eta_Y:g}/{p.eta_Z:g}, momentum {p.momentum:g}, "
                           f"{'T = inf' if limit == 'population' else f'T = {c.T}, {len(c.seeds)} seeds'}): "
                           f"distinct down {shares(r, 'distinct', p.name, limit):.1%}, "
                           f"common up {shares(r, 'common', p.name, limit):.1%}")
    details, scope = "; ".join(ctx), "judged: the theorem's setting, T = inf"
    one, med = ("one common token",), ("Syn-Medium, one query",)

    def share(kind: str, families=None, wrong=None) -> float:
        return shares(r, kind, "theorem", "population", families, wrong)

    link = TRAINING.link("fig-ch4-violations")
    return [
        RULE_C16.judge(DistinctSigns(share("distinct")), c, control=DistinctSigns(share("common", wrong="down")),
                       scope=scope, details=details, link=link),
        RULE_C17.judge(CommonSigns(share("common", one)), c, control=CommonSigns(share("distinct", one, "up")),
                       scope=scope, details=details, link=link),
        RULE_C18.judge(Corollary2Signs(share("common", med), rise_share(r, "two common, asymmetric", 0)), c,
                       control=Corollary2Signs(share("distinct", med, "up"), rise_share(r, med[0], 0)),
                       scope=scope, details=details, link=TRAINING.link("fig-ch4-fates")),
    ]


def fates_table(r: TrainingResult) -> dict[str, np.ndarray]:
    """One row per (family, token, step): the logit in the limit and the sampled mean."""
    cols: dict[str, list] = {k: [] for k in ("family", "token", "common", "step", "z_population", "z_sampled")}
    for fl in r.logits:
        S, L = fl.population.shape
        cols["family"] += [fl.family] * (S * L)
        cols["token"] += np.repeat(fl.tokens, S).tolist()
        cols["common"] += np.repeat(fl.common.astype(int), S).tolist()
        cols["step"] += np.tile(np.arange(S), L).tolist()
        cols["z_population"] += fl.population.T.ravel().tolist()
        cols["z_sampled"] += fl.sampled.T.ravel().tolist()
    return {k: np.array(v) for k, v in cols.items()}


def plot_fates(r: TrainingResult) -> Figure:
    figures.set_style()
    rows = (len(r.logits) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(9, 3.2 * rows), squeeze=False)
    for ax, fl in zip(axes.flat, r.logits, strict=False):
        steps = np.arange(len(fl.population))
        for i in range(len(fl.tokens)):
            color, lw = ("C3", 2.0) if fl.common[i] else ("C2", 1.0)
            ax.plot(steps, fl.population[:, i], color=color, lw=lw)
            ax.plot(steps, fl.sampled[:, i], color=color, lw=0.8, ls="--")
        ax.axhline(0, color="0.5", lw=0.6)
        ax.set(title=fl.family, xlabel="step", ylabel=r"$z_{ml}(t)$")
    for ax in list(axes.flat)[len(r.logits):]:
        ax.set_visible(False)
    handles = [plt.Line2D([], [], color="C2", label="distinct token"),
               plt.Line2D([], [], color="C3", lw=2, label="common token"),
               plt.Line2D([], [], color="0.3", label="long-sequence limit"),
               plt.Line2D([], [], color="0.3", ls="--",
                          label=f"sampled, T={r.config.T} (mean of {len(r.config.seeds)})")]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize="small", bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def violations_table(r: TrainingResult) -> dict[str, np.ndarray]:
    """One row per (family, protocol, limit): the counts of moves."""
    c = r.config
    keys = [(i, j, k) for i in range(len(c.counted)) for j in range(len(c.protocols)) for k in range(len(LIMITS))]
    d, m = r.distinct, r.common
    return {
        "family": np.array([c.counted[i] for i, _, _ in keys]),
        "protocol": np.array([c.protocols[j].name for _, j, _ in keys]),
        "limit": np.array([LIMITS[k] for _, _, k in keys]),
        **{f"distinct_{w}": np.array([d[key][x] for key in keys]) for x, w in enumerate(("up", "down", "still"))},
        **{f"common_{w}": np.array([m[key][x] for key in keys]) for x, w in enumerate(("up", "down", "still"))},
        "min_distinct_move": np.array([r.min_distinct_move[key] for key in keys]),
        "max_common_move": np.array([r.max_common_move[key] for key in keys]),
    }


def plot_violations(r: TrainingResult) -> Figure:
    figures.set_style()
    c = r.config
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    settings = [(p, limit) for p in c.protocols for limit in LIMITS]
    width = 0.8 / len(settings)
    for ax, kind, title in zip(axes, ("distinct", "common"), ("distinct tokens moving down", "common tokens moving up"),
                               strict=True):
        for j, (p, limit) in enumerate(settings):
            frac = [100 * shares(r, kind, p.name, limit, (f,)) for f in c.counted]
            x = np.arange(len(c.counted)) + (j - (len(settings) - 1) / 2) * width
            label = f"{p.label()}, {'T = inf' if limit == 'population' else f'T = {c.T}'}"
            ax.bar_label(ax.bar(x, frac, width, label=label, color=f"C{j}"), fmt="%.0f", fontsize="xx-small")
        ax.set_xticks(np.arange(len(c.counted)), [f.replace(", ", ",\n") for f in c.counted], fontsize="small")
        ax.set(title=title, ylabel="% of the logit moves")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize="x-small",
               bbox_to_anchor=(0.5, -0.01))
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


TRAINING = Experiment(
    id="ch4-training", config=TrainingConfig, result=TrainingResult, run=run_training,
    verdicts=training_verdicts, work=training_work,
    figures=(
        FigureSpec(id="fig-ch4-fates",
                   caption="Attention logits z_ml(t) of every contextual token in training (gradient descent, eta_Y = "
                           "1, eta_Z = 0.1, zero initialization), in the long-sequence limit (solid) and with sampled "
                           "sequences (dashed, mean over seeds), for four families: one common token (Theorem 2), "
                           "Syn-Medium with one query (Corollary 2), and two asymmetric families outside the theorems.",
                   claims=("C16", "C17", "C18"), plot=plot_fates, table=fates_table),
        FigureSpec(id="fig-ch4-violations",
                   caption="Share of logit moves against Theorem 2's sign between consecutive steps (distinct tokens "
                           "down, common tokens up), in the theorem's setting (gradient descent, eta_Y = 1 >> eta_Z = "
                           "0.1), with equal learning rates, and with the authors' released protocol (equal rates, "
                           "momentum 0.9), in the long-sequence limit and with sampled sequences.",
                   claims=("C16", "C17", "C18"), plot=plot_violations, table=violations_table),
    ),
)

EXPERIMENTS = [TRAINING]
RULES = [RULE_C16, RULE_C17, RULE_C18]
