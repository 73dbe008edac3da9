"""Figure 10's experiments (``ch8-rates``: C41; ``ch8-rates-deep``: X7): runs to convergence at smoke size, the
stored run's prefix and tamper check, and the verdict on results made to pass, fail, and leave too few converged
rates, each against the runs at step 0."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import names, needs_wikitext, wikitext_found, wikitext_skip_reason  # noqa: E402

from scansnap import claims, experiments, lm_converge, parallel, wikitext  # noqa: E402
from scansnap.experiments import ch08_rates as ch8r  # noqa: E402
from scansnap.experiments import wikitext_rates as wr  # noqa: E402
from scansnap.experiments import wikitext_steady as wst  # noqa: E402
from scansnap.experiments.wikitext_as_run import MISSING, TrainText  # noqa: E402
from scansnap.verdicts import Outcome  # noqa: E402

DATA = wikitext_found().folder  # wikitext.data_dir(), where the files are (or were downloaded now)
needs_data = needs_wikitext()
C, D, N = lm_converge.CONVERGED, lm_converge.DIVERGED, lm_converge.NOT_CONVERGED


@pytest.fixture
def _data(monkeypatch) -> None:
    monkeypatch.setenv(wikitext.ENV, str(DATA))


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(wikitext.ENV, str(DATA))
        if wikitext_skip_reason():
            pytest.skip(wikitext_skip_reason())
        return experiments.make(ch8r.RATES, profile="smoke", out=tmp_path_factory.mktemp("rates"))


@needs_data
def test_smoke_grid_shapes_same_start_and_table(made) -> None:
    r, c = made.result, made.config
    e = c.steps // c.every + 1
    assert r.heldout_loss.shape == r.entropy.shape == r.causal.shape == (len(c.lrs), len(c.seeds), e)
    assert r.train_loss.shape == (len(c.lrs), len(c.seeds), c.steps) and r.status.shape == r.stop.shape
    assert (np.ptp(r.entropy[:, :, 0], axis=0) == 0).all()  # every rate of a seed starts from the same model
    table = ch8r.RATES.figure("fig-paper-10").table(r)
    assert len(table["lr"]) == len(c.lrs) * len(c.seeds) and set(table["status"]) <= set(lm_converge.STATUS)
    np.testing.assert_array_equal(table["entropy"], r.final("entropy").reshape(-1))
    assert "rate 0.5" in ch8r.summary(r)


@needs_data
def test_seeds_in_separate_processes_give_the_same_runs(made, monkeypatch) -> None:
    monkeypatch.setenv(wikitext.ENV, str(DATA))
    monkeypatch.setenv(parallel.JOBS, "2")
    again = wr.run_rates(made.config)
    np.testing.assert_array_equal(again.train_loss, made.result.train_loss)
    np.testing.assert_array_equal(again.entropy, made.result.entropy)


@needs_data
def test_a_stored_grid_verifies_by_its_prefix_and_a_tampered_one_fails(made, tmp_path: Path, _data) -> None:
    from scansnap import store, store_verify

    store.store(ch8r.RATES, made.config, made.result, made.wall_time_s, profile="smoke", root=tmp_path,
                   allow_dirty=True)
    prefix = wr.rates_prefix(made.config, 3)
    assert (prefix.steps, prefix.every, prefix.seeds, prefix.lrs) == (3, 3, made.config.seeds[:1], made.config.lrs)
    assert store_verify.verify(ch8r.RATES, "smoke", steps=2, root=tmp_path, rtol=0, atol=0) == []
    folder = tmp_path / "stores" / "ch8-rates" / "smoke"
    with np.load(folder / "result.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    key = next(k for k in arrays if k.endswith("train_loss"))
    arrays[key] = arrays[key] * 1.001
    np.savez(folder / "result.npz", **arrays)
    with pytest.raises(store.TamperedStoreError, match="train_loss"):
        store_verify.verify(ch8r.RATES, "smoke", steps=2, root=tmp_path)


def _result(floor: np.ndarray, config: wr.RatesConfig | None = None, eta_t_only: bool = False,
            loss_end: np.ndarray | None = None) -> wr.RatesResult:
    """A grid whose runs stop at step 600, measured every 100 steps: the entropy falls from 3.0 nats as
    ``floor + (3 - floor) exp(-eta t / 300)`` towards its rate's ``floor`` ``(R, S)`` (``eta_t_only``: towards 1.0 for
    every rate, so that the entropy depends on eta * t only); the held-out loss falls to ``loss_end`` ``(R,)``."""
    c = config or wr.RatesConfig.preset("paper")
    shape, e = floor.shape, c.steps // c.every + 1
    t = np.arange(7) * c.every
    eta = np.asarray(c.lrs)[:, None, None]
    base = np.ones_like(floor)[..., None] if eta_t_only else floor[..., None]
    curve = np.full((*shape, e), np.nan)
    curve[..., :7] = base + (3 - base) * np.exp(-eta * t / 300)
    end = np.full(shape[0], 5.9) if loss_end is None else np.asarray(loss_end)
    loss = np.full((*shape, e), np.nan)
    loss[..., :7] = np.linspace(np.full(shape, 10.0), np.broadcast_to(end[:, None], shape), 7, axis=-1)
    status = np.zeros(shape, dtype=np.int64)
    return wr.RatesResult(c, "made up", loss, curve, curve / 3, np.full((*shape, c.steps), 6.0), status,
                          np.full(shape, 600))


def _grid(entropy_by_rate: list[float], seeds: int = 3) -> np.ndarray:
    noise = np.random.default_rng(0).normal(0, 0.01, (len(entropy_by_rate), seeds))
    return np.asarray(entropy_by_rate)[:, None] + noise


def test_c41_verified_when_ordered_at_matched_eta_t_and_the_eta_t_null_fails_there() -> None:
    (v,) = ch8r.rates_verdicts(_result(_grid([2.0, 1.7, 1.4, 1.1, 0.8])))
    assert (v.claim, v.evidence, v.level, v.control_level) == ("C41", "real-data", "verified", "not reproduced")
    assert v.numbers["in_order"] == 1 and v.numbers["in_order_matched"] == 1
    # the eta*t-only null: ordered at the stop (a larger rate travels further), not at matched eta*t
    assert v.control["in_order"] >= 0.7 and v.control["in_order_matched"] < 0.9
    assert any(cut.startswith("not trained to convergence") for cut in v.reduced)  # loss still falling at the stop


def test_c41_fails_when_the_entropy_depends_on_eta_t_only_and_labels_a_cut_run_both_ways() -> None:
    only = _result(_grid([1.5] * 5), eta_t_only=True)
    (v,) = ch8r.rates_verdicts(only)
    assert v.numbers["in_order"] == 1 and v.numbers["in_order_matched"] < 0.9 and v.level == "not reproduced"
    (cut,) = ch8r.rates_verdicts(only, TrainText(False))  # made without train.txt: labelled, not inconclusive
    assert cut.level == "not reproduced" and cut.reduced[0] == MISSING and "train.txt was missing" in cut.label()


def test_c41_leaves_the_degenerate_regime_out_and_is_inconclusive_with_too_few_rates() -> None:
    r = _result(_grid([2.0, 1.7, 1.4, 1.1, 3.0]), loss_end=[5.9, 5.85, 5.8, 5.9, 6.5])
    j = ch8r.rate_analysis(r)
    assert j.lrs == (1.25, 2.0, 3.2, 5.0) and j.degenerate == (8.0,) and j.order.in_order == 1
    assert ch8r.rates_verdicts(r)[0].level == "verified"
    assert "degenerate regime (reported, not judged): [8.0]" in ch8r.rates_verdicts(r)[0].details
    bad = _result(_grid([2.0, 1.7, 1.4, 1.1, 0.8]), loss_end=[5.9, 5.9, 7.0, 7.0, 7.0])
    (v,) = ch8r.rates_verdicts(bad)
    assert v.level == "inconclusive" and "only 2 of 5 rates outside the degenerate regime" in v.reason
    assert v.outcome is Outcome.TOO_FEW  # too few rates to read an ordering: not an effect too small to see
    # a smaller rate that is behind is slow, not degenerate: only rates above the best one can be
    stop = np.full((5, 1), 100)
    assert not wst.degenerate(np.array([[7.0], [6.5], [5.9], [5.9], [6.0]])[..., None], stop, 100).any()
    loss = np.array([[[9.0, 6.0]], [[9.0, 5.9]], [[9.0, 6.5]]])  # measured at steps 0 and 100
    assert wst.degenerate(loss, stop[:3], 100).tolist() == [False, False, True]


def test_the_steady_stop_ignores_noise_on_a_falling_loss_and_stops_on_a_plateau() -> None:
    rng = np.random.default_rng(0)
    steps = np.arange(21) * 100
    rule = wst.SteadyStop()
    falling = np.linspace(7.0, 5.0, 21) * (1 + rng.normal(0, 0.015, 21))  # 1.4% a measurement, noise 1.5%
    assert rule.stop(steps, falling) is None
    plateau = np.r_[np.linspace(7.0, 6.0, 6), np.full(15, 6.0)] * (1 + rng.normal(0, 0.015, 21))
    assert rule.stop(steps, plateau) is not None and rule.stop(steps, plateau) >= 600
    loss = np.full((1, 1, 21), np.nan)
    loss[0, 0, :9] = falling[:9]
    assert wst.steady_stops(loss, 100, rule).tolist() == [[-1]]


def test_x7_is_the_deep_experiments_claim() -> None:
    r = _result(_grid([2.0, 1.7, 1.4, 1.1, 0.8]), wr.DeepRatesConfig.preset("paper"))
    (v,) = ch8r.deep_verdicts(r)
    assert v.claim == "X7" and v.level == "verified" and "3-layer" in v.protocol
    assert claims.get("X7").kind == "experiment" and ch8r.RATES_DEEP.figures[0].claims == ("X7",)
    assert ch8r.RATES.figures[0].claims == ("C41",)


def test_paper_presets() -> None:
    p = wr.RatesConfig.preset("paper")
    assert (p.lrs, p.seeds, p.layers, p.dropout) == ((1.25, 2.0, 3.2, 5.0, 8.0), (1, 2, 3), 1, 0.2)
    assert p.rule() == lm_converge.Convergence(every=100, min_steps=600, cap=2000, tolerance=0.01)
    assert wr.DeepRatesConfig.preset("paper").layers == 3
    assert {cut.split()[0] for cut in wr.RatesConfig.preset("book").shortfall()} >= {"steps", "seeds:"}


@pytest.mark.parametrize("field, value", [("lrs", (2.0, 1.0)), ("seeds", ()), ("layers", 0), ("min_rates", 9),
                                          ("every", 0), ("tolerance", 2.0)])
def test_bad_rates_config_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=names(field)):
        wr.RatesConfig.preset("paper").replace(**{field: value})


def test_matched_eta_t_the_eta_t_null_the_noise_and_the_late_table_on_hand_built_curves() -> None:
    """Entropy 3 - eta t / 1000 (a function of eta t only), measured every 100 steps up to each run's stop."""
    lrs, every = np.array([1.0, 2.0, 4.0]), 100
    stop = np.array([[400], [300], [200]])
    ent = np.full((3, 1, 5), np.nan)
    for i, lr in enumerate(lrs):
        n = stop[i, 0] // every + 1
        ent[i, 0, :n] = 3 - lr * np.arange(n) * every / 1000
    eta_t, at = wst.matched(lrs, ent, stop, every)
    assert eta_t == 400 and at[:, 0] == pytest.approx([2.6, 2.6, 2.6])  # the same eta t: the same entropy
    at_stop, at_eta = wst.eta_t_null(lrs, ent, stop, every, eta_t)
    assert at_stop[:, 0] == pytest.approx([2.6, 2.4, 2.2]) and at_eta[:, 0] == pytest.approx([2.6] * 3)
    loss = np.array([[[10.0, 5.0, 5.5, 5.0, 5.5]]])
    assert wst.step_noise(loss, 100, start=100) == pytest.approx(np.std([0.1, -1 / 11, 0.1]))
    table = wst.late_change_table((1.0, 2.0, 4.0), ent, stop, every, span=200)
    assert "| 4 | 2.200 | -27% |" in table and table.count("\n") == 4
