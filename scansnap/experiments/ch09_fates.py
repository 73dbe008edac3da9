"""Chapter 9's residual fates (claim C33b: with the residual, a token's fate follows the classes of its own query).

On :func:`scansnap.theory.residual.cross_query_family`, a family where a token is shared by classes of different
queries (locally distinct, globally common) and a token is common among the classes of one query only:

* :data:`FLOW` (no figure): the theory's own model, Eqn 10 with the residual under Theorem 1's coupling
  (:func:`scansnap.theory.residual.residual_zdot`) integrated from ``Z = 0``; the sign of every (query row, token)
  entry's net change against the local rule. **Simulation** evidence for C33b (the theorem's model decides it); the
  same flow with only the same-query part of the velocity, and without the residual, are kept as context.
* :data:`FATES` (``fig-ch9-fates``): the Y/Z trainer with and without the residual, in the long-sequence limit and
  sampled: **training** evidence on C33b ("does the local rule describe the trained model?"), each judged against
  the other arm (the same model trained without the residual), where Theorem 2's global rule holds. Runs start from
  ``Z(0) ~ N(0, z_std^2)`` so that runs in the limit differ too (one per (learning-rate pair, seed)); each share is
  taken per run and read at the far end of its 95% t interval over runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, stats
from scansnap._checks import check_choice
from scansnap._threads import one_thread
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.ch09_beyond import RULE_C33A
from scansnap.experiments.residual_fates_run import FatesConfig, FatesResult, run_fates
from scansnap.params import Each, Int, Positive, listed, param
from scansnap.results import Config
from scansnap.theory import residual as res
from scansnap.verdicts import Outcome, Rule, Verdict, at_least


@dataclass(frozen=True)
class FateMeasures:
    """C33b's measures on one arm (with or without the residual) of training runs or a flow, per run then over runs:
    ``disc_local_lo`` (share of the locally distinct, globally common entries that rise, as the local rule says;
    lower end of its 95% t interval over runs, nan with one run), ``local_all_lo`` (share of all entries with a role
    that move as the local rule says; lower end), ``disc_local``, ``local_all`` (their means), ``runs``,
    ``discriminating_entries`` (entries per run on which the local and the global rule disagree)."""

    disc_local_lo: float
    local_all_lo: float
    disc_local: float
    local_all: float
    runs: int
    discriminating_entries: int


def _discriminating(r_global: np.ndarray, r_local: np.ndarray) -> np.ndarray:
    glob, loc = torch.from_numpy(r_global), torch.from_numpy(r_local)
    return ((glob != loc)[loc != 0]).numpy()


def fate_measures(dz: np.ndarray, global_roles: np.ndarray, local_roles: np.ndarray) -> FateMeasures:
    """:class:`FateMeasures` of net changes ``dz`` ``(runs, M, M)`` (one arm): an entry follows the local rule when
    its net change in that run has the rule's sign."""
    disc = _discriminating(global_roles, local_roles)
    agree = res.role_agreement(torch.from_numpy(dz), torch.from_numpy(local_roles))  # (runs, E)
    d_mean, d_lo, _ = stats.t_interval(agree[:, disc].mean(1))
    a_mean, a_lo, _ = stats.t_interval(agree.mean(1))
    return FateMeasures(d_lo, a_lo, d_mean, a_mean, dz.shape[0], int(disc.sum()))


_FATE_CRITERIA = (
    at_least("disc_local_lo", "per run, share of the locally distinct, globally common entries that rise (local "
             "rule): lower end of its 95% interval over runs", 0.9, 0.6),
    at_least("local_all_lo", "per run, share of all entries that move as the local rule says (Theorem 2 per query): "
             "lower end of its 95% interval over runs", 0.9, 0.6, required=False),
)
_FATE_ALTERNATIVE = ("the global rule (Theorem 2 over all classes): a token shared with a class of another query is "
                     "common and its logit falls, as without the residual")
_FATE_NOTE = ("Fate = sign of the net logit change of each (query row, token) entry; the local rule classifies a "
              "token over the classes of that query only, the global rule over all classes.")
_CONTROL_PLAIN = ("the other arm: the same measures on the model trained without the residual, same family, learning "
                  "rates and seeds (where the global rule makes the shared tokens fall)")
PREMISE = ("Theorem 2 applied per query: Theorem 1's coupling of the decoder (C9) with the classes of other queries "
           "decoupled (C33a); on this family the shared tokens couple the queries")
RULE_C33B_POPULATION = Rule("C33b", "training-population", FateMeasures, _FATE_CRITERIA, _FATE_ALTERNATIVE,
                            control=_CONTROL_PLAIN, premise=PREMISE, note=_FATE_NOTE)
RULE_C33B_SAMPLED = Rule("C33b", "training-sampled", FateMeasures, _FATE_CRITERIA, _FATE_ALTERNATIVE,
                         control=_CONTROL_PLAIN, premise=PREMISE + ", in the long-sequence limit (Lemma 2; here finite "
                         "T)", note=_FATE_NOTE)


def fate_verdicts(r: FatesResult) -> list[Verdict]:
    """C33b on training evidence, in the limit and sampled; each judged against the arm without the residual."""
    link, roles = FATES.link(), (r.global_roles, r.local_roles)
    out = []
    for rule, dz, scope in ((RULE_C33B_POPULATION, r.population, "long-sequence limit"),
                            (RULE_C33B_SAMPLED, r.sampled, "sampled")):
        out.append(rule.judge(fate_measures(dz[1], *roles), r.config, control=fate_measures(dz[0], *roles),
                              scope=scope, link=link))
    return out


# ------------------------------------------------------------------------------------------------
# C33b, simulation: the flow of Eqn 10 with the residual under Theorem 1's coupling
# ------------------------------------------------------------------------------------------------


C33A_BAR = next(c.verified for c in RULE_C33A.criteria if c.name == "cross_residual")
"""C33a's decoupling bar: the largest share of the attention velocity from classes of other queries (0.05)."""


@dataclass(frozen=True)
class FlowConfig(Config):
    """Euler steps of ``dZ/dtau = Eqn 10`` (Theorem 1's coupling, ``gamma = 1``: the decoder's magnitude only rescales
    time, so the path is the same for any ``gamma(t)``) from ``Z = 0``, ``steps`` of ``dtau``, on
    ``cross_query_family(shared=w)``: the judged family is the first ``w`` of ``shared`` (tried in order, fixed
    before the flows were run) whose cross-query share of the velocity at ``Z = 0`` meets C33a's bar
    (:data:`C33A_BAR`); the hand-built family (``w = 1``, which breaks it) is kept as context."""

    steps: int = param(1000, Int(low=1))
    dtau: float = param(0.5, Positive())
    shared: tuple[float, ...] = param((1.0, 0.5, 0.25, 0.125, 0.0625), Each(Positive()), listed)
    PROTOCOL = ("Eqn 10 with the residual under Theorem 1's coupling (theory.residual.residual_zdot) on "
                "cross_query_family(shared=w), w the first of {shared} whose cross-query share at Z = 0 is at most "
                f"{C33A_BAR:g} (C33a's bar), from Z = 0, {{steps}} Euler steps of dtau = {{dtau:g}}")
    PRESETS = {"smoke": dict(steps=200), "book": {}, "paper": {}}


@dataclass(frozen=True)
class FamilyFlow:
    """The flows on one family ``cross_query_family(shared=shared)``: net changes at the end ``(M, M)``:
    ``z_residual`` (Eqn 10 with the residual), ``z_same_query`` (its same-query part only), ``z_plain`` (without the
    residual); ``velocity0`` ``(M, M)`` the residual velocity at ``Z = 0``; ``cross_share0`` its share from classes of
    other queries; ``global_roles``, ``local_roles``."""

    shared: float
    z_residual: np.ndarray
    z_same_query: np.ndarray
    z_plain: np.ndarray
    velocity0: np.ndarray
    cross_share0: float
    global_roles: np.ndarray
    local_roles: np.ndarray


@dataclass(frozen=True)
class FlowResult:
    """``judged``: the flows on the first family of ``config.shared`` that meets C33a's bar (the last one tried when
    none does); ``handbuilt``: on the hand-built family (``shared = 1``, context); ``cross_share_grid``
    ``(len(shared),)`` the cross-query share at ``Z = 0`` of each family tried."""

    config: FlowConfig
    judged: FamilyFlow
    handbuilt: FamilyFlow
    cross_share_grid: np.ndarray


def _cross_share(classes: data.SequenceClasses) -> float:
    same, cross = res.residual_zdot(classes, torch.zeros(classes.M, classes.M, dtype=torch.float64), 1.0)
    return float(cross.norm() / (same.norm() + cross.norm()))


def _family_flow(shared: float, config: FlowConfig, progress: Progress | None) -> FamilyFlow:
    """The three flows (residual, its same-query part, no residual) side by side on one family."""
    classes = res.cross_query_family(shared=shared)
    Z = [torch.zeros(classes.M, classes.M, dtype=torch.float64) for _ in range(3)]
    velocity0 = sum(res.residual_zdot(classes, Z[0], 1.0)).numpy()
    for _ in range(config.steps):
        Z[0] = Z[0] + config.dtau * sum(res.residual_zdot(classes, Z[0], 1.0))
        Z[1] = Z[1] + config.dtau * res.residual_zdot(classes, Z[1], 1.0)[0]
        Z[2] = Z[2] + config.dtau * sum(res.residual_zdot(classes, Z[2], 1.0, residual=False))
        if progress is not None:
            progress(1)
    glob, loc = res.token_roles(classes)
    return FamilyFlow(shared, *(z.numpy() for z in Z), velocity0, _cross_share(classes), glob.numpy(), loc.numpy())


@one_thread()  # tiny tensors: a second thread only adds contention (and changes the sums' order)
def run_flow(config: FlowConfig, progress: Progress | None = None) -> FlowResult:
    """The flows on the judged family (the first of ``config.shared`` meeting C33a's bar) and on the hand-built one."""
    grid = np.array([_cross_share(res.cross_query_family(shared=w)) for w in config.shared])
    ok = np.nonzero(grid <= C33A_BAR)[0]
    judged = config.shared[int(ok[0])] if ok.size else config.shared[-1]
    return FlowResult(config, _family_flow(judged, config, progress), _family_flow(1.0, config, progress), grid)


@dataclass(frozen=True)
class FlowFates:
    """C33b in the theory's own model, on one family: ``disc_local`` and ``local_all`` as :class:`FateMeasures` for
    the flow with the residual; ``disc_local_initial`` (the same share for the velocity at ``Z = 0``),
    ``disc_local_same_query`` (for the flow with only the same-query part of the velocity, i.e. had C33a's decoupling
    been exact), ``disc_local_plain`` (for the flow without the residual), ``cross_share_initial`` (share of the
    velocity at ``Z = 0`` from classes of other queries: C33a's premise, met at most :data:`C33A_BAR`) and
    ``shared`` (the family's shared-token weight)."""

    disc_local: float
    local_all: float
    disc_local_initial: float
    disc_local_same_query: float
    disc_local_plain: float
    cross_share_initial: float
    shared: float


def flow_fates(r: FlowResult, family: str = "judged") -> FlowFates:
    """:class:`FlowFates` of the flows on ``family`` (``"judged"`` or ``"handbuilt"``)."""
    f: FamilyFlow = getattr(r, check_choice("family", family, ("judged", "handbuilt")))
    roles = (f.global_roles, f.local_roles)
    full = fate_measures(f.z_residual[None], *roles)
    return FlowFates(full.disc_local, full.local_all, fate_measures(f.velocity0[None], *roles).disc_local,
                     fate_measures(f.z_same_query[None], *roles).disc_local,
                     fate_measures(f.z_plain[None], *roles).disc_local, f.cross_share0, f.shared)


RULE_C33B_FLOW = Rule("C33b", "simulation", FlowFates, (
    at_least("disc_local", "share of the locally distinct, globally common entries whose net change at the end of "
             "the flow is a rise (local rule)", 0.9, 0.6),
    at_least("local_all", "share of all entries that move as the local rule says (Theorem 2 per query)", 0.9, 0.6,
             required=False),
), _FATE_ALTERNATIVE, note=_FATE_NOTE + " Judged on a family that meets C33a's premise: the cross-query share of the "
                                        "velocity at Z = 0 at most C33a's bar 0.05 (the first shared-token weight of "
                                        "1, 1/2, 1/4, ... that does); on a family that does not, the flow tests a "
                                        "claim outside its premise and the verdict is inconclusive (premise not met). "
                                        "The flow's end is taken after the attention has moved by O(1) in the "
                                        "logits; the velocity at Z = 0 and the same-query-only flow are context.")


def premise_unmet(m: FlowFates) -> str:
    """Why C33b cannot be judged on the flow ``m`` (the detail of :attr:`scansnap.outcomes.Outcome.PREMISE_NOT_MET`;
    "" when it can): C33b is the consequence of C33a's decoupling, so
    a family whose cross-query share at ``Z = 0`` exceeds C33a's bar is outside the claim's premise."""
    if m.cross_share_initial <= C33A_BAR:
        return ""
    return (f"C33a's decoupling (cross-query share of the velocity at Z = 0 at most {C33A_BAR:g}; "
            f"{m.cross_share_initial:.3g} on the family judged, shared-token weight {m.shared:g})")


def flow_verdicts(r: FlowResult) -> list[Verdict]:
    """C33b on simulation evidence, on the judged family; inconclusive (premise not met) where it breaks C33a's bar
    (:func:`premise_unmet`: a simulation rule has no control, so the premise is checked here, from the measures)."""
    m = flow_fates(r)
    v = RULE_C33B_FLOW.judge(m, r.config, link=FLOW.link("training-local-or-global-fates"))
    why = premise_unmet(m)
    return [v.undecided(Outcome.PREMISE_NOT_MET, why) if why else v]


FLOW = Experiment(id="ch9-flow", config=FlowConfig, result=FlowResult, run=run_flow,
                  verdicts=flow_verdicts, work=lambda c: 2 * c.steps)  # two families


def fates_table(r: FatesResult) -> dict[str, np.ndarray]:
    """Row A's entries: token, roles, net changes (limit, first pair; sampled; each the mean over seeds) per
    variant."""
    row = int(np.nonzero(r.local_roles.any(1))[0][0])
    tokens = np.nonzero(r.local_roles[row])[0]
    first = slice(0, len(r.config.seeds))  # the runs at the first learning-rate pair
    return {"token": tokens, "global_role": r.global_roles[row, tokens], "local_role": r.local_roles[row, tokens],
            "dz_plain_limit": r.population[0, first][:, row, tokens].mean(0),
            "dz_residual_limit": r.population[1, first][:, row, tokens].mean(0),
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
    id="ch9-fates", config=FatesConfig, result=FatesResult, run=run_fates, verdicts=fate_verdicts,
    work=lambda c: 4 * c.steps,
    figures=(FigureSpec(
        id="fig-ch9-fates",
        caption="Net change of query A's attention logits after training, without and with the residual "
                "connection, in the long-sequence limit and with sampled sequences (mean over seeds). s1, s2: "
                "tokens shared with a class of query B (locally distinct, globally common); c_A: common to both "
                "classes of query A and absent from B; d: distinct tokens of A1 and A2.",
        claims=("C33b",), plot=plot_fates, table=fates_table),),
)

EXPERIMENTS = [FLOW, FATES]
RULES = [RULE_C33B_FLOW, RULE_C33B_POPULATION, RULE_C33B_SAMPLED]
