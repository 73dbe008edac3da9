"""scansnap.profiles: SCANSNAP_PROFILE picks the scale; a configuration's preset follows it."""

from __future__ import annotations

import pytest
from conftest import names

from scansnap import profiles
from scansnap.experiments.ch01_setting import SynSmallConfig


def test_default_is_book(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCANSNAP_PROFILE", raising=False)
    assert profiles.current() == "book"
    assert SynSmallConfig.preset() == SynSmallConfig.preset("book")


@pytest.mark.parametrize("profile", profiles.PROFILES)
def test_env_override(monkeypatch: pytest.MonkeyPatch, profile: str) -> None:
    monkeypatch.setenv("SCANSNAP_PROFILE", profile)
    assert profiles.current() == profile
    assert SynSmallConfig.preset() == SynSmallConfig.preset(profile)


def test_explicit_profile_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCANSNAP_PROFILE", "paper")
    assert SynSmallConfig.preset("smoke") == SynSmallConfig(**SynSmallConfig.PRESETS["smoke"])


@pytest.mark.parametrize("bad", ["", "Book", "fast", " smoke"])
def test_invalid_env(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("SCANSNAP_PROFILE", bad)
    with pytest.raises(ValueError, match=names("SCANSNAP_PROFILE")):
        profiles.current()
    with pytest.raises(ValueError, match=names("SCANSNAP_PROFILE")):
        SynSmallConfig.preset()


@pytest.mark.parametrize("bad", ["huge", "Smoke", 1])
def test_invalid_profile_argument(monkeypatch: pytest.MonkeyPatch, bad) -> None:
    monkeypatch.delenv("SCANSNAP_PROFILE", raising=False)
    with pytest.raises(ValueError, match=names("profile")):
        SynSmallConfig.preset(bad)
