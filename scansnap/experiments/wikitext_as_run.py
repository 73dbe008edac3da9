"""Chapter 8's Figure 7 verdicts (:func:`snap_verdicts`), and its runs labelled by the training text they used, not
by the one the reader's machine holds.

The ``paper`` profile trains on ``train.txt`` where the data folder has it, else on valid + test less the held-out
articles, a reduced protocol. Which one a run used is a fact of how it was made, not of its configuration
(:class:`TrainText`): for a run made here, whether this machine's data folder has ``train.txt``
(:meth:`TrainText.here`); for a run *stored* (:mod:`scansnap.store`), whether its run executed the held-out-articles
loader (:meth:`TrainText.ran`, from the functions its provenance records). So a run stored without ``train.txt``
stays that reduced run when a reader who has downloaded ``train.txt`` builds the book: its verdicts carry the cut
("reduced protocol: ...") in both directions (no Chapter 8 rule names ``train_split`` in its ``depends_on``: the cut
labels, it does not decide). A rule judges the configuration with that cut added
(:class:`scansnap.results.AsMade`).

:func:`snap_verdicts` judges C40a, C40b, P2 and P3 with the training text of each run; Figure 10's rules
(:func:`scansnap.experiments.ch08_rates.rates_verdicts`) take a :class:`TrainText` too. This module is not imported
by the modules that run the stored experiments, so it can change without making their stores stale.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from scansnap import lm_train, wikitext
from scansnap.experiments import ch08_wikitext as ch8
from scansnap.experiments import wikitext_snap as ws
from scansnap.experiments.wikitext_freeze import freeze_measures
from scansnap.results import AsMade, Cut
from scansnap.verdicts import Verdict

__all__ = ["MISSING", "TrainText", "as_stored", "snap_verdicts"]

MISSING = ("trained on valid + test less the held-out articles: train.txt was missing when the run was made "
           "(paper profile: train.txt)")
"""The label of a ``paper``-profile run made without ``train.txt``."""
_LOADER = f"{lm_train.article_corpus.__module__}:{lm_train.article_corpus.__qualname__}"
"""The held-out-articles loader a ``paper``-profile run executes only when ``train.txt`` is missing."""


@dataclass(frozen=True)
class TrainText:
    """Whether a Chapter 8 run had ``train.txt`` (a fact of how it was made that its configuration does not fix).

    Attributes:
        present: ``True`` when the data folder held ``train.txt`` when the run was made.
    """

    present: bool

    @classmethod
    def here(cls, config: ch8.WikiConfig) -> TrainText:
        """For a run made on this machine now: whether ``config``'s data folder has ``train.txt``."""
        return cls(wikitext.has_split("train", config.data or None))

    @classmethod
    def ran(cls, functions: Iterable[str]) -> TrainText:
        """For a stored run, from the functions its run executed (``"module:qualname"``, the keys of its provenance's
        ``functions``, :func:`scansnap.store.read_provenance`): whether it loaded ``train.txt``, i.e. did not execute
        the held-out-articles loader (:func:`scansnap.lm_train.article_corpus`)."""
        return cls(_LOADER not in set(functions))

    def cuts(self, config: ch8.WikiConfig) -> tuple[Cut, ...]:
        """The cut of ``config``'s training text: ``train_split`` when it asks for ``train.txt`` and the run did not
        have it (empty otherwise)."""
        if config.train_split != "train" or self.present:
            return ()
        return (Cut("train_split", lm_train.ARTICLES, "train", MISSING),)

    def judged(self, config: ch8.WikiConfig, *extra: Cut) -> AsMade:
        """``config`` as its run was made: with the cut of its training text, then ``extra``."""
        return AsMade(config, self.cuts(config) + extra)


def as_stored(config: ch8.WikiConfig, functions: Iterable[str]) -> AsMade:
    """A stored Chapter 8 run's ``config`` as the run was made, from the ``functions`` its run executed (its
    provenance's): with the cut of the training text it had (:meth:`TrainText.ran`); its protocol names that text
    (for :func:`scansnap.book.stored`, the protocol of Figures 7 and 10)."""
    return TrainText.ran(functions).judged(config)


def snap_verdicts(freeze: ch8.FreezeResult, deep: ch8.FreezeResult,
                  train: tuple[TrainText, TrainText] | None = None) -> list[Verdict]:
    """C40a, C40b, P2 and P3 (:mod:`scansnap.experiments.wikitext_snap`) from the 1-layer runs of ``ch8-freeze`` (over
    their seeds) and the multi-layer run of ``ch8-freeze-deep`` (its first seed), each against its control; the
    protocol is the less complete of the two. ``train``: the training text each run had (default: this machine's,
    for runs made here)."""
    one_text, deep_text = train or (TrainText.here(freeze.config), TrainText.here(deep.config))
    one_made, deep_made = one_text.judged(freeze.config), deep_text.judged(deep.config)
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
    cut = deep_made if deep_made.shortfall() and not one_made.shortfall() else one_made
    link = ch8.FREEZE.link("fig-paper-7")
    return [rule.judge(ws.project(m, rule.measures), cut, control=ws.project(control, rule.measures), details=details,
                       link=link) for rule in ws.RULES]
