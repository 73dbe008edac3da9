"""Chapter 9's experiments: smoke runs, their tables, and which claims and evidence kinds their verdicts give."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from scansnap import data, experiments, train  # noqa: E402
from scansnap.experiments import ch09_beyond as ch9  # noqa: E402
from scansnap.experiments import ch09_decoupling as dec9  # noqa: E402
from scansnap.experiments import ch09_fates as fates9  # noqa: E402
from scansnap.experiments import ch09_heads as heads9  # noqa: E402
from scansnap.experiments import ch09_positions as pos9  # noqa: E402
from scansnap.experiments import heads_rules  # noqa: E402
from scansnap.model_options import ModelOptions, OptionsModel  # noqa: E402
from scansnap.theory import residual as res  # noqa: E402
from scansnap.verdicts import Outcome  # noqa: E402


def _claims(verdicts) -> list[tuple[str, str]]:
    return [(v.claim, v.evidence) for v in verdicts]


def test_gradients(tmp_path: Path) -> None:
    made = experiments.make(ch9.GRADIENTS, ch9.GradientConfig(instances=3), profile="smoke", out=tmp_path)
    assert made.result.errors.shape == (4, 3) and made.result.errors.max() < 1e-12
    verdicts = ch9.GRADIENTS.verdicts(made.result)
    assert _claims(verdicts) == [("X1", "derivation")]
    assert verdicts[0].numbers["instances"] == 3 and verdicts[0].level == "not reproduced"  # 3 < 10 instances
    assert verdicts[0].link.endswith("09-beyond.html#lemma-1-extended")


def test_overlaps(tmp_path: Path) -> None:
    made = experiments.make(ch9.OVERLAPS, profile="smoke", out=tmp_path)
    r = made.result
    assert r.formula_error.max() < 1e-12 and r.eqn10_error.max() < 1e-10
    assert (r.cross_residual < r.cross_plain).all()
    K = 6  # Syn-Medium with 3 queries
    assert r.E_plain.shape == r.E_residual.shape == (K, K) and np.allclose(np.diag(r.E_residual), 0)
    m = ch9.decoupling(r)
    assert 0 < m.lambda_min < 1 and m.cross_reduction < 1  # I + E is positive definite, near singular at small h
    verdicts = ch9.OVERLAPS.verdicts(r)
    assert _claims(verdicts) == [("C33a", "derivation")] and verdicts[0].level == "verified"
    assert (tmp_path / "figures" / "fig-ch9-overlaps.data.json").exists()


def test_cross_query_family_roles() -> None:
    classes = res.cross_query_family()
    glob, loc = res.token_roles(classes)
    disc = (glob != loc) & (loc != 0)
    assert int(disc.sum()) == 4 and (loc[disc] == res.DISTINCT).all() and (glob[disc] == res.COMMON).all()
    qa = int(classes.query[0])
    assert loc[qa, 2] == glob[qa, 2] == res.COMMON and loc[qa, 3] == 0  # c_A common in A, absent from B


def test_fate_measures_read_the_local_rule_per_run_with_an_interval() -> None:
    classes = res.cross_query_family()
    glob, loc = (x.numpy() for x in res.token_roles(classes))
    local = np.where(loc == res.DISTINCT, 1.0, np.where(loc == res.COMMON, -1.0, 0.0))[None]  # every entry local
    m = fates9.fate_measures(local, glob, loc)
    assert (m.disc_local, m.local_all, m.discriminating_entries, m.runs) == (1.0, 1.0, 4, 1)
    assert np.isnan(m.disc_local_lo)  # one run: no interval
    assert fates9.fate_measures(-local, glob, loc).disc_local == 0.0
    mixed = np.stack([local[0], -local[0], local[0]])  # one run of three against the rule
    m = fates9.fate_measures(mixed, glob, loc)
    assert m.disc_local == pytest.approx(2 / 3) and m.disc_local_lo < 0
    m = fates9.fate_measures(np.stack([local[0], local[0] * 1.1]), glob, loc)
    assert m.disc_local == m.disc_local_lo == 1.0


def test_flow_is_judged_on_the_first_family_that_meets_c33a_bar(tmp_path: Path) -> None:
    """The hand-built family breaks C33a's decoupling bar (context); the judged family is the first shared-token weight
    whose cross-query share at Z = 0 meets it."""
    made = experiments.make(fates9.FLOW, fates9.FlowConfig(steps=60), profile="smoke", out=tmp_path)
    r = made.result
    hand = fates9.flow_fates(r, "handbuilt")
    assert hand.shared == 1.0 and hand.cross_share_initial > fates9.C33A_BAR == 0.05
    assert hand.disc_local_initial == 1.0 and hand.disc_local_same_query == 1.0 and hand.disc_local_plain == 0.0
    first = int(np.nonzero(r.cross_share_grid <= fates9.C33A_BAR)[0][0])
    assert (r.cross_share_grid[:first] > fates9.C33A_BAR).all() and r.judged.shared == made.config.shared[first]
    m = fates9.flow_fates(r)
    assert m.shared == r.judged.shared < 1 and 0 < m.cross_share_initial <= fates9.C33A_BAR
    [v] = fates9.FLOW.verdicts(r)
    assert (v.claim, v.evidence, v.reason) == ("C33b", "simulation", "")
    assert v.level == fates9.RULE_C33B_FLOW.level(m)


def test_a_flow_outside_c33a_premise_is_inconclusive(tmp_path: Path) -> None:
    """Where no weight tried meets the bar, the flow is judged on the last one and reads inconclusive (premise not
    met), whatever its criteria give."""
    made = experiments.make(fates9.FLOW, fates9.FlowConfig(steps=20, shared=(1.0,)), profile="smoke", out=tmp_path)
    m = fates9.flow_fates(made.result)
    assert m.cross_share_initial > fates9.C33A_BAR and fates9.premise_unmet(m).startswith("C33a's decoupling")
    [v] = fates9.FLOW.verdicts(made.result)
    assert (v.level, v.outcome) == ("inconclusive", Outcome.PREMISE_NOT_MET)
    assert v.reason.startswith("premise not met: C33a's decoupling")
    assert fates9.premise_unmet(dataclasses.replace(m, cross_share_initial=0.01)) == ""


def test_fates(tmp_path: Path) -> None:
    made = experiments.make(fates9.FATES, profile="smoke", out=tmp_path)
    r, c = made.result, made.config
    assert r.population.shape == (2, len(c.etas) * len(c.seeds), r.global_roles.shape[0], r.global_roles.shape[0])
    assert np.abs(r.population[1, 0] - r.population[1, 1]).max() > 0  # runs in the limit differ by Z(0)
    assert r.sampled.shape[:2] == (2, len(c.seeds))
    verdicts = fates9.FATES.verdicts(r)
    assert _claims(verdicts) == [("C33b", "training-population"), ("C33b", "training-sampled")]
    for v in verdicts:  # judged against the arm without the residual, where the shared tokens fall
        assert v.control and v.control_level == "not reproduced" and v.premise
        assert v.numbers["disc_local"] > v.control["disc_local"]
    table = fates9.fates_table(r)
    assert len({len(v) for v in table.values()}) == 1 and table["token"][:3].tolist() == [0, 1, 2]


def test_positions(tmp_path: Path) -> None:
    made = experiments.make(pos9.POSITIONS, profile="smoke", out=tmp_path)
    r, c = made.result, made.config
    K = 2 * len(c.margins)
    assert r.bias.shape == (2, len(c.seeds), c.T - 1) and r.share.shape == r.near_win.shape == (4, len(c.seeds), K)
    assert r.prior_error < 1e-12 and r.bag_gradient < 1e-12
    assert ((r.share >= 0) & (r.share <= 1)).all()
    assert np.abs(r.share[2] - r.share[3]).max() < np.abs(r.share[0] - r.share[1]).max() + 1e-12
    run, control = pos9.bias_effect(r), pos9.bias_effect(r, shuffled=True)
    assert run.bias_gap_lo <= run.bias_gap and control.bias_gap_lo <= control.bias_gap
    assert abs(control.near_shift) < abs(run.near_shift)  # shuffled: the bias moves nothing
    verdicts = pos9.POSITIONS.verdicts(r)
    assert _claims(verdicts) == [("X2", "derivation"), ("X3", "training-sampled")]
    assert verdicts[1].control == dataclasses.asdict(control)
    assert verdicts[1].level == "inconclusive" and "steps" in verdicts[1].reason  # the smoke run cuts the steps


def test_heads_in_the_limit_keep_the_order_of_the_draw(tmp_path: Path) -> None:
    made = experiments.make(heads9.HEADS, profile="smoke", out=tmp_path)
    r, c = made.result, made.config
    assert c.limit == "population" and heads9.HEADS.verdicts(r) == []  # context, not judged
    assert r.jaccard.shape == r.jaccard0.shape == r.order_kept.shape == (2, len(c.scales), len(c.seeds))
    assert np.allclose(r.jaccard[1], 1.0) and np.allclose(r.jaccard0[1], 1.0), "tied heads pick the same tokens"
    # the flow keeps the order of P e^{z(0)}: the step-0 top token (C22's prediction) gains the most, every time
    assert (r.order_kept == 1.0).all() and (r.gains_most == 1.0).all() and (r.agreement == 1.0).all()
    with pytest.raises(ValueError, match="^config"):
        heads9.head_verdicts(r)


def test_heads_sampled(tmp_path: Path) -> None:
    made = experiments.make(heads9.HEADS_SAMPLED, profile="smoke", out=tmp_path)
    r, c = made.result, made.config
    assert c.limit == "sampled" and len(heads9.SampledHeadsConfig.preset("book").seeds) >= 10
    assert r.jaccard.shape == r.jaccard0.shape == (2, len(c.scales), len(c.seeds))
    assert np.allclose(r.jaccard[1], 1.0), "tied heads pick the same tokens"
    assert (r.coverage >= 1).all() and ((r.agreement >= 0) & (r.agreement <= 1)).all()
    assert (r.agreement0 == 1.0).all()  # on top at step 0 by construction
    assert (r.differ <= c.heads * 2 * c.num_query).all() and (r.gains_most_differ <= r.differ).all()
    verdicts = heads9.HEADS_SAMPLED.verdicts(r)
    assert _claims(verdicts) == [(x, "training-sampled") for x in ("X4", "X5", "X6", "X9")]
    x4, x5, x6, x9 = verdicts
    # X4, X6 against the tied arm: one head, so its picks coincide and its coverage ratio to itself is 1
    # the control: the same independent heads at the smallest scale (measured, not 1 by construction)
    assert x4.control["jaccard_largest"] == pytest.approx(r.jaccard[0, 0].mean())
    assert x6.control["coverage_ratio"] == pytest.approx((r.coverage[0, 0] / r.coverage[1, 0]).mean())
    assert x4.control_level == x6.control_level == "not reproduced"
    # X5 against the prediction from another head's draw: measured, not on top by construction
    assert 0 <= x5.control["agreement"] < 1 and x5.control["agreement"] < x5.numbers["agreement"]
    # X9 against two untrained draws: a finite gain that is not 0 by construction
    assert all(np.isfinite(v) for v in x9.control.values()) and x9.control["spread_gain"] != 0
    assert r.jaccard_fresh.shape == r.jaccard0.shape and not np.array_equal(r.jaccard_fresh[0], r.jaccard0[0])
    for v in verdicts:  # the smoke run cuts the steps, which every heads rule depends on
        assert v.level == "inconclusive" and "steps" in v.reason
    m = heads9.head_measures(r)[3]
    assert m.spread_gain_lo <= m.spread_gain


def test_heads_controls_on_a_hand_built_result() -> None:
    """Heads whose picks after training are those of step 0 gain nothing (X9 fails); a prediction from another head
    that never wins gives a failing X5 control."""
    c = heads9.SampledHeadsConfig.preset("smoke")
    N, S = len(c.scales), len(c.seeds)
    jac = np.stack([np.linspace(0.9, 0.2, N)[:, None].repeat(S, 1), np.ones((N, S))])
    cov = np.stack([np.linspace(2.0, 4.0, N)[:, None].repeat(S, 1), np.full((N, S), 2.0)])  # diversity from the draws
    ones, zeros = np.ones((2, N, S)), np.zeros((2, N, S))
    r = heads9.HeadsResult(c, jac, cov, ones, ones, 2 * ones, 2 * ones, zeros, jac, cov, ones, ones,
                           zeros, zeros, zeros, 2 * ones, jac * (1 + 0.01 * np.arange(S)), cov)
    x4, x5, x6, x9 = heads9.head_measures(r)
    assert heads_rules.RULE_X4.level(x4) == heads_rules.RULE_X6.level(x6) == "verified"
    assert x9.spread_gain == x9.ratio_gain == 0 and heads_rules.RULE_X9.level(x9) == "not reproduced"
    c4, c5, c6, c9 = heads9.head_controls(r)
    assert heads_rules.RULE_X4.level(c4) == heads_rules.RULE_X6.level(c6) == "not reproduced"
    assert c5.agreement == c5.gains_most == 0 and heads_rules.RULE_X5.level(c5) == "not reproduced"
    assert heads_rules.RULE_X5.level(x5) == "verified"
    assert c9.spread_gain != 0 and np.isfinite(c9.spread_gain_lo)


@pytest.mark.parametrize("limit", ["population", "sampled"])
@pytest.mark.parametrize("residual", [False, True])
def test_train_by_query_is_the_trainer_with_its_decoder_split(limit: str, residual: bool) -> None:
    c = dec9.DecouplingConfig(steps=6, seeds=(3, 5), batch=8, T=12)
    classes, options = data.syn_medium(3), ModelOptions(residual=residual, z_std=c.z_std)
    tr = dec9.train_by_query(classes, options, c, limit)
    h = train.train(classes, c.eta_Y, c.eta_Z, steps=c.steps, momentum=c.momentum, limit=limit, batch=c.batch,
                    T=c.T, seed=list(c.seeds), options=options, snapshot_steps=[0])
    assert torch.equal(tr.Y, h.Y) and torch.equal(tr.Z, h.Z)  # the same trajectory, bit for bit
    assert torch.allclose(tr.parts.sum(1), tr.Y, atol=1e-13) and torch.allclose(tr.parts1.sum(1), tr.Y1, atol=1e-13)
    same, cross = dec9.velocity_by_query(classes, tr.Y, tr.Z, tr.parts, residual)
    C = len(c.seeds)
    model = OptionsModel.from_params(tr.Y, tr.Z, options)
    gZ = model.loss_and_gradients(classes.query.expand(C, -1), classes.probs.expand(C, -1, -1),
                                  classes.next.expand(C, -1))[2]
    assert torch.allclose(same + cross, -gZ[:, torch.unique(classes.query)], atol=1e-15, rtol=1e-10)
    shares = dec9.cross_shares(classes, tr.Y, tr.Z, tr.parts, residual)
    assert shares.shape == (C, 3) and ((shares >= 0) & (shares <= 1)).all()


def test_decoupling(tmp_path: Path) -> None:
    made = experiments.make(dec9.DECOUPLING, profile="smoke", out=tmp_path)
    r, c = made.result, made.config
    assert r.share.shape == r.share_first.shape == (2, 2, len(c.seeds), c.num_query)
    m, plain = dec9.trained_decoupling(r, "population"), dec9.trained_decoupling(r, "population", residual=False)
    assert m.cross_share < plain.cross_share and plain.reduction_hi == pytest.approx(1.0)
    assert m.runs == len(c.seeds) and m.entries == len(c.seeds) * c.num_query and 0 < m.lambda_min < 1
    verdicts = dec9.DECOUPLING.verdicts(r)
    assert _claims(verdicts) == [("C33a", "training-population"), ("C33a", "training-sampled")]
    for v in verdicts:  # judged against the arm without the residual
        assert v.control and v.premise and v.control_level == "not reproduced"
    assert (tmp_path / "figures" / "fig-ch9-decoupling.csv").exists()


@pytest.mark.parametrize(
    ("cls", "kwargs", "param"),
    [(ch9.GradientConfig, dict(instances=0), "instances"), (ch9.OverlapConfig, dict(num_queries=(1,)), "num_queries"),
     (fates9.FatesConfig, dict(seeds=()), "seeds"), (fates9.FatesConfig, dict(momentum=1.0), "momentum"),
     (pos9.PositionsConfig, dict(near=1.0), "near"), (pos9.PositionsConfig, dict(margins=()), "margins"),
     (heads9.HeadsConfig, dict(scales=(1.0, 0.1, 0.3)), "scales"), (heads9.HeadsConfig, dict(heads=1), "heads"),
     (heads9.SampledHeadsConfig, dict(limit="finite"), "limit"), (dec9.DecouplingConfig, dict(z_std=0.0), "z_std"),
     (dec9.DecouplingConfig, dict(num_query=1), "num_query"), (fates9.FatesConfig, dict(z_std=0.0), "z_std")],
)
def test_configs_reject(cls, kwargs: dict, param: str) -> None:
    with pytest.raises(ValueError, match=rf"^{param}\b"):
        cls(**kwargs)


def test_margin_family_margins() -> None:
    from scansnap.positions import margin_family

    pc = margin_family((0.6, 0.9))
    for n in range(pc.K):
        d = pc.distinct(n)
        near = d[pc.near_probs[n, d] > 0]
        far = d[pc.far_probs[n, d] > 0]
        ratio = pc.probs[n, near].max() / pc.probs[n, far].max()
        assert float(ratio) == pytest.approx((0.6, 0.9)[n // 2])
    assert torch.allclose(pc.probs.sum(1), torch.ones(pc.K, dtype=torch.float64))
