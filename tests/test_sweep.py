"""scansnap.sweep: the batched learning-rate grid (one train() call per dataset) and its evaluation sequences."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import names

from scansnap import data, metrics, sweep, train

SMALL = sweep.GridConfig(num_query=(1,), eta_Z=(0.5, 2.0), ratio=(1.0, 5.0), seeds=(1, 2), steps=5, batch=16)


def test_configurations_are_flattened_eta_Z_ratio_seed() -> None:
    cfg = sweep.configurations(SMALL)
    assert cfg["eta_Z"].tolist() == [0.5] * 4 + [2.0] * 4
    assert cfg["eta_Y"].tolist() == [0.5, 0.5, 2.5, 2.5, 2.0, 2.0, 10.0, 10.0]
    assert cfg["seed"].tolist() == [1, 2] * 4 and SMALL.shape == (2, 2, 2)


@pytest.mark.parametrize(("field", "value"), [("eta_Z", ()), ("ratio", (2.0, 1.0)), ("seeds", (1, 1)),
                                              ("eta_Z", (-1.0, 1.0)), ("steps", 0), ("momentum", 1.0),
                                              ("init", "normal"), ("dtype", "float16"), ("num_query", (0,))])
def test_grid_config_rejects_bad_values_by_name(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=names(field)):
        SMALL.replace(**{field: value})


def test_train_grid_is_one_batched_call_and_matches_a_lone_run(monkeypatch) -> None:
    calls = []
    real = train.train
    monkeypatch.setattr(train, "train", lambda *a, **k: calls.append(len(k["seed"])) or real(*a, **k))
    run, f = sweep.train_grid(1, SMALL)
    assert calls == [8]
    assert run.entropy.shape == run.loss.shape == run.entropy_init.shape == SMALL.shape
    classes = data.syn_medium(1)
    assert f.shape == (*SMALL.shape, classes.K, classes.M) and f.dtype == torch.float64
    np.testing.assert_allclose(metrics.attention_entropy(f, classes).numpy(), run.entropy, atol=1e-12)
    lone, _ = sweep.train_grid(1, SMALL.replace(eta_Z=(2.0,), ratio=(1.0,), seeds=(2,)))
    assert abs(lone.entropy[0, 0, 0] - run.entropy[1, 0, 1]) < 1e-4  # same seed: same init and batches


def test_sequence_counts_are_deterministic_and_sum_to_T_minus_1() -> None:
    classes = data.syn_medium(3)
    counts = sweep.sequence_counts(classes, 5, 20, seed=7)
    assert counts.shape == (5, classes.K, classes.M)
    assert (counts.sum(-1) == 19).all()
    assert (counts * ~classes.support() == 0).all()  # only tokens of each class's support
    assert torch.equal(counts, sweep.sequence_counts(classes, 5, 20, seed=7))
    with pytest.raises(ValueError, match=names("sequences")):
        sweep.sequence_counts(classes, 0, 20, seed=7)
