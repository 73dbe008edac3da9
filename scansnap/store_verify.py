"""Verifying a stored run (:mod:`scansnap.store`): re-run its first steps from the recorded seeds and compare them
with the stored checkpoints, on a device its provenance allows (``python -m scansnap store verify``).

A re-run on another machine differs from the store in the last bits of its float sums, and SGD amplifies them
(Chapter 8's language model about tenfold every two or three steps), so :func:`verify` re-runs exactly the steps it
compares, up to :data:`scansnap.store.HORIZON`, through the experiment's
:attr:`~scansnap.experiments.base.Experiment.prefix`; the later checkpoints are held by their digests
(:func:`scansnap.store.check`), and re-made, not re-compared.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import torch

from scansnap import device as device_mod
from scansnap._checks import check_int
from scansnap.experiments.base import Experiment
from scansnap.store import HORIZON, UnverifiableError, config_of, load

__all__ = ["ATOL", "RTOL", "verify"]

RTOL, ATOL = 1e-4, 1e-6
""":func:`verify`'s tolerance: a re-run on another CPU (or a GPU against a CPU) differs in the last bits of its
float sums (about 1e-7 relative at initialization and in the first steps); a wrong seed, rate, text or code
differs at O(1)."""


def verify(exp: Experiment, profile: str = "paper", steps: int | None = None, root: Path | None = None,
           rtol: float = RTOL, atol: float = ATOL, horizon: int = HORIZON,
           device: str | torch.device | None = None) -> list[str]:
    """Re-run the first ``steps`` steps of the stored run (default ``horizon``: exactly the compared steps, through
    the experiment's :attr:`~scansnap.experiments.base.Experiment.prefix`; the whole run when it has none) from its
    recorded configuration on ``device`` (:func:`scansnap.device.resolve`: default ``$SCANSNAP_DEVICE``, else the
    CPU) and compare every checkpointed curve at the steps both runs have, up to step ``horizon``, within
    ``rtol``/``atol`` (default :data:`RTOL` = 1e-4 relative, :data:`ATOL` = 1e-6, up to
    :data:`scansnap.store.HORIZON` = step 5; a curve the store holds only past ``horizon`` is left out; none compared
    at all is a mismatch). Returns the mismatches (empty: equal).

    Raises :class:`scansnap.store.UnverifiableError` (a ``ValueError`` starting ``"device: "``) before running
    anything when the device's kind (:func:`scansnap.device.kind`) is not one the store can be verified on
    (:attr:`scansnap.store.Provenance.verifiable_on`)."""
    horizon = check_int("horizon", horizon, low=0)
    dev = device_mod.resolve(device)
    stored = load(exp, profile, root)
    allowed = stored.provenance.verifiable_on
    if device_mod.kind(dev) not in allowed:
        raise UnverifiableError(
            f"device: {exp.id}/{profile} was made on {stored.provenance.device} and can be verified on "
            f"{', '.join(allowed)} only; got {dev} ({device_mod.kind(dev)}). Verify it with --device "
            f"{allowed[0].split(' ')[0]} on such a machine, or re-make it here: {stored.provenance.command}")
    config = config_of(exp, stored)
    if exp.prefix is not None:
        steps = max(horizon, 1) if steps is None else check_int("steps", steps, low=1)
        config = exp.prefix(config, steps)
    with mock.patch.dict(os.environ, {device_mod.ENV: str(dev)}):  # every trainer of the re-run reads it
        again = exp.run(config, None)
    pick = exp.checkpoints or _all_arrays
    old, new = pick(stored.result), pick(again)
    problems, compared = [], 0
    for name, (s_new, v_new) in new.items():
        s_old, v_old = old[name]
        s_new, s_old = np.asarray(s_new), np.asarray(s_old)
        if not (s_old <= horizon).any():
            continue  # a curve the store has later only (a rate between checkpoints): nothing to compare
        common, i_old, i_new = np.intersect1d(s_old, s_new[s_new <= horizon], return_indices=True)
        a, b = np.asarray(v_old)[i_old], np.asarray(v_new)[i_new]
        if not common.size:
            problems.append(f"{name}: no common checkpoint up to step {horizon}")
            continue
        compared += 1
        bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True).reshape(len(common), -1).all(axis=1)
        if bad.any():
            err = np.nanmax(np.abs(a - b) / (atol + rtol * np.abs(a)))
            problems.append(f"{name}: differs at steps {common[bad].tolist()[:5]} (of {common.tolist()[:8]}) "
                            f"by up to {err:.3g} x the tolerance")
    return problems if compared else problems + [f"no curve has a checkpoint up to step {horizon}"]


def _all_arrays(result: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every numeric array field of a result, as one checkpoint (step 0): for experiments without ``checkpoints``."""
    out = {}
    for f in fields(result):
        v = getattr(result, f.name)
        if isinstance(v, np.ndarray | torch.Tensor) or (isinstance(v, float | int) and not isinstance(v, bool)):
            out[f.name] = (np.array([0]), np.asarray(v)[None])
    return out
