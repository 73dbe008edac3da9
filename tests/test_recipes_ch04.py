"""Chapter 4's recipes (fig-ch4-fates, fig-ch4-violations, fig-ch4-eqn10): smoke profile, deterministic, sane."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from scansnap import recipes  # noqa: E402
from scansnap.theory import fates  # noqa: E402

IDS = ["fig-ch4-fates", "fig-ch4-violations", "fig-ch4-eqn10"]


@pytest.fixture(scope="module")
def made() -> dict[str, dict[str, np.ndarray]]:
    """Each recipe's columns in the smoke profile."""
    return {fig_id: recipes.get(fig_id).compute(recipes.defaults(fig_id, "smoke"), None) for fig_id in IDS}


@pytest.mark.parametrize("fig_id", IDS)
def test_recipe_is_deterministic(made, fig_id: str) -> None:
    again = recipes.get(fig_id).compute(recipes.defaults(fig_id, "smoke"), None)
    assert list(again) == list(made[fig_id])
    for name, col in made[fig_id].items():
        assert np.array_equal(col, again[name]), name
        assert col.ndim == 1 and len(col) == len(next(iter(again.values())))


def test_fates_saved_csv_is_byte_identical(tmp_path: Path) -> None:
    a = recipes.run("fig-ch4-eqn10", profile="smoke", out=tmp_path / "a")
    recipes.run("fig-ch4-eqn10", profile="smoke", out=tmp_path / "b")
    files = [(tmp_path / x / "figures" / "fig-ch4-eqn10.csv").read_bytes() for x in "ab"]
    assert files[0] == files[1]
    assert a.record.claims == ["C15"]


def test_fates_columns(made) -> None:
    d = made["fig-ch4-fates"]
    p = recipes.defaults("fig-ch4-fates", "smoke")
    assert d["step"].tolist() == list(range(p["steps"] + 1))
    z = {k: v for k, v in d.items() if k != "step"}
    assert all(abs(v[0]) < 1e-14 for v in z.values())  # Z(0) = 0 (read back through logs: rounding only)
    assert all(abs(v[1]) < 1e-14 for v in z.values())  # Y(0) = 0: the first update leaves Z alone
    # one common token, long-sequence limit: token 0 falls at every later step, distinct tokens rise
    assert np.all(np.diff(d["one_z0_population"][1:]) < 0)
    assert all(np.all(np.diff(d[f"one_z{l}_population"][1:]) > 0) for l in range(1, 10))
    # the asymmetric family: common token 0 rises (Corollary 2's symmetry fails), token 1 falls
    assert d["asym_z0_population"][-1] > 0 > d["asym_z1_population"][-1]


def test_violations_in_the_theorems_setting_are_zero(made) -> None:
    d = made["fig-ch4-violations"]
    p = recipes.defaults("fig-ch4-violations", "smoke")
    assert set(d["family"].tolist()) == set(p["families"])
    sel = (d["protocol"] == "theorem") & (d["limit"] == "population")
    assert sel.sum() == len(p["families"])
    assert np.all(d["distinct_down"][sel] == 0) and np.all(d["common_up"][sel] == 0)
    fams = fates.example_families()
    for i in range(len(d["family"])):
        classes = fams[str(d["family"][i])]
        steps = p["protocols"][str(d["protocol"][i])]["steps"]
        runs = 1 if d["limit"][i] == "population" else len(p["seeds"])
        assert d["distinct_entries"][i] == runs * steps * int(classes.distinct_mask().sum())
        assert d["distinct_still"][i] >= runs * int(classes.distinct_mask().sum())  # the first step from Y(0) = 0
        assert d["distinct_down"][i] + d["distinct_still"][i] <= d["distinct_entries"][i]


def test_eqn10_columns(made) -> None:
    d = made["fig-ch4-eqn10"]
    assert np.all(np.abs(d["cosine"]) <= 1 + 1e-12)
    assert np.all(d["scale"] > 0)
    first = d["step"] == 1  # after one step Y lies in span F exactly: Eqn 10 with the measured coefficients is exact
    assert np.all(d["rel_err_measured_coeffs"][first] < 1e-10) and np.all(d["g_off_span"][first] < 1e-10)
