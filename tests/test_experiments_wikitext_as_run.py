"""Chapter 8's runs are labelled by the training text they used (a fact of how each was made: this machine's data
folder for a run made here, the functions its run executed for a stored one), not by the reader's machine: a run
stored without train.txt stays a reduced protocol where train.txt is present, so it cannot read "not reproduced"
without its label; a run made on train.txt is not reduced where train.txt is missing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scansnap import lm_train, store, wikitext
from scansnap.experiments import ch08_rates as ch8r
from scansnap.experiments import ch08_wikitext as ch8
from scansnap.experiments import wikitext_rates as wr
from scansnap.experiments.wikitext_as_run import MISSING, TrainText, as_stored, snap_verdicts
from scansnap.results import AsMade, Cut


def test_the_gate_counts_the_training_text_the_run_used_not_the_configuration() -> None:
    c = wr.RatesConfig.preset("paper")
    assert c.shortfall() == ()  # the configuration alone reads no file: it asks for train.txt, and is the paper's
    without = TrainText(False).judged(c)
    assert isinstance(without, AsMade) and without.shortfall() == (MISSING,)
    # the protocol of the run as made names the text it had; the configuration's names both
    assert without.protocol() == c.replace(train_split=lm_train.ARTICLES).protocol() != c.protocol()
    assert "trained on valid + test less every 10th article, held out those held-out articles" in without.protocol()
    assert "trained on train.txt (where the data folder lacks it: valid + test less every 10th" in c.protocol()
    assert without.cuts() == (Cut("train_split", lm_train.ARTICLES, "train", MISSING),)
    assert TrainText(True).judged(c).shortfall() == ()
    assert TrainText(True).judged(c.replace(steps=1000)).shortfall() == ("steps 1000 (paper profile: 2000)",)
    book = wr.RatesConfig.preset("book")  # a run that does not ask for train.txt is not cut by its absence again
    assert TrainText(False).cuts(book) == () and TrainText(False).judged(book).GATED == book.GATED


def test_a_configuration_reads_no_file(monkeypatch) -> None:
    """Its protocol and its cuts come from its fields alone (issue 27 part 4); the held-out-articles text can be asked
    for by name, and then no file is looked for either."""
    def no_file(*_args, **_kwargs):
        raise AssertionError("a configuration read the data folder")

    monkeypatch.setattr(wikitext, "has_split", no_file)
    for cls in (ch8.FreezeConfig, ch8.DeepConfig, wr.RatesConfig):
        for profile in ("smoke", "book", "paper"):
            c = cls.preset(profile)
            assert c.protocol() and c.shortfall() == cls.preset(profile).shortfall()
    articles = ch8.FreezeConfig.preset("paper").replace(train_split=lm_train.ARTICLES)
    assert articles.splits() == (lm_train.ARTICLES, "valid", "")
    assert articles.shortfall() == ("train_split valid+test (paper profile: train)",)


def test_a_run_made_here_reads_this_machines_data_folder(monkeypatch) -> None:
    c = ch8.FreezeConfig.preset("paper")
    monkeypatch.setattr(wikitext, "has_split", lambda split, data=None: True)
    assert TrainText.here(c) == TrainText(True)
    monkeypatch.setattr(wikitext, "has_split", lambda split, data=None: False)
    assert TrainText.here(c) == TrainText(False)


def test_a_stored_run_reads_the_loader_its_run_executed() -> None:
    assert TrainText.ran(["scansnap.lm_train:article_corpus", "scansnap.lm_train:train"]) == TrainText(False)
    assert TrainText.ran(["scansnap.lm_train:corpus", "scansnap.lm_train:train"]) == TrainText(True)
    assert lm_train.article_corpus.__qualname__ == "article_corpus"  # the name a store records for the loader


def _stored(exp) -> TrainText:
    return TrainText.ran(store.read_provenance(exp).functions)


@pytest.fixture
def stored_freeze() -> tuple[ch8.FreezeResult, ch8.FreezeResult]:
    """Figure 7's stored paper-protocol runs (made without train.txt: their runs loaded the held-out articles)."""
    assert _stored(ch8.FREEZE) == _stored(ch8.FREEZE_DEEP) == _stored(ch8r.RATES) == TrainText(False)
    return tuple(store.read(e, "paper").result for e in (ch8.FREEZE, ch8.FREEZE_DEEP))


def test_a_stored_run_is_labelled_by_its_own_training_text_on_a_machine_with_train_txt(stored_freeze,
                                                                                    monkeypatch) -> None:
    one, deep = stored_freeze
    deep = replace(deep, config=deep.config.replace(seeds=(1, 2, 3)))  # no cut but the training text's
    monkeypatch.setattr(wikitext, "has_split", lambda split, data=None: True)  # the reader has downloaded train.txt
    naive = snap_verdicts(one, deep)  # the label read off the reader's machine: no cut at all
    assert all(not v.reduced for v in naive)
    for v, n in zip(snap_verdicts(one, deep, (TrainText(False), TrainText(False))), naive, strict=True):
        # the same level (the cut labels, it does not decide), with the run's own training text in the label
        assert v.level == n.level and v.reduced == (MISSING,)


def test_the_stored_labels_equal_the_labels_of_this_machine_without_train_txt(stored_freeze, monkeypatch) -> None:
    one, deep = stored_freeze
    monkeypatch.setattr(wikitext, "has_split", lambda split, data=None: False)
    stored = snap_verdicts(one, deep, (TrainText(False), TrainText(False)))
    for v, here in zip(stored, snap_verdicts(one, deep), strict=True):
        assert v.numbers == pytest.approx(here.numbers, nan_ok=True)
        assert (v.level, v.reduced) == (here.level, (
            "trained on valid + test less the held-out articles: train.txt was missing when the run was made (paper "
            "profile: train.txt)",))


def test_a_stored_runs_figures_name_the_text_it_had_on_a_machine_with_train_txt(monkeypatch) -> None:
    """The protocol :func:`scansnap.book.stored` gives a stored run's figures (``made=as_stored``) names the text its
    run loaded, whatever this machine's data folder holds."""
    monkeypatch.setattr(wikitext, "has_split", lambda split, data=None: True)
    for exp in (ch8.FREEZE, ch8.FREEZE_DEEP, ch8r.RATES):
        found = store.read(exp, "paper")
        config = store.config_of(exp, found)
        assert "trained on valid + test less every 10th article, held out those held-out articles" in as_stored(
            config, found.provenance.functions).protocol()
