"""Chapter 7's recipes (smoke profile): the batched Syn-Medium sweep, Figures 6, 11, 12, the finer grid,
and the analysis helpers behind the verdicts."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from scansnap import data, metrics, recipes, train  # noqa: E402
from scansnap.recipes import ch07_syn_medium as ch7  # noqa: E402

RAMP_ENTROPY = 2.151281720651836  # entropy of linspace(0.1, 1, 10), normalized


@pytest.fixture
def smoke() -> dict:
    return recipes.defaults("fig-paper-6", "smoke")


def test_paper_profile_is_the_authors_sweep() -> None:
    p = recipes.defaults("fig-paper-6", "paper")
    assert p["num_query"] == [1, 3, 5, 10] and p["eta_Z"] == [0.5, 1.0, 2.0, 3.0]
    assert p["ratio"] == [1.0, 2.0, 5.0, 10.0] and p["seeds"] == list(range(1, 11))
    assert (p["steps"], p["batch"], p["T"], p["momentum"], p["init"]) == (100, 128, 128, 0.9, "uniform")
    fine = recipes.defaults("fig-ch7-fine-grid", "book")
    assert len(fine["eta_Z"]) >= 7 and len(fine["ratio"]) >= 7


def test_fig6_is_deterministic_and_sane(tmp_path: Path, smoke: dict) -> None:
    ch7._CACHE.clear()
    a = recipes.run("fig-paper-6", profile="smoke", out=tmp_path / "a")
    ch7._CACHE.clear()  # train again, not from the cache
    recipes.run("fig-paper-6", profile="smoke", out=tmp_path / "b")
    csv_a, csv_b = (tmp_path / f"{x}/figures/fig-paper-6.csv" for x in "ab")
    assert csv_a.read_bytes() == csv_b.read_bytes()
    d = a.data
    cells = len(smoke["num_query"]) * len(smoke["eta_Z"]) * len(smoke["ratio"])
    assert all(len(v) == cells for v in d.values())
    assert (d["seeds"] == len(smoke["seeds"])).all()
    np.testing.assert_allclose(d["eta_Y"], d["eta_Z"] * d["ratio"])
    assert ((d["entropy_mean"] > 0) & (d["entropy_mean"] < math.log(10))).all() and (d["entropy_std"] >= 0).all()
    # the uniform initialization is small (|z| <= 1/sqrt(M)): the entropy starts near that of Z = 0
    assert np.abs(d["entropy_init_mean"] - RAMP_ENTROPY).max() < 0.05


def test_sweep_is_one_batched_run_per_dataset_and_matches_a_lone_run(smoke: dict, monkeypatch) -> None:
    """The batched sweep calls train() once per dataset, and a configuration trained alone gives the
    same entropy (same seed: same initialization and batches)."""
    calls = []
    real = train.train
    monkeypatch.setattr(train, "train", lambda *a, **k: calls.append(len(k["seed"])) or real(*a, **k))
    ch7._CACHE.clear()
    runs = ch7.sweep(smoke)
    C = len(smoke["eta_Z"]) * len(smoke["ratio"]) * len(smoke["seeds"])
    assert calls == [C] * len(smoke["num_query"])
    assert ch7.sweep(smoke) is runs and len(calls) == len(smoke["num_query"])  # cached
    run = runs[smoke["num_query"][-1]]
    alone = dict(smoke, eta_Z=[smoke["eta_Z"][1]], ratio=[smoke["ratio"][0]], seeds=[smoke["seeds"][1]])
    lone = ch7.run_dataset(run.num_query, alone)
    assert abs(lone.entropy[0, 0, 0] - run.entropy[1, 0, 1]) < 1e-4
    torch.testing.assert_close(metrics.attention_entropy(run.attention, run.classes),
                               torch.from_numpy(run.entropy), rtol=0, atol=1e-12)


def test_recall_figures_share_the_data(tmp_path: Path) -> None:
    r11 = recipes.run("fig-paper-11", profile="smoke", out=tmp_path)
    r12 = recipes.run("fig-paper-12", profile="smoke", out=tmp_path)
    d = r11.data
    for key in d:
        np.testing.assert_array_equal(d[key], r12.data[key])
    p = recipes.defaults("fig-paper-11", "smoke")
    taus = ch7.thresholds(p)
    assert np.unique(d["threshold"]).tolist() == taus.tolist()
    at0 = d["threshold"] == 0
    assert (d["recall_mean"][at0] == 1).all() and (d["recall_renormalized_mean"][at0] == 1).all()
    for key in ("recall_mean", "recall_renormalized_mean"):
        curves = d[key].reshape(-1, len(taus))  # rows are (q, eta_Z, ratio) with thresholds fastest
        assert (np.diff(curves, axis=1) <= 1e-15).all() and ((curves >= 0) & (curves <= 1)).all()


def test_fine_grid_recipe(tmp_path: Path) -> None:
    p = recipes.defaults("fig-ch7-fine-grid", "smoke")
    r = recipes.run("fig-ch7-fine-grid", profile="smoke", out=tmp_path)
    grids, zs, rs = ch7.cell_grid(r.data, "entropy_mean")
    assert sorted(grids) == p["num_query"] and zs.tolist() == p["eta_Z"] and rs.tolist() == p["ratio"]
    assert all(np.isfinite(g).all() for g in grids.values())


def _fake_run(entropy: np.ndarray, eta_Z: list[float], ratio: list[float]) -> ch7.SweepRun:
    nZ, nR, nS = entropy.shape
    c = data.syn_medium(1)
    return ch7.SweepRun(num_query=1, eta_Z=np.array(eta_Z), ratio=np.array(ratio), seeds=np.arange(1, nS + 1),
                        entropy=entropy, entropy_init=np.zeros_like(entropy), loss=np.zeros_like(entropy),
                        attention=torch.zeros(nZ, nR, nS, c.K, c.M, dtype=torch.float64))


def test_trend_and_threshold_counts() -> None:
    rng = np.random.default_rng(0)
    z, r = [0.5, 1.0, 2.0], [1.0, 2.0, 5.0, 10.0]
    # entropy = 2 - 0.1 * eta_Z + (log ratio - log 2)^2 / 10 + noise: falls with eta_Z, least at ratio 2
    base = 2 - 0.1 * np.array(z)[:, None] + (np.log(r)[None, :] - np.log(2)) ** 2 / 10
    entropy = base[..., None] + 1e-4 * rng.standard_normal((3, 4, 5))
    runs = {1: _fake_run(entropy, z, r)}
    t = ch7.eta_Z_trend(runs)
    assert (t["rows"], t["rows_holding"], t["pairs"], t["pairs_decreasing"], t["pairs_significant"]) == (4, 4, 8, 8, 8)
    th = ch7.ratio_threshold(runs)
    assert th["threshold"] == 2.0 and th["argmin"] == {1: [2.0, 2.0, 2.0]}
    assert (th["rows"], th["rows_holding"], th["pairs"], th["pairs_rising"]) == (3, 3, 6, 6)
    # flip one row: the entropy now rises with eta_Z at ratio 10
    entropy[:, 3] = entropy[::-1, 3]
    t = ch7.eta_Z_trend({1: _fake_run(entropy, z, r)})
    assert t["rows_holding"] == 3 and t["failures"] == [(1, 10.0)] and t["pairs_decreasing"] == 6


def test_argmin_ratio_and_threshold_scaling() -> None:
    ratios = np.geomspace(0.25, 16, 7)
    eta_Z = np.geomspace(0.25, 4, 7)
    # least entropy at ratio 2.5 for every eta_Z (a parabola in log ratio): a fixed ratio, slope 1
    fixed_ratio = (np.log(ratios)[None, :] - np.log(2.5)) ** 2 + 0 * eta_Z[:, None]
    np.testing.assert_allclose(ch7.argmin_ratio(fixed_ratio, ratios), 2.5, rtol=1e-12)
    sc = ch7.threshold_scaling(fixed_ratio, eta_Z, ratios)
    assert abs(sc["slope"] - 1) < 1e-9 and sc["interior"].all()
    # least entropy at eta_Y = 2 for every eta_Z: ratio 2 / eta_Z, slope 0 (rows whose minimum leaves the grid drop)
    fixed_eta_Y = (np.log(ratios)[None, :] - np.log(2 / eta_Z)[:, None]) ** 2
    sc = ch7.threshold_scaling(fixed_eta_Y, eta_Z, ratios)
    assert abs(sc["slope"]) < 1e-9 and sc["interior"].sum() >= 3
    edge = np.tile(np.arange(7.0), (7, 1))  # minimum at the first ratio: kept as is, not interior
    assert (ch7.argmin_ratio(edge, ratios) == ratios[0]).all()
    assert not ch7.threshold_scaling(edge, eta_Z, ratios)["interior"].any()


def test_recall_ordering_on_constructed_attention() -> None:
    """Three configurations whose distinct attention is ever more peaked: the reach must grow with
    the peak and the counts must follow the entropies."""
    c = data.syn_medium(1)
    mask = c.distinct_mask()
    f = torch.zeros(2, 2, 1, c.K, c.M, dtype=torch.float64)
    for i, temp in enumerate((0.2, 1.0)):  # eta_Z index: sharper at i = 1
        for j, shift in enumerate((0.0, -0.5)):  # ratio index: flatter at j = 1
            w = torch.softmax(torch.linspace(0, 3, 10, dtype=torch.float64) * (temp + shift + 0.6), 0)
            for n in range(c.K):
                f[i, j, 0, n, mask[n]] = w
    run = ch7.SweepRun(num_query=1, eta_Z=np.array([0.5, 2.0]), ratio=np.array([1.0, 5.0]), seeds=np.array([1]),
                       entropy=metrics.attention_entropy(f, c).numpy(), entropy_init=np.zeros((2, 2, 1)),
                       loss=np.zeros((2, 2, 1)), attention=f)
    o = ch7.recall_ordering({1: run}, np.linspace(0, 1, 201), threshold=1.0)
    assert o["fig12_paper"] == 2 and o["fig11_paper"] == 2 and o["consistent"] == 4 == o["groups"]
    reach = o["reach"][1]
    assert reach[1, 0] > reach[0, 0] > reach[0, 1]
