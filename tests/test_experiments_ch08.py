"""Chapter 8's experiments on WikiText-2 (smoke sizes): typed results, saved and reloaded, verdicts C40/C41."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import names  # noqa: E402

from scansnap import experiments, wikitext  # noqa: E402
from scansnap.experiments import ch08_rates as ch8r  # noqa: E402
from scansnap.experiments import ch08_wikitext as ch8  # noqa: E402
from scansnap.experiments import wikitext_figures as figs  # noqa: E402

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "wikitext-2"
pytestmark = pytest.mark.skipif(not (DATA / "valid.txt").is_file() or not (DATA / "test.txt").is_file(),
                                reason=f"WikiText-2 valid.txt/test.txt are not at {DATA}")


@pytest.fixture(autouse=True)
def _data(monkeypatch) -> None:
    monkeypatch.setenv(wikitext.ENV, str(DATA))


@pytest.fixture(scope="module")
def freeze(tmp_path_factory):
    return experiments.make("fig-paper-7", profile="smoke", out=tmp_path_factory.mktemp("ch8"))


def test_freeze_result_shapes_and_z_check(freeze) -> None:
    r, c = freeze.result, freeze.config
    assert c.train_split == "valid" and "300 words" in r.note
    for tr in r.runs:
        assert tr.steps.tolist() == list(range(0, c.steps + 1, c.every)) and tr.freeze.shape == (len(tr.steps) - 1,)
        assert tr.probe_maps.shape == (len(tr.steps), c.bptt, c.bptt) and np.isfinite(tr.entropy).all()
    assert r.z_error < 1e-10 and len(r.probe_words) == c.bptt
    assert r.tokens.received.shape == (3, len(r.tokens.ids)) and "<unk>" not in r.tokens.words
    table = figs.freeze_table(r)
    assert len({len(v) for v in table.values()}) == 1
    assert set(figs.token_correlations(r)) >= {"rho_entropy_init", "rho_entropy_pe", "rho_entropy_nope"}


def test_freeze_is_deterministic_and_saved(freeze, tmp_path: Path) -> None:
    again = experiments.make(ch8.FREEZE, freeze.config, profile="smoke", out=tmp_path)
    for a, b in zip(freeze.result.runs, again.result.runs, strict=True):
        np.testing.assert_array_equal(a.heldout_loss, b.heldout_loss)
        np.testing.assert_array_equal(a.probe_maps, b.probe_maps)
    back = experiments.load_result(ch8.FREEZE, tmp_path)
    assert back.config == freeze.config and back.tokens.words == freeze.result.tokens.words


def test_freeze_verdicts_are_c40_on_real_data(freeze) -> None:
    verdicts = ch8.FREEZE.verdicts(freeze.result)
    assert [(v.claim, v.evidence) for v in verdicts] == [("C40", "real-data")]
    assert {c.name for c in ch8.RULE_C40.criteria} <= set(verdicts[0].numbers)
    assert "valid.txt" in verdicts[0].protocol


def test_rates_result_and_verdicts(tmp_path: Path) -> None:
    made = experiments.make("fig-paper-10", profile="smoke", out=tmp_path)
    r, c = made.result, made.config
    assert r.entropy_one.shape == (len(c.lrs), len(c.seeds)) and r.entropy_multi.shape == (len(c.lrs), 1)
    assert len(ch8r.RATES.figure("fig-paper-10").table(r)["lr"]) == len(c.lrs) * (len(c.seeds) + 1)
    verdicts = ch8r.RATES.verdicts(r)
    assert [(v.claim, v.evidence) for v in verdicts] == [("C41", "real-data")]
    assert {c.name for c in ch8r.RULE_C41.criteria} <= set(verdicts[0].numbers)


def test_paper_profile_says_when_train_txt_is_missing() -> None:
    c = ch8.FreezeConfig.preset("paper")
    assert (c.train_split, c.eval_split, c.steps) == ("train", "valid", 1500)
    train, held, note = c.splits()
    assert (train, held) == ("valid", "test") and "could NOT train" in note  # shared/ has no train.txt


@pytest.mark.parametrize("field, value", [("every", 7), ("shown", (0, 5)), ("lr", 0.0), ("dropout", 1.0),
                                          ("train_split", "dev")])
def test_bad_freeze_config_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=names(field)):
        ch8.FreezeConfig.preset("smoke").replace(**{field: value})


def test_bad_rates_config_names_the_field() -> None:
    with pytest.raises(ValueError, match=names("lrs")):
        ch8r.RatesConfig(lrs=(2.0, 1.0))
    with pytest.raises(ValueError, match=names("multi_seeds")):
        ch8r.RatesConfig(multi_seeds=())
