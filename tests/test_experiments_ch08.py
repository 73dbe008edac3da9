"""Chapter 8's experiments on WikiText-2 (smoke sizes): typed results, saved and reloaded, verdicts C40, C41 and X7
with their controls and the paper's protocol as the minimum for a negative verdict."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import names  # noqa: E402

from scansnap import claims, experiments, wikitext  # noqa: E402
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
    return experiments.make(ch8.FREEZE, profile="smoke", out=tmp_path_factory.mktemp("ch8"))


def test_freeze_result_shapes_and_z_check(freeze) -> None:
    r, c = freeze.result, freeze.config
    assert c.train_split == "valid" and "300 words" in r.note
    for tr in r.runs:
        assert tr.steps.tolist() == list(range(0, c.steps + 1, c.every)) and tr.freeze.shape == (len(tr.steps) - 1,)
        assert tr.probe_maps.shape == (len(tr.steps), c.bptt, c.bptt) and np.isfinite(tr.entropy).all()
    assert r.z_error < 1e-10 and len(r.probe_words) == c.bptt
    t = r.tokens
    assert t.received.shape == (3, len(t.ids)) and "<unk>" not in t.words
    # <unk> is kept out of the correlations but reported: under the 300-word cap it is a large share of the text
    assert 0.05 < t.unk_frequency < 1 and t.unk_received.shape == (3,) and np.isfinite(t.unk_received).all()
    table = figs.freeze_table(r.runs)
    assert len({len(v) for v in table.values()}) == 1
    assert set(figs.token_correlations(t)) >= {"rho_entropy_init", "rho_entropy_pe", "rho_entropy_nope"}


def test_freeze_is_deterministic_and_saved(freeze, tmp_path: Path) -> None:
    again = experiments.make(ch8.FREEZE, freeze.config, profile="smoke", out=tmp_path)
    for a, b in zip(freeze.result.runs, again.result.runs, strict=True):
        np.testing.assert_array_equal(a.heldout_loss, b.heldout_loss)
        np.testing.assert_array_equal(a.probe_maps, b.probe_maps)
    back = experiments.load_result(ch8.FREEZE, tmp_path)
    assert back.config == freeze.config and back.tokens.words == freeze.result.tokens.words


def test_a_stored_figure_7_verifies_by_its_prefix_and_a_tampered_one_fails(freeze, tmp_path: Path) -> None:
    """The first steps of the same runs reproduce the stored checkpoints exactly (what `evidence verify` relies
    on: nothing in a run depends on its total length), and a store with an altered map fails."""
    from scansnap import evidence

    evidence.store(ch8.FREEZE, freeze.config, freeze.result, freeze.wall_time_s, profile="smoke", root=tmp_path)
    prefix = ch8.freeze_prefix(freeze.config, 5)
    assert prefix.steps == 4 and prefix.shown == (0, 2, 4)
    assert evidence.verify(ch8.FREEZE, "smoke", steps=4, root=tmp_path, rtol=0, atol=0) == []
    folder = tmp_path / "evidence" / "ch8-freeze" / "smoke"
    with np.load(folder / "result.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    key = next(k for k in arrays if k.endswith("probe_maps"))
    arrays[key] = arrays[key] * 1.001
    np.savez(folder / "result.npz", **arrays)
    with pytest.raises(evidence.TamperedEvidenceError, match="probe_maps"):
        evidence.verify(ch8.FREEZE, "smoke", steps=4, root=tmp_path)


def test_freeze_verdict_is_c40_against_the_models_held_at_step_0(freeze) -> None:
    r = freeze.result
    [v] = ch8.FREEZE.verdicts(r)
    assert (v.claim, v.evidence) == ("C40", "real-data") and "valid.txt" in v.protocol
    assert v.protocol == freeze.config.protocol() and v.link.endswith("08-wikitext.html#fig-paper-7")
    # the null: no fall of the entropy, no movement whose decay could be measured -> the control fails
    assert v.control_level == "not reproduced" and v.control["entropy_fall_1"] == v.control["loss_fall_1"] == 0
    assert np.isnan(v.control["freeze_decay_1"]) and np.isnan(v.control["late_early_multi"])
    assert v.numbers == ch8.RULE_C40.numbers(ch8.freeze_measures(*r.runs[:2]))
    # the smoke run is far below the paper's protocol: it can never read "not reproduced"
    assert any(cut.startswith("steps 6") for cut in v.reduced) and v.level != "not reproduced"


def test_freeze_measures_follow_a_freezing_trajectory(freeze) -> None:
    """A trajectory whose entropy falls then plateaus and whose maps slow down while the loss falls verifies; the
    same model held at step 0 fails."""
    tr = freeze.result.runs[0]
    C = len(tr.steps)
    shaped = ch8.held_at_start(tr).__class__(
        steps=tr.steps, train_loss=np.linspace(5.0, 4.0, len(tr.train_loss)), heldout_loss=tr.heldout_loss,
        entropy=1.0 + np.exp(-3.0 * np.arange(C)), freeze=np.geomspace(1e-2, 1e-5, C - 1), probe_maps=tr.probe_maps)
    m = ch8.freeze_measures(shaped, shaped)
    assert ch8.RULE_C40.level(m) == "verified"
    held = ch8.freeze_measures(ch8.held_at_start(shaped), ch8.held_at_start(shaped))
    assert ch8.RULE_C40.level(held) == "not reproduced"


def test_rates_result_and_verdicts(tmp_path: Path) -> None:
    made = experiments.make(ch8r.RATES, profile="smoke", out=tmp_path)
    r, c = made.result, made.config
    assert r.entropy_one.shape == (len(c.lrs), len(c.seeds)) and r.entropy_multi.shape == (len(c.lrs), 1)
    assert len(ch8r.RATES.figure("fig-paper-10").table(r)["lr"]) == len(c.lrs) * (len(c.seeds) + 1)
    assert (np.ptp(r.start_one, axis=0) == 0).all() and (np.ptp(r.start_multi, axis=0) == 0).all()  # same init
    verdicts = ch8r.RATES.verdicts(r)
    assert [(v.claim, v.evidence) for v in verdicts] == [("C41", "real-data"), ("X7", "real-data")]
    for v, entropy in zip(verdicts, (r.entropy_one, r.entropy_multi), strict=True):
        assert v.numbers == ch8r.RULE_C41.numbers(ch8r.rate_order(c.lrs, entropy))
        assert v.control_level == "not reproduced" and v.control["in_order"] == 0 and v.control["ratio"] == 1
        assert v.reduced and v.level != "not reproduced"
    assert claims.get("X7").kind == "experiment" and set(ch8r.RATES.figures[0].claims) == {"C41", "X7"}


def test_paper_profile_says_when_train_txt_is_missing() -> None:
    c = ch8.FreezeConfig.preset("paper")
    assert (c.train_split, c.eval_split, c.steps) == ("train", "valid", 1500)
    train, held, note = c.splits()
    assert (train, held) == ("valid", "test") and "could NOT train" in note  # shared/ has no train.txt
    assert c.shortfall() == ("trained on valid.txt: train.txt is missing (paper profile: train.txt)",)


def test_the_paper_protocol_gates_both_experiments() -> None:
    """The paper's protocol (full training split and vocabulary, the tutorial's model and batches, 1500 steps for
    Figure 7, about five epochs for Figure 10) is the paper preset; the book's run is reduced on steps, vocabulary
    and training split."""
    for cls, steps, book_steps in ((ch8.FreezeConfig, 1500, 450), (ch8r.RatesConfig, 15_000, 120)):
        paper, book = cls.preset("paper"), cls.preset("book")
        assert (paper.vocab_cap, paper.max_train_tokens, paper.steps, paper.batch, paper.bptt) == (
            None, None, steps, 20, 35)
        assert (paper.d, paper.d_hid, paper.clip) == (200, 200, 0.5) and book.steps == book_steps
        assert {cut.split()[0] for cut in book.shortfall()} >= {"train_split", "vocab_cap", "steps"}
    assert ch8.FreezeConfig.preset("paper").lr == 5.0 and ch8.FreezeConfig.preset("paper").shown[-1] == 1500


@pytest.mark.parametrize("field, value", [("every", 7), ("shown", (0, 5)), ("lr", 0.0), ("dropout", 1.0),
                                          ("train_split", "dev"), ("vocab_cap", 0), ("max_train_tokens", 0)])
def test_bad_freeze_config_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=names(field)):
        ch8.FreezeConfig.preset("smoke").replace(**{field: value})


def test_bad_rates_config_names_the_field() -> None:
    with pytest.raises(ValueError, match=names("lrs")):
        ch8r.RatesConfig(lrs=(2.0, 1.0))
    with pytest.raises(ValueError, match=names("multi_seeds")):
        ch8r.RatesConfig(multi_seeds=())
