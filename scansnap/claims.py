"""The registry of checkable claims, and the verdicts chapters record about them.

Each :class:`Claim` carries its id explicitly (``C1``..``C43`` number the paper's claims in the order this
book first listed them; ``X1``, ... are this book's own findings), so adding a claim never renumbers
another. A chapter judges a claim with a library rule (:mod:`scansnap.verdicts`) and records the
:class:`~scansnap.verdicts.Verdict` it returns with :func:`record`: there is no way to record a verdict
word by hand. A claim may hold one verdict per kind of evidence (derivation, simulation, training,
real data); they are written atomically as JSON under ``<artifacts>/verdicts/<claim>.json`` and
published with the site.

The **headline** of a claim (:func:`headline`) is the weakest of its verdicts on the kinds of evidence
that can decide it: any kind for a claim of the theory, but only training or real data for a claim
about what training does (``kind == "experiment"``). A claim with no such verdict reads
``"not yet checked"``, never verified.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import asdict, dataclass

try:  # POSIX; elsewhere chapters execute one at a time (make book's BOOK_JOBS=1 there)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

from scansnap import manifest, profiles, provenance
from scansnap._checks import check_choice
from scansnap._io import artifacts_dir, atomic_write, dump_json
from scansnap.verdicts import EVIDENCE, LEVELS, THEORY_KINDS, TRAINING_KINDS, Verdict, worst

__all__ = [
    "CENTRAL",
    "CLAIMS",
    "NOT_CHECKED",
    "VERDICTS",
    "Claim",
    "admissible",
    "describes_training",
    "get",
    "headline",
    "ledger",
    "record",
    "verdicts",
]

NOT_CHECKED = "not yet checked"
VERDICTS = (*LEVELS, NOT_CHECKED)
"""Every headline a claim can have, best first."""


@dataclass(frozen=True)
class Claim:
    """One checkable claim.

    Attributes:
        id: ``"C1"`` .. ``"C43"`` (the paper's claims, as this book numbers them), ``"P1"``, ... (the paper's
            central claims, :data:`CENTRAL`) or ``"X1"``, ... (this book's own).
        kind: ``"theory"`` (a statement about the model's mathematics) or ``"experiment"`` (about what
            training does: only training or real-data evidence can decide it).
        statement: the claim in one sentence (MyST markdown; math between ``$``).
        where: where the paper makes it (or, for the book's own, where the book does).
        chapter: the book page (docname) that checks it.
        origin: ``"paper"``, or ``"book"`` for a claim this book makes (not the paper).
    """

    id: str
    kind: str
    statement: str
    where: str
    chapter: str
    origin: str = "paper"

    def __post_init__(self) -> None:
        check_choice(f"{self.id}: kind", self.kind, ("theory", "experiment"))
        check_choice(f"{self.id}: origin", self.origin, ("paper", "book"))


_CH = manifest.CHAPTERS
_T, _E = "theory", "experiment"

CLAIMS: tuple[Claim, ...] = (
    Claim("C1", _T, r"The gradients of $Y$ and $Z$ in Lemma 1's closed form (this book's reconstruction): "
          r"$\dot Y = \eta_Y \tilde f (e_n - \alpha)^\top$ and, for the query row, "
          r"$\dot z_{x_T} = \eta_Z\, \mathrm{diag}(f) P^\perp_{\tilde f} Y (e_n - \alpha) / \lVert f \rVert_2$.",
          "Sec. 3.1, Lemma 1, Eqn 3-4", _CH[1]),
    Claim("C2", _T, r"Only the query's row of $Z$ is updated, and the attention depends on that row only.",
          "Sec. 3.1, Lemma 1, Eqn 4", _CH[1]),
    Claim("C3", _T, r"Every row of the updates of $Y$ and $Z$ sums to zero, so from zero initialization the row "
          r"sums of $Y$ and $Z$ stay zero.", "Sec. 3.1 (after Lemma 1)", _CH[1]),
    Claim("C4", _T, r"As $T$ grows, the attended histogram $X^\top b_T$ tends to $c_n / \mathbf 1^\top c_n$ with "
          r"$c_{nl} = \mathbb P(l \mid n) e^{z_{ml}}$, at rate $O(1/\sqrt T)$."
          r" The formula is this book's reconstruction.",
          "Sec. 3.3, Lemma 2, Eqn 5-6; App. H, Lemma 18", _CH[2]),
    Claim("C5", _T, r"The critical point of the $Y$ dynamics needs infinite $Y$ and is never reached in finite "
          r"time.", "Sec. 4, Eqn 7", _CH[3]),
    Claim("C6", _T, r"Under the reparameterization $W = \bar F^\top Y$ the class rows evolve independently; the "
          r"gradient modification this needs is $O(\lVert E \rVert)$."
          r" The formula is this book's reconstruction.",
          "Sec. 4, Lemma 3, Eqn 8; App. D.2, Eqn 26, Lemma 17", _CH[3]),
    Claim("C7", _T, r"From zero initialization, after $s$ steps of its class (Lemma 5 samples that class at every "
          r"step), a class row is $w_k = h_s (M e_n - \mathbf 1)$ with "
          r"$h_{s+1} = h_s + \eta_Y / (e^{M h_s} + M - 1)$."
          r" The formula is this book's reconstruction.",
          "App. D.2, Lemma 5, Eqn 31-33", _CH[3]),
    Claim("C8", _T, r"The continuous solution $(e^{Mh} - 1)/M + (M - 1) h = \eta_Y s$ tracks the discrete recursion "
          r"(Figure 8)."
          r" The formula is this book's reconstruction.", "App. D.3, Lemmas 6-7, Eqn 45, Remark 2, Fig. 8", _CH[3]),
    Claim("C9", _T, r"Under Assumption 2, from $Y(0) = 0$ with classes sampled uniformly, the back-propagated gradient "
          r"after $t$ steps is $\gamma(t) \big(\iota_n \tilde f_n - \sum_{n' \ne n} \beta_{nn'} \tilde f_{n'}\big)$."
          r" The formula is this book's reconstruction.",
          "Sec. 4, Theorem 1, Eqn 9", _CH[3]),
    Claim("C10", _T, r"Under Assumption 2 the coefficient $\xi_n(t)$ is positive for every class $n$ and every $t$ "
          r"(the proof uses that each class overlaps another, which it reads out of Assumption 2).",
          "Sec. 4, Theorem 1(a); App. D.5, Lemma 16", _CH[3]),
    Claim("C11", _T, r"The speed-control coefficient $\gamma(t)$ grows like $\eta_Y t / K$ early and decays like "
          r"$K \ln(M \eta_Y t / K) / (\eta_Y t)$ late, with the transition near $t_0 \sim K \ln M / \eta_Y$ (the paper "
          r"prints the late form as $K \ln(\eta_Y t / K) / (\eta_Y t)$; $M$ inside the logarithm is this book's)."
          r" The formula is this book's reconstruction.",
          "Sec. 4, Theorem 1(b); App. D.3, Lemma 9", _CH[3]),
    Claim("C12", _T, r"Equal off-diagonal overlaps $E = \rho$ act as an effective decoder learning rate "
          r"$\eta_Y (1 - \rho)$ for the original (unmodified) dynamics of Eqn 7 with uniformly sampled classes."
          r" The formula is this book's reconstruction.",
          "App. D.2, Remark 1, Eqn 40-43", _CH[3]),
    Claim("C13", _T, r"Under the reparameterized dynamics the decoder approaches the critical point of Eqn 7 at rate "
          r"$O(1/t)$."
          r" Its statement and rate are this book's reconstruction.",
          "App. D.4, Corollary 1", _CH[3]),
    Claim("C14", _T, r"With classes sampled uniformly, class visit counts concentrate around $t/K$ (Hoeffding).",
          "App. D.4, Lemma 10, Remark 4", _CH[3]),
    Claim("C15", _T, r"The attention logits follow Eqn 10 and move only through overlap between classes."
          r" Eqn 10's form is this book's reconstruction.",
          "Sec. 5, Lemma 4, Eqn 10 (proof in App. E); "
          "'only through overlap' is this book's reading of Eqn 10", _CH[4]),
    Claim("C16", _T, r"The logits of distinct tokens increase: "
          r"$\dot z_{ml} = \eta_Z \gamma \xi_n \tilde f_{nl}^2 > 0$."
          r" The formula is this book's reconstruction.",
          "Sec. 5, Theorem 2(a)", _CH[4]),
    Claim("C17", _T, r"If there is a single common token and at least one next token has a distinct token, the common "
          r"token's logit decreases.", "Sec. 5, Theorem 2(b)", _CH[4]),
    Claim("C18", _T, r"In the symmetric case of Corollary 2 (one query token, symmetric classes, common tokens with a "
          r"class-independent $\mathbb P(l \mid n)$, $Z(0) = 0$) all common tokens' logits decrease; without symmetry "
          r"this can fail (the paper only calls the general case 'quite involved').",
          "App. E, Corollary 2; the case without symmetry is this book's", _CH[4]),
    Claim("C19", _T, r"The relative gain of two distinct tokens grows by the growth factor: "
          r"$r_{l/l' \mid n}(t) = r_{l/l' \mid n}(0)\, \chi_l(t)$."
          r" The formula is this book's reconstruction.",
          "Sec. 5, Theorem 3, Eqn 11", _CH[5]),
    Claim("C20", _T, r"If a distinct token $l_0$ dominates at $t = 0$ and the logits of its class's common tokens do "
          r"not grow, its growth factor is bounded by $e^{2 \tilde f^2_{nl_0}(0) B_n} \le \chi_{l_0} \le e^{2 B_n}$, "
          r"and its relative gain and attention increase monotonically."
          r" The formula is this book's reconstruction.",
          "Sec. 5, Theorem 3, Eqn 12", _CH[5]),
    Claim("C21", _T, r"Frequency bias: from $Z(0) = 0$ the most frequent distinct token dominates, and the others "
          r"drop in order of increasing $\mathbb P(l \mid n)$.",
          "Sec. 5 (after Theorem 3, on token scanning); Abstract", _CH[5]),
    Claim("C22", _T, r"Initial value as prior: the initial logits decide which distinct token wins; the winning token "
          r"is $\arg\max_l \mathbb P(l \mid n)\, e^{z_{ml}(0)}$ (this book's formula, from Theorem 3's dominance "
          r"condition).", "Sec. 5 (after Theorem 3, on the initial value as a prior)", _CH[5]),
    Claim("C23", _T, r"If $\xi_n$ decays slowly (the paper's example was lost in extraction; this book takes $\xi_n$ "
          r"bounded away from 0), $B_n$ grows without bound and the attention becomes winner-take-all.",
          "Sec. 6 (first paragraph)", _CH[5]),
    Claim("C24", _T, r"$B_n(t)$ has a closed form in $h(t)$ (Eqn 14), given the simplified dynamics of Eqn 13.",
          "Sec. 6, Theorem 4, Eqn 13-14; App. F, Eqn 124-129", _CH[6]),
    Claim("C25", _T, r"Scanning phase: early on the dominant token's growth factor grows (sub-)linearly in $t$.",
          "Sec. 6, Theorem 4 (attention scanning)", _CH[6]),
    Claim("C26", _T, r"Snapping phase: late, the growth factor grows only logarithmically; the attention looks "
          r"frozen without reaching a stationary point.", "Sec. 6, Theorem 4 (attention snapping); Sec. 1", _CH[6]),
    Claim("C27", _T, r"A larger $\eta_Y$ gives an earlier transition ($t_0 \propto 1/\eta_Y$).",
          "Sec. 6, insight (a)", _CH[6]),
    Claim("C28", _T, r"Scaling both learning rates up gives a larger $B_n$ at a fixed horizon: sparser attention.",
          "Sec. 6, insight (b)", _CH[6]),
    Claim("C29", _T, r"At fixed $\eta_Z$, a smaller $\eta_Y$ gives a larger $B_n$ at a horizon past the transition: "
          r"sparser attention.",
          "Sec. 6, insight (c); App. F(3b)", _CH[6]),
    Claim("C30", _T, r"At fixed $\eta_Y$, a larger $\eta_Z$ gives a larger $B_n$ late in training: sparser attention.",
          "App. F(3a)", _CH[6]),
    Claim("C31", _T, r"$B_n(t_0)$ depends on the learning rates only through their ratio; curves differ after "
          r"$t_0$.", "App. F(2), Fig. 9; 'only through their ratio' is this book's reading (the sentence lost its "
          r"variables)", _CH[6]),
    Claim("C32", _T, r"The simplified dynamics of Eqn 13 (the paper's qualitative estimation; $e^{4z}$ in this book's "
          r"reconstruction) match the exact symmetric system up to an $O(1)$ constant.",
          "Sec. 6, Eqn 13 (the estimate is the paper's; its test against the exact system is this book's)",
          _CH[6]),
    Claim("C33a", _T, r"With a residual connection, approximately, only classes that share a query interact: the "
          r"attention of a query moves only through classes of that query (a sketch the paper leaves to future work).",
          "Sec. 7, on the residual (first half of C33)", _CH[9]),
    Claim("C33b", _T, r"With a residual connection distinct and common tokens become local to a query: each token's "
          r"fate (rise or fall) follows the classes of its own query.",
          "Sec. 7, on the residual (second half of C33)", _CH[9]),
    Claim("C34", _T, r"A smaller $\eta_Y$ at fixed $\eta_Z$ gives a later transition and a larger growth factor "
          r"(Figure 3, which the paper calls a numerical simulation).", "Sec. 6, Fig. 3", _CH[6]),
    Claim("C35", _E, r"On Syn-Small the attention becomes sparse during training (Figure 4), which this book reads as: "
          r"sparser than at step 0, common-token mass falls and distinct tokens end ordered by $\mathbb P(l \mid n)$.",
          "Sec. 8, Fig. 4; the three measures are this book's reading", _CH[5]),
    Claim("C36", _E, r"On Syn-Small a larger $\eta_Y$ at fixed $\eta_Z$ converges faster but ends less sparse "
          r"(Figure 4).", "Sec. 8, Fig. 4", _CH[5]),
    Claim("C37", _E, r"On Syn-Small with Adam, different learning rates focus on different subsets of distinct tokens "
          r"(Figure 5).", "Sec. 8, Fig. 5", _CH[5]),
    Claim("C38", _E, r"On Syn-Medium the entropy of attention over distinct tokens decreases as $\eta_Z$ grows "
          r"(Figure 6).", "Sec. 8, Fig. 6", _CH[7]),
    Claim("C39", _E, r"On Syn-Medium, at fixed $\eta_Z$, the entropy rises with $\eta_Y$ beyond a threshold ratio "
          r"(Figure 6).", "Sec. 8, Fig. 6", _CH[7]),
    Claim("C40a", _E, r"On WikiText-2 the first-layer attention becomes sparse at a constant learning rate "
          r"(Figure 7).", "Sec. 8, Fig. 7 (first half of C40)", _CH[8]),
    Claim("C40b", _E, r"On WikiText-2 the first-layer attention freezes at a constant learning rate: its maps "
          r"stop changing late in training (Figure 7).", "Sec. 8, Fig. 7 (second half of C40)", _CH[8]),
    Claim("C41", _E, r"On WikiText, for a 1-layer model trained with SGD at one unified learning rate, the validation "
          r"attention entropy decreases with a larger learning rate (Figure 10).", "App. G, Fig. 10", _CH[8]),
    Claim("C42", _E, r"On Syn-Medium, recall-threshold curves show sparser attention for smaller $\eta_Y$ or larger "
          r"$\eta_Z$, consistent with Figure 6 (Figures 11-12); this book judges the $\eta_Y$ half past Figure 6's "
          r"threshold ratio.", "App. G, Figs. 11-12", _CH[7]),
    Claim("C43", _E, r"The theory's assumptions hold only approximately in the experiments (finite $T$, strong "
          r"overlap, momentum, random initialization).", "this book, on Sec. 8 and the authors' released settings",
          _CH[2], origin="book"),
    Claim("X1", _T, r"Lemma 1 extends to a residual connection ($v = f + e_m$), a learnable positional bias "
          r"($b_t \propto e^{z_{m x_t} + p_t}$) and several heads (logits $\sum_h Y_h^\top \tilde v_h$): the "
          r"gradients are $\tilde v_h (e_n - \alpha)^\top$, $f \odot s$ and $b_t s_{x_t}$ with "
          r"$s = r - (f^\top r) \mathbf 1$, $r = P^\perp_{\tilde v} Y_h (e_n - \alpha) / \lVert v \rVert_2$.",
          "Lemma 1 (Sec. 3.1), extended in Chapter 9 to Sec. 7's residual connection and linear bias and to "
          "multi-head attention (Sec. 3, Sec. 5)", _CH[9], origin="book"),
    Claim("X2", _T, r"On long sequences a positional bias acts only through the zone masses "
          r"$A_z = \sum_{t \in z} e^{p_t}$: for tokens that occur in one zone it adds the prior $\log A_z$ to their "
          r"logits $z_{ml}$; on bag-of-tokens data it cancels and gets no gradient.", "Sec. 7, derived in Chapter 9",
          _CH[9], origin="book"),
    Claim("X3", _E, r"When distinct tokens sit near the query, the learned positional bias favours the near positions "
          r"and shifts the attention over distinct tokens toward the near ones; with the same tokens shuffled it "
          r"stays near zero and shifts nothing.", "Sec. 7, tested in Chapter 9", _CH[9], origin="book"),
    Claim("X4", _E, r"After training, heads started from independent random $Z(0)$ still pick different distinct "
          r"tokens, where heads started from one draw pick the same: the Jaccard similarity of their picked sets falls "
          r"as the initialization scale grows (training keeps the draw's diversity).",
          "Sec. 5 (multi-head remark), tested in Chapter 9", _CH[9], origin="book"),
    Claim("X5", _E, r"Each head's winning distinct token is $\arg\max_l \mathbb P(l \mid n)\, e^{z^{(h)}_{ml}(0)}$ "
          r"of its own initialization (C22, head by head).", "Sec. 5 (after Theorem 3), tested in Chapter 9",
          _CH[9], origin="book"),
    Claim("X6", _E, r"After training, heads from independent initializations together attend to more distinct "
          r"tokens per class than one head of the same total width (all heads started from one draw).",
          "Sec. 5 (multi-head remark), tested in Chapter 9", _CH[9], origin="book"),
    Claim("X7", _E, r"On WikiText-2 the first-layer validation attention entropy of a 3-layer model also decreases "
          r"with a larger learning rate (C41 beyond the paper's 1-layer Figure 10).", "App. G, extended in Chapter 8",
          _CH[8], origin="book"),
    Claim("X8", _E, r"On Syn-Small, at the end of the authors' Figure 4 protocol ($\eta_Y = \eta_Z$, 100 SGD steps), "
          r"the attention is sparser than at step 0 but not sparse in absolute terms: class 1 still puts a "
          r"substantial mass on the common tokens and spreads over many distinct tokens.",
          r"Sec. 8, Fig. 4 (equal learning rates and 100 steps are the authors' released run, not the paper's text), "
          r"tested in Chapter 5", _CH[5], origin="book"),
    Claim("X9", _E, r"Training amplifies the diversity of heads from independent draws: their picks separate more "
          r"across initialization scales, and cover more tokens against tied heads, than the draws give at step 0.",
          "Sec. 5 (multi-head remark), tested in Chapter 9", _CH[9], origin="book"),
)
CENTRAL: tuple[Claim, ...] = (
    Claim("P1", _E, r"The scan and snap dynamics are seen in training on synthetic data: the attention first scans "
          r"(the distinct tokens' growth factor rises, common tokens lose attention), then snaps (it changes ever "
          r"more slowly and appears frozen, short of a stationary point).", "Abstract; Sec. 1; Sec. 8", _CH[6]),
    Claim("P2", _E, r"The scan and snap dynamics are seen in training on real data (WikiText-2): the first-layer "
          r"attention becomes sparse, then appears frozen.", "Abstract; Sec. 1; Sec. 8, Fig. 7", _CH[8]),
    Claim("P3", _E, r"The attention does not collapse to one-hot: training leaves an (almost) fixed combination of "
          r"several tokens.", "Abstract; Sec. 1; Sec. 6", _CH[8]),
)
"""The paper's central claims (its abstract and introduction), each decided on training and real data like a claim
of Sec. 8: what a reader of the abstract cites."""

CLAIMS = (*CLAIMS, *CENTRAL)
_BY_ID = {c.id: c for c in CLAIMS}
if len(_BY_ID) != len(CLAIMS):
    raise RuntimeError("scansnap.claims: claim ids must be unique")


def get(claim_id: str) -> Claim:
    """The claim ``claim_id`` (``"C1"`` .. ``"C43"``, ``"X1"``, ...)."""
    if claim_id not in _BY_ID:
        raise ValueError(f"claim_id: must be one of {', '.join(_BY_ID)}; got {claim_id!r}")
    return _BY_ID[claim_id]


def admissible(claim_id: str) -> tuple[str, ...]:
    """The evidence kinds that decide ``claim_id``: derivation and simulation of the theory's own model for a
    claim of the theory; training or real data for a claim about what training does."""
    return THEORY_KINDS if get(claim_id).kind == "theory" else TRAINING_KINDS


def describes_training(claim_id: str) -> list[Verdict]:
    """For a claim of the theory: its verdicts on training evidence, which answer "does the theorem describe
    the trained model?" (shown beside the headline, with the premise a miss points to; never the headline).
    Empty for a claim about training."""
    if get(claim_id).kind != "theory":
        return []
    return [v for v in verdicts(claim_id) if v.evidence in TRAINING_KINDS]


def _path(claim_id: str):
    return artifacts_dir() / "verdicts" / f"{get(claim_id).id}.json"


def verdicts(claim_id: str) -> list[Verdict]:
    """The recorded verdicts of ``claim_id``, one per kind of evidence, in the order of
    :data:`scansnap.verdicts.EVIDENCE` (empty when none was recorded). Raises ``ValueError`` naming the file when
    it was recorded by a version of scansnap whose verdicts have other fields."""
    path = _path(claim_id)
    if not path.exists():
        return []
    try:
        found = [Verdict(**v) for v in json.loads(path.read_text())["verdicts"]]
    except TypeError as err:  # a field this version's Verdict lacks, or lacks one it has
        raise ValueError(f"verdicts: {path} was recorded by another version of scansnap ({err}); read it with that "
                         "version, or rebuild the book with this one (make book)") from err
    return sorted(found, key=lambda v: list(EVIDENCE).index(v.evidence))


@contextmanager
def _exclusive():
    """Hold the verdicts folder's lock: chapters that execute in parallel and record verdicts of one claim (a central
    claim is judged in two chapters) read, merge and write its file one at a time, so none is lost."""
    folder = artifacts_dir() / "verdicts"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".record.lock", "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)


def record(*made: Verdict) -> list[Verdict]:
    """Record verdicts made by rules (:meth:`scansnap.verdicts.Rule.judge`); each replaces the verdict of
    the same claim on the same kind of evidence (under a lock, so that two chapters executing at once keep both
    their verdicts of one claim). Returns them stamped with the time, the profile and the commit."""
    stamped, commit = [], provenance.git_commit()
    for v in made:
        if not isinstance(v, Verdict):
            raise ValueError(f"made: must be Verdict objects returned by a rule; got {type(v).__name__}")
        v = v.stamped(profiles.current(), commit)
        with _exclusive():
            kept = [old for old in verdicts(v.claim) if old.evidence != v.evidence]
            atomic_write(_path(v.claim), dump_json({"claim": v.claim, "verdicts": [asdict(x) for x in [*kept, v]]}))
        stamped.append(v)
    return stamped


def headline(claim_id: str) -> str:
    """The claim's verdict: the weakest of its recorded verdicts on :func:`admissible` evidence, or
    ``"not yet checked"``."""
    kinds = admissible(claim_id)
    levels = [v.level for v in verdicts(claim_id) if v.evidence in kinds]
    return worst(levels) if levels else NOT_CHECKED


def ledger() -> list[tuple[Claim, str, list[Verdict]]]:
    """Every claim with its headline and its verdicts, in registry order."""
    return [(c, headline(c.id), verdicts(c.id)) for c in CLAIMS]
