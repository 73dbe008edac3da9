"""Chapter 8's Figure 7 verdicts (:func:`snap_verdicts`), and its stored runs judged by the training text they used,
not by the one the reader's machine holds.

A configuration's protocol gate (:meth:`scansnap.results.Config.shortfall`) asks whether ``train.txt`` is on this
machine: a run made now without it trains on valid + test less the held-out articles, a reduced protocol. A run
*stored* on a machine without ``train.txt`` stays that reduced run when a reader who has downloaded ``train.txt``
builds the book: :class:`AsRun` answers the gate from the run's own note (what it trained on, recorded when it ran),
so that a stored run is labelled with the cut it was actually made under ("reduced protocol: ..."), in both
directions (no Chapter 8 rule names ``train_split`` in its ``depends_on``: the cut labels, it does not decide).

:func:`snap_as_run` is C40a, C40b, P2 and P3 (:func:`snap_verdicts`) judged that
way; Figure 10's
rule (:mod:`scansnap.experiments.ch08_rates`) uses :class:`AsRun` directly. This module is not imported by the
modules that run the stored experiments, so it can change without making their stores stale.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from scansnap.experiments import ch08_wikitext as ch8
from scansnap.experiments import wikitext_snap as ws
from scansnap.experiments.wikitext_freeze import freeze_measures
from scansnap.verdicts import Verdict

__all__ = ["AsRun", "snap_as_run", "snap_verdicts", "without_train_txt"]

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


def snap_verdicts(freeze: ch8.FreezeResult, deep: ch8.FreezeResult) -> list[Verdict]:
    """C40a, C40b, P2 and P3 (:mod:`scansnap.experiments.wikitext_snap`) from the 1-layer runs of ``ch8-freeze`` (over
    their seeds) and the multi-layer run of ``ch8-freeze-deep`` (its first seed), each against its control; the
    protocol is the less complete of the two."""
    one, multi = freeze.runs, deep.runs[0]
    m = ws.snap_measures([ws.snap_run(t) for t in one], ws.snap_run(multi))
    control = ws.snap_measures([ws.snap_control(t) for t in one], ws.snap_control(multi))
    old = freeze_measures(one, multi)
    details = (f"ch8-freeze: {len(one)} seed(s) {list(freeze.config.seeds)}, 1 layer; ch8-freeze-deep: seed "
               f"{deep.config.seeds[0]}, {deep.config.layers} layers; data: {freeze.note}; {freeze.train_tokens:,} "
               f"training tokens; held-out loss {np.mean([t.heldout_loss[0] for t in one]):.2f} -> "
               f"{np.mean([t.heldout_loss[-1] for t in one]):.2f} (1 layer, mean), {multi.heldout_loss[0]:.2f} -> "
               f"{multi.heldout_loss[-1]:.2f} (multi-layer); final held-out entropy "
               f"{np.round([t.entropy[-1] for t in one], 3).tolist()} nats (1 layer), {multi.entropy[-1]:.3f} "
               f"(multi-layer); retired drift ratio against the jitter floor: first window {old.early_drift_1:.2f}, "
               f"last {old.late_drift_1:.2f} (1 layer, mean), {old.early_drift_multi:.2f} and "
               f"{old.late_drift_multi:.2f} (multi-layer); attention on the diagonal "
               f"{np.mean([t.diagonal[-1] for t in one]):.2f}, on <unk> {np.mean([t.unk[-1] for t in one]):.3f} "
               f"(uniform: {freeze.unk_uniform:.3f}) at the end (1 layer)")
    cut = deep.config if deep.config.shortfall() and not freeze.config.shortfall() else freeze.config
    link = ch8.FREEZE.link("fig-paper-7")
    return [rule.judge(ws.project(m, rule.measures), cut, control=ws.project(control, rule.measures), details=details,
                       link=link) for rule in ws.RULES]


def snap_as_run(freeze: ch8.FreezeResult, deep: ch8.FreezeResult) -> list[Verdict]:
    """C40a, C40b, P2 and P3 (:func:`snap_verdicts`) with each run's cuts read from
    its own note: the verdicts for ``freeze`` (``ch8-freeze``) and ``deep`` (``ch8-freeze-deep``) as they were made."""
    return snap_verdicts(replace(freeze, config=AsRun(freeze.config, freeze.note)),
                         replace(deep, config=AsRun(deep.config, deep.note)))
