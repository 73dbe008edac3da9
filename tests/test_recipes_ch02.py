"""Chapter 2's recipe (fig-ch2-concentration): deterministic, and its numbers are sane."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from scansnap import recipes  # noqa: E402
from scansnap.recipes.ch02_long_sequences import random_logits  # noqa: E402
from scansnap.theory import hoeffding_radius  # noqa: E402

FIG = "fig-ch2-concentration"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[recipes.Result, Path, Path]:
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    result = recipes.run(FIG, profile="smoke", out=a)
    recipes.run(FIG, profile="smoke", out=b)
    return result, a, b


def test_same_seed_same_bytes(runs) -> None:
    _, a, b = runs
    assert (a / f"figures/{FIG}.csv").read_bytes() == (b / f"figures/{FIG}.csv").read_bytes()


def test_layout_and_sample_counts(runs) -> None:
    d, p = runs[0].data, recipes.defaults(FIG, "smoke")
    assert len({len(v) for v in d.values()}) == 1
    assert len(d["T"]) == len(p["T"]) * len(p["sigmas"]) * 2  # Syn-Small: K = 2 classes
    for T in p["T"]:
        for sigma in p["sigmas"]:
            sel = (d["T"] == T) & (d["sigma"] == sigma)
            assert d["samples"][sel].sum() == p["samples"]  # every sequence counted once, in its class


def test_errors_shrink_and_respect_the_bound(runs) -> None:
    d, p = runs[0].data, recipes.defaults(FIG, "smoke")
    for sigma in p["sigmas"]:
        for k in (0, 1):
            sel = (d["sigma"] == sigma) & (d["cls"] == k)
            assert (np.diff(d["err_mean"][sel]) < 0).all() and (np.diff(d["bound"][sel]) < 0).all()
            assert (d["err_mean"][sel] <= d["err_q"][sel]).all() and (d["err_q"][sel] <= d["err_max"][sel]).all()
    # the bound fails with probability <= delta: allow 3 binomial standard errors over delta
    n = d["samples"]
    assert (d["violations"] <= n * p["delta"] + 3 * np.sqrt(n * p["delta"] * (1 - p["delta"]))).all()
    zero = d["sigma"] == 0
    radius = np.array([hoeffding_radius(int(T), 21, p["delta"]) for T in d["T"][zero]])  # 20 tokens + 1 event
    np.testing.assert_allclose(d["bound"][zero], radius, rtol=1e-12)


def test_rms_constant_is_the_delta_method_one(runs) -> None:
    """rms error x sqrt(T - 1) / sigma_nl near 1 at the largest T (~200 sequences per class: 5 standard
    errors of an rms is ~25%)."""
    d = runs[0].data
    top = d["T"] == d["T"].max()
    assert (np.abs(d["rms_ratio_lo"][top] - 1) < 0.25).all() and (np.abs(d["rms_ratio_hi"][top] - 1) < 0.25).all()


def test_random_logits_share_one_draw() -> None:
    Zs = random_logits(5, [0.0, 0.5, 2.0], 3)
    assert not Zs[0].any()
    np.testing.assert_allclose(4 * Zs[1].numpy(), Zs[2].numpy(), rtol=1e-15)
