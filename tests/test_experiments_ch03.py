"""Chapter 3's experiments (scansnap.experiments.ch03_*): smoke profile, deterministic, sane values, verdicts."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import names  # noqa: E402

from scansnap import experiments, manifest  # noqa: E402
from scansnap.experiments import ch03_decoder as ch3  # noqa: E402
from scansnap.experiments import ch03_gamma as ch3g  # noqa: E402
from scansnap.experiments import ch03_remark1 as ch3r  # noqa: E402
from scansnap.experiments import ch03_sgd1 as ch3s  # noqa: E402
from scansnap.experiments import ch03_theorem1 as ch3t  # noqa: E402
from scansnap.theory import decoder as dec  # noqa: E402

EXPECTED = {  # experiment -> (claim, evidence) of its verdicts, in order
    "ch3-fig8": [("C8", "derivation")],
    "ch3-families": [("C6", "derivation"), ("C10", "derivation")],
    "ch3-lemma10": [("C14", "simulation")],
    "ch3-theorem1": [("C5", "simulation"), ("C7", "derivation"), ("C9", "derivation"), ("C9", "simulation"),
                     ("C10", "simulation"), ("C13", "derivation"), ("C13", "simulation")],
    "ch3-sgd1": [("C9", "training-population"), ("C10", "training-population"), ("C11", "training-population")],
    "ch3-gamma": [("C11", "derivation"), ("C11", "simulation")],
    "ch3-correlated": [("C12", "derivation"), ("C12", "simulation")],
}


_MADE: dict[str, experiments.Made] = {}


def made(exp_id: str, tmp_path_factory) -> experiments.Made:
    """``exp_id`` made twice in the smoke profile (once per test session): its figures' data are the same bytes,
    and the saved result reloads; the first is returned."""
    if exp_id not in _MADE:
        tmp = tmp_path_factory.mktemp(exp_id)
        a = experiments.make(exp_id, profile="smoke", out=tmp / "a")
        experiments.make(exp_id, profile="smoke", out=tmp / "b")
        for fig_id in a.figures:
            assert (tmp / f"a/figures/{fig_id}.csv").read_bytes() == (tmp / f"b/figures/{fig_id}.csv").read_bytes()
        assert experiments.load_result(exp_id, tmp / "a").config == a.config
        _MADE[exp_id] = a
    return _MADE[exp_id]


@pytest.mark.parametrize("exp_id", sorted(EXPECTED))
def test_verdicts_and_tables(exp_id: str, tmp_path_factory) -> None:
    m = made(exp_id, tmp_path_factory)
    verdicts = m.experiment.verdicts(m.result)
    assert [(v.claim, v.evidence) for v in verdicts] == EXPECTED[exp_id]
    assert all(v.protocol and v.link.startswith(manifest.docname(3)) for v in verdicts)
    for spec in m.experiment.figures:
        columns = spec.table(m.result)
        assert len({len(v) for v in columns.values()}) == 1
        assert all(np.isfinite(np.asarray(v, dtype=float)).all() for v in columns.values())


def test_fig8_gap_within_lemma7(tmp_path_factory) -> None:
    r = made("ch3-fig8", tmp_path_factory).result
    for i, (M, eta) in enumerate(r.config.pairs):
        assert r.gap_min[i, -1] >= -1e-12 and r.gap_max[i, -1] <= eta / M  # h(s) <= h_s <= h(s) + eta/M
        assert r.h_discrete[i, 0] == 0 and (np.diff(r.h_continuous[i]) > 0).all()


def test_theorem1_exact_for_the_modified_dynamics(tmp_path_factory) -> None:
    r = made("ch3-theorem1", tmp_path_factory).result
    assert r.row_error < 1e-9 and r.residual_modified < 1e-10 and r.gamma_error_modified < 1e-10
    assert r.model_vs_numpy < 1e-10 and (r.outside < 1e-10).all()
    assert 1.7 < r.euler_errors[0] / r.euler_errors[1] < 2.3  # SGD is Euler's method: first order
    assert r.residual.max() < 2 * r.E_norm  # the true dynamics leave the direction by O(||E||)


def test_sgd1_visits_and_early_gamma(tmp_path_factory) -> None:
    r = made("ch3-sgd1", tmp_path_factory).result
    c = r.config
    assert r.gamma.shape == (len(c.seeds), len(r.t)) and r.xi.shape == (len(c.seeds), len(r.t), c.K)
    assert r.t[0] == 1 and (r.visits_min[:, -1] > 0).all()
    np.testing.assert_allclose(r.gamma[:, 0], c.eta / c.K, rtol=0.05)  # early: gamma = eta t / K


def test_gamma_fits_and_formula(tmp_path_factory) -> None:
    r = made("ch3-gamma", tmp_path_factory).result
    slopes, fits = ch3g.regime_fits(r)
    assert np.isfinite(slopes).any() and np.isfinite(fits).any()
    assert abs(r.early_ratio - 1) < 1e-3 and abs(r.late_ratio - 1) < 1e-3
    assert (r.late_without_M > r.late_with_M).all()  # without M in the log the late form undershoots
    early = r.t[None, :] <= 0.1 * r.t0[:, None]
    np.testing.assert_allclose(r.gamma_theory[early], r.gamma_early[early], rtol=0.05)


def test_correlated_overlap_zero_is_exact(tmp_path_factory) -> None:
    r = made("ch3-correlated", tmp_path_factory).result
    assert r.g_error[0].max() < 1e-10 and r.g_error[-1].max() > 0.1
    assert (r.exact_error < 1e-10).all() and ((r.miss > 0) & (r.miss < 1)).all()
    for i, rho in enumerate(r.config.rhos[1:]):
        assert r.formula[i] == pytest.approx(dec.remark1_effective_rate(r.config.K, r.config.M, 1.0, rho))


def test_families(tmp_path_factory) -> None:
    r = made("ch3-families", tmp_path_factory).result
    assert r.identity_error < 1e-10 and r.bound_ratio <= 1 + 1e-12 and r.rowsum_half_failing == 0
    assert r.star_norm < 1 and r.star_xi < 0  # the star family: ||E||_2 < 1, xi < 0


def test_sgd1_rules_are_judged_on_the_held_decoder(tmp_path_factory) -> None:
    """The control (the decoder held after its first update) misses C9's and C11's thresholds: gamma stops
    growing, so its ratio to Theorem 1's gamma(t) and its early slope are far off."""
    r = made("ch3-sgd1", tmp_path_factory).result
    verdicts = ch3s.SGD1.verdicts(r)
    assert all(v.control and v.premise and v.control_level for v in verdicts)
    fit, _, fits = ch3s.sgd1_measures(r, held=True)
    assert fit.gamma_error > 0.5 and fits.early_slope == 0.0 and fits.early_far >= 1.0
    assert [v.control_level for v in verdicts] == ["not reproduced"] * 3


def test_c11_formula_rules_out_the_late_form_without_M(tmp_path_factory) -> None:
    r = made("ch3-gamma", tmp_path_factory).result
    (formula, _) = ch3g.GAMMA.verdicts(r)
    assert formula.numbers["peak_offset"] < 0.5  # the peak sits within half a decade of t_0
    wrong = ch3g.GammaFormula(1e-4, abs(formula.numbers["late_without_M"] - 1), 0.1, 1.0)
    assert ch3g.RULE_C11_FORMULA.level(wrong) == "not reproduced"


def test_c10_derivation_reads_the_share_at_its_lower_end(tmp_path_factory) -> None:
    r = made("ch3-families", tmp_path_factory).result
    (_, c10) = ch3.FAMILIES.verdicts(r)
    assert c10.numbers["random_share_low"] < c10.numbers["random_share"] == 1.0
    assert c10.numbers["rowsum_half"] == r.rowsum_half > 0


def test_lemma10(tmp_path_factory) -> None:
    r = made("ch3-lemma10", tmp_path_factory).result
    assert r.radius == pytest.approx(dec.hoeffding_count_radius(1000, 10, 0.05)) and 0 <= r.beyond <= 1


@pytest.mark.parametrize(
    ("make", "param"),
    [(lambda: ch3.Fig8Config(pairs=((10, 5.0),)), "pairs"), (lambda: ch3s.Lemma10Config(delta=0.0), "delta"),
     (lambda: ch3t.Theorem1Config(K=1), "K"), (lambda: ch3s.SGD1Config(seeds=()), "seeds"),
     (lambda: ch3g.GammaConfig(early_to=2.0), "early_to"),
     (lambda: ch3r.CorrelatedConfig(rhos=(0.5,)), "rhos")],
)
def test_configs_reject_bad_values(make, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        make()
