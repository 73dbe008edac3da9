"""Chapter 4's experiments (ch4-identities, ch4-training, ch4-eqn10): smoke profile, deterministic, typed; their
verdicts name the right claims and evidence kinds, and the training rules' controls fail where the claim holds."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import names  # noqa: E402

from scansnap import experiments, results  # noqa: E402
from scansnap.experiments import ch04_eqn10 as eq  # noqa: E402
from scansnap.experiments import ch04_fates as ch4  # noqa: E402
from scansnap.experiments import ch04_identities as idn  # noqa: E402
from scansnap.experiments import fates_training as ft  # noqa: E402
from scansnap.theory.families import example_families  # noqa: E402


@pytest.fixture(scope="module")
def identities() -> idn.IdentitiesResult:
    return idn.run_identities(idn.IdentitiesConfig(families=12, symmetric=2))


@pytest.fixture(scope="module")
def training() -> ch4.TrainingResult:
    return ch4.run_training(ch4.TrainingConfig.preset("smoke"))


@pytest.fixture(scope="module")
def eqn10() -> eq.Eqn10Result:
    return eq.run_eqn10(eq.Eqn10Config(checkpoints=(1, 4), disjoint_steps=10, decomposition_step=3))


def test_identities_hold_to_round_off(identities: idn.IdentitiesResult) -> None:
    r = identities
    assert r.eqn10_error.shape == (12,) and r.eqn10_error.max() < 1e-12 and r.rate2a_error.max() < 1e-12
    assert r.rate2b_error.max() < 1e-12 and r.corollary2_error.max() < 1e-12
    assert r.corollary2_entries == 20 and r.disjoint_max_rate == 0.0
    assert (r.distinct_positive <= r.distinct_entries).all() and (r.common_negative <= r.common_entries).all()
    assert r.counterexample_rise > 0  # sympy proves the sign at Z = 0 in the chapter
    again = idn.run_identities(idn.IdentitiesConfig(families=12, symmetric=2))
    assert np.array_equal(again.eqn10_error, r.eqn10_error)
    assert np.array_equal(again.min_xi, r.min_xi, equal_nan=True)


def test_identities_verdicts_are_derivations(identities: idn.IdentitiesResult) -> None:
    verdicts = idn.IDENTITIES.verdicts(identities)
    assert [v.claim for v in verdicts] == ["C15", "C16", "C17", "C18"]
    assert all(v.evidence == "derivation" and v.protocol == identities.config.protocol() for v in verdicts)
    assert all(not v.control_level for v in verdicts)
    # 12 families is below the 100 that verify: the sample size keeps the three family-counted rules partly
    assert [v.level for v in verdicts] == ["partly verified"] * 3 + ["verified"]


def test_training_counts_and_logits(training: ch4.TrainingResult) -> None:
    c = training.config
    assert [fl.family for fl in training.logits] == list(c.shown)
    fams = example_families()
    for fl in training.logits:
        assert fl.population.shape == fl.sampled.shape == (c.theorem().steps + 1, len(fl.tokens))
        assert np.abs(fl.population[:2]).max() < 1e-14  # Z(0) = 0, and Y(0) = 0 leaves Z alone at the first step
        assert fl.common.tolist() == [t in fams[fl.family].common().tolist() for t in fl.tokens]
    assert training.distinct.shape == (len(c.counted), len(c.protocols), 2, 3)
    for i, name in enumerate(c.counted):  # every (step, class, distinct token) entry is counted once per run
        entries = int(fams[name].distinct_mask().sum())
        for j, p in enumerate(c.protocols):
            assert training.distinct[i, j, 0].sum() == p.steps * entries
            assert training.distinct[i, j, 1].sum() == len(c.seeds) * p.steps * entries
    one = next(fl for fl in training.logits if fl.family == "one common token")
    assert np.all(np.diff(one.population[1:, 0]) < 0)  # the single common token falls in the theorem's setting


def test_training_tables_and_verdicts(training: ch4.TrainingResult) -> None:
    t = ch4.fates_table(training)
    assert len({len(v) for v in t.values()}) == 1 and set(t["family"]) == set(training.config.shown)
    v = ch4.violations_table(training)
    assert len(v["family"]) == len(training.config.counted) * len(training.config.protocols) * 2
    verdicts = ch4.TRAINING.verdicts(training)
    assert [(x.claim, x.evidence) for x in verdicts] == [(c, "training-population") for c in ("C16", "C17", "C18")]
    # the signs hold in the theorem's setting; the kind-swapped control (the other kind of token) fails outright
    assert [(x.level, x.control_level) for x in verdicts] == [("verified", "not reproduced")] * 3
    assert verdicts[0].control == {"distinct_down_share": 1.0} and verdicts[2].control["asymmetric_rise_share"] == 0
    assert all(x.premise.startswith("Theorem 1's back-propagated gradient") for x in verdicts)
    assert ch4.shares(training, "common", "theorem", "population", wrong="down") == 1.0
    assert ch4.wrong_share(np.array([3, 1, 5]), "down") == 0.25 and np.isnan(ch4.wrong_share(np.zeros(3), "up"))


def test_eqn10_result_and_verdict(eqn10: eq.Eqn10Result) -> None:
    c = eqn10.config
    assert eqn10.cosine.shape == (4, 2) and np.all(np.abs(eqn10.cosine) <= 1 + 1e-12) and np.all(eqn10.scale > 0)
    # after one step Y lies in span F exactly: Eqn 10 with the measured coefficients is exact
    assert np.all(eqn10.rel_err_measured[:, 0] < 1e-10) and np.all(eqn10.g_off_span[:, 0] < 1e-10)
    assert eqn10.disjoint_max_abs_z < 1e-12
    d = eqn10.decomposition
    assert d.step == 3 and d.measured_self == pytest.approx(d.theorem_self, rel=0.2)
    # Assumption 2 as tested: the two weak-overlap families are judged, "one common token" and Syn-Small are not
    assert c.judged() == ("weak overlap", "weak overlap, asymmetric")
    assert eqn10.overlap_norm[:2].max() <= 0.1 < eqn10.overlap_norm[2:].min()
    assert eqn10.overlap_max[0] == pytest.approx(0.0321, abs=1e-4)  # E_nn' of "weak overlap"
    (v,) = eq.EQN10.verdicts(eqn10)
    assert v.claim == "C15" and v.evidence == "training-population" and v.premise.startswith("Theorem 1's decoder")
    # the control (the velocity's key columns permuted; an overlapping family for the no-motion criterion) is measured
    # (finite) and fails every required criterion: the rule tells Eqn 10's structure from a velocity without it
    assert all(np.isfinite(x) for x in v.control.values()) and v.control_level == "not reproduced"
    assert v.control["min_cosine"] < 0.9 and v.control["max_measured_error"] > 0.25
    assert v.control["disjoint_relative_z"] > 1e-7
    assert v.numbers["judged_families"] == 2 and v.numbers["magnitude_factor"] >= 1
    assert v.numbers["magnitude_factor"] == pytest.approx(max(np.abs(eqn10.scale[:2]).max(),
                                                              1 / np.abs(eqn10.scale[:2]).min()))
    m = eq.eqn10_measures(eqn10)  # over the judged families only
    assert m.min_cosine == eqn10.cosine[:2].min() and m.max_measured_error == eqn10.rel_err_measured[:2].max()
    assert v.numbers["disjoint_relative_z"] < 1e-10 and eqn10.max_abs_z[:2].max() > 1e-5
    assert "one common token (||E||_2 = 0.850" in v.details and "outside Assumption 2, not judged" in v.details
    assert "C9's beta" in v.details and "factor between the exact speed and Eqn 10's" in v.rule
    outside = eq.Eqn10Config(families=("one common token",), checkpoints=(1,), disjoint_steps=2, decomposition_step=1)
    assert outside.judged() == () and np.isnan(eq.eqn10_measures(eq.run_eqn10(outside)).min_cosine)


def test_eqn10_is_judged_at_the_papers_horizon_in_the_book() -> None:
    assert eq.Eqn10Config.preset("book") == eq.Eqn10Config.preset("paper") and eq.Eqn10Config().checkpoints[-1] == 2000
    assert eq.Eqn10Config.preset("smoke").cuts()[0].field == "checkpoints"


def test_assumption2_test() -> None:
    from scansnap.theory.overlaps import assumption2

    fams = example_families()
    weak = assumption2(fams["weak overlap"], 1.0, 0.1)
    assert weak.meets and weak.E_norm == pytest.approx(2 * weak.E_max) and weak.rate_ratio == 10
    assert not assumption2(fams["weak overlap"], 1.0, 1.0).meets  # eta_Y = eta_Z is not eta_Y >> eta_Z
    assert not assumption2(fams["Syn-Small"], 1.0, 0.1).meets and assumption2(fams["disjoint"], 1, 0.1).E_norm == 0
    with pytest.raises(ValueError, match="eta_Z"):
        assumption2(fams["disjoint"], 1.0, 0.0)


def test_results_are_saved_and_reloaded(tmp_path: Path, training: ch4.TrainingResult) -> None:
    path = results.save(training, tmp_path / "t.npz")
    back = results.load(ch4.TrainingResult, path)
    assert back.config == training.config and np.array_equal(back.distinct, training.distinct)
    assert back.logits[0].family == training.logits[0].family
    assert np.array_equal(back.logits[0].population, training.logits[0].population)


def test_eqn10_figure_is_remade_byte_for_byte(tmp_path: Path) -> None:
    config = eq.Eqn10Config(checkpoints=(1, 3), disjoint_steps=5, decomposition_step=2)
    for x in "ab":
        experiments.make(eq.EQN10, config, profile="smoke", out=tmp_path / x)
    a, b = ((tmp_path / x / "figures" / "fig-ch4-eqn10.csv").read_bytes() for x in "ab")
    assert a == b


@pytest.mark.parametrize(
    ("make", "param"),
    [(lambda: idn.IdentitiesConfig(families=0), "families"),
     (lambda: eq.Eqn10Config(checkpoints=(3, 1)), "checkpoints"),
     (lambda: eq.Eqn10Config(families=("nope",)), "families"),
     (lambda: ch4.TrainingConfig(seeds=()), "seeds"),
     (lambda: ch4.TrainingConfig(protocols=ft.default_protocols(5, 5)[1:]), "protocols"),
     (lambda: ft.Protocol("x", 1.0, 1.0, 1.0, 5), "x: momentum")],
)
def test_configs_reject_bad_values(make, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        make()
