"""Input validation shared by every public function: a ``ValueError`` that names the parameter
and the allowed range."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

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
