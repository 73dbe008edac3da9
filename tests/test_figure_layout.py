"""scansnap.figure_layout: the layout check itself, then every figure of the book (smoke profile, and the stored
runs of Chapter 8 as the book shows them): no two texts overlap, no text leaves the figure or enters another
panel, every legend names its series."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import names  # noqa: E402

from scansnap import experiments, figure_layout, results, store, wikitext  # noqa: E402
from scansnap.experiments.ch08_wikitext import WikiConfig  # noqa: E402


def _kinds(found: list[str]) -> list[str]:
    return sorted(p.split(":", 1)[0] for p in found)


def test_a_clean_figure_has_no_problem() -> None:
    fig, axes = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    for k, ax in enumerate(axes):
        ax.plot([0, 1], [0, k], label="seed 1")
        ax.plot([0, 1], [1, k], label="seed 2")
        ax.set(title=f"panel {k}", xlabel="step", ylabel="loss")
        ax.legend()
    fig.suptitle("a suptitle")
    assert figure_layout.problems(fig) == []
    figure_layout.check(fig, "clean")


def test_overlapping_texts_are_found_with_their_words() -> None:
    fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.text(0.5, 0.5, "first label", ha="center")
    ax.text(0.5, 0.5, "second label", ha="center")
    found = figure_layout.problems(fig)
    assert _kinds(found) == ["overlap"] and "'first label'" in found[0] and "'second label'" in found[0]


def test_texts_that_touch_by_a_pixel_are_tolerated() -> None:
    fig, ax = plt.subplots(figsize=(4, 3))
    left = ax.text(0.2, 0.5, "left")
    fig.canvas.draw()
    box = left.get_window_extent()
    right_x = ax.transData.inverted().transform((box.x1 - 0.5, box.y0))[0]  # starts half a pixel inside "left"
    ax.text(right_x, 0.5, "right")
    assert figure_layout.problems(fig) == []
    assert _kinds(figure_layout.problems(fig, tol=0)) == ["overlap"]


def test_turned_labels_are_judged_by_their_turned_boxes() -> None:
    """Tick labels at 45 degrees whose upright extents overlap but whose letters do not (Chapter 9's overlaps
    figure) pass; the same labels packed closer, so the letters collide, fail."""
    labels = [f"q={q}, s={s}" for q in (3, 5) for s in (0, 0.3, 1)]

    def turned(right: float) -> plt.Figure:
        fig, ax = plt.subplots(figsize=(5, 3), dpi=100, layout="constrained")
        ax.set_xticks(range(6), labels, rotation=45, ha="right", rotation_mode="anchor")
        ax.set_xlim(-0.5, right)
        return fig

    spaced = turned(5.5)
    upright = [np.ptp(np.asarray(b.corners), axis=0) for b in figure_layout.text_boxes(spaced) if "q=" in b.text]
    assert len(upright) == 6 and all(w > 45 for w, _ in upright)  # extents 50 px wide, 50 px apart: they touch
    assert figure_layout.problems(spaced) == []
    found = figure_layout.problems(turned(40))  # 10 px apart: 7 px across the turned lines, letters 14 px high
    assert found and all(p.startswith("overlap") and p.count("q=") == 2 for p in found)


def test_a_text_outside_the_figure_is_cut() -> None:
    fig, ax = plt.subplots(figsize=(3, 2), dpi=100)
    ax.set_title("a title far longer than the figure is wide, so it is cut on both sides")
    fig.tight_layout()
    found = figure_layout.problems(fig)
    assert "cut" in _kinds(found) and "leaves the figure (300 x 200 px)" in found[0]


def test_a_label_in_the_next_panel_intrudes() -> None:
    """Figure 7's fault: the drift panel's y-label lay in the entropy panel's plotting area."""
    fig, axes = plt.subplots(1, 2, figsize=(6, 3), gridspec_kw={"wspace": 0.02})
    axes[1].set_ylabel("a y-label with no room between the panels")
    found = figure_layout.problems(fig)
    assert "intrudes" in _kinds(found) and any("axes 1" in p and "axes 0" in p for p in found)


def test_texts_not_drawn_do_not_count() -> None:
    """Hidden and empty texts, and tick labels outside the view limits, are not on the canvas."""
    fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.text(0.5, 0.5, "hidden", visible=False)
    ax.text(0.5, 0.5, "")
    ax.text(0.5, 0.5, "shown")
    ax.set_xticks([0, 0.5, 1, 50])  # 50 lies outside the view
    ax.set_xlim(0, 1)
    boxes = figure_layout.text_boxes(fig)
    texts = [b.text for b in boxes]
    assert "shown" in texts and "hidden" not in texts and "" not in texts and "50" not in texts
    assert all(b.axes == 0 for b in boxes)
    assert figure_layout.problems(fig) == []


def test_a_legend_must_name_each_series() -> None:
    fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.plot([0, 1], label="seed")
    ax.plot([1, 0], label="seed")
    ax.plot([0, 0], label=" ")
    ax.legend()
    found = figure_layout.legend_problems(fig)
    assert len(found) == 2 and "no label" in found[0] and "['seed']" in found[1]
    assert _kinds(figure_layout.problems(fig)) == ["legend", "legend"]


def test_check_raises_naming_the_figure_and_bad_tol_is_named() -> None:
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.text(0.5, 0.5, "a", ha="center")
    ax.text(0.5, 0.5, "a", ha="center")
    with pytest.raises(ValueError, match=r"^fig-x: 1 layout problem\(s\):\n  overlap"):
        figure_layout.check(fig, "fig-x")
    for bad in (-1, float("nan"), "1"):
        with pytest.raises(ValueError, match=names("tol")):
            figure_layout.problems(fig, tol=bad)


# Every figure of the book ---------------------------------------------------------------------------------------

STORED = {exp_id for exp_id, profile in store.stored_ids() if profile == "paper"}
CASES = [(fig_id, "smoke") for fig_id in experiments.figure_ids()]
CASES += [(fig_id, "stored") for fig_id in experiments.figure_ids() if experiments.owner(fig_id).id in STORED]


@cache
def _result(exp_id: str, source: str) -> object:
    """The result a figure is drawn from, made once per test session: the experiment at its smoke preset, or the
    stored run (the run the book shows, read without the staleness check: its figures are drawn by the current
    code)."""
    exp = experiments.get(exp_id)
    if source == "stored":
        return store.read(exp, "paper").result
    config = exp.config.preset("smoke")
    if isinstance(config, WikiConfig):
        splits = (config.train_split, config.eval_split)
        missing = [f"{s}.txt" for s in splits if not wikitext.has_split(s, config.data or None)]
        if missing:
            pytest.skip(f"WikiText-2 {' and '.join(missing)} not in {wikitext.ENV} or the cache folder")
    return exp.run(config, None)


@pytest.mark.parametrize(("fig_id", "source"), CASES, ids=[f"{f}-{s}" for f, s in CASES])
def test_every_figure_of_the_book_is_legible(fig_id: str, source: str) -> None:
    exp = experiments.owner(fig_id)
    fig = exp.figure(fig_id).plot(_result(exp.id, source))
    assert figure_layout.problems(fig) == []


@cache
def _built(exp_id: str) -> object:
    exp = experiments.get(exp_id)
    path = Path(__file__).resolve().parent.parent / "_extra" / "results" / f"{exp_id}.npz"
    if not path.is_file():
        pytest.skip(f"the built book saved no result of {exp_id} ({path})")
    return results.load(exp.result, path)


@pytest.mark.built
@pytest.mark.parametrize("fig_id", experiments.figure_ids())
def test_every_figure_of_the_built_book_is_legible(fig_id: str) -> None:
    """The same check on the figures as the book just built shows them (its profile, e.g. ``book``: more panels,
    seeds and steps than smoke), drawn again from the results the build saved (``_extra/results``): no run."""
    if not os.environ.get("SCANSNAP_BUILT"):
        pytest.skip("no built book: set SCANSNAP_BUILT to the build folder after `make book`")
    exp = experiments.owner(fig_id)
    assert figure_layout.problems(exp.figure(fig_id).plot(_built(exp.id))) == []


def test_every_figure_is_checked() -> None:
    assert {f for f, _ in CASES} == set(experiments.figure_ids()) and len(CASES) >= 32
    assert {"ch8-freeze", "ch8-rates"} <= STORED
