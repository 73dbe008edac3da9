"""Chapter 8's stored runs are gated by the training text they used (their note), not by the reader's machine:
a run stored without train.txt stays a reduced protocol where train.txt is present, so it cannot read "not
reproduced" without its label; a run made on train.txt is not reduced where train.txt is missing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scansnap import evidence, wikitext
from scansnap.experiments import ch08_wikitext as ch8
from scansnap.experiments import wikitext_rates as wr
from scansnap.experiments.wikitext_as_run import AsRun, snap_as_run, snap_verdicts, without_train_txt

MISSING = "train.txt is not in /x: could NOT train on it as the paper did; ..."


def test_the_gate_counts_the_training_text_the_run_used_not_the_readers() -> None:
    c = wr.RatesConfig.preset("paper")
    made_here = AsRun(c, MISSING)
    assert len(made_here.shortfall()) == 1 and "train.txt was missing" in made_here.shortfall()[0]
    assert AsRun(c, "vocabulary: 33,278 words from train.txt").shortfall() == ()
    assert AsRun(c.replace(steps=1000), "from train.txt").shortfall() == ("steps 1000 (paper profile: 2000)",)
    assert AsRun(c, MISSING).lrs == c.lrs and AsRun(c, MISSING).protocol() == c.protocol()  # stands for the config
    assert without_train_txt(MISSING) and not without_train_txt("trained on train.txt")


@pytest.fixture
def stored_freeze() -> tuple[ch8.FreezeResult, ch8.FreezeResult]:
    """Figure 7's stored paper-protocol runs (made without train.txt)."""
    one, deep = (evidence.read(e, "paper").result for e in (ch8.FREEZE, ch8.FREEZE_DEEP))
    assert without_train_txt(one.note) and without_train_txt(deep.note)
    return one, deep


def test_a_stored_run_is_labelled_by_its_own_training_text_on_a_machine_with_train_txt(stored_freeze,
                                                                                    monkeypatch) -> None:
    one, deep = stored_freeze
    deep = replace(deep, config=deep.config.replace(seeds=(1, 2, 3)))  # no cut but the training text's
    monkeypatch.setattr(wikitext, "has_split", lambda split, data=None: True)  # the reader has downloaded train.txt
    assert ch8.FreezeConfig.preset("paper").shortfall() == ()
    naive = snap_verdicts(one, deep)  # the label read off the reader's machine: no cut at all
    assert all(not v.reduced for v in naive)
    for v, n in zip(snap_as_run(one, deep), naive, strict=True):
        # the same level (the cut labels, it does not decide), with the run's own training text in the label
        assert v.level == n.level and "train.txt was missing when the run was made" in v.label()


def test_snap_as_run_equals_the_labels_of_this_machine_without_train_txt(stored_freeze) -> None:
    one, deep = stored_freeze
    for v, here in zip(snap_as_run(one, deep), snap_verdicts(one, deep), strict=True):
        assert v.numbers == pytest.approx(here.numbers, nan_ok=True)
        assert (v.level, v.reduced) == (here.level, (
            "trained on valid + test less the held-out articles: train.txt was missing when the run was made (paper "
            "profile: train.txt)",))
