"""Shared fixtures. One intra-op thread, so that every number in the unit suite is reproducible
bit for bit (torch's reductions may split work differently across threads)."""

from __future__ import annotations

import re

import pytest
import torch

from scansnap.data import SequenceClasses, syn_small

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _close_figures():
    """Close the figures a test made (experiments return open matplotlib figures)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture
def small() -> SequenceClasses:
    """Syn-Small: M = 34, K = 2."""
    return syn_small()


def gen(seed: int) -> torch.Generator:
    """A fresh CPU generator with ``seed``."""
    return torch.Generator().manual_seed(seed)


def names(param: str) -> str:
    """A ``pytest.raises(match=...)`` pattern: the message starts with the parameter's name (every
    ``ValueError`` of the package reads ``"<param>: ..."``)."""
    return rf"^{re.escape(param)}\b"


@pytest.fixture(scope="session")
def browser():
    """A headless Debian Chromium in a fresh profile (site tests only: ``tests/site_browser.py``)."""
    from site_browser import chromium

    with chromium() as context:
        yield context
