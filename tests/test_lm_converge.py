"""The convergence rule of Figure 10's runs, the authors' entropy and the causal-support share, and training to
convergence (deterministic, a run's first steps independent of its cap)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import names

from scansnap import lm, lm_converge, lm_train, wikitext

RULE = lm_converge.Convergence(every=100, min_steps=600, cap=1000, tolerance=0.01)


def _steps(n: int) -> np.ndarray:
    return np.arange(n) * 100


def test_status_converged_when_the_last_fifth_improves_by_less_than_the_tolerance() -> None:
    loss = np.array([10.0, 7, 6.5, 6.2, 6.0, 5.99, 5.95])  # step 600: from step 480 -> grid 400 (6.0): 0.8 % < 1 %
    assert RULE.status(_steps(7), loss) == lm_converge.CONVERGED
    falling = np.array([10.0, 7, 6.5, 6.2, 6.0, 5.9, 5.8])  # 3.3 % over the last fifth: go on
    assert RULE.status(_steps(7), falling) is None


def test_status_waits_for_min_steps_and_stops_at_the_cap() -> None:
    flat = np.array([10.0, 7, 7, 7, 7, 7])  # flat from step 100, but step 500 < min_steps
    assert RULE.status(_steps(6), flat) is None
    steep = np.linspace(10, 3, 11)  # still falling fast at the cap (1000)
    assert RULE.status(_steps(11), steep) == lm_converge.NOT_CONVERGED


def test_status_diverged_above_the_start_or_not_finite_even_before_min_steps() -> None:
    assert RULE.status(_steps(3), np.array([10.0, 7.0, 10.5])) == lm_converge.DIVERGED
    assert RULE.status(_steps(2), np.array([10.0, math.nan])) == lm_converge.DIVERGED
    assert RULE.status(_steps(1), np.array([10.0])) is None  # step 0 is never an end


@pytest.mark.parametrize("field, value", [("every", 0), ("min_steps", 50), ("cap", 10), ("tolerance", 1.5)])
def test_bad_rule_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=names(field)):
        lm_converge.Convergence(**{"every": 100, "min_steps": 600, "cap": 2000, "tolerance": 0.01, field: value})


def _causal(t: int, one_hot: bool) -> torch.Tensor:
    rows = torch.tril(torch.ones(t, t, dtype=torch.float64))
    maps = torch.eye(t, dtype=torch.float64) if one_hot else rows / rows.sum(-1, keepdim=True)
    return maps.expand(3, t, t)


def test_entropies_on_uniform_and_one_hot_causal_rows() -> None:
    t = 35
    expected = float(np.mean(np.log(np.arange(1, t + 1))))  # row i uniform over i + 1 keys
    assert lm_converge.authors_entropy(_causal(t, False)) == pytest.approx(expected, rel=1e-6)  # the 1e-8 offset
    assert lm_converge.authors_entropy(_causal(t, True)) == pytest.approx(0.0, abs=1e-7)
    assert lm_converge.causal_entropy(_causal(t, False)) == pytest.approx(1.0, abs=1e-12)
    assert lm_converge.causal_entropy(_causal(t, True)) == pytest.approx(0.0, abs=1e-12)
    half = _causal(t, False).clone()  # row i >= 1: all weight on two keys -> ln 2 / ln(i + 1)
    half.zero_()
    half[:, 0, 0] = 1
    half[:, 1:, :2] = 0.5
    want = float(np.mean(np.log(2) / np.log(np.arange(2, t + 1))))
    assert lm_converge.causal_entropy(half) == pytest.approx(want, rel=1e-12)


def _corpus(vocab: int = 30, n: int = 4000) -> lm_train.Corpus:
    gen = np.random.default_rng(0)
    words = [f"w{i}" for i in gen.zipf(1.5, size=n) % vocab]
    v = wikitext.Vocabulary.build(words)
    ids = v.encode(words)
    held = ids[: 8 * 9].reshape(8, 9)
    return lm_train.Corpus(v, ids, wikitext.batchify(ids, 4), held, "valid", "test", "synthetic")


def _run(cap: int, seed: int = 0, lr: float = 1.0) -> lm_converge.Run:
    data = _corpus()
    torch.manual_seed(seed)
    model = lm.TransformerLM(len(data.vocab), 16, 16, 1, 0.1, max_len=8)
    rule = lm_converge.Convergence(every=5, min_steps=10, cap=cap, tolerance=0.01)
    return lm_converge.train_to_convergence(model, data, lr=lr, rule=rule, bptt=8, seed=seed)


def test_train_to_convergence_is_deterministic_and_its_first_steps_do_not_depend_on_the_cap() -> None:
    long, again, short = _run(40), _run(40), _run(10)
    np.testing.assert_array_equal(long.heldout_loss, again.heldout_loss)
    np.testing.assert_array_equal(long.train_loss, again.train_loss)
    assert long.steps[-1] == len(long.train_loss) and long.steps[0] == 0 and (np.diff(long.steps) == 5).all()
    n = len(short.steps)
    np.testing.assert_array_equal(short.heldout_loss, long.heldout_loss[:n])
    np.testing.assert_array_equal(short.entropy, long.entropy[:n])
    np.testing.assert_array_equal(short.train_loss, long.train_loss[: short.steps[-1]])
    assert short.steps[-1] == 10 and long.status in (lm_converge.CONVERGED, lm_converge.NOT_CONVERGED)
    assert long.heldout_loss[-1] < long.heldout_loss[0]  # it learned


def test_a_run_that_blows_up_is_flagged_diverged() -> None:
    run = _run(40, lr=1e4)
    assert run.status == lm_converge.DIVERGED
    assert not (run.heldout_loss[-1] <= run.heldout_loss[0])
