"""Chapter 5's experiments (ch5-scanning, ch5-fig4, ch5-fig5, ch5-gd, ch5-prior): smoke sizes, typed, sane, and
their verdicts name the right claims and evidence kinds."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import names  # noqa: E402

from scansnap import data, results  # noqa: E402
from scansnap.experiments import ch05_adam as adam  # noqa: E402
from scansnap.experiments import ch05_scanning as scan  # noqa: E402
from scansnap.experiments import ch05_synsmall as syn  # noqa: E402
from scansnap.experiments import ch05_training as trn  # noqa: E402


@pytest.fixture(scope="module")
def scanning() -> scan.ScanningResult:
    config = scan.ScanningConfig(t_max=300.0, points=30, random_families=1, random_t_max=30.0, flow_t_max=500.0)
    return scan.run_scanning(config)


@pytest.fixture(scope="module")
def fig4() -> syn.Fig4Result:
    return syn.run_fig4(syn.Fig4Config(steps=10, seeds=(1, 2), ratios=(1.0, 10.0)))


def test_scanning_is_theorem_3(scanning: scan.ScanningResult) -> None:
    r = scanning
    assert r.t[0] == 0 and (np.diff(r.t) > 0).all()
    assert r.eqn11_error.max() < 1e-7 and r.random_eqn11_error.max() < 1e-7
    m = scan.dominant_measures(r)
    assert ((m["chi"] >= m["lower"] * (1 - 1e-9)) & (m["chi"] <= m["upper"] * (1 + 1e-9))).all()
    sh = scan.distinct_shares(r)
    np.testing.assert_allclose(sh.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(sh[0], np.linspace(0.1, 1, 10) / 5.5, atol=1e-12)  # Z(0) = 0: shares are P on G_DT
    assert (np.diff(sh[-1]) > 0).all(), "at the end the shares are still ordered by P"
    assert r.flow_share[-1, -1] > r.flow_share[0, -1]
    t = scan.scanning_table(r)
    assert len({len(v) for v in t.values()}) == 1 and t["common_mass"][0] == pytest.approx(10 / 15.5)


def test_scanning_verdicts(scanning: scan.ScanningResult) -> None:
    got = [(v.claim, v.evidence) for v in scan.SCANNING.verdicts(scanning)]
    assert got == [("C19", "derivation"), ("C20", "derivation"), ("C21", "simulation"), ("C22", "simulation"),
                   ("C23", "derivation")]


def test_fig4_runs_are_sane(fig4: syn.Fig4Result) -> None:
    runs, classes = fig4.runs, data.syn_small()
    assert runs.attention.shape == (2, 2, 11, 20) and runs.loss.shape == (2, 2, 10)
    np.testing.assert_allclose(runs.attention.sum(-1), 1.0, atol=1e-12)  # class 1's support is tokens 0-19
    np.testing.assert_allclose(runs.attention[:, :, 0], np.broadcast_to(classes.probs[0, :20].numpy(), (2, 2, 20)),
                               atol=1e-15)  # zero initialization
    np.testing.assert_allclose(runs.loss[..., 0], np.log(classes.M), rtol=1e-14)
    np.testing.assert_allclose(runs.common_mass[..., 0], 10 / 15.5, rtol=1e-12)
    assert fig4.theorem3.deviation_max.shape == (2, 2) and (fig4.theorem3.monotone_share <= 1).all()
    assert syn.steps_to_loss(runs, 1e9).tolist() == [[0, 0], [0, 0]]
    t = syn.runs_table(runs, "ratio")
    assert len(t["step"]) == 2 * 2 * 11 and len({len(v) for v in t.values()}) == 1


def test_fig4_verdicts_and_reload(fig4: syn.Fig4Result, tmp_path: Path) -> None:
    got = [(v.claim, v.evidence) for v in syn.FIG4.verdicts(fig4)]
    assert got == [(c, "training-sampled") for c in ("C35", "C36", "C21", "C19", "C20")]
    back = results.load(syn.Fig4Result, results.save(fig4, tmp_path / "f.npz"))
    assert back.config == fig4.config and np.array_equal(back.runs.attention, fig4.runs.attention)
    assert np.array_equal(back.theorem3.chi_end, fig4.theorem3.chi_end)


def test_gd_prior_and_adam() -> None:
    gd = trn.run_gd(trn.GDConfig(steps=40))
    assert gd.theorem3.monotone_share.shape == (3, 1)
    assert [(v.claim, v.evidence) for v in trn.GD.verdicts(gd)] == [("C19", "training-population"),
                                                                      ("C20", "training-population")]
    prior = trn.run_prior(trn.PriorConfig(seeds=(1, 2, 3), steps=5))
    assert prior.prior.shape == prior.winner.shape == (6,)
    assert set(prior.frequent.tolist()) == {19, 29}  # the most frequent distinct token of each class
    assert [v.claim for v in trn.PRIOR.verdicts(prior)] == ["C22"]
    fig5 = adam.run_fig5(adam.Fig5Config(steps=6, seeds=(1,), lrs=(0.1, 1.0)))
    assert len(adam.picks(fig5.runs, 0.5)) == 2
    (v,) = adam.FIG5.verdicts(fig5)
    assert v.claim == "C37" and v.evidence == "training-sampled"


@pytest.mark.parametrize(
    ("make", "param"),
    [(lambda: scan.ScanningConfig(tau=1.0), "tau"), (lambda: scan.ScanningConfig(points=2), "points"),
     (lambda: syn.Fig4Config(ratios=(2.0, 1.0)), "ratios"), (lambda: syn.Fig4Config(momentum=1.0), "momentum"),
     (lambda: adam.Fig5Config(lrs=(0.1,)), "lrs"), (lambda: trn.GDConfig(chi_star=1.0), "chi_star"),
     (lambda: trn.PriorConfig(seeds=()), "seeds")],
)
def test_configs_reject_bad_values(make, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        make()
