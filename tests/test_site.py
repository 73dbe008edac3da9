"""The built site in a real browser: every page loads offline, without errors, with its images,
figures and equations rendered.

Debian's Chromium (``/usr/bin/chromium``, or ``$SCANSNAP_CHROMIUM``) is driven by Playwright from
pip; ``playwright install`` is never needed. The site (``$SCANSNAP_SITE``, default ``_build/html``,
built by ``make book``) is served by ``python -m http.server`` on 127.0.0.1 and every HTML page is
opened in turn. One function, :func:`check_page`, decides what is wrong with a page; it is used on
the real site and on small broken pages (the negative tests), so a check that cannot fail is
noticed.

Every test here is marked ``site``: ``make test`` deselects them (``-m "not site"``), and
``make site-test`` (``pytest -m site tests/test_site.py``) runs them. Screenshots of the intro,
chapter 1 and the claims ledger are saved under ``_build/screenshots/``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from html.parser import HTMLParser
from importlib import metadata
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from scansnap.claims import CLAIMS

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parent.parent
SITE = Path(os.environ.get("SCANSNAP_SITE", "_build/html"))
SITE = SITE if SITE.is_absolute() else ROOT / SITE
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = os.environ.get("SCANSNAP_CHROMIUM", "/usr/bin/chromium")
HOST = "127.0.0.1"
# As in /work/shared/TOOLCHAIN.md: headless, no sandbox (CI runs as root), and none of Chromium's
# own background traffic (updates, sync, QUIC probes).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 30_000
# Pages that get a screenshot (site-relative path -> file name under _build/screenshots/).
SCREENSHOT_PAGES = {
    "book/intro.html": "intro.png",
    "book/chapters/01-setting.html": "01-setting.png",
    "book/claims.html": "claims.png",
}
LEDGER = "book/claims.html"
GALLERY = "book/figures.html"


def site_pages(site: Path) -> list[str]:
    """Every HTML page of the built site, site-relative, sorted.

    Skipped: ``_static/`` and ``_sources/`` hold assets and page sources, not pages of the book
    (``_static`` may carry third-party HTML fragments, e.g. from MathJax or the theme, that are
    never linked as pages). ``genindex.html`` and ``search.html`` are checked like any other page.
    """
    if not site.is_dir():
        return []
    skip = {"_static", "_sources"}
    return sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if not skip.intersection(p.relative_to(site).parts[:-1])
    )


# --- serving and browsing ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` with ``python -m http.server`` on 127.0.0.1; yields the base URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", HOST, "--directory", str(directory)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://{HOST}:{port}/"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(base, timeout=2):
                    break
            except urllib.error.HTTPError:
                break  # the server answers (e.g. 404 for a folder without index.html)
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"http.server did not start on {base} (exit {proc.poll()})") from None
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (Debian's), in a fresh profile that is deleted afterwards."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: install it (apt-get install -y chromium chromium-driver) or set "
            "SCANSNAP_CHROMIUM; the site tests never download a browser (no `playwright install`)"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -r requirements.txt")
    profile = tempfile.mkdtemp(prefix="scansnap-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            context.set_default_timeout(TIMEOUT_MS)
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


# Loads every image now (a lazy image below the fold would otherwise never load in a headless
# page), then waits until each has either loaded or failed.
_LOAD_IMAGES = """async () => {
  const imgs = Array.from(document.images);
  imgs.forEach(img => { if (img.loading === 'lazy') img.loading = 'eager'; });
  await Promise.all(imgs.map(img => img.complete ? null : new Promise(done => {
    img.addEventListener('load', done, {once: true});
    img.addEventListener('error', done, {once: true});
    setTimeout(done, 10000);
  })));
}"""

_IMAGE_PROBLEMS = """() => Array.from(document.images)
  .filter(img => !(img.complete && img.naturalWidth > 0))
  .map(img => img.getAttribute('src'))"""

_FIGURES_WITHOUT_IMG = """() => Array.from(document.querySelectorAll('figure'))
  .filter(f => !f.querySelector('img'))
  .map(f => f.id || (f.textContent || '').trim().slice(0, 60))"""

_HAS_MATH = "() => document.querySelector('div.math, span.math') !== null"

_MATHJAX = """async () => {
  const deadline = Date.now() + 20000;
  while (!(window.MathJax && window.MathJax.startup && window.MathJax.startup.promise)) {
    if (Date.now() > deadline) return {loaded: false};
    await new Promise(r => setTimeout(r, 50));
  }
  const timeout = new Promise(r => setTimeout(() => r('timeout'), 20000));
  if (await Promise.race([window.MathJax.startup.promise, timeout]) === 'timeout') return {loaded: false};
  return {
    loaded: true,
    containers: document.querySelectorAll('mjx-container').length,
    errors: Array.from(document.querySelectorAll('mjx-merror'))
      .map(e => e.getAttribute('data-mjx-error') || e.textContent),
  };
}"""


def check_page(context, url: str, screenshot: Path | None = None) -> list[str]:
    """Open ``url`` in ``context`` and return what is wrong with the page (an empty list: nothing).

    Problems: a request to any host other than 127.0.0.1 (it is aborted), a console error, an
    uncaught page error, a response with HTTP status >= 400, a request that failed, an image that
    is not complete with ``naturalWidth > 0``, a ``<figure>`` without an ``<img>``, and, on a page
    with math (``div.math`` or ``span.math``), MathJax not loading, no ``mjx-container`` after
    ``MathJax.startup.promise``, or any ``mjx-merror``.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    problems: list[str] = []
    off_host: set[str] = set()
    page = context.new_page()

    def route(r) -> None:
        req_url = r.request.url
        parts = urlsplit(req_url)
        if parts.scheme in {"data", "blob", "about"} or parts.hostname == HOST:
            r.continue_()
        else:
            off_host.add(req_url)
            problems.append(f"off-host request (aborted): {req_url}")
            r.abort()

    def on_console(msg) -> None:
        if msg.type == "error":
            problems.append(f"console error: {msg.text} ({msg.location.get('url', '')})")

    def on_response(resp) -> None:
        if resp.status >= 400:
            problems.append(f"HTTP {resp.status}: {resp.url}")

    def on_failed(req) -> None:
        if req.url not in off_host:
            problems.append(f"request failed ({req.failure}): {req.url}")

    page.route("**/*", route)
    page.on("console", on_console)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc} {(exc.stack or '').splitlines()[1:3]}"))
    page.on("response", on_response)
    page.on("requestfailed", on_failed)
    try:
        resp = page.goto(url, wait_until="load")
        if resp is None:
            problems.append(f"no response for {url}")
        # Let a redirect (index.html is a <meta http-equiv="Refresh"> to the intro) and late
        # requests finish: the checks below then run on the page the reader ends up on.
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_load_state("networkidle", timeout=10_000)
        page.wait_for_load_state("load")
        page.evaluate(_LOAD_IMAGES)
        bad_images = page.evaluate(_IMAGE_PROBLEMS)
        problems += [f"image not rendered (complete, naturalWidth > 0): {src}" for src in bad_images]
        problems += [f"<figure> without <img>: {f!r}" for f in page.evaluate(_FIGURES_WITHOUT_IMG)]
        if page.evaluate(_HAS_MATH):
            mj = page.evaluate(_MATHJAX)
            if not mj["loaded"]:
                problems.append("page has math but MathJax did not load (no MathJax.startup.promise)")
            else:
                if mj["containers"] == 0:
                    problems.append("page has math but MathJax rendered no mjx-container")
                problems += [f"MathJax error (mjx-merror): {e}" for e in mj["errors"]]
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
    except Exception as exc:  # a timeout or a crash is a problem of the page, not of the test
        problems.append(f"{type(exc).__name__} while checking the page: {exc}")
    finally:
        page.close()
    return problems


# --- the built site ------------------------------------------------------------------------------

PAGES = site_pages(SITE)


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE} (index.html missing): run `make book` first, or set SCANSNAP_SITE")
    with serve(SITE) as base:
        yield base


def test_site_is_built() -> None:
    """The parametrized page checks below cover the pages that exist; this test fails if there are none."""
    assert (SITE / "index.html").is_file(), f"no built site at {SITE}: run `make book` first"
    assert PAGES, f"{SITE} holds no HTML page"


@pytest.mark.parametrize("path", PAGES)
def test_page(browser, site_url: str, path: str) -> None:
    shot = SCREENSHOTS / SCREENSHOT_PAGES[path] if path in SCREENSHOT_PAGES else None
    problems = check_page(browser, urljoin(site_url, path), screenshot=shot)
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


def _ledger_ids(context, url: str) -> list[str]:
    page = context.new_page()
    try:
        page.goto(url, wait_until="load")
        return page.eval_on_selector_all(
            "table tbody tr", "rows => rows.map(r => (r.cells[0] ? r.cells[0].textContent : '').trim())"
        )
    finally:
        page.close()


@pytest.mark.parametrize("path", [p for p in (LEDGER,) if p in PAGES])
def test_ledger_lists_every_claim(browser, site_url: str, path: str) -> None:
    """The claims ledger has one table row per claim of ``scansnap.claims.CLAIMS`` (C1..C43 and the book's own)."""
    ids = [cell.split()[0] if cell else "" for cell in _ledger_ids(browser, urljoin(site_url, path))]
    expected = [c.id for c in CLAIMS]
    missing = [c for c in expected if c not in ids]
    assert not missing, f"{path} does not list claims {missing}"
    assert [c for c in expected if c.startswith("C")] == [f"C{i}" for i in range(1, 44)]


class _Links(HTMLParser):
    """The ``href`` of every ``<a>``, and every ``id`` (anchors) of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])


def _fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            body = r.read()
            text = body.decode("utf8", errors="replace") if "html" in r.headers.get("Content-Type", "") else ""
            return r.status, text
    except urllib.error.HTTPError as err:
        return err.code, ""


@pytest.mark.parametrize("path", [p for p in (GALLERY, LEDGER) if p in PAGES])
def test_gallery_and_ledger_links_resolve(site_url: str, path: str) -> None:
    """Every link of the figure gallery and of the claims ledger that points into the site answers
    HTTP 200, and a link with an anchor (``chapter.html#fig-...``, ``chapter.html#lemma-1``) lands on
    an element with that id.

    Links to other hosts (the repository, issue tracker and Binder buttons of the theme, the paper)
    are listed but not fetched: the test runs offline and must not reach the network.
    """
    page_url = urljoin(site_url, path)
    status, text = _fetch(page_url)
    assert status == 200, f"{path}: HTTP {status}"
    links = _Links()
    links.feed(text)
    problems: list[str] = []
    pages: dict[str, tuple[int, set[str]]] = {}
    checked = 0
    for href in links.hrefs:
        url = urljoin(page_url, href)
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or parts.hostname != HOST:
            continue  # another host, mailto:, javascript:
        target = parts._replace(fragment="").geturl()
        if target not in pages:
            st, body = _fetch(target)
            ids: set[str] = set()
            if body:
                p = _Links()
                p.feed(body)
                ids = p.ids
            pages[target] = (st, ids)
        st, ids = pages[target]
        checked += 1
        if st != 200:
            problems.append(f"{href}: HTTP {st}")
        elif parts.fragment and target.endswith(".html") and parts.fragment not in ids:
            problems.append(f"{href}: no element with id {parts.fragment!r}")
    assert checked, f"{path} has no link into the site"
    assert not problems, f"{path}: {len(problems)} of {checked} links broken:\n  " + "\n  ".join(problems)


# --- the Library reference: chapter code cells link to it, and its entries link back -------------------

REFERENCE = "book/reference/index.html"
CHAPTER = "book/chapters/01-setting.html"

_CELL_LINKS = """() => Array.from(document.querySelectorAll('div.cell_input a.sphinx-codeautolink-a'))
  .map(a => a.getAttribute('href')).filter(h => h.includes('reference/') && !h.includes('#module-'))"""

_BACK_LINKS = """(id) => {
  const el = document.getElementById(id);
  const entry = el && el.closest('dl');
  return entry ? Array.from(entry.querySelectorAll('a[href*="chapters/"]')).map(a => a.getAttribute('href')) : null;
}"""


@pytest.mark.parametrize("path", [p for p in (REFERENCE,) if p in PAGES])
def test_reference_has_a_page_per_module(path: str) -> None:
    pages = {p for p in PAGES if p.startswith("book/reference/scansnap")}
    assert "book/reference/scansnap.data.html" in pages and "book/reference/scansnap.theory.decoder.html" in pages
    links = _Links()
    links.feed((SITE / path).read_text(encoding="utf8"))
    linked = {urljoin(path, h).split("#")[0] for h in links.hrefs}
    assert pages <= linked, f"{path} does not link {sorted(pages - linked)}"


@pytest.mark.parametrize("path", [p for p in (CHAPTER,) if p in PAGES and REFERENCE in PAGES])
def test_code_cell_links_to_the_reference_and_back(browser, site_url: str, path: str) -> None:
    """A name in a chapter's code cell links to its entry in the Library reference (an element with that id),
    and the entry links back to the chapter cells' sections that use it."""
    page = browser.new_page()
    try:
        chapter_url = urljoin(site_url, path)
        page.goto(chapter_url, wait_until="load")
        hrefs = page.evaluate(_CELL_LINKS)
        assert hrefs, f"{path}: no code cell links to the Library reference"
        target = urljoin(chapter_url, hrefs[0])
        resp = page.goto(target, wait_until="load")
        fragment = urlsplit(target).fragment
        assert resp is not None and resp.status == 200 and "/book/reference/scansnap" in page.url, target
        back = page.evaluate(_BACK_LINKS, fragment)
        assert back is not None, f"{target}: no element with id {fragment!r}"
        assert back, f"{target}: the entry has no link back to a chapter"
        chapters = [urljoin(page.url, h) for h in back]
        assert any(urlsplit(c).path.endswith("/" + path) for c in chapters), f"{target} does not link back to {path}"
        resp = page.goto(chapters[0], wait_until="load")
        assert resp is not None and resp.status == 200
        anchor = urlsplit(chapters[0]).fragment
        assert not anchor or page.evaluate("(id) => document.getElementById(id) !== null", anchor), chapters[0]
    finally:
        page.close()


# --- negative tests: the same check on pages that are broken on purpose -----------------------


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
