"""Verdict rules: how measured numbers become a verdict, fixed in code before any run.

A :class:`Rule` judges one claim on one **kind of evidence** (:data:`EVIDENCE`) from named numbers,
each held against a :class:`Criterion` with two thresholds: the value that **verifies** the claim
and the weaker value that **partly verifies** it. Thresholds are effect sizes (an error bound, a
share of runs, a minimum fall), never only a sign. The rule states itself in words
(:meth:`Rule.text`), and every :class:`Verdict` it returns carries the rule, the numbers it used and
their thresholds, the evidence kind and the protocol of the run, so a reader of the ledger sees why.

How the criteria combine (:meth:`Rule.judge`): **verified** when every criterion reaches its
``verified`` threshold; **not reproduced** when a ``required`` criterion misses its ``partly``
threshold, or when every criterion misses it; **partly verified** otherwise.

Rules live next to the experiment whose result they judge (``scansnap.experiments.chNN_*``, each
module's ``RULES``); :func:`all_rules` collects them, and ``tests/test_verdicts.py`` makes every
rule pass, partly pass and fail on numbers built from its own thresholds.
"""

from __future__ import annotations

import math
import numbers as _numbers
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from scansnap._checks import check_choice

__all__ = [
    "EVIDENCE",
    "LEVELS",
    "Criterion",
    "Rule",
    "Verdict",
    "all_rules",
    "at_least",
    "at_most",
    "worst",
]

LEVELS = ("verified", "partly verified", "not reproduced")
"""The verdicts a rule can give, best first (an unrecorded claim reads "not yet checked")."""

EVIDENCE = {
    "derivation": "derivation (sympy or a closed form, checked numerically)",
    "simulation": "simulation (an ODE or flow of the theory's own model)",
    "training-population": "training (the Y/Z trainer in the long-sequence limit, T = inf)",
    "training-sampled": "training (the Y/Z trainer on sampled sequences)",
    "real-data": "real data (a language model trained on real text)",
}
"""Kinds of evidence a verdict can rest on, and how the ledger names them."""

TRAINING_KINDS = ("training-population", "training-sampled", "real-data")
"""The kinds that can decide a claim about what training does (an ``experiment`` claim)."""


def worst(levels: list[str]) -> str:
    """The weakest of ``levels`` (each one of :data:`LEVELS`)."""
    if not levels:
        raise ValueError("levels: must hold at least one verdict")
    return LEVELS[max(LEVELS.index(check_choice("level", lv, LEVELS)) for lv in levels)]


@dataclass(frozen=True)
class Criterion:
    """One measured number held against two thresholds.

    Attributes:
        name: the key of the number in the numbers a rule judges.
        meaning: what the number is, in words (shown in the ledger).
        op: ``">="`` (larger is better) or ``"<="`` (smaller is better).
        verified: the threshold that verifies this part of the claim.
        partly: the weaker threshold that partly verifies it (``None``: no partial credit).
        required: missing ``partly`` (or ``verified`` when there is no ``partly``) makes the claim
            "not reproduced"; otherwise it only keeps the claim below "verified".
    """

    name: str
    meaning: str
    op: str
    verified: float
    partly: float | None = None
    required: bool = True

    def __post_init__(self) -> None:
        check_choice(f"{self.name}: op", self.op, (">=", "<="))
        if self.partly is not None:
            looser = self.partly <= self.verified if self.op == ">=" else self.partly >= self.verified
            if not looser:
                raise ValueError(f"{self.name}: partly threshold {self.partly} must be looser than verified "
                                 f"{self.verified} for op {self.op!r}")

    def score(self, value: float) -> int:
        """2 when ``value`` reaches ``verified``, 1 when it reaches ``partly``, 0 otherwise (nan: 0)."""
        if math.isnan(value):
            return 0

        def meets(threshold: float) -> bool:
            return value >= threshold if self.op == ">=" else value <= threshold

        if meets(self.verified):
            return 2
        return 1 if self.partly is not None and meets(self.partly) else 0

    def words(self) -> str:
        """The criterion in words, e.g. ``"max error <= 1e-10 (partly: <= 1e-06)"``."""
        text = f"{self.meaning} {self.op} {self.verified:g}"
        if self.partly is not None:
            text += f" (partly: {self.op} {self.partly:g})"
        return text + ("" if self.required else " [not required]")


def at_least(name: str, meaning: str, verified: float, partly: float | None = None, *,
             required: bool = True) -> Criterion:
    """A :class:`Criterion` on a number that must be large enough."""
    return Criterion(name, meaning, ">=", verified, partly, required)


def at_most(name: str, meaning: str, verified: float, partly: float | None = None, *,
            required: bool = True) -> Criterion:
    """A :class:`Criterion` on a number that must be small enough."""
    return Criterion(name, meaning, "<=", verified, partly, required)


@dataclass(frozen=True)
class Verdict:
    """What a rule gave for one claim on one kind of evidence.

    Attributes:
        claim: the claim id (``"C19"``, ``"X1"``).
        level: one of :data:`LEVELS`.
        evidence: a key of :data:`EVIDENCE`.
        rule: the rule in words, thresholds included.
        numbers: the measured numbers the rule used (name -> value).
        protocol: how the numbers were made (data, model, optimizer, seeds, profile).
        details: further measured context (formatted from the run, never written by hand).
        link: the page anchor where the numbers are shown (site-relative, ``book/chapters/...html#...``).
        recorded: when the verdict was recorded (UTC, ISO 8601; empty until recorded).
    """

    claim: str
    level: str
    evidence: str
    rule: str
    numbers: dict[str, float] = field(default_factory=dict)
    protocol: str = ""
    details: str = ""
    link: str = ""
    recorded: str = ""

    def __post_init__(self) -> None:
        check_choice("level", self.level, LEVELS)
        check_choice("evidence", self.evidence, tuple(EVIDENCE))

    def stamped(self) -> Verdict:
        """This verdict with ``recorded`` set to now."""
        return Verdict(**{**asdict(self), "recorded": datetime.now(timezone.utc).isoformat(timespec="seconds")})

    def summary(self) -> str:
        """The numbers the rule used, e.g. ``"max_error = 4.4e-16; instances = 200"``."""
        return "; ".join(f"{k} = {_fmt(v)}" for k, v in self.numbers.items())


@dataclass(frozen=True)
class Rule:
    """How one claim is judged on one kind of evidence.

    Attributes:
        claim: the claim id.
        evidence: a key of :data:`EVIDENCE`.
        criteria: the numbers and their thresholds.
        note: what the rule does not cover, or why these thresholds (shown with the rule).
    """

    claim: str
    evidence: str
    criteria: tuple[Criterion, ...]
    note: str = ""

    def __post_init__(self) -> None:
        check_choice("evidence", self.evidence, tuple(EVIDENCE))
        if not self.criteria:
            raise ValueError(f"criteria: rule for {self.claim} needs at least one criterion")
        names = [c.name for c in self.criteria]
        if len(set(names)) != len(names):
            raise ValueError(f"criteria: names must be unique in the rule for {self.claim}; got {names}")

    def text(self) -> str:
        """The rule in words."""
        parts = "; ".join(c.words() for c in self.criteria)
        text = (f"verified when every number reaches its threshold: {parts}. Not reproduced when a required "
                f"number misses its partly threshold (or all do); partly verified otherwise")
        return text + (f". {self.note}" if self.note else "")

    def level(self, numbers: Mapping[str, float]) -> str:
        """The verdict for ``numbers`` (every criterion's name must be a key)."""
        scores = []
        for c in self.criteria:
            if c.name not in numbers:
                raise ValueError(f"numbers: the rule for {self.claim} needs {c.name!r}; got {sorted(numbers)}")
            value = numbers[c.name]
            if isinstance(value, bool) or not isinstance(value, _numbers.Real):
                raise ValueError(f"numbers[{c.name!r}]: must be a real number; got {value!r}")
            scores.append((c, c.score(float(value))))
        if any(s == 0 and c.required for c, s in scores) or all(s == 0 for _, s in scores):
            return LEVELS[2]
        return LEVELS[0] if all(s == 2 for _, s in scores) else LEVELS[1]

    def judge(self, numbers: Mapping[str, float], *, protocol: str, details: str = "", link: str = "") -> Verdict:
        """The :class:`Verdict` for ``numbers`` (extra numbers beyond the criteria are kept as context).

        Args:
            numbers: measured numbers, at least one per criterion.
            protocol: how they were made (non-empty).
            details: further measured context, formatted from the run.
            link: page anchor of the numbers.
        """
        if not protocol.strip():
            raise ValueError(f"protocol: say how the numbers for {self.claim} were made (non-empty)")
        level = self.level(numbers)
        clean = {k: (int(v) if isinstance(v, _numbers.Integral) else float(v)) for k, v in numbers.items()}
        return Verdict(self.claim, level, self.evidence, self.text(), clean, protocol.strip(), details.strip(), link)


def all_rules() -> list[Rule]:
    """Every rule of the library: the ``RULES`` of each experiment module."""
    from scansnap import experiments

    return [rule for module in experiments.modules() for rule in getattr(module, "RULES", ())]


def _fmt(v: float) -> str:
    if isinstance(v, int):
        return str(v)
    return f"{v:.3g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}"
