"""What a verdict says, as types: its level (:class:`Level`), what decided it (:class:`Outcome`), the weakest of
several (:func:`worst`), and how it writes its numbers (:func:`number_text`, the book's one number formatter).

The enums are strings whose values are the words the ledger, the lock (``ledger/verdicts-book.json``) and the stored
verdicts hold, so they read and write those files unchanged; code decides on the members, never on the words
(``tests/test_typed_outcomes.py``). :mod:`scansnap.verdicts` re-exports all of them.
"""

from __future__ import annotations

import numbers as _numbers
from enum import StrEnum

from scansnap._checks import check_choice

__all__ = ["INCONCLUSIVE", "LEVELS", "Level", "Outcome", "number_text", "numbers_text", "worst"]


class Level(StrEnum):
    """A verdict's level; its value is the word the ledger, the lock and the stored verdicts write (a ``str``, so
    JSON and the lock read it unchanged). Members in the ledger's order of display, best first."""

    VERIFIED = "verified"
    PARTLY = "partly verified"
    INCONCLUSIVE = "inconclusive"
    NOT_REPRODUCED = "not reproduced"

    @property
    def rank(self) -> int:
        """0 for verified .. 3 for not reproduced (:data:`LEVELS` order): a larger rank is a weaker verdict."""
        return LEVELS.index(self)


INCONCLUSIVE = Level.INCONCLUSIVE
LEVELS = tuple(Level)
"""The verdicts, in the ledger's order of display (an unrecorded claim reads "not yet checked").
"inconclusive" is neither a pass nor a fail: the control passed too, the run cut a part of the paper's protocol
the claim depends on, or the effect was too small to judge."""
_LEVEL_WORDS = tuple(map(str, LEVELS))  # the levels as plain strings (for error messages)


class Outcome(StrEnum):
    """What decided a verdict's level (stored on the :class:`~scansnap.verdicts.Verdict` beside its words,
    :attr:`~scansnap.verdicts.Verdict.reason`): its criteria alone, or why it is inconclusive. A value other than
    ``CRITERIA`` is the head of the reason's words."""

    CRITERIA = "the criteria"
    """The level is what the criteria gave (no reason)."""
    CONTROL_PASSES = "the control passes too"
    """Inconclusive: the control reaches the same level."""
    REDUCED_PROTOCOL = "reduced protocol"
    """Inconclusive: the run cut a field of the paper's protocol the rule depends on
    (:attr:`scansnap.verdicts.Rule.depends_on`)."""
    TOO_SMALL = "effect too small to judge"
    """Inconclusive: the effect the rule tests is too small in this run to be seen."""
    TOO_FEW = "too few points to judge"
    """Inconclusive: the run gives the rule fewer valid points than its measures need (e.g. too few learning rates
    outside a degenerate regime to read an ordering): the claim's effect may be there, the run cannot show it."""
    PREMISE_NOT_MET = "premise not met"
    """Inconclusive: the run is outside the claim's premise (judged by the experiment, from its measures)."""


def worst(levels: list[str]) -> Level:
    """The last of ``levels`` in the order of :data:`LEVELS` (the weakest)."""
    if not levels:
        raise ValueError("levels: must hold at least one verdict")
    return max((Level(check_choice("level", lv, _LEVEL_WORDS)) for lv in levels), key=lambda lv: lv.rank)


def number_text(v: float) -> str:
    """A measured number as the book writes it in prose and tables (the one number formatter): an integer as is,
    else 3 significant digits, and below 1e-3 in scientific notation, e.g. ``"200"``, ``"0.912"``, ``"4.4e-16"``."""
    if isinstance(v, _numbers.Integral):
        return str(v)
    return f"{v:.3g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}"


def numbers_text(numbers: dict[str, float]) -> str:
    """Named numbers as ``"name = value; ..."``, each value by :func:`number_text`."""
    return "; ".join(f"{k} = {number_text(v)}" for k, v in numbers.items())
