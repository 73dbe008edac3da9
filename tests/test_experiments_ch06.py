"""Chapter 6's experiments (Theorem 4): smoke results, figures' data, and the claims and evidence of the verdicts."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from scansnap import experiments  # noqa: E402
from scansnap.experiments import ch06_figures as ch6f  # noqa: E402
from scansnap.experiments import ch06_phase_transition as ch6  # noqa: E402
from scansnap.experiments import ch06_trained as ch6t  # noqa: E402
from scansnap.experiments import phase_rules  # noqa: E402


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> ch6t.TrainedResult:
    return experiments.make(ch6t.TRAINED, profile="smoke", out=tmp_path_factory.mktemp("trained")).result


def test_eqn14_check_and_its_verdict() -> None:
    r = ch6.EQN14.run(ch6.Eqn14Config.preset("smoke"), None)
    assert ch6.eqn14_error(r) < 1e-8
    (v,) = ch6.EQN14.verdicts(r)
    assert (v.claim, v.evidence) == ("C24", "derivation") and v.numbers["decades"] == pytest.approx(9.0)


def test_validity_ratios_and_verdict() -> None:
    cfg = ch6.ValidityConfig.preset("smoke")
    r = ch6.VALIDITY.run(cfg, None)
    assert r.ratio_matched.shape == (len(cfg.S0), cfg.points - 1) and r.rate_error < 1e-8
    assert np.abs(np.log(r.ratio_matched[0])).max() < 0.1  # S0 = 0.03: Eqn 14 follows the exact system
    (v,) = ch6.VALIDITY.verdicts(r)
    assert (v.claim, v.evidence) == ("C32", "simulation")


def test_figures_3_and_9_are_remade_deterministically(tmp_path: Path) -> None:
    for fig_id in ("fig-paper-3", "fig-paper-9"):
        a = experiments.make(fig_id, profile="smoke", out=tmp_path / "a")
        experiments.make(fig_id, profile="smoke", out=tmp_path / "b")
        csv = [(tmp_path / x / "figures" / f"{fig_id}.csv").read_bytes() for x in "ab"]
        assert csv[0] == csv[1]
        assert a.records[fig_id].caption.startswith(f"Figure {fig_id[-1]} of the paper")
    r3 = experiments.load_result("fig-paper-3", tmp_path / "a")
    np.testing.assert_allclose(r3.B_single * (r3.b / r3.a), r3.B, rtol=1e-12)  # b only scales B_n
    assert [v.claim for v in ch6f.FIG3.verdicts(r3)] == ["C25", "C26", "C27", "C29"]
    r9 = experiments.load_result("fig-paper-9", tmp_path / "a")
    assert [(v.claim, v.evidence) for v in ch6f.FIG9.verdicts(r9)] == [
        ("C28", "derivation"), ("C30", "derivation"), ("C31", "derivation")]


def test_trained_result_shapes_and_invariants(trained: ch6t.TrainedResult) -> None:
    c = trained.config
    C = c.n**2
    pop = trained.population
    assert pop.B.shape == (len(pop.t), C) and pop.freeze.shape == (len(pop.t) - 1, C)
    assert pop.t[0] == 0 and (pop.B[0] == 0).all() and (pop.log_chi[0] == 0).all()
    assert (pop.z_common[-1] < 0).all() and (pop.B[-1] > 0).all()  # Theorem 2: c falls, the distinct token rises
    assert trained.sampled.B.shape[1] == C * len(c.seeds)
    table = ch6t.trained_table(trained)
    assert len({len(v) for v in table.values()}) == 1
    summary = ch6t.trained_summary(trained)
    assert all(len(v) == C for v in summary.values())


def test_trained_verdicts_name_their_claims_and_evidence(trained: ch6t.TrainedResult) -> None:
    got = {(v.claim, v.evidence) for v in ch6t.TRAINED.verdicts(trained)}
    want = {("C24", ev) for ev in ("simulation", "training-population", "training-sampled")}
    want |= {(cl, "simulation") for cl in ("C25", "C26", "C27", "C28", "C29", "C30", "C31")}
    want |= {(cl, "training-population") for cl in ("C25", "C26", "C27", "C28", "C29", "C30", "C31", "C32", "C34")}
    want |= {(cl, "training-sampled") for cl in ("C26", "C34")}
    assert got == want


def test_every_rule_used_is_listed() -> None:
    listed = {(r.claim, r.evidence) for m in (ch6, ch6f, ch6t) for r in m.RULES}
    assert ("C24", "derivation") in listed and ("C34", "training-population") in listed
    assert len(listed) == sum(len(m.RULES) for m in (ch6, ch6f, ch6t))  # no rule listed twice


def test_phase_numbers_on_a_grid() -> None:
    from scansnap import theory

    t = np.geomspace(0.1, 1e5, 400)
    cfg = ch6f.Fig9Config(n=2, points=50)
    eY, eZ = cfg.grid()
    B = np.stack([theory.eqn14_at(t, 46, 4, y, z, 0.03, 0.0075) for y, z in zip(eY, eZ, strict=True)], 1)
    m = theory.measure_growth(t, 2 * B, B, eY, eZ, 46, 4, a_over_b=4.0)
    nums = phase_rules.phase_numbers(m, 2, 2, 0.25)
    assert set(nums) == {"C25", "C26", "C27", "C28", "C29", "C30", "C31", "C34"}
    assert nums["C28"]["share"] == 1.0 and nums["C30"]["share"] == 1.0 and nums["C29"]["share"] == 1.0
    with pytest.raises(ValueError, match="^claim"):
        phase_rules.phase_rule("C99", "derivation")


def test_configs_reject_bad_values() -> None:
    with pytest.raises(ValueError, match="^S0"):
        ch6.Eqn14Config(S0=1.5)
    with pytest.raises(ValueError, match="^eta_Y"):
        ch6f.Fig3Config(eta_Y=(2.0, 1.0))
    with pytest.raises(ValueError, match="^steps"):
        ch6t.TrainedConfig(steps=10)
