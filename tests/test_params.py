"""scansnap.params: declared configuration fields (a check and a protocol wording each); validation and the protocol
text derived by scansnap.results.Config."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass

import pytest
from conftest import names
from test_results import _configs

from scansnap import profiles
from scansnap.params import Choice, Each, Fraction, Int, Maybe, Positive, Seeds, declared, param, seed_range
from scansnap.results import Config


@dataclass(frozen=True)
class Walk(Config):
    steps: int = param(100, Int(low=1), "{} SGD steps")
    seeds: tuple[int, ...] = param((1, 2, 3), Seeds(), seed_range)
    eta: float = param(0.5, Positive(), "eta = {:g}")
    momentum: float = param(0.9, Fraction(), "momentum {:g}")
    init: str = param("zero", Choice("zero", "uniform"), "{} initialization")
    limit: int | None = param(None, Maybe(Int(low=2)))
    rates: tuple[float, ...] = param((0.5, 1.0), Each(Positive(), increasing=True), "rates {}")
    PRESETS = {"smoke": dict(steps=5, seeds=(1,)), "book": {}, "paper": {}}

    def validate(self) -> None:
        if self.limit is not None and self.limit > self.steps:
            raise ValueError(f"limit: must be at most steps ({self.steps}); got {self.limit}")


@dataclass(frozen=True)
class Worded(Walk):
    PROTOCOL = "a walk of {steps} ({seeds}), eta {eta}, {init}; limit {limit}, {steps_twice} half-steps, {self.eta:.2f}"

    @property
    def steps_twice(self) -> int:
        return 2 * self.steps


@pytest.mark.parametrize(("change", "field", "allowed"), [
    (dict(steps=0), "steps", "integer in [1, inf]"),
    (dict(steps=2.5), "steps", "integer"),
    (dict(seeds=()), "seeds", "at least one integer seed >= 0"),
    (dict(seeds=(1, -2)), "seeds", "in [0, inf]"),
    (dict(eta=0.0), "eta", "> 0"),
    (dict(momentum=1.0), "momentum", "in [0, 1)"),
    (dict(init="random"), "init", "one of"),
    (dict(limit=1), "limit", "integer in [2, inf]"),
    (dict(rates=(1.0, 0.5)), "rates", "strictly increasing"),
    (dict(rates=(0.5, -1.0)), "rates", "> 0"),
    (dict(rates=[]), "rates", "at least 1"),
])
def test_a_bad_value_names_the_field_and_the_allowed_range(change, field, allowed) -> None:
    with pytest.raises(ValueError, match=names(field)) as err:
        Walk(**change)
    assert allowed in str(err.value), str(err.value)
    with pytest.raises(ValueError, match=names(field)):
        Walk().replace(**change)


def test_cross_field_checks_run_after_the_fields_own() -> None:
    assert Walk(limit=50).limit == 50
    with pytest.raises(ValueError, match=names("limit")):
        Walk(steps=10, limit=20)
    with pytest.raises(ValueError, match=names("steps")):  # the field's own check first
        Walk(steps=0, limit=20)


def test_protocol_is_derived_from_the_wordings() -> None:
    assert Walk().protocol() == ("100 SGD steps; seeds 1-3 (3); eta = 0.5; momentum 0.9; zero initialization; "
                                 "limit = None; rates [0.5, 1.0]")
    assert Walk(steps=7, seeds=(4, 9)).protocol().startswith("7 SGD steps; seeds 4-9 (2); ")


def test_a_template_reads_phrases_values_and_properties() -> None:
    assert Worded(limit=30).protocol() == ("a walk of 100 SGD steps (seeds 1-3 (3)), eta eta = 0.5, zero "
                                           "initialization; limit 30, 200 half-steps, 0.50")


def test_a_plain_config_keeps_the_old_protocol() -> None:
    @dataclass(frozen=True)
    class Plain(Config):
        n: int = 3
        xs: tuple[int, ...] = (1, 2)

    assert Plain().protocol() == "n = 3; xs = [1, 2]"


@pytest.mark.parametrize("cls", _configs(), ids=lambda c: c.__qualname__)
def test_every_preset_of_every_config_is_valid_and_worded(cls) -> None:
    """Presets are plain data: each profile's preset makes a valid configuration, and its protocol is text."""
    for profile in profiles.PROFILES:
        config = cls.preset(profile)
        assert isinstance(config.protocol(), str) and config.protocol()
        assert set(cls.PRESETS.get(profile, {})) <= {f.name for f in dataclasses.fields(cls)}


def test_a_real_range_names_its_open_and_closed_ends() -> None:
    from scansnap.params import Real
    Real(0, 1, open="both")("delta", 0.5)
    for bad in (0, 1, float("nan"), True, "x"):
        with pytest.raises(ValueError, match=r"^delta: must be a finite number in \(0, 1\)"):
            Real(0, 1, open="both")("delta", bad)
    with pytest.raises(ValueError, match=r"^sigma: must be a finite number in \[0, 10\]; got 11"):
        Real(0, 10)("sigma", 11)


def test_a_subclass_that_changes_a_default_keeps_the_fields_check_and_wording() -> None:
    @dataclass(frozen=True)
    class Short(Walk):
        steps: int = 10

    assert Short().protocol().startswith("10 SGD steps; ")
    with pytest.raises(ValueError, match=names("steps")):
        Short(steps=0)


UNCHECKED = {"data": "a folder path ('' for the default one), read by scansnap.wikitext.data_dir",
             "check_family": "a fixed (K, distinct tokens, S0) of the probe states, never changed by a preset"}


@pytest.mark.parametrize("cls", _configs(), ids=lambda c: c.__qualname__)
def test_every_field_is_checked_where_it_is_declared_or_by_validate(cls) -> None:
    """A field carries its check (``param(default, check, ...)``), or ``validate()`` (cross-field checks, or a rule
    object that checks them, e.g. RatesConfig.rule) reads it, or it is one of the few free values above."""
    reads = inspect.getsource(cls.validate) + "".join(
        inspect.getsource(getattr(cls, m)) for m in ("rule",) if hasattr(cls, m))
    loose = [f.name for f in dataclasses.fields(cls) if declared(cls, f.name, "check") is None
             and f"self.{f.name}" not in reads and f.name not in UNCHECKED]
    assert not loose, f"{cls.__qualname__}: fields with no check: {loose}"


def test_a_wording_that_cannot_word_its_value_names_the_field() -> None:
    @dataclass(frozen=True)
    class Bad(Config):
        rate: float = param(0.5, Positive(), "rate {:d}")

    with pytest.raises(ValueError, match=r"^rate: its protocol wording 'rate \{:d\}' cannot word the value 0\.5"):
        Bad().protocol()
