"""Chapter 8's Figure 7 experiments on WikiText-2 (smoke sizes): typed results, saved and reloaded, verdicts C40a, C40b
with its controls, and the reduced-protocol labels its stored runs carry."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import names, needs_wikitext, wikitext_found  # noqa: E402

from scansnap import experiments, lm_train, parallel, wikitext  # noqa: E402
from scansnap.experiments import ch08_nope as ch8n  # noqa: E402
from scansnap.experiments import ch08_rates as ch8r  # noqa: E402
from scansnap.experiments import ch08_wikitext as ch8  # noqa: E402
from scansnap.experiments import wikitext_figures as figs  # noqa: E402
from scansnap.experiments import wikitext_snap as ws  # noqa: E402
from scansnap.experiments.wikitext_as_run import TrainText, snap_verdicts  # noqa: E402

DATA = wikitext_found().folder  # wikitext.data_dir(), where the files are (or were downloaded now)
pytestmark = needs_wikitext()


@pytest.fixture(autouse=True)
def _data(monkeypatch) -> None:
    monkeypatch.setenv(wikitext.ENV, str(DATA))


@pytest.fixture(scope="module")
def freeze(tmp_path_factory):
    return experiments.make(ch8.FREEZE, profile="smoke", out=tmp_path_factory.mktemp("ch8"))


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    return experiments.make(ch8.FREEZE_DEEP, profile="smoke", out=tmp_path_factory.mktemp("ch8d"))


@pytest.fixture(scope="module")
def nope(tmp_path_factory):
    return experiments.make(ch8n.FREEZE_NOPE, profile="smoke", out=tmp_path_factory.mktemp("ch8n"))


def test_freeze_result_shapes(freeze, deep) -> None:
    r, c = freeze.result, freeze.config
    assert c.train_split == "valid" and "300 words" in r.note and len(r.runs) == len(c.seeds) == 2
    assert (c.dropout, c.lr, c.ff_lr) == (0.3, 5.0, 10.0) and deep.config.layers == 3 and len(deep.result.runs) == 1
    for tr in r.runs:
        assert tr.steps.tolist() == list(range(0, c.steps + 1, c.every)) and tr.freeze.shape == (len(tr.steps) - 1,)
        assert tr.probe_maps.shape == tr.train_maps.shape == (len(tr.steps), c.bptt, c.bptt)
        assert np.isfinite(tr.entropy).all() and tr.jitter_steps.tolist() == tr.steps[:-1].tolist()
        assert np.isnan(tr.drift[tr.steps < c.window]).all() and np.isfinite(tr.drift[tr.steps >= c.window]).all()
        assert ((tr.diagonal > 0) & (tr.diagonal < 1)).all() and ((tr.unk > 0) & (tr.unk < 1)).all()
    assert len(r.probe_words) == len(r.train_words) == c.bptt and 0.05 < r.unk_uniform < 1
    table = figs.freeze_table(r.runs, c.seeds)
    assert len({len(v) for v in table.values()}) == 1 and len(table["step"]) == 2 * len(r.runs[0].steps)


def test_nope_z_check_and_token_study(nope) -> None:
    r = nope.result
    assert r.z_error < 1e-10 and not r.config.seeds[1:] and len(r.runs) == 2
    t = r.tokens
    assert t.received.shape == (3, len(t.ids)) and "<unk>" not in t.words
    # <unk> is kept out of the correlations but reported: under the 300-word cap it is a large share of the text
    assert 0.05 < t.unk_frequency < 1 and t.unk_received.shape == (3,) and np.isfinite(t.unk_received).all()
    assert set(figs.token_correlations(t)) >= {"rho_entropy_init", "rho_entropy_pe", "rho_entropy_nope"}


def test_freeze_is_deterministic_and_saved(freeze, tmp_path: Path) -> None:
    again = experiments.make(ch8.FREEZE, freeze.config, profile="smoke", out=tmp_path)
    for a, b in zip(freeze.result.runs, again.result.runs, strict=True):
        np.testing.assert_array_equal(a.heldout_loss, b.heldout_loss)
        np.testing.assert_array_equal(a.probe_maps, b.probe_maps)
    back = experiments.load_result(ch8.FREEZE, tmp_path)
    assert back.config == freeze.config and back.train_words == freeze.result.train_words


def test_seeds_in_separate_processes_give_the_same_runs(freeze, monkeypatch) -> None:
    monkeypatch.setenv(parallel.JOBS, "2")
    again = ch8.run_freeze(freeze.config)
    for a, b in zip(freeze.result.runs, again.runs, strict=True):
        np.testing.assert_array_equal(a.probe_maps, b.probe_maps)
        np.testing.assert_array_equal(a.train_loss, b.train_loss)


def test_a_stored_figure_7_verifies_by_its_prefix_and_a_tampered_one_fails(freeze, tmp_path: Path) -> None:
    """The first steps of the same runs (every seed) reproduce the stored checkpoints exactly (what `store verify`
    relies on: nothing in a run depends on its total length), and a store with an altered map fails."""
    from scansnap import store, store_verify

    folder = store.store(ch8.FREEZE, freeze.config, freeze.result, freeze.wall_time_s, profile="smoke",
                            root=tmp_path, allow_dirty=True)
    # a store made now records no absolute path of this machine (the data folder, the checkout, the temp folder)
    from test_store_paths import absolute_paths

    texts = (folder / "provenance.json").read_text() + freeze.result.note
    assert not absolute_paths(texts), absolute_paths(texts)
    prefix = ch8.freeze_prefix(freeze.config, 5)
    assert (prefix.steps, prefix.every, prefix.shown, prefix.window, prefix.seeds) == (
        5, 5, (0, 5), 5, freeze.config.seeds[:1])  # exactly the compared steps, checkpointed at 0 and 5 only
    assert {k.split(".")[0] for k in ch8.freeze_checkpoints(freeze.result)} == {"seed1", "seed2"}
    assert store_verify.verify(ch8.FREEZE, "smoke", steps=4, root=tmp_path, rtol=0, atol=0) == []
    folder = tmp_path / "stores" / "ch8-freeze" / "smoke"
    with np.load(folder / "result.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    key = next(k for k in arrays if k.endswith("probe_maps"))
    arrays[key] = arrays[key] * 1.001
    np.savez(folder / "result.npz", **arrays)
    with pytest.raises(store.TamperedStoreError, match="probe_maps"):
        store_verify.verify(ch8.FREEZE, "smoke", steps=4, root=tmp_path)


def test_snap_verdicts_are_c40a_c40b_p2_p3_from_both_experiments_each_against_its_control(freeze, deep) -> None:
    r = freeze.result
    vs = snap_verdicts(r, deep.result)
    assert [(v.claim, v.evidence) for v in vs] == [(c, "real-data") for c in ("C40a", "C40b", "P2", "P3")]
    m = ws.snap_measures([ws.snap_run(t) for t in r.runs], ws.snap_run(deep.result.runs[0]))
    for v in vs:
        assert v.protocol == freeze.config.protocol() and v.link.endswith("08-wikitext.html#fig-paper-7")
        assert "ch8-freeze:" in v.details and "retired drift ratio" in v.details
        rule = next(r for r in ws.RULES if r.claim == v.claim)
        assert v.numbers == rule.numbers(ws.project(m, rule.measures)) and v.control_level
        # the smoke run is far below the paper's protocol: labelled with its cuts, whichever way its rule goes
        assert any(cut.startswith("steps 6") for cut in v.reduced) and "reduced protocol" in v.label()


def test_the_retired_drift_ratio_of_a_pure_random_walk_is_about_1() -> None:
    """The drift ratio (wikitext_freeze, kept as context) is 1 for a random walk of the per-step jitter."""
    steps = np.random.default_rng(0).normal(size=(2000, 500, 8))  # 2000 random walks of 500 steps in 8 dimensions
    jitter = np.sqrt((steps ** 2).sum(-1).mean())
    drift = np.sqrt((steps.sum(1) ** 2).sum(-1).mean())
    assert drift / (np.sqrt(500) * jitter) == pytest.approx(1.0, abs=0.03)

def test_paper_profile_trains_on_held_in_articles_when_train_txt_is_missing() -> None:
    c = ch8.FreezeConfig.preset("paper")
    assert (c.train_split, c.eval_split, c.steps, c.seeds) == ("train", "valid", 1500, (1, 2, 3))
    train, held, note = c.splits()
    assert (train, held) == (lm_train.ARTICLES, lm_train.HELDOUT) and "could NOT train" in note  # no train.txt here
    assert "every 10th article" in c.protocol()  # and the smaller training text labels its verdicts (not the config:
    assert c.shortfall() == () and TrainText.here(c).judged(c).shortfall() == (  # how the run was made)
        "trained on valid + test less the held-out articles: train.txt was missing when the run was made (paper "
        "profile: train.txt)",)
    data, note = c.replace(eval_sequences=20).corpus()
    assert data.vocab.unk == "<unk>" and len(data.vocab) > 15_000 and "full vocabulary" in note
    assert 0.05 < len(data.heldout_ids) / (len(data.heldout_ids) + len(data.train_ids)) < 0.12
    with pytest.raises(ValueError, match=names("vocab_cap")):
        c.replace(vocab_cap=100).corpus()


def test_the_paper_protocol_gates_both_experiments() -> None:
    """The paper's protocol (full training split and vocabulary, the tutorial's model and batches, 1500 steps for
    Figure 7, runs to convergence capped at 2,000 steps for Figure 10) is the paper preset; the book's run is
    reduced on steps, vocabulary and training split."""
    for cls, steps, book_steps in ((ch8.FreezeConfig, 1500, 450), (ch8.DeepConfig, 1500, 450),
                                   (ch8n.NopeConfig, 1500, 150), (ch8r.RatesConfig, 2000, 120)):
        paper, book = cls.preset("paper"), cls.preset("book")
        assert (paper.vocab_cap, paper.max_train_tokens, paper.steps, paper.batch, paper.bptt) == (
            None, None, steps, 20, 35)
        assert (paper.d, paper.d_hid, paper.clip) == (200, 200, 0.5) and book.steps == book_steps
        assert {cut.split()[0] for cut in book.shortfall()} >= {"train_split", "vocab_cap", "steps"}
    paper = ch8.FreezeConfig.preset("paper")
    assert (paper.lr, paper.ff_lr, paper.dropout, paper.shown, paper.window) == (5.0, 10.0, 0.3, (0, 500, 1000, 1500),
                                                                                 500)
    assert ch8.DeepConfig.preset("paper").layers == 3 and ch8.DeepConfig.preset("paper").seeds == (1,)


@pytest.mark.parametrize("field, value", [("every", 7), ("shown", (0, 5)), ("lr", 0.0), ("dropout", 1.0),
                                          ("window", 3), ("seeds", ()), ("ff_lr", 0.0), ("layers", 0),
                                          ("train_split", "dev"), ("vocab_cap", 0), ("max_train_tokens", 0)])
def test_bad_freeze_config_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=names(field)):
        ch8.FreezeConfig.preset("smoke").replace(**{field: value})
