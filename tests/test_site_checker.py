"""The page check of ``tests/test_site.py`` run on small pages broken on purpose (a missing image, a figure
rendered as text, math without MathJax, a TeX error, a script from a CDN): it must catch each, and pass a good
page. Marked ``site`` (needs Debian's Chromium), like the test of the built site."""

from __future__ import annotations

import re
import shutil
import struct
import zlib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from site_browser import check_page, serve
from test_site import SITE

pytestmark = pytest.mark.site


def _mathjax_dir() -> Path:
    """MathJax 3 as served with the site (``_static/mathjax``), else from sphinx-mathjax-offline."""
    built = SITE / "_static" / "mathjax"
    if (built / "tex-chtml.js").is_file():
        return built
    return Path(metadata.distribution("sphinx-mathjax-offline").locate_file("sphinx-mathjax-offline/static/mathjax"))


_HEAD = '<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>t</title>'
_MATHJAX_TAG = '<script defer src="mathjax/tex-chtml.js"></script>'


def _png(width: int = 2, height: int = 2) -> bytes:
    """A small grey PNG, written with the standard library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))  # filter 0, 8-bit grey
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


FIXTURES = {
    "good.html": f'{_HEAD}{_MATHJAX_TAG}</head><body><figure><img src="ok.png"></figure>'
    r'<p><span class="math notranslate nohighlight">\(\frac{a}{b}\)</span></p></body></html>',
    "broken-image.html": f'{_HEAD}</head><body><p><img src="missing.png"></p></body></html>',
    "figure-without-image.html": f"{_HEAD}</head><body><figure><p>&lt;Figure size 640x480&gt;</p></figure>"
    "</body></html>",
    "math-without-mathjax.html": f'{_HEAD}</head><body><div class="math">\\[x^2\\]</div></body></html>',
    "math-error.html": f'{_HEAD}{_MATHJAX_TAG}</head><body>'
    r'<div class="math notranslate nohighlight">\[\frac{a}\]</div></body></html>',  # \frac lacks an argument
    "off-host.html": f'{_HEAD}<script src="https://cdn.example.com/x.js"></script></head><body><p>x</p></body></html>',
}


@pytest.fixture(scope="module")
def broken_site(tmp_path_factory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("broken-site")
    for name, html in FIXTURES.items():
        (root / name).write_text(html, encoding="utf8")
    (root / "ok.png").write_bytes(_png())
    shutil.copytree(_mathjax_dir(), root / "mathjax")
    with serve(root) as base:
        yield base


def test_check_passes_a_good_page(browser, broken_site: str) -> None:
    """The control: an image, a figure and an equation rendered by MathJax, nothing else."""
    assert check_page(browser, broken_site + "good.html") == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("broken-image.html", r"image not rendered.*missing\.png"),
        ("broken-image.html", r"HTTP 404: .*missing\.png"),
        ("figure-without-image.html", r"<figure> without <img>"),
        ("math-without-mathjax.html", r"MathJax did not load"),
        ("math-error.html", r"MathJax error \(mjx-merror\)"),
        ("off-host.html", r"off-host request \(aborted\): https://cdn\.example\.com/x\.js"),
    ],
)
def test_check_catches(browser, broken_site: str, name: str, expected: str) -> None:
    problems = check_page(browser, broken_site + name)
    assert any(re.search(expected, p) for p in problems), f"{name}: expected /{expected}/ among {problems}"
