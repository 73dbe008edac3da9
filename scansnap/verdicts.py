"""Verdict rules: how measured numbers become a verdict, fixed in code (and locked in ``ledger/rules.json``)
before any run.

A :class:`Rule` judges one claim on one **kind of evidence** (:data:`EVIDENCE`). It is declared against a
typed **measures** dataclass (the analysis the experiment computes): each :class:`Criterion` names a field
of it (checked when the rule is made, i.e. when its module is imported) and holds it against two
thresholds, the value that **verifies** the claim and the weaker value that **partly verifies** it.
Thresholds are effect sizes that respect the number's uncertainty (a criterion on a fitted or averaged
number reads the far end of its interval, and says so in its words). Every rule names the
**alternative** it rules out: its criteria sit where the claim and that alternative differ.

How a verdict is made (:meth:`Rule.judge`):

1. the criteria combine: **verified** when every criterion reaches its ``verified`` threshold; **not
   reproduced** when a ``required`` criterion misses its ``partly`` threshold, or every criterion misses
   it; **partly verified** otherwise (:meth:`Rule.level`);
2. **control**: a rule on training or real-data evidence is also judged on its control, the same measures
   taken in the same run on a null that cannot carry the claimed effect (by default the model at step 0,
   before any update; a rule may name another null). When the control reaches the same level, the verdict
   is **inconclusive**: the rule would have passed without the effect;
3. **protocol labels, both ways**: a verdict from a run below the paper's protocol
   (:meth:`scansnap.results.Config.cuts`) carries its cuts whatever its direction: "verified (reduced protocol:
   ...)" and "not reproduced (reduced protocol: ...)" alike. A cut makes the verdict **inconclusive** only where the
   rule names it, before the run, in :attr:`Rule.depends_on` (a field the claim's mechanism depends on, with the
   reason): then a pass on that run is inconclusive too. A gate that lets a cut run confirm but never refute
   biases the ledger toward the paper;
4. **no control by construction**: a control whose criteria are all nan, infinite, or 0 where 0 fails them
   measured nothing (the effect is absent there by definition, not by measurement): :meth:`Rule.judge` refuses it.

Rules live next to the experiment whose result they judge (``scansnap.experiments.chNN_*``, each module's
``RULES``; :func:`scansnap.experiments.all_rules` collects them); ``tests/test_verdicts.py`` makes every rule
pass, partly pass, fail and be undone by its control, on measures built from its own thresholds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers as _numbers
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from scansnap._checks import check_choice
from scansnap.criteria import Criterion, at_least, at_most
from scansnap.outcomes import INCONCLUSIVE, LEVELS, Level, Outcome, number_text, numbers_text, worst

if TYPE_CHECKING:
    from scansnap.results import Judged

__all__ = [
    "CONTROL_STEP0",
    "EVIDENCE",
    "INCONCLUSIVE",
    "LEVELS",
    "Level",
    "Outcome",
    "THEORY_KINDS",
    "TRAINING_KINDS",
    "Criterion",
    "Rule",
    "Verdict",
    "at_least",
    "at_most",
    "number_text",
    "numbers_text",
    "worst",
]


EVIDENCE = {
    "derivation": "derivation (sympy or a closed form, checked numerically)",
    "simulation": "simulation (an ODE or flow of the theory's own model)",
    "training-population": "training (the Y/Z trainer in the long-sequence limit, T = inf)",
    "training-sampled": "training (the Y/Z trainer on sampled sequences)",
    "real-data": "real data (a language model trained on real text)",
}
"""Kinds of evidence a verdict can rest on, and how the ledger names them."""

THEORY_KINDS = ("derivation", "simulation")
"""The kinds that decide a claim of the theory (training on a theory claim asks whether the theorem describes
the trained model, and is shown beside)."""

TRAINING_KINDS = ("training-population", "training-sampled", "real-data")
"""The kinds that decide a claim about what training does (an ``experiment`` claim); every rule on them is
also judged on its control."""

CONTROL_STEP0 = "the same measures on the model at step 0 (before any update), from the same run"
"""The default control of a rule on training or real-data evidence."""


@dataclass(frozen=True)
class Verdict:
    """What a rule gave for one claim on one kind of evidence.

    Attributes:
        claim: the claim id (``"C19"``, ``"X1"``).
        level: a :class:`Level` (a string of :data:`LEVELS` is read as one).
        evidence: a key of :data:`EVIDENCE`.
        rule: the rule in words, thresholds, alternative and control included.
        numbers: the measured numbers (every field of the rule's measures).
        protocol: how the numbers were made (the configuration's :meth:`~scansnap.results.Config.protocol`).
        details: further measured context (formatted from the run, never written by hand).
        link: the page anchor where the numbers are shown (site-relative, ``book/chapters/...html#...``).
        recorded: when the verdict was recorded (UTC, ISO 8601; empty until recorded).
        control: the control's numbers (empty for derivation and simulation).
        control_level: what the criteria give on the control ("" when there is none).
        reduced: what the run cut from the paper's protocol (empty: at or above it).
        reason: why the level is "inconclusive" ("the control passes too", "reduced protocol: ...", "effect too
            small to judge: ..."), else "": the words of :attr:`outcome`.
        premise: for training evidence on a theory claim, the premise whose failure a miss points to.
        profile: the profile the verdict was recorded under (set by :func:`scansnap.claims.record`).
        outcome: what decided the level (:class:`Outcome`): ``CRITERIA`` for a verdict the criteria gave, else why
            it is inconclusive (what code reads; :attr:`reason` is its words).
        commit: the git commit of the code that made it, as :func:`scansnap.provenance.git_commit` writes it (set
            by :func:`scansnap.claims.record`).
        criteria_level: for an inconclusive verdict, the level its criteria alone gave on the run's numbers (what
            the run says before its control, a cut the mechanism depends on or too small an effect undecided it);
            else "" (the level is the criteria's).
    """

    claim: str
    level: Level
    evidence: str
    rule: str
    numbers: dict[str, float] = field(default_factory=dict)
    protocol: str = ""
    details: str = ""
    link: str = ""
    recorded: str = ""
    control: dict[str, float] = field(default_factory=dict)
    control_level: str = ""
    reduced: tuple[str, ...] = ()
    reason: str = ""
    premise: str = ""
    profile: str = ""
    outcome: Outcome = Outcome.CRITERIA
    criteria_level: str = ""
    commit: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "level", Level(check_choice("level", self.level, [*map(str, Level)])))
        object.__setattr__(self, "outcome", Outcome(check_choice("outcome", self.outcome, [*map(str, Outcome)])))
        check_choice("evidence", self.evidence, tuple(EVIDENCE))
        object.__setattr__(self, "reduced", tuple(self.reduced))
        decided = self.outcome is Outcome.CRITERIA
        if decided == (self.level is Level.INCONCLUSIVE) or decided == bool(self.reason):
            raise ValueError(f"outcome: {self.claim} ({self.evidence}) is {self.level!s} with outcome "
                             f"{self.outcome!s} and reason {self.reason!r}: an inconclusive verdict needs an outcome "
                             f"other than the criteria and its reason, any other none (a verdict recorded before "
                             f"outcomes were stored: remove <artifacts>/verdicts, e.g. _extra/verdicts, and build "
                             f"again)")
        if self.criteria_level and (decided or check_choice("criteria_level", self.criteria_level,
                                                            [*map(str, Level)]) == Level.INCONCLUSIVE):
            raise ValueError(f"criteria_level: only an inconclusive verdict has one, a level its criteria can give; "
                             f"{self.claim} ({self.evidence}) is {self.level!s} with {self.criteria_level!r}")

    def undecided(self, outcome: Outcome, detail: str = "") -> Verdict:
        """This verdict made inconclusive for ``outcome`` (not ``CRITERIA``), its reason ``"<outcome>: <detail>"``."""
        if outcome is Outcome.CRITERIA:
            raise ValueError("outcome: an undecided verdict needs a reason other than the criteria")
        return dataclasses.replace(self, level=Level.INCONCLUSIVE, outcome=outcome,
                                   reason=f"{outcome}: {detail.strip()}" if detail.strip() else str(outcome),
                                   criteria_level=self.criteria_level or str(self.level))

    def stamped(self, profile: str, commit: str = "") -> Verdict:
        """This verdict with ``recorded`` set to now, ``profile`` and ``commit`` set."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return dataclasses.replace(self, recorded=now, profile=profile, commit=commit)

    def summary(self) -> str:
        """The numbers the rule used, e.g. ``"max_error = 4.4e-16; instances = 200"`` (for an inconclusive verdict,
        then ``" (the criteria alone: verified)"``), then the control's."""
        text = numbers_text(self.numbers)
        if self.criteria_level:
            text += f" (the criteria alone: {self.criteria_level})"
        if self.control_level:
            text += f" | control ({self.control_level}): {numbers_text(self.control)}"
        return text

    def label(self) -> str:
        """The level with its qualification, e.g. ``"inconclusive (the control passes too)"`` or
        ``"verified (reduced protocol: steps 450 < 1500)"``."""
        return f"{self.level} ({self.qualification()})" if self.qualification() else str(self.level)

    def qualification(self) -> str:
        """What :meth:`label` adds to the level: why it is inconclusive (:attr:`reason`), else the reduced protocol
        it was reached under (``"reduced protocol: steps 450 < 1500"``), else ``""``."""
        head, detail = self.qualification_parts()
        return f"{head}: {detail}" if head and detail else head

    def qualification_parts(self) -> tuple[str, str]:
        """:meth:`qualification` as ``(head, detail)``: the head is the :class:`Outcome`'s words (``"reduced
        protocol"`` also for a verdict decided under a reduced protocol), the detail what follows it; ``("", "")``
        for a verdict with no qualification."""
        if self.outcome is not Outcome.CRITERIA:
            return str(self.outcome), self.reason[len(self.outcome) + 2:]
        return (str(Outcome.REDUCED_PROTOCOL), "; ".join(self.reduced)) if self.reduced else ("", "")

    def number_pairs(self, control: bool = False) -> tuple[tuple[str, str], ...]:
        """The numbers the rule used (``control=True``: its control's) as ``(name, value)`` pairs, each value
        written as :meth:`summary` writes it, e.g. ``(("max_error", "4.4e-16"), ("instances", "200"))``."""
        return tuple((k, number_text(v)) for k, v in (self.control if control else self.numbers).items())


@dataclass(frozen=True)
class Rule:
    """How one claim is judged on one kind of evidence.

    Attributes:
        claim: the claim id.
        evidence: a key of :data:`EVIDENCE`.
        measures: the dataclass the rule reads; every criterion names one of its fields, and every field
            is a real number (extra fields are kept as context).
        criteria: the numbers and their thresholds.
        alternative: what the rule rules out (the claim's alternative, e.g. "a power law chi ~ t^q, no snap").
        control: the null the rule is also judged on (training and real-data evidence only; default
            :data:`CONTROL_STEP0`).
        premise: for training evidence on a theory claim, the premise of the theorem a miss points to.
        note: what the rule does not cover, or why these thresholds (shown with the rule).
        depends_on: (training and real data) the configuration fields the claim's mechanism depends on, each with
            why (e.g. ``{"steps": "the snap needs t >> t0 ~ 1000 steps"}``): a run that cuts one of them from the
            paper's protocol gives an inconclusive verdict whatever the criteria give. Every other cut only labels
            the verdict. Each key must be a gated field of the run's configuration.
    """

    claim: str
    evidence: str
    measures: type
    criteria: tuple[Criterion, ...]
    alternative: str
    control: str = ""
    premise: str = ""
    note: str = ""
    depends_on: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        check_choice("evidence", self.evidence, tuple(EVIDENCE))
        who = f"the rule for {self.claim} ({self.evidence})"
        if not self.criteria:
            raise ValueError(f"criteria: {who} needs at least one criterion")
        names = [c.name for c in self.criteria]
        if len(set(names)) != len(names):
            raise ValueError(f"criteria: names must be unique in {who}; got {names}")
        if not (isinstance(self.measures, type) and dataclasses.is_dataclass(self.measures)):
            raise ValueError(f"measures: {who} must name a dataclass type; got {self.measures!r}")
        fields = {f.name for f in dataclasses.fields(self.measures)}
        missing = [n for n in names if n not in fields]
        if missing:
            raise ValueError(f"criteria: {who} names {missing}, not fields of {self.measures.__name__} "
                             f"({sorted(fields)})")
        if not self.alternative.strip():
            raise ValueError(f"alternative: {who} must name the alternative it rules out")
        if self.evidence in TRAINING_KINDS:
            if not self.control:
                object.__setattr__(self, "control", CONTROL_STEP0)
        elif self.control:
            raise ValueError(f"control: {who} is on {self.evidence} evidence, which has no control")
        if self.depends_on and self.evidence not in TRAINING_KINDS:
            raise ValueError(f"depends_on: {who} is on {self.evidence} evidence, which has no protocol cuts")
        blank = [k for k, why in self.depends_on.items() if not str(why).strip()]
        if blank:
            raise ValueError(f"depends_on: {who} must say why the claim depends on {blank}")

    @property
    def key(self) -> str:
        """``"<claim>/<evidence>"``: the rule's key in ``ledger/rules.json``."""
        return f"{self.claim}/{self.evidence}"

    def text(self) -> str:
        """The rule in words: criteria, the alternative it rules out, its control."""
        parts = "; ".join(c.words() for c in self.criteria)
        text = (f"verified when every number reaches its threshold: {parts}. Not reproduced when a required "
                f"number misses its partly threshold (or all do); partly verified otherwise. "
                f"Rules out: {self.alternative}")
        if self.control:
            text += f". Control: {self.control} (inconclusive when the control reaches the same level)"
        if self.premise:
            text += f". Premise a miss points to: {self.premise}"
        if self.depends_on:
            text += (". Inconclusive in both directions on a run that cuts "
                     + "; ".join(f"{k} ({why})" for k, why in self.depends_on.items()))
        return text + (f". {self.note}" if self.note else "")

    def spec(self) -> dict[str, Any]:
        """The rule as JSON-ready data (what ``ledger/rules.json`` locks)."""
        return {"claim": self.claim, "evidence": self.evidence,
                "measures": f"{self.measures.__module__}.{self.measures.__qualname__}",
                "criteria": [asdict(c) for c in self.criteria], "alternative": self.alternative,
                "control": self.control, "premise": self.premise, "note": self.note,
                **({"depends_on": dict(self.depends_on)} if self.depends_on else {})}

    def fingerprint(self) -> str:
        """A short hash of :meth:`spec` (changes whenever a threshold, criterion or word of the rule does)."""
        return hashlib.sha256(json.dumps(self.spec(), sort_keys=True).encode()).hexdigest()[:16]

    def numbers(self, measures: object) -> dict[str, float]:
        """The fields of ``measures`` (an instance of :attr:`measures`) as named real numbers."""
        if not isinstance(measures, self.measures):
            raise ValueError(f"measures: the rule for {self.claim} reads {self.measures.__name__}; "
                             f"got {type(measures).__name__}")
        out: dict[str, float] = {}
        for f in dataclasses.fields(measures):
            value = getattr(measures, f.name)
            if isinstance(value, bool) or not isinstance(value, _numbers.Real):
                raise ValueError(f"measures.{f.name}: must be a real number; got {value!r}")
            out[f.name] = int(value) if isinstance(value, _numbers.Integral) else float(value)
        return out

    def level(self, measures: object) -> Level:
        """What the criteria alone give for ``measures``: verified, partly verified or not reproduced."""
        values = self.numbers(measures)
        scores = [(c, c.score(values[c.name])) for c in self.criteria]
        if any(s == 0 and c.required for c, s in scores) or all(s == 0 for _, s in scores):
            return Level.NOT_REPRODUCED
        return Level.VERIFIED if all(s == 2 for _, s in scores) else Level.PARTLY

    def _check_control(self, control: object) -> None:
        """Refuse a control that measured nothing: every criterion nan, infinite, or 0 where 0 fails it (an effect
        absent by construction, not by measurement)."""
        values = self.numbers(control)

        def empty(c: Criterion) -> bool:
            v = values[c.name]
            return not math.isfinite(v) or (v == 0 and c.score(v) == 0)

        if all(empty(c) for c in self.criteria):
            raise ValueError(f"control: the control of {self.claim} ({self.evidence}) is 0, nan or infinite on every "
                             f"criterion ({numbers_text({c.name: values[c.name] for c in self.criteria})}): it "
                             f"measures an effect that is absent by construction, so it could never pass. Judge the "
                             f"rule on a null that is measured and would reach the threshold without the effect")

    def judge(self, measures: object, config: Judged, *, control: object = None, scope: str = "",
              details: str = "", link: str = "", too_small: str = "") -> Verdict:
        """The :class:`Verdict` for ``measures`` measured under ``config``.

        Args:
            measures: an instance of :attr:`measures`.
            config: the run's configuration (:class:`scansnap.results.Judged`): its ``protocol()`` is the verdict's
                protocol, its ``cuts()`` the protocol labels (training and real data only).
            control: the same measures on the rule's control (required for training and real data).
            scope: which part of the run, appended to the protocol (e.g. ``"plain SGD, Eqn 7"``).
            details: further measured context, formatted from the run.
            link: page anchor of the numbers.
            too_small: (training and real data only) non-empty when the effect the rule tests is too small in this
                run to be seen, in words with its numbers (e.g. "the attention never scans: ..."): whatever the
                criteria give, the verdict is inconclusive with this reason (a rule cannot tell a claim from its
                alternative on an effect that never happened).
        """
        if not all(hasattr(config, a) for a in ("protocol", "cuts", "GATED")):
            raise ValueError(f"config: the rule for {self.claim} is judged under the run's configuration (a "
                             f"scansnap.results.Config); got {type(config).__name__}")
        level, outcome, detail = self.level(measures), Outcome.CRITERIA, ""
        protocol = config.protocol() + (f"; {scope}" if scope else "")
        if not protocol.strip():
            raise ValueError(f"config: the protocol of {self.claim}'s run is empty")
        extra: dict[str, Any] = {}
        if self.evidence in TRAINING_KINDS:
            if control is None:
                raise ValueError(f"control: the rule for {self.claim} ({self.evidence}) must also be judged on "
                                 f"its control: {self.control}")
            control_level = self.level(control)
            self._check_control(control)
            cuts = tuple(config.cuts())
            reduced = tuple(cut.phrase for cut in cuts)
            unknown = sorted(set(self.depends_on) - set(config.GATED))
            if unknown:
                raise ValueError(f"depends_on: the rule for {self.claim} names {unknown}, not gated fields of "
                                 f"{type(config).__name__} ({', '.join(config.GATED) or 'none'})")
            needed = [f"{cut.phrase}, which the claim depends on: {self.depends_on[cut.field]}"
                      for cut in cuts if cut.field in self.depends_on]
            if level is not Level.NOT_REPRODUCED and control_level.rank <= level.rank:
                outcome = Outcome.CONTROL_PASSES
            if needed:
                outcome, detail = Outcome.REDUCED_PROTOCOL, "; ".join(needed)
            if too_small.strip():
                outcome, detail = Outcome.TOO_SMALL, too_small
            extra = dict(control=self.numbers(control), control_level=control_level, reduced=reduced,
                         premise=self.premise)
        elif control is not None or too_small:
            what = "control" if control is not None else "too_small"
            raise ValueError(f"{what}: {self.evidence} evidence has no {what} (rule for {self.claim})")
        made = Verdict(self.claim, level, self.evidence, self.text(), self.numbers(measures), protocol.strip(),
                       details.strip(), link, **extra)
        return made if outcome is Outcome.CRITERIA else made.undecided(outcome, detail)
