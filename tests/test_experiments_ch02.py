"""Chapter 2's experiments (scansnap.experiments.ch02_*): deterministic, typed, sane numbers, verdicts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import names  # noqa: E402

from scansnap import experiments, manifest  # noqa: E402
from scansnap.experiments import ch02_assumptions as ch2a  # noqa: E402
from scansnap.experiments import ch02_long_sequences as ch2  # noqa: E402
from scansnap.theory import hoeffding_radius, rate_fits  # noqa: E402


@pytest.fixture(scope="module")
def conc(tmp_path_factory) -> tuple[experiments.Made, Path, Path]:
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    made = experiments.make(ch2.CONCENTRATION, profile="smoke", out=a)
    experiments.make("fig-ch2-concentration", profile="smoke", out=b)
    return made, a, b


@pytest.fixture(scope="module")
def assume(tmp_path_factory) -> experiments.Made:
    return experiments.make(ch2a.ASSUMPTIONS, profile="smoke", out=tmp_path_factory.mktemp("assume"))


def test_same_seed_same_bytes_and_reload(conc) -> None:
    made, a, b = conc
    csv = "figures/fig-ch2-concentration.csv"
    assert (a / csv).read_bytes() == (b / csv).read_bytes()
    back = experiments.load_result(ch2.CONCENTRATION, a)
    assert back.config == made.config and np.array_equal(back.err_mean, made.result.err_mean)


def test_layout_and_sample_counts(conc) -> None:
    r = conc[0].result
    c = r.config
    assert r.err_mean.shape == (len(c.T), len(c.sigmas), 2)  # Syn-Small: K = 2 classes
    assert (r.samples.sum(-1) == c.samples).all()  # every sequence counted once, in its class
    d = ch2.concentration_table(r)
    assert len({len(v) for v in d.values()}) == 1 and len(d["T"]) == r.err_mean.size


def test_errors_shrink_and_respect_the_bound(conc) -> None:
    r = conc[0].result
    assert (np.diff(r.err_mean, axis=0) < 0).all() and (np.diff(r.bound, axis=0) < 0).all()
    assert (r.err_mean <= r.err_q).all() and (r.err_q <= r.err_max).all()
    n, delta = r.samples, r.config.delta
    assert (r.violations <= n * delta + 3 * np.sqrt(n * delta * (1 - delta))).all()
    radius = np.array([hoeffding_radius(T, 21, delta) for T in r.config.T])  # 20 tokens + 1 event
    np.testing.assert_allclose(r.bound[:, 0, 0], radius, rtol=1e-12)  # Z = 0: the bound is the radius


def test_rms_constant_is_the_delta_method_one(conc) -> None:
    """~200 sequences per class at the largest T: 5 standard errors of an rms is ~25%."""
    r = conc[0].result
    assert (np.abs(r.rms_ratio_lo[-1] - 1) < 0.25).all() and (np.abs(r.rms_ratio_hi[-1] - 1) < 0.25).all()


def test_rate_fits_recover_a_power_law() -> None:
    T = np.array([16, 64, 256, 1024, 4096.0])
    err = np.stack([3 * T**-0.5, 2 * T**-0.25], axis=1)
    slope, se, slope_all = rate_fits(T, err, 64)
    np.testing.assert_allclose(slope, [-0.5, -0.25], atol=1e-12)
    np.testing.assert_allclose(slope_all, [-0.5, -0.25], atol=1e-12)
    assert (se < 1e-10).all()
    with pytest.raises(ValueError, match=names("fit_from")):
        rate_fits(T, err, 1024)


def test_random_logits_share_one_draw() -> None:
    Zs = ch2.random_logits(5, (0.0, 0.5, 2.0), 3)
    assert not Zs[0].any()
    np.testing.assert_allclose(4 * Zs[1].numpy(), Zs[2].numpy(), rtol=1e-15)


def test_assumptions_runs(assume) -> None:
    r, c = assume.result, assume.config
    assert r.sampled.shape == (len(ch2a.RUNS), len(c.seeds), c.steps + 1)
    assert r.population.shape == (len(ch2a.RUNS), c.steps + 1)
    start = 5.5 / 15.5  # uniform attention at Z = 0: distinct weights 0.1..1 against 10 common tokens
    np.testing.assert_allclose(r.sampled[:, :, 0], start, rtol=1e-12)
    np.testing.assert_allclose(r.population[:, 0], start, rtol=1e-12)
    assert (r.population[:, -1] > start).all()  # every optimizer moves the attention towards distinct tokens
    # Syn-Small's overlap at Z = 0 is 10/13.85; for K = 2, Lemma 17's bound e/(1-e) is the exact modification
    assert r.E_max[0] == pytest.approx(10 / 13.85, abs=1e-3)
    assert r.modification[0] == pytest.approx(r.lemma17[0], rel=1e-12)
    assert not np.isfinite(r.lemma17[r.E_norm >= 1]).any() and np.isfinite(r.modification).all()


def test_warm_up_schedule() -> None:
    c = ch2a.AssumptionsConfig(steps=3, momentum=0.5)
    assert c.schedule() == [1.0, 1.5, 1.75]


@pytest.mark.parametrize(("kwargs", "param"), [(dict(momentum=0.0), "momentum"), (dict(seeds=()), "seeds"),
                                               (dict(steps=1), "steps")])
def test_assumptions_config_rejects(kwargs: dict, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        ch2a.AssumptionsConfig(**kwargs)


def test_concentration_config_rejects() -> None:
    with pytest.raises(ValueError, match=names("fit_from")):
        ch2.ConcentrationConfig(top=8, fit_from=256)
    with pytest.raises(ValueError, match=names("delta")):
        ch2.ConcentrationConfig(delta=1.0)


def test_verdicts_name_their_claims_and_evidence(conc, assume) -> None:
    v4 = ch2.CONCENTRATION.verdicts(conc[0].result)
    v43 = ch2a.ASSUMPTIONS.verdicts(assume.result)
    assert [(v.claim, v.evidence) for v in v4] == [("C4", "simulation")]
    assert [(v.claim, v.evidence) for v in v43] == [("C43", "training-sampled")]
    assert {"slope_far", "violation_upper", "const_far"} <= set(v4[0].numbers)
    assert v4[0].numbers["slope_far"] >= v4[0].numbers["slope_error"]  # the far end of the interval
    assert {"finite_T_low", "overlap", "momentum_low", "init_gap"} <= set(v43[0].numbers)
    assert all(v.protocol and v.details and v.link.startswith(manifest.docname(2)) for v in v4 + v43)
    assert not v4[0].control_level


def test_c43_control_is_split_half_seeds_and_the_run_depends_on_the_authors_steps(assume) -> None:
    r = assume.result
    (v,) = ch2a.ASSUMPTIONS.verdicts(r)
    null = ch2a.assumption_gaps(r, null=True)
    # the two training gaps' null is measured (split-half seeds: finite, not 0), overlap and init the theory's setting
    assert np.isfinite([null.finite_T_low, null.momentum_low]).all() and null.finite_T_low != 0
    assert null.overlap == 0 and null.init_gap == 0 and v.control == {k: getattr(null, k) for k in v.control}
    assert v.control_level == "not reproduced"
    gaps = ch2a.assumption_gaps(r)
    assert gaps.finite_T_low <= gaps.finite_T_gap and gaps.momentum_low <= gaps.momentum_gap  # lower ends
    assert assume.config.shortfall() == ("steps 20 (paper profile: 100)", "seeds: 4 (paper profile: 10)")
    assert ch2a.AssumptionsConfig.preset("book").shortfall() == ("seeds: 5 (paper profile: 10)",)
    assert v.reduced == assume.config.shortfall()
    # C43 depends on the authors' 100 steps: the smoke run is undecided whichever way its numbers go
    assert v.level == "inconclusive" and "which the claim depends on" in v.reason
    with pytest.raises(ValueError, match=names("seeds")):  # two pairs of seeds at least
        ch2a.assumption_gaps(dataclasses.replace(r, sampled=r.sampled[:, :3]), null=True)

