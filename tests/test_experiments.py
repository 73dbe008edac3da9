"""scansnap.experiments and the command line: recipes re-make figures, same seed same numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from scansnap import experiments  # noqa: E402
from scansnap.cli import main  # noqa: E402


def test_every_recipe_has_smoke_book_paper_defaults() -> None:
    for fig_id, recipe in experiments.RECIPES.items():
        assert recipe.id == fig_id and recipe.chapter.startswith("book/chapters/")
        for profile in ("smoke", "book", "paper"):
            assert experiments.defaults(fig_id, profile)


def test_synsmall_recipe_is_deterministic_and_sane(tmp_path: Path) -> None:
    a = experiments.run("fig-ch1-synsmall", profile="smoke", out=tmp_path / "a")
    b = experiments.run("fig-ch1-synsmall", profile="smoke", out=tmp_path / "b")
    csv_a, csv_b = (tmp_path / f"{x}/figures/fig-ch1-synsmall.csv" for x in "ab")
    assert csv_a.read_bytes() == csv_b.read_bytes()
    d = a.data
    steps = experiments.defaults("fig-ch1-synsmall", "smoke")["steps"]
    assert len(d["step"]) == steps + 1
    np.testing.assert_allclose(d["common_mass_sampled"] + d["distinct_mass_sampled"], 1.0, atol=1e-12)
    assert d["common_mass_sampled"][0] == pytest.approx(10 / 15.5)  # uniform attention at Z = 0
    assert d["loss_limit"][0] == pytest.approx(np.log(34))  # zero init: uniform prediction over M = 34
    assert b.record.params == a.record.params


def test_unknown_figure_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"^figure id\b"):
        experiments.get("fig-nope")


def test_cli_reproduce(tmp_path: Path, capsys) -> None:
    assert main(["reproduce", "fig-ch1-synsmall", "--profile", "smoke", "--out", str(tmp_path), "--quiet"]) == 0
    assert (tmp_path / "figures/fig-ch1-synsmall.csv").exists()
    assert "fig-ch1-synsmall.png" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [["reproduce", "fig-nope"], ["reproduce", "fig-ch1-synsmall", "--profile", "huge"], ["frobnicate"], []],
)
def test_cli_bad_arguments_exit_2_and_list_valid_ones(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "fig-ch1-synsmall" in err and "smoke, book, paper" in err


def test_cli_claims_prints_the_ledger(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path))
    cmd = [sys.executable, "-m", "scansnap", "claims"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert all(f"C{i} " in out for i in range(1, 44))
    assert "not yet checked: 43" in out
