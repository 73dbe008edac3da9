"""scansnap.experiments.scan_snap_rules: P1's measures (scan and snap) refuse inputs of the wrong shape and windows
that overlap, naming the argument (Chapter 6)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import names

from scansnap import train
from scansnap.data import syn_small
from scansnap.experiments.scan_snap_rules import scan_snap_run


@pytest.fixture(scope="module")
def run() -> tuple:
    classes = syn_small()
    h = train.train(classes, 1.0, 1.0, steps=30, limit="population", snapshot_steps=list(range(31)))
    return h.attention, classes, np.zeros((31, 1)), h.steps.numpy(), h.eta_Y.numpy(), h.eta_Z.numpy()


def test_measures_and_control_on_a_short_run(run) -> None:
    out = scan_snap_run(*run, window=5)
    assert out.early == (0.0, 5.0) and out.late == (25.0, 30.0)
    assert np.isfinite(out.measures.tv_ratio) and np.isfinite(out.control.tv_ratio)


@pytest.mark.parametrize("arg, value", [("log_chi", np.zeros(31)), ("t", np.arange(30.0)), ("eta_Y", np.ones(2)),
                                        ("eta_Z", np.ones((1, 1)))])
def test_an_argument_of_the_wrong_shape_is_named(run, arg: str, value) -> None:
    f, classes, log_chi, t, eta_Y, eta_Z = run
    given = {**dict(log_chi=log_chi, t=t, eta_Y=eta_Y, eta_Z=eta_Z), arg: value}
    with pytest.raises(ValueError, match=names(arg) + ": must have shape"):
        scan_snap_run(f, classes, window=5, **given)


@pytest.mark.parametrize("window", [0, -1, 16, 100])
def test_a_window_that_is_not_positive_or_makes_the_windows_overlap_is_refused(run, window: float) -> None:
    with pytest.raises(ValueError, match=names("window")):
        scan_snap_run(*run, window=window)


def test_decreasing_steps_are_refused(run) -> None:
    f, classes, log_chi, t, eta_Y, eta_Z = run
    with pytest.raises(ValueError, match=names("t")):
        scan_snap_run(f, classes, log_chi, t[::-1].copy(), eta_Y, eta_Z, window=5)
