"""Chapter 8's stored runs judged by the training text they used, not by the one the reader's machine holds.

A configuration's protocol gate (:meth:`scansnap.results.Config.shortfall`) asks whether ``train.txt`` is on this
machine: a run made now without it trains on valid + test less the held-out articles, a reduced protocol. A run
*stored* on a machine without ``train.txt`` stays that reduced run when a reader who has downloaded ``train.txt``
builds the book: :class:`AsRun` answers the gate from the run's own note (what it trained on, recorded when it ran),
so that a stored run is labelled with the cut it was actually made under ("reduced protocol: ..."), in both
directions (no Chapter 8 rule names ``train_split`` in its ``depends_on``: the cut labels, it does not decide).

:func:`snap_as_run` is C40a, C40b, P2 and P3 (:func:`scansnap.experiments.ch08_wikitext.snap_verdicts`) judged that
way; Figure 10's
rule (:mod:`scansnap.experiments.ch08_rates`) uses :class:`AsRun` directly. This module is not imported by the
modules that run the stored experiments, so it can change without making their stores stale.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from scansnap.experiments import ch08_wikitext as ch8
from scansnap.verdicts import Verdict

__all__ = ["AsRun", "snap_as_run", "without_train_txt"]

# The gate's words for the fallback text (``ch08_wikitext.WikiConfig.shortfall``), replaced by the run's own.
_FALLBACK = "trained on valid + test"
_MISSING = ("trained on valid + test less the held-out articles: train.txt was missing when the run was made "
            "(paper profile: train.txt)")


def without_train_txt(note: str) -> bool:
    """Whether a Chapter 8 run's note says it could not train on ``train.txt`` (so used the held-out-articles data)."""
    return "could NOT train" in note


@dataclass(frozen=True)
class AsRun:
    """A Chapter 8 configuration as its run was made: :meth:`shortfall` counts the training text named in ``note``
    (the run's record of its data) and every other field of ``config`` as usual; every other attribute is
    ``config``'s, so an :class:`AsRun` stands wherever the configuration does (a rule's ``judge``, a result)."""

    config: Any
    note: str

    def __getattr__(self, name: str) -> Any:
        if name in ("config", "note"):  # not yet set (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.config, name)

    def protocol(self) -> str:
        return self.config.protocol()

    def cuts(self) -> tuple[tuple[str, str], ...]:
        fields = tuple((f, s) for f, s in self.config.cuts() if not s.startswith(_FALLBACK))
        return fields + ((("train_split", _MISSING),) if without_train_txt(self.note) else ())

    def shortfall(self) -> tuple[str, ...]:
        return tuple(phrase for _, phrase in self.cuts())


def snap_as_run(freeze: ch8.FreezeResult, deep: ch8.FreezeResult) -> list[Verdict]:
    """C40a, C40b, P2 and P3 (:func:`scansnap.experiments.ch08_wikitext.snap_verdicts`) with each run's cuts read from
    its own note: the verdicts for ``freeze`` (``ch8-freeze``) and ``deep`` (``ch8-freeze-deep``) as they were made."""
    return ch8.snap_verdicts(replace(freeze, config=AsRun(freeze.config, freeze.note)),
                             replace(deep, config=AsRun(deep.config, deep.note)))
