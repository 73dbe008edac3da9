"""Input validation shared by every public function: a ``ValueError`` that names the parameter
and the allowed range."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
import torch

Shape = Sequence[object]  # ints, or Ellipsis for "any leading dimensions"


def check_int(name: str, value: object, low: int | None = None, high: int | None = None) -> int:
    """Require an integer in ``[low, high]`` (either bound optional)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}: must be an integer{_range(low, high)}; got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name}: must be an integer{_range(low, high)}; got {value}")
    return value


def check_seeds(name: str, seeds: Sequence[object]) -> tuple[int, ...]:
    """Require a non-empty sequence of integer seeds ``>= 0``."""
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"{name}: must hold at least one integer seed >= 0; got {seeds!r}")
    return tuple(check_int(name, s, low=0) for s in seeds)


def check_positive(name: str, value: object) -> float:
    """Require a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name}: must be a finite number > 0; got {value!r}")
    if value <= 0:
        raise ValueError(f"{name}: must be > 0; got {value}")
    return float(value)


def check_fraction(name: str, value: object, *, closed_high: bool = False) -> float:
    """Require a real number in ``[0, 1)`` (or ``[0, 1]`` with ``closed_high``)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and value >= 0
    ok = ok and (value <= 1 if closed_high else value < 1)
    if not ok:
        raise ValueError(f"{name}: must be in [0, 1{']' if closed_high else ')'}; got {value!r}")
    return float(value)


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """Require one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name}: must be one of {list(choices)}; got {value!r}")
    return str(value)


def check_tensor(
    name: str,
    t: object,
    *,
    shape: Shape | None = None,
    dtype: torch.dtype | None = None,
    floating: bool = False,
    low: float | None = None,
    high: float | None = None,
) -> torch.Tensor:
    """Require a tensor of the given shape (``...`` matches any leading dims), dtype and value range."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name}: must be a torch.Tensor; got {type(t).__name__}")
    if shape is not None and not _shape_ok(tuple(t.shape), tuple(shape)):
        want = "(" + ", ".join("..." if s is Ellipsis else str(s) for s in shape) + ")"
        raise ValueError(f"{name}: must have shape {want}; got {tuple(t.shape)}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name}: must have dtype {dtype}; got {t.dtype}")
    if floating and not t.is_floating_point():
        raise ValueError(f"{name}: must be a floating-point tensor; got {t.dtype}")
    if t.numel() and t.is_floating_point() and not torch.isfinite(t).all():
        raise ValueError(f"{name}: must be finite (no nan or inf)")
    if t.numel() and ((low is not None and t.min() < low) or (high is not None and t.max() > high)):
        raise ValueError(
            f"{name}: values must lie in {_interval(low, high)}; got min {t.min().item()}, max {t.max().item()}"
        )
    return t


def check_array(name: str, x: object, ndim: int | None = None) -> np.ndarray:
    """Require finite numbers (a numpy array, a torch tensor or a nested sequence), optionally with ``ndim``
    dimensions; returns them as a float64 numpy array."""
    a = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise ValueError(f"{name}: must be numeric; got dtype {a.dtype}")
    a = a.astype(np.float64)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name}: must have {ndim} dimension(s); got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: must be finite (no nan or inf)")
    return a


def check_unit_columns(name: str, F: torch.Tensor, atol: float = 1e-9) -> torch.Tensor:
    """Require ``(..., d, K)`` finite non-negative columns of unit l2 norm with ``d >= K >= 1`` (the inputs
    ``F = [f~_1 .. f~_K]`` of Theorem 1, one class per column)."""
    check_tensor(name, F, shape=(..., -1, -1), floating=True, low=0.0)
    d, K = F.shape[-2:]
    if K < 1 or d < K:
        raise ValueError(f"{name}: must have shape (..., d, K) with d >= K >= 1; got {tuple(F.shape)}")
    err = (torch.linalg.vector_norm(F, dim=-2) - 1).abs().max().item() if F.numel() else 0.0
    if err > atol:
        raise ValueError(f"{name}: columns must have unit l2 norm (within {atol:g}); off by up to {err:.3g}")
    return F


def check_overlaps(name: str, E: torch.Tensor, atol: float = 1e-12) -> torch.Tensor:
    """Require ``(..., K, K)`` overlaps ``E = F^T F - I``: finite, symmetric, zero diagonal, with ``I + E``
    positive definite (Assumption 2)."""
    check_tensor(name, E, shape=(..., -1, -1), floating=True)
    K = E.shape[-1]
    if E.shape[-2] != K:
        raise ValueError(f"{name}: must be square (..., K, K); got {tuple(E.shape)}")
    if E.numel() == 0:
        return E
    if (E - E.mT).abs().max() > atol or torch.diagonal(E, dim1=-2, dim2=-1).abs().max() > atol:
        raise ValueError(f"{name}: must be symmetric with zero diagonal (E = F^T F - I)")
    if torch.linalg.eigvalsh(E + torch.eye(K, dtype=E.dtype)).min() <= 0:
        raise ValueError(f"{name}: I + E must be positive definite (Assumption 2)")
    return E


def _shape_ok(got: tuple[int, ...], want: tuple[object, ...]) -> bool:
    if want and want[0] is Ellipsis:
        want = want[1:]
        got = got[len(got) - len(want):] if len(got) >= len(want) else (-2,) * (len(want) + 1)
    return len(got) == len(want) and all(w == -1 or g == w for g, w in zip(got, want, strict=True))


def _range(low: int | None, high: int | None) -> str:
    if low is None and high is None:
        return ""
    return " in " + _interval(low, high)


def _interval(low: float | None, high: float | None) -> str:
    lo = "-inf" if low is None else str(low)
    hi = "inf" if high is None else str(high)
    return f"[{lo}, {hi}]"
