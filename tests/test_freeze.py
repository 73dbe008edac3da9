"""scansnap.freeze: bounded measures of an attention map's freeze, on hand-built maps."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import names

from scansnap import freeze


def _maps(t: np.ndarray, tau: float) -> torch.Tensor:
    """(S, 3, 4) rows that move from uniform towards key 1 like 1 - exp(-t / tau)."""
    w = torch.tensor(1 - np.exp(-t / tau))[:, None, None]
    target = torch.tensor([0.1, 0.7, 0.1, 0.1], dtype=torch.float64).expand(3, 4)
    return (1 - w) * 0.25 + w * target


def test_total_variation_is_bounded_and_exact() -> None:
    a = torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=torch.float64)
    b = torch.tensor([[0.0, 1.0], [0.5, 0.5]], dtype=torch.float64)
    assert freeze.total_variation(a, b).tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match=names("b")):
        freeze.total_variation(a, b[:1])


def test_a_map_that_freezes_and_one_that_keeps_drifting() -> None:
    t = np.arange(0.0, 1001.0, 50.0)
    frozen = freeze.freeze_measures(_maps(t, 30.0), t, (0.0, 100.0), (900.0, 1000.0))
    assert frozen.tv_ratio < 1e-6 and frozen.keep_share == 1.0 and 0 < frozen.tv_early <= 1
    drifting = freeze.freeze_measures(_maps(t, 1e6), t, (0.0, 100.0), (900.0, 1000.0))
    assert drifting.tv_ratio == pytest.approx(1.0, rel=1e-2)
    # the criterion: the frozen map passes, the drifting one fails on the change per step
    crit = {c.name: c for c in freeze.freeze_criteria()}
    assert crit["tv_ratio"].score(frozen.tv_ratio) == 2 and crit["tv_ratio"].score(drifting.tv_ratio) == 0
    assert crit["keep_share"].score(frozen.keep_share) == 2
    # windows of different lengths compare changes per step
    longer = freeze.freeze_measures(_maps(t, 1e6), t, (0.0, 100.0), (800.0, 1000.0))
    assert longer.tv_ratio == pytest.approx(1.0, rel=1e-2)
    assert longer.tv_late == pytest.approx(2 * longer.tv_early, rel=1e-2)


def test_rows_that_swap_their_attended_key_count_against_keeping() -> None:
    t = np.array([0.0, 1.0, 2.0, 3.0])
    m = torch.tensor([[[0.6, 0.4], [0.6, 0.4]]] * 3 + [[[0.4, 0.6], [0.6, 0.4]]], dtype=torch.float64)
    assert freeze.freeze_measures(m, t, (0.0, 1.0), (2.0, 3.0)).keep_share == 0.5


def test_time_shuffled_permutes_the_checkpoints_only() -> None:
    m = torch.arange(24.0, dtype=torch.float64).reshape(6, 1, 4)
    s = freeze.time_shuffled(m, 3)
    assert torch.equal(s, freeze.time_shuffled(m, 3)) and not torch.equal(s, m)
    assert sorted(s[:, 0, 0].tolist()) == m[:, 0, 0].tolist()


def test_bad_windows_are_refused() -> None:
    t = np.array([0.0, 1.0, 2.0])
    m = _maps(t, 1.0)
    with pytest.raises(ValueError, match=names("early")):
        freeze.freeze_measures(m, t, (0.0, 1.5), (1.0, 2.0))
    with pytest.raises(ValueError, match=names("steps")):
        freeze.freeze_measures(m, [0.0, 2.0, 1.0], (0.0, 1.0), (1.0, 2.0))
