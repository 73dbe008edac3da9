"""The browser machinery of the site tests (``tests/test_site.py``, ``tests/test_site_checker.py``): Debian's
Chromium driven by Playwright (never ``playwright install``), a local ``http.server`` on 127.0.0.1, and
:func:`check_page`, the one function that decides what is wrong with a page. Not a test module; the
``browser`` fixture in ``tests/conftest.py`` opens :func:`chromium`."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

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
SITE = Path(os.environ.get("SCANSNAP_SITE", "_build/html"))
SITE = SITE if SITE.is_absolute() else Path(__file__).resolve().parent.parent / SITE
"""The built site the site tests open: ``$SCANSNAP_SITE``, else ``_build/html`` of this checkout."""


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


@contextlib.contextmanager
def chromium() -> Iterator[object]:
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


def goto_quiet(page, url: str, quiet_s: float = 0.5, timeout_s: float = 10.0):
    """Open ``url`` in ``page``, wait for its ``load`` event, then until none of its requests has been in flight
    for ``quiet_s`` seconds (at most ``timeout_s``); returns ``page.goto``'s response.

    Playwright's ``networkidle`` is Chromium's lifecycle event, and on some chapter pages it never came although
    no request was in flight (measured: nothing requested after ``load`` + 0.1 s): each such page then waited
    out the 10 s timeout. Here the page's own ``request``/``requestfinished``/``requestfailed`` events are
    counted, so a late request (a redirect's page, a lazy image, a font) is still waited for.
    """
    inflight: set[object] = set()
    last = [time.monotonic()]

    def start(req) -> None:
        inflight.add(req)
        last[0] = time.monotonic()

    def end(req) -> None:
        inflight.discard(req)
        last[0] = time.monotonic()

    page.on("request", start)
    page.on("requestfinished", end)
    page.on("requestfailed", end)
    try:
        resp = page.goto(url, wait_until="load")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and (inflight or time.monotonic() - last[0] < quiet_s):
            page.wait_for_timeout(50)
        page.wait_for_load_state("load")
        return resp
    finally:
        page.remove_listener("request", start)
        page.remove_listener("requestfinished", end)
        page.remove_listener("requestfailed", end)


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

# MathJax is loaded by an async script, which runs before the page's load event: after it (goto_quiet), a page
# whose MathJax is not there after 5 s will not get it.
_MATHJAX = """async () => {
  const deadline = Date.now() + 5000;
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
        # Let a redirect (index.html is a <meta http-equiv="Refresh"> to the intro) and late
        # requests finish: the checks below then run on the page the reader ends up on.
        resp = goto_quiet(page, url)
        if resp is None:
            problems.append(f"no response for {url}")
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
