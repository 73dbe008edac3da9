"""Chapter 5's recipes (fig-ch5-scanning, fig-paper-4, fig-paper-5): smoke profile, deterministic, sane."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from scansnap import data, recipes  # noqa: E402
from scansnap.recipes.ch05_scanning import TOKENS, table_attention, table_column  # noqa: E402

IDS = ["fig-ch5-scanning", "fig-paper-4", "fig-paper-5"]


@pytest.fixture(scope="module")
def made() -> dict[str, dict[str, np.ndarray]]:
    """Each recipe's columns in the smoke profile (rendering and saving are covered by tests/test_book.py)."""
    return {fig_id: recipes.get(fig_id).compute(recipes.defaults(fig_id, "smoke"), None) for fig_id in IDS}


@pytest.mark.parametrize("fig_id", IDS)
def test_recipe_is_deterministic(made, fig_id: str) -> None:
    recipe = recipes.get(fig_id)
    again = recipe.compute(recipes.defaults(fig_id, "smoke"), None)
    first = made[fig_id]
    assert list(again) == list(first)
    for name in first:
        assert np.array_equal(first[name], again[name], equal_nan=True), name
    assert len({len(v) for v in first.values()}) == 1 and all(np.asarray(v).ndim == 1 for v in first.values())
    assert recipe.chapter == "book/chapters/05-scanning"
    for profile in ("smoke", "book", "paper"):
        assert recipes.defaults(fig_id, profile)


def test_scanning_recipe_is_theorem_3(made) -> None:
    d = made["fig-ch5-scanning"]
    assert d["t"][0] == 0 and (np.diff(d["t"]) > 0).all()
    assert d["eqn11_rel_error"].max() < 1e-7
    assert (d["chi"] >= d["chi_lower"] * (1 - 1e-9)).all() and (d["chi"] <= d["chi_upper"] * (1 + 1e-9)).all()
    shares = np.stack([d[f"share_{l}"] for l in range(10, 20)], axis=1)
    np.testing.assert_allclose(shares.sum(1), 1.0, atol=1e-12)
    p = np.linspace(0.1, 1.0, 10)
    np.testing.assert_allclose(shares[0], p / p.sum(), atol=1e-12)  # Z(0) = 0: shares are P(l|n) on G_DT
    assert d["common_mass"][0] == pytest.approx(10 / 15.5) and d["common_mass"][-1] < d["common_mass"][0]
    assert (np.diff(d["ft_dominant"]) >= -1e-12).all() and d["ft_dominant"][-1] > d["ft_dominant"][0]
    assert (np.diff(shares[-1]) > 0).all(), "at the end the shares are still ordered by P (scanning)"


@pytest.mark.parametrize(("fig_id", "key"), [("fig-paper-4", "ratio"), ("fig-paper-5", "lr")])
def test_training_tables_are_sane(made, fig_id: str, key: str) -> None:
    d = made[fig_id]
    p = recipes.defaults(fig_id, "smoke")
    values = p["ratios"] if key == "ratio" else p["lrs"]
    assert sorted(set(d[key].tolist())) == sorted(values)
    assert len(d["step"]) == len(values) * len(p["seeds"]) * (p["steps"] + 1)
    if key == "ratio":
        np.testing.assert_allclose(d["eta_Y"], d["ratio"] * p["eta_Z"])
        assert (d["eta_Z"] == p["eta_Z"]).all()
    else:
        assert (d["eta_Y"] == d["lr"]).all() and (d["eta_Z"] == d["lr"]).all()
    classes = data.syn_small()
    p1 = classes.probs[0, :TOKENS].numpy()
    entropy0 = -(p1[10:] / p1[10:].sum() * np.log(p1[10:] / p1[10:].sum())).sum()
    for v in values:
        att = table_attention(d, key, v)  # (seeds, steps + 1, 20)
        np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-12)  # class 1's support is tokens 0-19
        np.testing.assert_allclose(att[:, 0], np.broadcast_to(p1, att[:, 0].shape), atol=1e-15)  # zero init
        loss = table_column(d, key, v, "loss")
        np.testing.assert_allclose(loss[:, 0], np.log(classes.M), rtol=1e-14)  # uniform prediction at Y = 0
        assert np.isnan(loss[:, -1]).all() and (loss[:, -2] < loss[:, 0]).all()
        np.testing.assert_allclose(table_column(d, key, v, "entropy")[:, 0], entropy0, rtol=1e-12)
        np.testing.assert_allclose(table_column(d, key, v, "common_mass")[:, 0], 10 / 15.5, rtol=1e-12)
        assert np.abs(att[:, -1] - att[:, 0]).max() > 1e-3, "the attention must have moved"
