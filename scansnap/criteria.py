"""A criterion of a verdict rule (:mod:`scansnap.verdicts`): one measured number held against the threshold that
verifies a claim and the weaker one that partly verifies it; :func:`at_least` and :func:`at_most` make one.
:mod:`scansnap.verdicts` re-exports all three (``from scansnap.verdicts import at_least`` stays the way rules are
written)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from scansnap._checks import check_choice

__all__ = ["Criterion", "at_least", "at_most"]


@dataclass(frozen=True)
class Criterion:
    """One measured number held against two thresholds.

    Attributes:
        name: the field of the rule's measures dataclass that holds the number.
        meaning: what the number is, in words (shown in the ledger); for a fitted or averaged number, say
            which end of its interval it is.
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
        for what, value in (("verified", self.verified), ("partly", self.partly)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)
                                      or not math.isfinite(value)):
                raise ValueError(f"{self.name}: the {what} threshold must be a finite number; got {value!r}")
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
