"""Shared fixtures. One intra-op thread, so that every number in the unit suite is reproducible
bit for bit (torch's reductions may split work differently across threads)."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from pathlib import Path

import pytest
import torch

from scansnap.data import SequenceClasses, syn_small

torch.set_num_threads(1)

# WikiText-2: on the machines this book is built on the data lie beside the repository; point the library (and
# the chapters the tests execute) there explicitly. A user's clone has no such folder: the library then uses its
# per-user cache, filled on first use by a verified download (scansnap.wikitext.data_dir).
_SHARED_WIKITEXT = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikitext-2"
if not os.environ.get("SCANSNAP_WIKITEXT") and (_SHARED_WIKITEXT / "valid.txt").is_file():
    os.environ["SCANSNAP_WIKITEXT"] = str(_SHARED_WIKITEXT)


@functools.cache
def wikitext_found():
    """Chapter 8's WikiText-2 as the library finds it (:func:`scansnap.wikitext_check.check`, once per process): in
    ``wikitext.data_dir()``, or downloaded now into the per-user cache."""
    from scansnap import wikitext_check

    return wikitext_check.check()


def wikitext_skip_reason() -> str:
    """Why the tests that read WikiText-2 are skipped here (``""``: they run)."""
    found = wikitext_found()
    if found.ok:
        return ""
    return (f"no WikiText-2 here: {', '.join(found.missing)} neither in {found.folder} nor downloadable now; set "
            f"SCANSNAP_WIKITEXT to a folder holding valid.txt and test.txt, or run python -m scansnap data download")


def needs_wikitext():
    """A ``skipif`` mark for a test that reads WikiText-2: it runs where the data are there or downloadable, and is
    skipped with a reason naming ``SCANSNAP_WIKITEXT`` where neither."""
    return pytest.mark.skipif(bool(wikitext_skip_reason()), reason=wikitext_skip_reason() or "WikiText-2 is here")


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


@pytest.fixture(scope="session")
def site_url():
    """The built site (``site_browser.SITE``) served on 127.0.0.1 for the whole session (site tests only)."""
    from site_browser import SITE, serve

    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE} (index.html missing): run `make book` first, or set SCANSNAP_SITE")
    with serve(SITE) as base:
        yield base


@contextlib.contextmanager
def module_from_source(path: Path, source: str, prefix: str):
    """``source`` written to ``path`` and imported as a fresh module (a unique name starting with ``prefix``), so
    that a test can edit the file its functions come from; removed from ``sys.modules`` afterwards."""
    import importlib.util
    import uuid

    path.write_text(source)
    name = f"{prefix}_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    try:
        yield module
    finally:
        del sys.modules[name]
