"""A measure and a configuration for tests that judge made-up results with a rule (tests of claims, ledger, ledger
page): one error, one step."""

from __future__ import annotations

from dataclasses import dataclass

from scansnap.results import Config


@dataclass(frozen=True)
class Err:
    """A test measure: one error."""

    err: float


@dataclass(frozen=True)
class Cfg(Config):
    """A test configuration."""

    steps: int = 1
