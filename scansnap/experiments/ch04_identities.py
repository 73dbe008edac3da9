"""Chapter 4's checks of Eqn 10, Theorem 2 and Corollary 2 against the exact gradient (C15-C18, derivation).

:data:`IDENTITIES` (``ch4-identities``, no figure): Eqn 10 (:func:`scansnap.theory.fates.eqn10_zdot`), Theorem
2(a)'s rate, Theorem 2(b)'s and Corollary 2's closed forms against the model's *exact* population gradient
(:func:`scansnap.theory.fates.population_zdot`) under the decoder for which Theorem 1 is exact
(:func:`scansnap.theory.fates.theorem1_decoder`), on random families (:func:`scansnap.theory.families.random_classes`)
at random logits. Its verdicts judge C15-C18 as **derivation** evidence: the chapter's sympy cells prove the
statements; this run checks the library code and the signs on families that sympy does not cover. Eqn 10 along
training (C15 on training evidence) is in :mod:`scansnap.experiments.ch04_eqn10`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from scansnap import data
from scansnap.experiments.base import Experiment, Progress
from scansnap.params import Int, Positive, param
from scansnap.results import Config
from scansnap.theory.decoder import gamma_of_h, gram, xi
from scansnap.theory.families import example_families, random_classes
from scansnap.theory.fates import (
    corollary2_rate,
    eqn10_zdot,
    population_zdot,
    single_common_rate,
    theorem1_decoder,
    unit_scores,
)
from scansnap.verdicts import Rule, Verdict, at_least, at_most


@dataclass(frozen=True)
class IdentitiesConfig(Config):
    """Attributes:
        families: random families for Eqn 10 / Theorem 2(a), and again (one common token) for Theorem 2(b).
        symmetric: random symmetric logits of Syn-Medium (one query) for Corollary 2.
        eta_Z: attention learning rate of the comparison; seed: torch seed of every draw.
    """

    families: int = param(2000, Int(low=1))
    symmetric: int = param(201, Int(low=1))
    eta_Z: float = param(0.5, Positive(), "eta_Z = {:g}")
    seed: int = param(0, Int(low=0))
    PROTOCOL = ("{families} random families (scansnap.theory.families.random_classes, 2-5 classes, 1 to K queries) and "
                "{families} with one common token, Gaussian Z, random margin h, {eta_Z}, torch seed {seed}; Corollary "
                "2 on Syn-Medium (one query) at {symmetric} random symmetric logits; exact velocity from "
                "scansnap.theory.population_zdot under theorem1_decoder")
    PRESETS = {"smoke": dict(families=20, symmetric=3), "book": dict(families=300, symmetric=31), "paper": {}}
    NOT_GATED = {"families": "a derivation's sample size: the rules read the worst error and the share of entries "
                             "over the random families drawn, and count them (families is a field of the measures)",
                 "symmetric": "a derivation's sample size: Corollary 2's worst error and share over the symmetric "
                              "families drawn"}


@dataclass(frozen=True)
class IdentitiesResult:
    """Per random family (errors in units of ``max(1, max |z-dot|)`` of the family), ``(families,)`` arrays:
    ``eqn10_error`` and ``rate2a_error`` (Eqn 10 and Theorem 2(a)'s rate vs the exact velocity);
    ``distinct_entries`` / ``distinct_positive`` (distinct-token entries of overlapping classes / those moving
    up); ``min_xi`` (smallest ``xi_n`` of an overlapping class, nan: no overlap); ``rate2b_error``,
    ``common_entries`` / ``common_negative`` (Theorem 2(b) on one-common-token families: queries holding the
    token / those moving it down). ``corollary2_error`` ``(symmetric,)``, ``corollary2_entries`` /
    ``corollary2_negative``: Corollary 2 likewise. ``counterexample_rise``: Eqn 10's velocity of common token 0
    of "two common, asymmetric" at ``Z = 0`` over the row's largest ``|z-dot|`` (> 0: it rises).
    ``disjoint_max_rate``: the largest ``|z-dot|`` of Eqn 10 for disjoint classes at random logits.
    """

    config: IdentitiesConfig
    eqn10_error: np.ndarray
    rate2a_error: np.ndarray
    distinct_entries: np.ndarray
    distinct_positive: np.ndarray
    min_xi: np.ndarray
    rate2b_error: np.ndarray
    common_entries: np.ndarray
    common_negative: np.ndarray
    corollary2_error: np.ndarray
    corollary2_entries: int
    corollary2_negative: int
    counterexample_rise: float
    disjoint_max_rate: float


def _state(classes: data.SequenceClasses, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Random logits Z, the Theorem-1 decoder Y at a random margin h, and its gamma."""
    Z = torch.randn(classes.M, classes.M, generator=g, dtype=torch.float64)
    h = float(torch.rand((), generator=g, dtype=torch.float64)) * 3 / classes.M
    return Z, theorem1_decoder(classes, Z, h), float(gamma_of_h(h, classes.M))


def run_identities(config: IdentitiesConfig, progress: Progress | None = None) -> IdentitiesResult:
    c, g, eta = config, torch.Generator().manual_seed(config.seed), config.eta_Z
    out: dict[str, list] = {k: [] for k in ("eqn10", "rate2a", "d_n", "d_pos", "min_xi", "rate2b", "c_n", "c_neg")}
    for _ in range(c.families):  # Eqn 10 and Theorem 2(a)
        classes = random_classes(g)
        Z, Y, gam = _state(classes, g)
        exact = population_zdot(classes, Y, Z, eta_Z=eta)
        scale = max(1.0, exact.abs().max().item())
        out["eqn10"].append((exact - eqn10_zdot(classes, Z, gam, eta_Z=eta)).abs().max().item() / scale)
        ft = unit_scores(classes, Z)
        xi_n = xi(gram(ft.mT), classes.M)
        rate = eta * gam * xi_n[:, None] * ft**2 / classes.K  # Theorem 2(a), pi_n = 1/K
        mask = classes.distinct_mask()
        out["rate2a"].append((exact[classes.query] - rate)[mask].abs().max().item() / scale)
        sup = classes.support().to(torch.float64)
        overlaps = (sup @ sup.T).fill_diagonal_(0).gt(0).any(1)
        moves = exact[classes.query][mask & overlaps[:, None]]
        out["d_n"].append(int(moves.numel()))
        out["d_pos"].append(int((moves > 0).sum()))
        out["min_xi"].append(xi_n[overlaps].min().item() if overlaps.any() else float("nan"))
        if progress is not None:
            progress(1)
    for _ in range(c.families):  # Theorem 2(b): a single common token (token 0)
        classes = random_classes(g, one_common=True)
        Z, Y, gam = _state(classes, g)
        exact = population_zdot(classes, Y, Z)
        closed = single_common_rate(classes, Z, gam)
        holders = torch.unique(classes.query[classes.probs[:, 0] > 0])
        scale = max(1.0, exact.abs().max().item())
        out["rate2b"].append((exact[holders, 0] - closed[holders]).abs().max().item() / scale)
        out["c_n"].append(len(holders))
        out["c_neg"].append(int((exact[holders, 0] < 0).sum()))
        if progress is not None:
            progress(1)
    syn, c2_err, c2_neg = data.syn_medium(1), [], 0
    m = int(syn.query[0])
    for _ in range(c.symmetric):  # Corollary 2: symmetric logits, any common logits
        Z = torch.zeros(syn.M, syn.M, dtype=torch.float64)
        Z[m, :10] = torch.randn(10, generator=g, dtype=torch.float64)
        profile = torch.randn(10, generator=g, dtype=torch.float64)
        Z[m, syn.distinct(0)], Z[m, syn.distinct(1)] = profile, profile
        h = float(torch.rand((), generator=g, dtype=torch.float64)) * 3 / syn.M
        exact = population_zdot(syn, theorem1_decoder(syn, Z, h), Z)
        closed = corollary2_rate(unit_scores(syn, Z)[0, :10], syn.K, syn.M, float(gamma_of_h(h, syn.M)))
        c2_err.append((exact[m, :10] - closed).abs().max().item() / max(1.0, exact.abs().max().item()))
        c2_neg += int((exact[m, :10] < 0).sum())
    fams = example_families()
    asym = fams["two common, asymmetric"]
    v = eqn10_zdot(asym, torch.zeros(asym.M, asym.M, dtype=torch.float64), 1.0)[int(asym.query[0])]
    disjoint = fams["disjoint"]
    dis = eqn10_zdot(disjoint, torch.randn(disjoint.M, disjoint.M, generator=g, dtype=torch.float64), 1.0)
    a = {k: np.array(val) for k, val in out.items()}
    return IdentitiesResult(c, a["eqn10"], a["rate2a"], a["d_n"], a["d_pos"], a["min_xi"], a["rate2b"], a["c_n"],
                            a["c_neg"], np.array(c2_err), 10 * c.symmetric, c2_neg,
                            float(v[0] / v.abs().max()), float(dis.abs().max()))


@dataclass(frozen=True)
class Eqn10Identity:
    """C15 on derivation evidence. max_error: largest error of Eqn 10 against the exact gradient (units of
    max(1, max ``|z-dot|``)); disjoint_max_rate: largest ``|z-dot|`` of Eqn 10 for disjoint classes; families:
    how many."""

    max_error: float
    disjoint_max_rate: float
    families: int


@dataclass(frozen=True)
class RateIdentity:
    """C16/C17 on derivation evidence. max_error: largest error of the closed-form rate against the exact
    gradient; sign_share: share of the entries that move the claimed way; families: how many random families."""

    max_error: float
    sign_share: float
    families: int


@dataclass(frozen=True)
class Corollary2Identity:
    """C18 on derivation evidence. max_error: Corollary 2's closed form against the exact gradient; negative_share:
    share of common-token entries falling in the symmetric case; counterexample_rise: Eqn 10's velocity of common
    token 0 of 'two common, asymmetric' at Z = 0, in units of the row's largest ``|z-dot|``."""

    max_error: float
    negative_share: float
    counterexample_rise: float


_IDENTITY = ("Errors in units of max(1, max |z-dot|) of each family; float64 round-off is about 1e-14, so 1e-10 "
             "verifies and 1e-6 (a loss of precision, not a wrong formula) partly verifies. The sympy cells of the "
             "chapter prove the statement; this rule judges the library code and the signs on random families.")
_WRONG_FORMULA = "the closed form is wrong: errors at the scale of the velocity (>= 1e-6 of max |z-dot|)"
_FAMILIES = at_least("families", "number of random families", 100, 10)
RULE_C15_DERIVATION = Rule("C15", "derivation", Eqn10Identity, (
    at_most("max_error", "max error of Eqn 10 against the exact population gradient under Theorem 1's decoder",
            1e-10, 1e-6),
    at_most("disjoint_max_rate", "largest |z-dot| of Eqn 10 for disjoint classes", 1e-12, 1e-9), _FAMILIES,
), alternative=_WRONG_FORMULA + ", or logits that move without overlap between classes", note=_IDENTITY)
RULE_C16_DERIVATION = Rule("C16", "derivation", RateIdentity, (
    at_most("max_error", "max error of Theorem 2(a)'s rate eta_Z gamma pi_n xi_n f~_nl^2 against the exact "
            "gradient", 1e-10, 1e-6),
    at_least("sign_share", "share of distinct-token entries of overlapping classes that the exact gradient moves up",
             1.0, 0.99), _FAMILIES,
), alternative=_WRONG_FORMULA + ", or distinct logits of overlapping classes that fall", note=_IDENTITY)
RULE_C17_DERIVATION = Rule("C17", "derivation", RateIdentity, (
    at_most("max_error", "max error of Theorem 2(b)'s closed form against the exact gradient", 1e-10, 1e-6),
    at_least("sign_share", "share of queries (holding the single common token) whose common logit falls",
             1.0, 0.99), _FAMILIES,
), alternative=_WRONG_FORMULA + ", or a single common token whose logit rises", note=_IDENTITY)
RULE_C18_DERIVATION = Rule("C18", "derivation", Corollary2Identity, (
    at_most("max_error", "max error of Corollary 2's closed form against the exact gradient (Syn-Medium, one "
            "query, symmetric logits)", 1e-10, 1e-6),
    at_least("negative_share", "share of common-token entries that fall in the symmetric case", 1.0, 0.99),
    at_least("counterexample_rise", "Eqn 10's velocity of common token 0 of 'two common, asymmetric' at Z = 0, "
             "in units of the row's largest |z-dot|", 0.01, 1e-6),
), alternative=_WRONG_FORMULA + "; or common tokens that rise under symmetry; or symmetry that is not needed "
   "(no common token rises without it)",
    note=_IDENTITY + " The counterexample (without symmetry a common token can rise) must be a real effect: 1% "
                     "of the row's largest velocity verifies.")


def identities_verdicts(r: IdentitiesResult) -> list[Verdict]:
    c, link = r.config, IDENTITIES.link("numerical-check")
    d_share = float(r.distinct_positive.sum() / max(1, r.distinct_entries.sum()))
    return [
        RULE_C15_DERIVATION.judge(Eqn10Identity(float(r.eqn10_error.max()), r.disjoint_max_rate, c.families), c,
                                  link=IDENTITIES.link("eqn-10")),
        RULE_C16_DERIVATION.judge(RateIdentity(float(r.rate2a_error.max()), d_share, c.families), c, link=link,
                                  details=f"smallest xi_n of an overlapping class {np.nanmin(r.min_xi):.2e}"),
        RULE_C17_DERIVATION.judge(RateIdentity(float(r.rate2b_error.max()), float(r.common_negative.sum() /
                                               r.common_entries.sum()), c.families), c, link=link),
        RULE_C18_DERIVATION.judge(Corollary2Identity(float(r.corollary2_error.max()), r.corollary2_negative /
                                                     r.corollary2_entries, r.counterexample_rise), c, link=link),
    ]


IDENTITIES = Experiment(id="ch4-identities", config=IdentitiesConfig, result=IdentitiesResult,
                        run=run_identities, verdicts=identities_verdicts, work=lambda c: 2 * c.families)

EXPERIMENTS = [IDENTITIES]
RULES = [RULE_C15_DERIVATION, RULE_C16_DERIVATION, RULE_C17_DERIVATION, RULE_C18_DERIVATION]
