"""The registry of the paper's checkable claims, and the verdicts chapters record about them.

The 43 claims follow the numbered ledger of the reconstruction notes (C1-C43). A chapter checks a
claim and calls :func:`record` with one of :data:`VERDICTS` and the measured evidence; the verdict
is written (atomically) as JSON under ``<artifacts>/verdicts/<claim>.json`` and published with the
site. A claim with no recorded verdict reads as ``"not yet checked"``, never as verified.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from scansnap._checks import check_choice
from scansnap._io import artifacts_dir, atomic_write, dump_json

__all__ = [
    "CLAIMS",
    "VERDICTS",
    "Claim",
    "Verdict",
    "get",
    "ledger",
    "ledger_markdown",
    "record",
    "verdict",
]

VERDICTS = ("verified", "partly verified", "not reproduced", "not yet checked")


@dataclass(frozen=True)
class Claim:
    """One checkable claim of the paper.

    Attributes:
        id: ``"C1"`` .. ``"C43"``.
        kind: ``"theory"`` or ``"experiment"``.
        statement: the claim in one sentence.
        where: where the paper makes it.
        chapter: the book page (docname) that checks it.
    """

    id: str
    kind: str
    statement: str
    where: str
    chapter: str


@dataclass(frozen=True)
class Verdict:
    """A recorded verdict: one of :data:`VERDICTS`, the measured evidence, a link to where it was measured."""

    claim: str
    verdict: str
    evidence: str
    link: str
    recorded: str = ""


_CH = {
    1: "book/chapters/01-setting",
    2: "book/chapters/02-long-sequences",
    3: "book/chapters/03-decoder-dynamics",
    4: "book/chapters/04-fates-of-tokens",
    5: "book/chapters/05-scanning",
    6: "book/chapters/06-phase-transition",
    7: "book/chapters/07-syn-medium",
    8: "book/chapters/08-wikitext",
}

_T, _E = "theory", "experiment"
CLAIMS: tuple[Claim, ...] = tuple(
    Claim(f"C{i}", kind, statement, where, _CH[ch])
    for i, (kind, statement, where, ch) in enumerate(
        [
            (_T, "The gradients of Y and Z have the closed form of Lemma 1: Y-dot = eta_Y f~ (e_n - alpha)^T and "
                 "z-dot of the query row = eta_Z diag(f) P_perp Y (e_n - alpha) / ||f||.", "Lemma 1, Eqn 3-4", 1),
            (_T, "Only the query's row of Z is updated, and the attention depends on that row only.", "Lemma 1", 1),
            (_T, "Every row of the updates of Y and Z sums to zero, so from zero initialization the row sums of "
                 "Y and Z stay zero.", "Lemma 1 (proof)", 1),
            (_T, "As T grows, the attended histogram X^T b_T tends to c_n / 1^T c_n with c_n = P(l|n) exp(z_ml), "
                 "at rate O(1/sqrt(T)).", "Lemma 2, Eqn 5-6; Lemma 18", 2),
            (_T, "The critical point of the Y dynamics needs infinite Y and is never reached in finite time.",
             "Sec. 4, Eqn 7", 3),
            (_T, "Under the reparameterization W = F-bar^T Y the class rows evolve independently; the gradient "
                 "modification this needs is O(||E||).", "Lemma 3, Eqn 8", 3),
            (_T, "From zero initialization a class row is w_k = h_s (M e_n - 1) with "
                 "h_{s+1} = h_s + eta_Y / (exp(M h_s) + M - 1).", "Lemma 5, Eqn 31-33", 3),
            (_T, "The continuous solution (exp(M h) - 1)/M + (M - 1) h = eta_Y s tracks the discrete recursion "
                 "(Figure 8).", "Lemmas 6-7, Fig. 8", 3),
            (_T, "The back-propagated gradient is gamma(t) (iota_n f~_n - sum_n' beta_nn' f~_n').",
             "Theorem 1, Eqn 9", 3),
            (_T, "The coefficient xi_n is positive whenever class n overlaps another class.", "Theorem 1(a)", 3),
            (_T, "The speed-control coefficient gamma(t) grows like eta_Y t / K early and decays like "
                 "K ln(M eta_Y t / K) / (eta_Y t) late, with the transition near t_0 ~ K ln M / eta_Y.",
             "Theorem 1(b)", 3),
            (_T, "Equal off-diagonal overlaps E = rho act as an effective decoder learning rate eta_Y (1 - rho).",
             "Remark 1", 3),
            (_T, "The decoder converges towards its critical point at rate O(1/t).", "Corollary 1", 3),
            (_T, "Class visit counts concentrate around t/K (Hoeffding).", "Lemma 10", 3),
            (_T, "The attention logits follow Eqn 10 and move only through overlap between classes.",
             "Sec. 5, Eqn 10", 4),
            (_T, "The logits of distinct tokens increase: z-dot_ml = eta_Z gamma xi_n f~_nl^2 > 0.",
             "Theorem 2(a)", 4),
            (_T, "The logit of a single common token decreases.", "Theorem 2(b)", 4),
            (_T, "In the symmetric case all common tokens' logits decrease; without symmetry this can fail.",
             "Corollary 2", 4),
            (_T, "The relative gain of two distinct tokens grows by the growth factor: "
                 "r_{l/l'|n}(t) = r_{l/l'|n}(0) chi_l(t).", "Theorem 3, Eqn 11", 5),
            (_T, "The growth factor of the dominant token is bounded by exp(2 f~^2(0) B_n) <= chi <= exp(2 B_n), "
                 "and its relative gain and attention are non-decreasing.", "Theorem 3, Eqn 12", 5),
            (_T, "Frequency bias: from Z(0) = 0 the most frequent distinct token dominates, and the others drop "
                 "in order of increasing P(l|n).", "Sec. 5 (after Theorem 3)", 5),
            (_T, "Initial value as prior: the winning token is argmax P(l|n) exp(z_ml(0)).",
             "Sec. 5 (after Theorem 3)", 5),
            (_T, "If xi_n stays bounded away from 0, B_n grows without bound and the attention becomes "
                 "winner-take-all.", "Sec. 5", 5),
            (_T, "B_n(t) has a closed form in h(t) (Eqn 14), given the simplified dynamics of Eqn 13.",
             "Theorem 4, Eqn 13-14", 6),
            (_T, "Scanning phase: early on the growth factor grows (sub-)linearly in t.", "Sec. 6", 6),
            (_T, "Snapping phase: late, the growth factor grows only logarithmically; the attention looks frozen "
                 "without reaching a stationary point.", "Sec. 6", 6),
            (_T, "A larger eta_Y gives an earlier transition (t_0 proportional to 1/eta_Y).", "Sec. 6, insight (a)", 6),
            (_T, "Scaling both learning rates up gives a larger B_n at a fixed horizon: sparser attention.",
             "Sec. 6, insight (b)", 6),
            (_T, "At fixed eta_Z, a smaller eta_Y gives a larger B_n: sparser attention.",
             "Sec. 6, insight (c); App. F(3b)", 6),
            (_T, "At fixed eta_Y, a larger eta_Z gives a larger B_n: sparser attention.", "App. F(3a)", 6),
            (_T, "B_n(t_0) depends on the learning rates only through their ratio; curves differ after t_0.",
             "App. F, Fig. 9", 6),
            (_T, "The simplified exp(4z) dynamics of Eqn 13 match the exact symmetric system up to an O(1) "
                 "constant.", "Sec. 6, Eqn 13", 6),
            (_T, "With a residual connection only classes sharing a query interact; distinct and common tokens "
                 "become local to a query.", "Sec. 7", 6),
            (_E, "A smaller eta_Y at fixed eta_Z gives a later transition and a larger growth factor (Figure 3).",
             "Fig. 3", 6),
            (_E, "On Syn-Small the attention becomes sparse: common-token mass falls and distinct tokens end "
                 "ordered by P(l|n) (Figure 4).", "Sec. 8, Fig. 4", 5),
            (_E, "On Syn-Small a larger eta_Y at fixed eta_Z converges faster but ends less sparse (Figure 4).",
             "Sec. 8, Fig. 4", 5),
            (_E, "With Adam, different learning rates focus on different subsets of distinct tokens (Figure 5).",
             "Sec. 8, Fig. 5", 5),
            (_E, "On Syn-Medium the entropy of attention over distinct tokens decreases as eta_Z grows "
                 "(Figure 6).", "Sec. 8, Fig. 6", 7),
            (_E, "On Syn-Medium, at fixed eta_Z, the entropy rises with eta_Y beyond a threshold ratio "
                 "(Figure 6).", "Sec. 8, Fig. 6", 7),
            (_E, "On WikiText-2 the first-layer attention freezes and becomes sparse at constant learning rate "
                 "(Figure 7).", "Sec. 8, Fig. 7", 8),
            (_E, "On WikiText the validation attention entropy decreases with a larger learning rate (Figure 10).",
             "App. G, Fig. 10", 8),
            (_E, "Recall-threshold curves show sparser attention for smaller eta_Y or larger eta_Z, consistent "
                 "with Figure 6 (Figures 11-12).", "App. G, Figs. 11-12", 7),
            (_E, "The theory's assumptions hold only approximately in the experiments (finite T, strong overlap, "
                 "momentum, random initialization).", "Sec. 8", 2),
        ],
        start=1,
    )
)
_BY_ID = {c.id: c for c in CLAIMS}


def get(claim_id: str) -> Claim:
    """The claim ``claim_id`` (``"C1"`` .. ``"C43"``)."""
    if claim_id not in _BY_ID:
        raise ValueError(f"claim_id: must be one of C1..C{len(CLAIMS)}; got {claim_id!r}")
    return _BY_ID[claim_id]


def record(claim_id: str, verdict: str, evidence: str, link: str = "") -> Verdict:
    """Record the verdict of a chapter's check of ``claim_id``.

    Args:
        claim_id: ``"C1"`` .. ``"C43"``.
        verdict: ``"verified"``, ``"partly verified"`` or ``"not reproduced"`` (``"not yet checked"``
            is what an unrecorded claim reads as; it cannot be recorded).
        evidence: the measured numbers that support the verdict (non-empty).
        link: page anchor of the figure or cell (default: the claim's chapter page).
    """
    claim = get(claim_id)
    check_choice("verdict", verdict, VERDICTS[:3])
    if not evidence.strip():
        raise ValueError("evidence: must state the measured numbers (non-empty)")
    v = Verdict(claim.id, verdict, evidence.strip(), link or claim.chapter,
                datetime.now(timezone.utc).isoformat(timespec="seconds"))
    atomic_write(artifacts_dir() / "verdicts" / f"{claim.id}.json", dump_json(asdict(v)))
    return v


def verdict(claim_id: str) -> Verdict:
    """The recorded verdict of ``claim_id``, or ``"not yet checked"`` if none was recorded."""
    claim = get(claim_id)
    path = artifacts_dir() / "verdicts" / f"{claim.id}.json"
    if not path.exists():
        return Verdict(claim.id, "not yet checked", "", claim.chapter)
    return Verdict(**json.loads(path.read_text()))


def ledger() -> list[tuple[Claim, Verdict]]:
    """Every claim with its verdict, in order."""
    return [(c, verdict(c.id)) for c in CLAIMS]


def ledger_markdown(base: str = "") -> str:
    """The ledger as a Markdown table: claim, statement, paper, verdict, evidence, where checked.

    Args:
        base: prefix that turns a site-relative link (``book/chapters/...html#...``) into one relative
            to the page showing the table (``"../"`` from ``book/claims.html``).
    """
    rows = ["| claim | statement | paper | verdict | evidence | checked in |", "|---|---|---|---|---|---|"]
    for c, v in ledger():
        if v.verdict == "not yet checked":
            where = f"planned: `{c.chapter.rsplit('/', 1)[-1]}`"
        else:
            href = v.link if ".html" in v.link else f"{v.link}.html"
            where = f'<a href="{base}{href}">{href.rsplit("/", 1)[-1]}</a>'
        cells = [c.id, c.statement, c.where, f"**{v.verdict}**", v.evidence or "-", where]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)
