"""scansnap._checks: validators name the parameter and the allowed range."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import names

from scansnap._checks import check_array, check_overlaps, check_seeds, check_unit_columns


def test_check_array_converts_and_rejects() -> None:
    a = check_array("x", torch.tensor([[1, 2]]), ndim=2)
    assert a.dtype == np.float64 and a.tolist() == [[1.0, 2.0]]
    with pytest.raises(ValueError, match=names("x")):
        check_array("x", [1.0, np.nan])
    with pytest.raises(ValueError, match=names("x")):
        check_array("x", [1.0], ndim=2)
    with pytest.raises(ValueError, match=names("x")):
        check_array("x", ["a"])


def test_check_unit_columns() -> None:
    F = torch.tensor([[0.6, 0.0], [0.8, 1.0], [0.0, 0.0]], dtype=torch.float64)
    assert check_unit_columns("F", F.expand(3, -1, -1)) is not None
    for bad in (2 * F, -F, F.T, F[:, :0]):
        with pytest.raises(ValueError, match=names("F")):
            check_unit_columns("F", bad)


def test_check_overlaps() -> None:
    E = torch.tensor([[0.0, 0.3], [0.3, 0.0]], dtype=torch.float64)
    assert check_overlaps("E", E.expand(4, -1, -1)) is not None
    for bad in (E + torch.eye(2, dtype=torch.float64), torch.tensor([[0.0, 0.3], [0.2, 0.0]]),
                torch.tensor([[0.0, 1.2], [1.2, 0.0]], dtype=torch.float64), torch.zeros(2, 3)):
        with pytest.raises(ValueError, match=names("E")):
            check_overlaps("E", bad)


def test_check_seeds() -> None:
    assert check_seeds("seeds", [3, 0]) == (3, 0)
    for bad in ((), [1, -1], [1.5], "12", 7):
        with pytest.raises(ValueError, match=names("seeds")):
            check_seeds("seeds", bad)
