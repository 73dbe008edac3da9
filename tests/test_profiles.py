"""scansnap.profiles: SCANSNAP_PROFILE and pick."""

from __future__ import annotations

import pytest
from conftest import names

from scansnap import profiles


def test_default_is_book(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCANSNAP_PROFILE", raising=False)
    assert profiles.current() == "book"
    assert profiles.pick(1, 2, 3) == 2


@pytest.mark.parametrize(("profile", "value"), [("smoke", "s"), ("book", "b"), ("paper", "p")])
def test_env_override(monkeypatch: pytest.MonkeyPatch, profile: str, value: str) -> None:
    monkeypatch.setenv("SCANSNAP_PROFILE", profile)
    assert profiles.current() == profile
    assert profiles.pick("s", "b", "p") == value
    assert profiles.pick(smoke="s", book="b", paper="p") == value


def test_explicit_profile_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCANSNAP_PROFILE", "paper")
    assert profiles.pick([1], [2], [3], profile="smoke") == [1]
    assert profiles.pick(None, 0, 1.5, profile="book") == 0


@pytest.mark.parametrize("bad", ["", "Book", "fast", " smoke"])
def test_invalid_env(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("SCANSNAP_PROFILE", bad)
    with pytest.raises(ValueError, match=names("SCANSNAP_PROFILE")):
        profiles.current()
    with pytest.raises(ValueError, match=names("SCANSNAP_PROFILE")):
        profiles.pick(1, 2, 3)


@pytest.mark.parametrize("bad", ["huge", "Smoke", 1])
def test_invalid_profile_argument(monkeypatch: pytest.MonkeyPatch, bad) -> None:
    monkeypatch.delenv("SCANSNAP_PROFILE", raising=False)
    with pytest.raises(ValueError, match=names("profile")):
        profiles.pick(1, 2, 3, profile=bad)


def test_profiles_constant() -> None:
    assert profiles.PROFILES == ("smoke", "book", "paper")
