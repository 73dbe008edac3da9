"""scansnap.figures: saving a figure with its data and provenance, and the gallery."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only: no display (the book itself must not do this)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import names  # noqa: E402

from scansnap import claims, figures  # noqa: E402
from scansnap.results import Config  # noqa: E402
from scansnap.verdicts import Rule, at_most  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class _Err:
    err: float


@dataclass(frozen=True)
class _Cfg(Config):
    def protocol(self) -> str:
        return "test"


@pytest.fixture(autouse=True)
def artifacts(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path))
    monkeypatch.setenv("SCANSNAP_PROFILE", "smoke")
    return tmp_path


def _fig():
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [1.0, 0.5, 0.25])
    return fig


def test_save_writes_png_svg_csv_and_provenance(artifacts: Path) -> None:
    data = {"step": np.arange(3), "loss": np.array([1.0, 0.5, 1 / 3])}
    rec = figures.save(_fig(), "fig-test", data, {"seeds": [1, 2], "eta": 0.5}, caption="A test.",
                       chapter="book/chapters/01-setting", claims=["C1"], wall_time_s=1.25)
    folder = artifacts / "figures"
    assert sorted(p.name for p in folder.iterdir()) == ["fig-test.csv", "fig-test.json", "fig-test.png", "fig-test.svg"]
    assert (folder / "fig-test.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (folder / "fig-test.svg").read_bytes()
    rows = list(csv.reader((folder / "fig-test.csv").open()))
    assert rows[0] == ["step", "loss"] and float(rows[3][1]) == 1 / 3  # full float precision (repr)
    prov = json.loads((folder / "fig-test.json").read_text())
    assert prov["params"] == {"seeds": [1, 2], "eta": 0.5} and prov["profile"] == "smoke"
    assert prov["command"] == "python -m scansnap reproduce fig-test --profile smoke"
    assert prov["claims"] == ["C1"] and prov["wall_time_s"] == 1.25 and prov["version"] and prov["commit"]
    assert rec.anchor == "book/chapters/01-setting.html#fig-test"
    assert figures.load_record("fig-test") == rec


def test_same_figure_same_bytes(artifacts: Path) -> None:
    """Stable files: saving the same figure twice gives identical PNG, SVG and data."""
    data = {"x": np.arange(3)}
    figures.save(_fig(), "fig-a", data, {}, caption="", chapter="c")
    first = {p.suffix: p.read_bytes() for p in (artifacts / "figures").iterdir() if p.suffix != ".json"}
    figures.save(_fig(), "fig-a", data, {}, caption="", chapter="c")
    second = {p.suffix: p.read_bytes() for p in (artifacts / "figures").iterdir() if p.suffix != ".json"}
    assert first == second


def test_non_tabular_data_goes_to_json(artifacts: Path) -> None:
    figures.save(_fig(), "fig-b", {"matrix": np.eye(2), "label": "x"}, {}, caption="", chapter="c")
    assert json.loads((artifacts / "figures" / "fig-b.data.json").read_text())["matrix"] == [[1.0, 0.0], [0.0, 1.0]]
    assert [r.id for r in figures.records()] == ["fig-b"]


def test_gallery_is_a_table_with_paper_figure_files_verdicts_command_and_bibtex() -> None:
    figures.save(_fig(), "fig-test", {"x": [1, 2]}, {"steps": 3}, caption="Figure 6 of the paper, re-made.",
                 chapter="book/chapters/01-setting", claims=["C1"])
    figures.save(_fig(), "fig-own", {"x": [1, 2]}, {}, caption="An illustration.", chapter="book/chapters/01-setting")
    rule = Rule("C1", "derivation", _Err, (at_most("err", "error", 1e-10, 1e-6),), alternative="an error of O(1)")
    claims.record(rule.judge(_Err(0.0), _Cfg()))
    md = figures.gallery_markdown({"C1": claims.headline("C1")}, base="../")
    header, rule_row, paper_row, own_row = md.splitlines()
    assert header.count("|") == 7 and set(rule_row) <= set("|-")
    assert paper_row.startswith("| Figure 6 |") and own_row.startswith("| the book's own |")
    for needle in ('href="../book/chapters/01-setting.html#fig-test"', 'src="../figures/fig-test.png"',
                   'href="../figures/fig-test.svg"', 'href="../figures/fig-test.csv"',
                   f'href="../book/claims.html#c1">C1</a>: **{claims.headline("C1")}**',
                   "python -m scansnap reproduce fig-test --profile smoke", "--check", "@misc&#123;scansnap-fig-test,"):
        assert needle in paper_row, needle


def test_the_gallerys_cards_on_a_narrow_screen_name_its_columns() -> None:
    """The gallery's rows are cards: the stylesheet labels cell k with the k-th column's name."""
    css = (ROOT / "_static" / "scansnap-layout.css").read_text(encoding="utf8")
    labels = dict(re.findall(r'tag_gallery[^{]*td:nth-child\((\d)\)::before \{ content: "([^"]+)"; \}', css))
    assert [labels.get(str(k)) for k in range(1, len(figures.GALLERY_COLUMNS) + 1)] == list(figures.GALLERY_COLUMNS)
    assert "tag_gallery" in css and ":tags: [remove-input, gallery]" in (
        ROOT / "book" / "figures.md").read_text(encoding="utf8")


def test_bibtex_entry_names_version_commit_profile_and_anchor_url() -> None:
    rec = figures.save(_fig(), "fig-paper-6", {"x": [1]}, {}, caption="Figure 6 of the paper: entropy.",
                       chapter="book/chapters/07-syn-medium")
    entry = figures.bibtex(rec)
    meta = figures.citation()
    assert meta["url"].startswith("https://") and meta["version"] == rec.version
    assert entry.startswith("@misc{scansnap-fig-paper-6,\n") and entry.endswith("\n}")
    fields = dict(re.findall(r"^  (\w+)\s*= \{(.*)\},?$", entry, re.M))
    assert fields["url"] == meta["url"].rstrip("/") + "/book/chapters/07-syn-medium.html#fig-paper-6"
    assert fields["version"] == rec.version and fields["year"] == rec.date[:4]
    assert fields["title"].startswith("Figure 6 of the paper, re-made (fig-paper-6)")
    assert rec.commit.split("+")[0] in fields["note"] and "profile smoke" in fields["note"]
    assert entry.count("{") == entry.count("}")


def test_bibtex_note_names_the_figures_verdicts_and_how_to_check_it() -> None:
    """A citer cites "Figure N, verified": the note gives each verdict the figure is the evidence of (claim, kind of
    evidence, label), the headline of a claim it bears on that no verdict of it covers, and the commands that
    re-make and check it."""
    rec = figures.save(_fig(), "fig-paper-6", {"x": [1]}, {}, caption="Figure 6 of the paper: entropy.",
                       chapter="book/chapters/07-syn-medium", claims=["C1", "C2"])
    rule = Rule("C1", "derivation", _Err, (at_most("err", "error", 1e-10, 1e-6),), alternative="an error of O(1)")
    claims.record(rule.judge(_Err(0.0), _Cfg(), link=rec.anchor))
    note = dict(re.findall(r"^  (\w+)\s*= \{(.*)\},?$", figures.bibtex(rec), re.M))["note"]
    assert "verdicts: [C1 derivation: verified], [C2: not yet checked (the claim's headline)]" in note
    assert note.endswith("; re-make: python -m scansnap reproduce fig-paper-6 --profile smoke; "
                         "check: python -m scansnap reproduce fig-paper-6 --profile smoke --check")


@pytest.mark.parametrize(("fig", "profile", "check"), [
    ("fig-paper-7", "paper", "python -m scansnap store verify ch8-freeze"),  # made from stores/ch8-freeze/paper
    ("fig-paper-7", "smoke", "python -m scansnap reproduce fig-paper-7 --profile smoke --check"),
    ("fig-paper-6", "paper", "python -m scansnap reproduce fig-paper-6 --profile paper --check"),
    ("fig-test", "paper", "python -m scansnap reproduce fig-test --profile paper --check"),
])
def test_a_figure_of_a_stored_run_is_checked_with_store_verify(fig: str, profile: str, check: str) -> None:
    """Re-making a stored paper-protocol run takes an hour or more and drifts from the store past its first steps
    on another machine: its figures are checked with ``store verify``, every other one with ``reproduce --check``."""
    from types import SimpleNamespace

    from scansnap import figure_cite

    record = SimpleNamespace(id=fig, profile=profile, claims=[])
    assert figure_cite.check_command(record) == check
    assert figure_cite.stored_experiment(record) == ("ch8-freeze" if "store verify" in check else None)


@pytest.mark.parametrize(("caption", "paper"), [("Figure 6 of the paper: x.", "Figure 6"),
                                                ("Figures 11-12 of the paper, re-made.", "Figures 11-12"),
                                                ("A figure unlike Figure 3 of the paper.", ""), ("Lemma 2.", "")])
def test_paper_figure_comes_from_the_start_of_the_caption(caption: str, paper: str) -> None:
    rec = figures.save(_fig(), "fig-x", {"x": [1]}, {}, caption=caption, chapter="book/chapters/none")
    assert figures.paper_figure(rec) == paper
    by_id = figures.save(_fig(), "fig-paper-12", {"x": [1]}, {}, caption=caption, chapter="book/chapters/none")
    assert figures.paper_figure(by_id) == (paper or "Figure 12")


@pytest.mark.parametrize("name", ["", "Fig 1", "fig/1", "fig_1"])
def test_save_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValueError, match=r"^name\b"):
        figures.save(_fig(), name, {"x": [1]}, {}, caption="", chapter="c")


def test_save_rejects_bad_profile() -> None:
    with pytest.raises(ValueError, match=r"^profile\b"):
        figures.save(_fig(), "fig-c", {"x": [1]}, {}, caption="", chapter="c", profile="huge")


def test_written_files_get_the_usual_mode_not_mkstemps_0600(tmp_path) -> None:
    import os
    import stat

    from scansnap._io import atomic_write

    atomic_write(tmp_path / "a.txt", b"x")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o666 & ~mask


def _labels(axis) -> list[str]:
    """The tick labels ``axis`` draws (major and minor), in the view."""
    lo, hi = sorted(axis.get_view_interval())
    ticks = axis.get_major_ticks() + axis.get_minor_ticks()
    return [t.label1.get_text() for t in ticks if t.label1.get_text() and lo <= t.get_loc() <= hi]


def test_log_axis_at_labels_the_grid_values_only() -> None:
    """Figure 10's rate axis: one plain label per learning rate, none between (2, 3, 4, 6 x 10^0 collided)."""
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1.25, 8], [1, 0])
    figures.log_axis(ax, "x", at=(1.25, 2, 3.2, 5, 8))
    fig.canvas.draw()
    assert ax.get_xscale() == "log" and _labels(ax.xaxis) == ["1.25", "2", "3.2", "5", "8"]


@pytest.mark.parametrize(("lo", "hi", "most"), [(0.15, 1.1, 4), (1e-15, 0.1, 7), (0.3, 4.0, 4)])
def test_log_axis_never_crowds(lo: float, hi: float, most: int) -> None:
    """Powers of ten (at most 6 decades apart in steps), and 2 and 5 times them on an axis under 1.5 decades: Figure
    7's drift panel (0.15 to 1.1) showed 2, 3, 4, 6 x 10^-1 and 10^0 on a short axis."""
    from scansnap import figure_layout

    fig, ax = plt.subplots(figsize=(3, 2.2), layout="constrained")
    ax.plot([0, 1], [lo, hi])
    figures.log_axis(ax, "y")
    fig.canvas.draw()
    labels = _labels(ax.yaxis)
    assert ax.get_yscale() == "log" and 2 <= len(labels) <= most
    assert not any(f"{k}\\times" in label for label in labels for k in (3, 4, 6, 7, 8, 9))
    assert figure_layout.problems(fig) == []


def test_log_axis_names_a_bad_axis() -> None:
    with pytest.raises(ValueError, match="^which"):
        figures.log_axis(plt.subplots()[1], "z")


@pytest.mark.parametrize(("rtol", "atol", "param"), [(-1e-9, 0.0, "rtol"), (float("nan"), 0.0, "rtol"),
                                                      (0.0, float("inf"), "atol"), (0.0, "0", "atol")])
def test_compare_data_rejects_bad_tolerances(tmp_path: Path, rtol, atol, param: str) -> None:
    a = tmp_path / "a.csv"
    a.write_text("x\n1.0\n")
    with pytest.raises(ValueError, match=names(param)):
        figures.compare_data(a, a, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ["../x", "fig/a", "", "Fig-1"])
def test_load_record_refuses_a_name_that_is_not_a_figure_id(name: str, tmp_path) -> None:
    """A figure id names a file under ``figures/``: a path ("../x") or another character is refused, naming the
    parameter, before any file is read."""
    with pytest.raises(ValueError, match="name: must be lowercase letters"):
        figures.load_record(name, tmp_path)
