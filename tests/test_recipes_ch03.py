"""Chapter 3's recipes (scansnap.recipes.ch03_decoder): smoke profile, deterministic, sane values."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from scansnap import recipes  # noqa: E402
from scansnap.theory import decoder as dec  # noqa: E402

IDS = ["fig-paper-8", "fig-ch3-gamma", "fig-ch3-correlated"]


@pytest.fixture(scope="module", params=IDS)
def made(request, tmp_path_factory) -> recipes.Result:
    """Each recipe run twice in the smoke profile: same bytes of its CSV; the first run is returned."""
    fig_id, tmp = request.param, tmp_path_factory.mktemp(request.param)
    a = recipes.run(fig_id, profile="smoke", out=tmp / "a")
    recipes.run(fig_id, profile="smoke", out=tmp / "b")
    csv_a, csv_b = (tmp / f"{x}/figures/{fig_id}.csv" for x in "ab")
    assert csv_a.read_bytes() == csv_b.read_bytes()
    return a


def test_recipe_columns(made: recipes.Result) -> None:
    lengths = {len(v) for v in made.data.values()}
    assert len(lengths) == 1 and all(np.asarray(v).ndim == 1 for v in made.data.values())
    assert made.record.chapter == "book/chapters/03-decoder-dynamics"
    assert all(np.isfinite(np.asarray(v)).all() for v in made.data.values())
    if made.record.id == "fig-paper-8":
        fig8_values(made)
    elif made.record.id == "fig-ch3-gamma":
        gamma_values(made)
    else:
        correlated_values(made)


def fig8_values(r: recipes.Result) -> None:
    d = r.data
    for M, eta in r.record.params["pairs"]:
        key = f"M{int(M)}_eta{float(eta):g}"
        assert d[f"gap_running_min_{key}"][-1] >= -1e-12  # the discrete margin never falls below h(s)
        assert d[f"gap_running_max_{key}"][-1] <= float(eta) / int(M)  # and stays within eta/M above
        assert d[f"h_discrete_{key}"][0] == 0 and (np.diff(d[f"h_continuous_{key}"]) > 0).all()


def gamma_values(r: recipes.Result) -> None:
    d, p = r.data, r.record.params
    M, K = p["M"], p["K"]
    # one full-batch step from Y = 0 gives each class row h (M e_n - 1) with h = (eta/K)/M (Lemma 5)
    first = d["t"] == 1
    expect = dec.gamma_of_h(d["eta"][first] / K / M, M)
    assert np.allclose(d["gamma_measured"][first], expect, rtol=0.03)  # weak overlaps: within 3%
    # weak overlaps: measured within 10% of the formula everywhere, direction within 15%
    assert (np.abs(d["gamma_measured"] / d["gamma_theory"] - 1) < 0.1).all()
    assert (d["residual"] < 0.15).all()
    early = d["t"] <= 0.1 * d["t0"]
    assert np.allclose(d["gamma_theory"][early], d["gamma_early"][early], rtol=0.05)


def correlated_values(r: recipes.Result) -> None:
    d = r.data
    zero = d["rho"] == 0
    assert d["g_error"][zero].max() < 1e-10  # no overlap: Theorem 1 exact for the true dynamics
    assert d["g_error"][d["rho"] == 0.95].max() > 0.1  # strong overlap: it is not
    assert (d["miss"] > 0).all() and (d["miss"] < 1).all()
