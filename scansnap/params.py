"""Declared configuration fields: each field of a :class:`scansnap.results.Config` carries its check and its
protocol wording, so validation and the protocol text are derived, not written out per class.

::

    steps: int = param(100, Int(low=1), "{} SGD steps")
    seeds: tuple[int, ...] = param((1, 2, 3), Seeds(), seed_range)
    init: str = param("zero", Choice("zero", "uniform"), "{} initialization")

A check is a small frozen object called as ``check(name, value)``; it calls the functions of
:mod:`scansnap._checks` (so an error names the field and its allowed range, as everywhere in the library) and
raises ``ValueError``. A wording is a format string with one ``{}`` for the value (a format spec such as
``"eta_Y = {:g}"`` is allowed) or a function ``value -> str``. Making a :class:`~scansnap.results.Config` runs every
field's check and then the class's :meth:`~scansnap.results.Config.validate` (cross-field checks);
:meth:`~scansnap.results.Config.protocol` joins the wordings, or fills the class's
:attr:`~scansnap.results.Config.PROTOCOL` template, where ``{name}`` stands for the field's worded phrase.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scansnap._checks import check_choice, check_fraction, check_int, check_positive, check_seeds

__all__ = ["Check", "Choice", "Each", "Fraction", "Int", "Maybe", "Positive", "Real", "Seeds", "Words", "declared",
           "listed", "param", "phrase", "seed_list", "seed_range", "validate"]

Check = Callable[[str, Any], object]
"""``check(name, value)``: raises ``ValueError`` naming ``name`` and the allowed range when ``value`` is bad."""

Words = str | Callable[[Any], str]
"""A field's protocol wording: a format string with one ``{}`` for the value, or ``value -> str``."""


def param(default: Any, check: Check | None = None, words: Words | None = None) -> Any:
    """A dataclass field with ``default``, validated by ``check`` and worded in the protocol by ``words``
    (``None``: the protocol says ``name = value``)."""
    return dataclasses.field(default=default, metadata={"check": check, "words": words})


@dataclass(frozen=True)
class Int:
    """An integer in ``[low, high]`` (either bound optional): :func:`scansnap._checks.check_int`."""

    low: int | None = None
    high: int | None = None

    def __call__(self, name: str, value: object) -> None:
        check_int(name, value, low=self.low, high=self.high)


@dataclass(frozen=True)
class Positive:
    """A finite real number ``> 0``: :func:`scansnap._checks.check_positive`."""

    def __call__(self, name: str, value: object) -> None:
        check_positive(name, value)


@dataclass(frozen=True)
class Real:
    """A finite real number between ``low`` and ``high`` (either optional; a bound is excluded with ``open``: ``"low"``,
    ``"high"`` or ``"both"``)."""

    low: float | None = None
    high: float | None = None
    open: str = ""

    def __call__(self, name: str, value: object) -> None:
        lo_open, hi_open = self.open in ("low", "both"), self.open in ("high", "both")
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
        ok = ok and (self.low is None or (value > self.low if lo_open else value >= self.low))
        ok = ok and (self.high is None or (value < self.high if hi_open else value <= self.high))
        if not ok:
            lo = "-inf" if self.low is None else f"{self.low:g}"
            hi = "inf" if self.high is None else f"{self.high:g}"
            span = f"{'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
            raise ValueError(f"{name}: must be a finite number in {span}; got {value!r}")


@dataclass(frozen=True)
class Fraction:
    """A real number in ``[0, 1)`` (``[0, 1]`` with ``closed_high``): :func:`scansnap._checks.check_fraction`."""

    closed_high: bool = False

    def __call__(self, name: str, value: object) -> None:
        check_fraction(name, value, closed_high=self.closed_high)


@dataclass(frozen=True, init=False)
class Choice:
    """One of ``choices``: :func:`scansnap._checks.check_choice`."""

    choices: tuple[str, ...]

    def __init__(self, *choices: str) -> None:
        object.__setattr__(self, "choices", choices)

    def __call__(self, name: str, value: object) -> None:
        check_choice(name, value, self.choices)


@dataclass(frozen=True)
class Seeds:
    """A non-empty sequence of integer seeds ``>= 0`` (:func:`scansnap._checks.check_seeds`), each once with
    ``distinct``, strictly increasing with ``increasing``."""

    increasing: bool = False
    distinct: bool = False

    def __call__(self, name: str, value: object) -> None:
        check_seeds(name, value)
        if self.increasing:
            _increasing(name, value)
        if self.distinct and len(set(value)) != len(value):
            raise ValueError(f"{name}: must hold each seed once; got {value!r}")


@dataclass(frozen=True)
class Each:
    """A tuple or list of at least ``min_len`` items, each passing ``item`` (reported as ``name``); strictly
    increasing with ``increasing``."""

    item: Check
    min_len: int = 1
    increasing: bool = False

    def __call__(self, name: str, value: object) -> None:
        if not isinstance(value, tuple | list) or len(value) < self.min_len:
            least = f" of at least {self.min_len} item(s)" if self.min_len else ""
            raise ValueError(f"{name}: must be a tuple{least}; got {value!r}")
        for v in value:
            self.item(name, v)
        if self.increasing:
            _increasing(name, value)


@dataclass(frozen=True)
class Maybe:
    """``None`` (no limit, or not used), or a value passing ``check``."""

    check: Check

    def __call__(self, name: str, value: object) -> None:
        if value is not None:
            self.check(name, value)


def _increasing(name: str, value: Sequence[Any]) -> None:
    if not value or list(value) != sorted(set(value)):
        raise ValueError(f"{name}: must be a non-empty strictly increasing tuple; got {value!r}")


def seed_range(seeds: Sequence[int]) -> str:
    """``"seeds 1-10 (10)"``: a run of seeds, first-last (count)."""
    return f"seeds {seeds[0]}-{seeds[-1]} ({len(seeds)})"


def seed_list(seeds: Sequence[int]) -> str:
    """``"seeds [1, 2, 3]"``."""
    return f"seeds {list(seeds)}"


def listed(items: Sequence[Any]) -> str:
    """``"[0.5, 1.0]"``: a tuple of values as a list."""
    return str(list(items))


def declared(cls: type, name: str, key: str) -> Any:
    """The ``key`` (``"check"`` or ``"words"``) declared for field ``name`` by ``cls`` or, where a subclass only
    changes the field's default, by the nearest base class that declares it (``None``: none does)."""
    for base in cls.__mro__:
        f = getattr(base, "__dataclass_fields__", {}).get(name)
        if f is not None and f.metadata.get(key) is not None:
            return f.metadata[key]
    return None


def phrase(config: object, name: str, value: Any) -> str:
    """Field ``name``'s protocol wording filled with ``value`` (``name = value`` when it has none)."""
    words = declared(type(config), name, "words")
    if words is None:
        return f"{name} = {value}"
    try:
        return words(value) if callable(words) else words.format(value)
    except (ValueError, TypeError, IndexError, KeyError, AttributeError) as e:
        raise ValueError(f"{name}: its protocol wording {words!r} cannot word the value {value!r} ({e}); a format "
                         f"string needs one {{}} that fits the value (e.g. {{:g}} for a float)") from e


def validate(config: object) -> None:
    """Run every field's check on ``config`` (a dataclass), in declaration order."""
    for f in dataclasses.fields(config):
        check = declared(type(config), f.name, "check")
        if check is not None:
            check(f.name, getattr(config, f.name))
