"""scansnap.cli: ``reproduce <id> --check`` re-makes a figure and compares it with the published data.

Every figure of the book is checked in the ``smoke`` profile against the data its chapter published by
``tests/test_book.py::test_chapter_executes_in_smoke_profile``; here, on the fastest figure, the check
fails on a tampered data file, on other parameters, and on bad arguments.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from scansnap import figures
from scansnap.cli import main

FIGURE = "fig-ch1-synsmall"


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """``FIGURE`` as a chapter publishes it (smoke profile), in a folder of its own."""
    folder = tmp_path_factory.mktemp("published")
    assert main(["reproduce", FIGURE, "--profile", "smoke", "--out", str(folder), "--quiet"]) == 0
    return folder


@pytest.fixture
def copy(published: Path, tmp_path: Path) -> Path:
    """A copy of the published folder, to tamper with."""
    dest = tmp_path / "site"
    (dest / "figures").mkdir(parents=True)
    for path in (published / "figures").iterdir():
        (dest / "figures" / path.name).write_bytes(path.read_bytes())
    return dest


def _check(against: Path, *extra: str) -> int:
    return main(["reproduce", FIGURE, "--check", "--against", str(against), "--quiet", *extra])


def test_check_passes_on_the_published_data(published: Path, capsys) -> None:
    before = {p.name: p.read_bytes() for p in (published / "figures").iterdir()}
    assert _check(published) == 0
    out = capsys.readouterr().out
    assert "OK: byte-equal" in out and "profile smoke" in out
    commit = json.loads((published / "figures" / f"{FIGURE}.json").read_text())["commit"]
    assert f"re-made with profile smoke at commit {commit}" in out and f"at commit {commit})" in out  # both named
    after = {p.name: p.read_bytes() for p in (published / "figures").iterdir()}
    assert after == before, "--check must not write into the published folder"


def test_check_fails_on_a_tampered_data_file(copy: Path, capsys) -> None:
    path = copy / "figures" / f"{FIGURE}.csv"
    rows = list(csv.reader(path.open()))
    column = next(i for i, v in enumerate(rows[1]) if _is_number(v))
    rows[1][column] = repr(float(rows[1][column]) * 1.01 + 1e-3)
    with path.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    assert _check(copy) == 1
    assert "MISMATCH: the data differ at" in capsys.readouterr().out


def test_check_fails_when_the_published_parameters_differ(copy: Path, capsys) -> None:
    path = copy / "figures" / f"{FIGURE}.json"
    record = json.loads(path.read_text())
    key = sorted(record["params"])[0]
    record["params"][key] = "something else"
    path.write_text(json.dumps(record))
    assert _check(copy) == 1
    assert f"MISMATCH: the parameters differ from the published ones: {key}" in capsys.readouterr().out


def test_check_writes_the_remade_files_under_out_when_asked(published: Path, tmp_path: Path) -> None:
    assert _check(published, "--out", str(tmp_path)) == 0
    made, before = (folder / "figures" / f"{FIGURE}.csv" for folder in (tmp_path, published))
    assert made.read_bytes() == before.read_bytes()


def test_check_without_a_published_figure_exits_2(tmp_path: Path, capsys) -> None:
    assert _check(tmp_path) == 2
    assert "--against: no published figure" in capsys.readouterr().err


def test_check_refuses_another_profile(published: Path, capsys) -> None:
    assert _check(published, "--profile", "book") == 2
    assert "--profile: the published" in capsys.readouterr().err


def test_against_needs_check(published: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", FIGURE, "--against", str(published)])
    assert exc.value.code == 2


def test_compare_data_tolerance(tmp_path: Path) -> None:
    """Not byte-equal but within the stated tolerance passes; beyond it, or other text, fails."""
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("x,label\n1.0,p\n0.30000000000000004,q\n")
    b.write_text("x,label\n1.0,p\n0.3,q\n")
    same = figures.compare_data(a, b)
    assert same.equal and not same.identical and "rtol" in same.detail
    b.write_text("x,label\n1.0,p\n0.31,q\n")
    assert not figures.compare_data(a, b).equal
    b.write_text("x,label\n1.0,p\n0.3,r\n")
    assert not figures.compare_data(a, b).equal
    j, k = tmp_path / "a.json", tmp_path / "b.json"
    j.write_text(json.dumps({"m": [[1.0, float("nan")]], "s": "x"}))
    k.write_text(json.dumps({"m": [[1.0 + 1e-12, float("nan")]], "s": "x"}))
    assert figures.compare_data(j, k).equal
    k.write_text(json.dumps({"m": [[1.0]], "s": "x"}))
    assert not figures.compare_data(j, k).equal


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_reproduce_lists_every_file_it_writes_and_times_its_run(tmp_path: Path, capsys) -> None:
    """An experiment with two figures: re-making one writes both, and the result; every file written is listed, and
    the time printed covers the run, the figures and the files (not the experiment's run alone)."""
    import re

    assert main(["reproduce", "fig-ch4-fates", "--profile", "smoke", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    written = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert {p.name for p in written} >= {"fig-ch4-violations.png", "ch4-training.npz"}
    assert f"{len(written)} files written" in out and all(str(p) in out for p in written)
    assert "also makes fig-ch4-violations" in out
    took, ran = map(float, re.search(r"made in ([\d.]+) s: the experiment ch4-training ran ([\d.]+) s", out).groups())
    recorded = json.loads((tmp_path / "figures" / "fig-ch4-fates.json").read_text())["wall_time_s"]
    assert took >= ran and abs(ran - recorded) < 0.06


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["store", "list", "--steps", "5"], "--steps"),
        (["store", "list", "--horizon", "5"], "--horizon"),
        (["store", "verify", "--steps", "0"], "--steps"),
        (["store", "verify", "--horizon", "-1"], "--horizon"),
        (["reproduce", FIGURE, "--check", "--store"], "--store"),
        (["store", "list", "--root", "/no/such/folder"], "--root"),
        (["store", "verify", "no-such-experiment"], "experiment"),
        (["claims", "--check-lock", "--lock", "/no/such/lock.json"], "--lock"),
        (["rules", "--check", "--file", "/no/such/rules.json"], "--file"),
        (["rules", "--write", "--reasons", "/no/such/reasons.json"], "--reasons"),
        (["rules", "--reason", "why"], "--reason"),
    ],
)
def test_argument_errors_name_the_flag(argv: list[str], flag: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert f"error: {flag}:" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["claims", "--check-lock", "--lock"], ["rules", "--check", "--file"]])
def test_a_lock_file_that_is_not_json_is_named(argv: list[str], tmp_path: Path, capsys) -> None:
    bad = tmp_path / "lock.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit) as exc:
        main([*argv, str(bad)])
    assert exc.value.code == 2
    assert f"error: {argv[-1]}: {bad} is not a JSON file" in capsys.readouterr().err


def test_check_lock_before_a_build_says_to_build_first(tmp_path: Path, monkeypatch, capsys) -> None:
    """With no verdict recorded (no build yet) there is nothing to compare: exit 2 saying what to do, not one
    CHANGED line per locked verdict."""
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path))
    assert main(["claims", "--check-lock"]) == 2
    captured = capsys.readouterr()
    assert "CHANGED" not in captured.out and "build the book first (make book)" in captured.err


def test_an_error_after_parsing_shows_its_command_and_no_figure_ids(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "fig-paper-6", "--jobs", "0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "python -m scansnap reproduce: error: --jobs:" in err and "figure ids" not in err


def test_check_of_a_stored_figure_points_at_store_verify(tmp_path: Path, monkeypatch, capsys) -> None:
    """fig-paper-7 is published from stores/ch8-freeze: --check says that store verify checks it in seconds and that
    the whole re-make drifts on another machine (the re-make itself is stubbed out here: an hour at the paper
    profile)."""
    from scansnap import cli

    (tmp_path / "figures").mkdir()
    record = {"id": "fig-paper-7", "caption": "", "chapter": "book/chapters/08-wikitext", "claims": [], "params": {},
              "profile": "paper", "version": "0", "commit": "0", "wall_time_s": 0.0, "date": "", "command": "",
              "files": {"data": "fig-paper-7.csv"}}
    (tmp_path / "figures" / "fig-paper-7.json").write_text(json.dumps(record))
    monkeypatch.setattr(cli, "_remake", lambda *a: pytest.fail("re-made before the data were found"))
    argv = ["reproduce", "fig-paper-7", "--check", "--against", str(tmp_path), "--quiet"]
    assert main(argv) == 2  # the published data file is missing: stops before the re-make
    err = capsys.readouterr().err
    assert "`python -m scansnap store verify ch8-freeze` checks that run in seconds" in err
    assert "--against: the published data" in err


def test_store_from_a_dirty_checkout_is_refused_before_the_run(monkeypatch, capsys) -> None:
    """A paper-profile run takes an hour or more: --store from a checkout with uncommitted changes is refused before it
    (the store would be refused after it: its commit would read +dirty), exit 2 saying what to do."""
    from scansnap import cli

    monkeypatch.setattr(cli.provenance, "checkout", lambda root=None: cli.provenance.Checkout("0123abc", True))
    monkeypatch.setattr(cli, "_remake", lambda *a: pytest.fail("ran before refusing"))
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", FIGURE, "--profile", "smoke", "--store", "--quiet"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "error: --store: the checkout has uncommitted changes to tracked files (0123abc+dirty)" in err
    assert "commit or stash them (git status) first. Nothing was run" in err
