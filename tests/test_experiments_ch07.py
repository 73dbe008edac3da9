"""Chapter 7's experiments (smoke profile): the Syn-Medium sweep behind Figures 6, 11 and 12 (one run, three
figures), its analysis and verdicts, and the finer grid."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from scansnap import data, experiments, metrics, results  # noqa: E402
from scansnap.experiments import ch07_fine_grid as fg  # noqa: E402
from scansnap.experiments import ch07_syn_medium as ch7  # noqa: E402
from scansnap.experiments import syn_medium_rules as srm  # noqa: E402
from scansnap.experiments import syn_medium_run as smr  # noqa: E402

RAMP_ENTROPY = 2.151281720651836  # entropy of linspace(0.1, 1, 10), normalized
FIGS = ("fig-paper-6", "fig-paper-11", "fig-paper-12")


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sweep")


@pytest.fixture(scope="module")
def made(out: Path) -> experiments.Made:
    return experiments.make(ch7.SWEEP, profile="smoke", out=out)


def test_paper_preset_is_the_authors_sweep() -> None:
    c = ch7.SweepConfig.preset("paper")
    assert (c.num_query, c.eta_Z, c.ratio, c.seeds) == ((1, 3, 5, 10), (0.5, 1.0, 2.0, 3.0), (1.0, 2.0, 5.0, 10.0),
                                                        tuple(range(1, 11)))
    assert (c.steps, c.batch, c.T, c.momentum, c.init) == (100, 128, 128, 0.9, "uniform")
    assert ch7.SweepConfig.preset("book") == c and c.shortfall() == ()
    assert {cut.split()[0].rstrip(":") for cut in ch7.SweepConfig.preset("smoke").shortfall()} == {
        "num_query", "eta_Z", "ratio", "seeds", "steps", "batch"}
    fine = fg.FineGridConfig.preset("book")
    assert len(fine.eta_Z) >= 7 and len(fine.ratio) >= 7
    for spec in (*ch7.SWEEP.figures, *fg.FINE.figures):  # captions state no run parameter that a profile changes
        assert "100" not in spec.caption and "128" not in spec.caption


def test_one_run_makes_three_figures_deterministically(made, out: Path, tmp_path: Path) -> None:
    again = experiments.make("fig-paper-11", profile="smoke", out=tmp_path)  # any of its figures names the run
    assert set(made.figures) == set(FIGS) == set(again.figures)
    for fig_id in FIGS:
        name = made.records[fig_id].files["data"]
        assert name.endswith(".csv")
        assert (out / "figures" / name).read_bytes() == (tmp_path / "figures" / name).read_bytes()
    assert (out / "figures/fig-paper-11.csv").read_bytes() == (out / "figures/fig-paper-12.csv").read_bytes()
    assert experiments.load_result("fig-paper-12", tmp_path).config == made.config


def test_result_saves_and_reloads(made, tmp_path: Path) -> None:
    path = results.save(made.result, tmp_path / "r.npz")
    back = results.load(ch7.SweepResult, path)
    assert back.config == made.result.config and isinstance(back.runs[0], ch7.SweepRun)
    for a, b in zip(back.runs, made.result.runs, strict=True):
        np.testing.assert_array_equal(a.recall_entry, b.recall_entry)
        np.testing.assert_array_equal(a.entropy, b.entropy)


def test_fig6_table_is_sane(made) -> None:
    c, d = made.config, ch7.fig6_table(made.result)
    assert all(len(v) == len(c.num_query) * len(c.eta_Z) * len(c.ratio) for v in d.values())
    np.testing.assert_allclose(d["eta_Y"], d["eta_Z"] * d["ratio"])
    assert ((d["entropy_mean"] > 0) & (d["entropy_mean"] < math.log(10))).all() and (d["entropy_std"] >= 0).all()
    # the uniform initialization is small (|z| <= 1/sqrt(M)): the entropy starts near that of Z = 0
    assert np.abs(d["entropy_init_mean"] - RAMP_ENTROPY).max() < 0.05


def test_recall_curves_start_at_one_and_never_rise(made) -> None:
    c = made.config
    for run in made.result.runs:
        for curves in (run.recall_entry, run.recall_fn):
            assert curves.shape == (*c.shape, c.thresholds)
            assert (curves[..., 0] == 1).all() and ((curves >= 0) & (curves <= 1)).all()
            assert (np.diff(curves, axis=-1) <= 1e-12).all()
    d = ch7.recall_table(made.result)
    assert np.unique(d["threshold"]).tolist() == c.entry_thresholds().tolist()


def test_the_step0_attention_is_the_initial_attention_of_the_same_runs(made) -> None:
    """The step-0 attention (context) is the one train_grid started from (its step-0 entropy), the same for every
    learning rate of a seed."""
    c = made.config
    for run in made.result.runs:
        f0 = smr.initial_attention(run.num_query, c)
        entropy = metrics.attention_entropy(f0, data.syn_medium(run.num_query)).numpy()
        np.testing.assert_allclose(entropy, run.entropy_init, rtol=1e-12)
        assert (f0 == f0[:1, :1]).all() and (run.recall_entry_init == run.recall_entry_init[:1, :1]).all()


def test_the_control_deals_the_same_runs_to_permuted_learning_rates(made) -> None:
    """Per dataset and seed the control holds the same runs (each with its own entropy and recall curves), dealt to
    the cells by a permutation fixed by its seed; another seed deals them otherwise."""
    for run, perm in zip(made.result.runs, ch7.permuted(made.result).runs, strict=True):
        nZ, nR, nS = run.entropy.shape
        for s in range(nS):
            before = sorted(zip(run.entropy[:, :, s].ravel(), run.recall_entry[:, :, s].reshape(nZ * nR, -1)[:, 1],
                                strict=True))
            after = sorted(zip(perm.entropy[:, :, s].ravel(), perm.recall_entry[:, :, s].reshape(nZ * nR, -1)[:, 1],
                               strict=True))
            assert before == after  # the same runs, each with its own measurements
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((4, 4, 5)), rng.standard_normal((4, 4, 5, 3))]
    one, again, other = (srm.permuted_cells(arrays, 3, seed) for seed in (0, 0, 1))
    assert all((a == b).all() for a, b in zip(one, again, strict=True))  # fixed by its seed
    assert not (one[0] == other[0]).all() and not (one[0] == arrays[0]).all()
    order = np.argsort(arrays[0][:, :, 2].ravel())  # the second array moves with the first
    np.testing.assert_array_equal(np.sort(one[0][:, :, 2].ravel()), arrays[0][:, :, 2].ravel()[order])
    moved = {tuple(v) for v in one[1][:, :, 2].reshape(16, 3)} == {tuple(v) for v in arrays[1][:, :, 2].reshape(16, 3)}
    assert moved


def test_a_permuted_sweep_has_no_learning_rate_trend() -> None:
    """On a sweep whose entropy falls with eta_Z in every seed, the permuted control finds a trend no better than
    chance: finite measures that miss the rules' thresholds, and differ from the run's."""
    rng = np.random.default_rng(0)
    z, r = (0.5, 1.0, 2.0, 3.0), (1.0, 2.0, 5.0, 10.0)
    base = 2 - 0.1 * np.array(z)[:, None] + (np.log(r)[None, :] - np.log(2)) ** 2 / 10
    entropy = base[..., None] + 1e-3 * rng.standard_normal((4, 4, 10))
    fake = _fake(entropy, z, r)
    c38, c39, _ = ch7.measures(ch7.analyze(ch7.permuted(fake)))
    assert math.isfinite(c38.median_effect) and ch7.RULE_C38.level(c38) == "not reproduced"
    assert ch7.RULE_C39.level(c39) == "not reproduced"
    levels = [v.level for v in ch7.sweep_verdicts(fake)[:2]]
    assert levels == ["verified", "verified"]


def test_verdicts_carry_their_control_and_the_reduced_protocol(made) -> None:
    verdicts = ch7.SWEEP.verdicts(made.result)
    assert [(v.claim, v.evidence) for v in verdicts] == [(c, "training-sampled") for c in ("C38", "C39", "C42")]
    for v, rule in zip(verdicts, ch7.RULES, strict=True):
        assert set(v.control) == set(v.numbers) and any(math.isfinite(x) and x != 0 for x in v.control.values())
        assert v.reduced == made.config.shortfall() != ()
        # the smoke run cuts the steps, which every rule depends on: inconclusive whichever way the criteria go
        assert v.level == "inconclusive" and v.reason.startswith("reduced protocol") and "steps" in v.reason
        assert v.protocol.startswith(made.config.protocol()) and v.link.endswith(("#fig-paper-6", "#fig-paper-11"))
        assert "permuted" in rule.control and set(rule.depends_on) == {"steps"}


def _fake(entropy: np.ndarray, eta_Z: tuple, ratio: tuple, recall: np.ndarray | None = None) -> ch7.SweepResult:
    nZ, nR, nS = entropy.shape
    if recall is None:  # each run's curve reaches further the lower its entropy (a sparser attention)
        curves = np.clip(1 - np.linspace(0, 1, 101) / (0.2 * np.exp(-entropy[..., None])), 0, 1)
    else:
        curves = recall
    c = ch7.SweepConfig(num_query=(1,), eta_Z=eta_Z, ratio=ratio, seeds=tuple(range(1, nS + 1)),
                        thresholds=curves.shape[-1], entry_threshold_max=1.0, fn_threshold_max=1.0)
    start = np.full_like(entropy, 2.0)
    run = ch7.SweepRun(1, entropy, start, np.zeros_like(entropy), curves, curves, np.ones_like(curves),
                       np.ones_like(curves))
    return ch7.SweepResult(c, (run,))


def test_analysis_counts_trends_and_finds_the_threshold() -> None:
    rng = np.random.default_rng(0)
    z, r = (0.5, 1.0, 2.0), (1.0, 2.0, 5.0, 10.0)
    # entropy = 2 - 0.1 eta_Z + (log ratio - log 2)^2 / 10 + noise: falls with eta_Z, least at ratio 2
    base = 2 - 0.1 * np.array(z)[:, None] + (np.log(r)[None, :] - np.log(2)) ** 2 / 10
    entropy = base[..., None] + 1e-4 * rng.standard_normal((3, 4, 5))
    a = ch7.analyze(_fake(entropy, z, r))
    e, t = a.eta_Z_trend, a.ratio_trend
    assert (e.rows, e.rows_monotone, e.steps, e.steps_significant) == (4, 4, 8, 8)
    assert a.threshold == 2.0 and a.argmin[1].tolist() == [2.0, 2.0, 2.0] and a.near_threshold == 3
    assert (t.rows, t.rows_monotone, t.steps, t.steps_along) == (3, 3, 6, 6)
    c38, c39, _ = ch7.measures(a)
    assert ch7.RULE_C38.level(c38) == ch7.RULE_C39.level(c39) == "verified"
    levels = [v.level for v in ch7.sweep_verdicts(_fake(entropy, z, r))]  # the control (rates permuted) fails
    assert levels[:2] == ["verified", "verified"]
    null = 2 + 1e-2 * rng.standard_normal((3, 4, 5))  # no learning-rate effect: seed noise only
    n38, n39, _ = ch7.measures(ch7.analyze(_fake(null, z, r)))
    assert ch7.RULE_C38.level(n38) == ch7.RULE_C39.level(n39) == "not reproduced"
    entropy[:, 3] = entropy[::-1, 3]  # the entropy now rises with eta_Z at ratio 10
    assert ch7.analyze(_fake(entropy, z, r)).eta_Z_trend.rows_monotone == 3


def test_recall_reach_orders_sharper_attention_first() -> None:
    """Recall curves built so that the reach grows with eta_Z and falls with the ratio, and the entropy does
    the opposite: every ordering count is full and the rank correlation is 1."""
    z, r, taus = (0.5, 2.0), (1.0, 2.0, 5.0), np.linspace(0, 1.0, 101)
    reach = 0.1 + 0.1 * np.array(z)[:, None] - 0.02 * np.array(r)[None, :]  # (2, 3)
    recall = np.clip(1 - taus / (2 * reach[..., None]), 0, 1)[:, :, None, :].repeat(2, axis=2)
    entropy = (2 - reach)[..., None] + np.array([0.0, 1e-3])
    a = ch7.analyze(_fake(entropy, z, r, recall))
    assert a.fig12_rising == a.fig12_rows == 3 and a.fig11_falling_all == a.fig11_rows == 2
    assert a.spearman[1] == pytest.approx(1.0)


def test_fine_grid_locates_the_minimum(tmp_path: Path) -> None:
    made = experiments.make("fig-ch7-fine-grid", profile="smoke", out=tmp_path)
    c = made.config
    d = fg.fine_table(made.result)
    assert sorted(set(d["num_query"])) == list(c.num_query) and np.isfinite(d["entropy_mean"]).all()
    zs, rs = np.geomspace(0.25, 4, 7), np.geomspace(0.25, 16, 7)
    cfg = fg.FineGridConfig(num_query=(1,), eta_Z=tuple(zs), ratio=tuple(rs), seeds=(1,))

    def located(grid: np.ndarray) -> fg.MinimumLocation:
        zero = np.zeros((7, 7, 1))
        run = fg.GridRun(1, grid[..., None], zero, zero)
        return fg.locate_minimum(fg.FineGridResult(cfg, (run,)))[0]

    fixed_ratio = (np.log(rs)[None, :] - np.log(2.5)) ** 2 + 0 * zs[:, None]
    loc = located(fixed_ratio)
    np.testing.assert_allclose(loc.best_ratio, 2.5, rtol=1e-10)
    assert loc.slope == pytest.approx(1.0) and loc.interior.all()
    fixed_eta_Y = (np.log(rs)[None, :] - np.log(2 / zs)[:, None]) ** 2  # minimum at eta_Y = 2: slope 0
    loc = located(fixed_eta_Y)
    assert loc.slope == pytest.approx(0.0, abs=1e-9) and loc.interior.sum() >= 3
    assert not located(np.tile(np.arange(7.0), (7, 1))).interior.any()  # minimum at the edge: not resolved


@pytest.mark.parametrize(("field", "value"), [("thresholds", 1), ("entry_threshold_max", 0.0),
                                              ("eval_sequences", 0), ("ratio", (5.0, 1.0))])
def test_sweep_config_rejects_bad_values_by_name(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        ch7.SweepConfig.preset("smoke").replace(**{field: value})
