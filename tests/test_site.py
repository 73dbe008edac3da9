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
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from site_browser import _MATHJAX, HOST, SITE, check_page, goto_quiet, site_pages

from scansnap.claims import CLAIMS

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "_build" / "screenshots"
# Pages that get a screenshot (site-relative path -> file name under _build/screenshots/).
SCREENSHOT_PAGES = {
    "book/intro.html": "intro.png",
    "book/chapters/01-setting.html": "01-setting.png",
    "book/claims.html": "claims.png",
}
LEDGER = "book/claims.html"
GALLERY = "book/figures.html"


# --- the built site ------------------------------------------------------------------------------

PAGES = site_pages(SITE)


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
            "table.lp-table tbody tr.lp-row", "rows => rows.map(r => (r.cells[0] ? r.cells[0].textContent : '').trim())"
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
    # C33 and C40 each hold two statements (issues 17 and 26)
    paper = [f"C{i}" for i in range(1, 44) if i not in (33, 40)] + ["C33a", "C33b", "C40a", "C40b"]
    assert sorted(c for c in expected if c.startswith("C")) == sorted(paper)


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


# --- the chapters' verdict tables (issue 25): a table a reader can read, at 1300 and 400 px -------------------

CHAPTER_PAGES = [p for p in PAGES if p.startswith("book/chapters/")]
VERDICT_WIDTHS = (1300, 400)

_VERDICT_SECTION = """() => {
  const section = document.querySelector('section#verdicts');
  const pipes = Array.from(document.querySelectorAll('p')).map(p => p.textContent.trim())
    .filter(t => t.startsWith('|')).map(t => t.slice(0, 100));
  if (!section) return {section: false, pipes};
  const tables = Array.from(section.querySelectorAll('table'));
  const rows = t => t.querySelectorAll('tbody tr').length;
  const head = t => t.querySelectorAll('thead tr').length;
  return {section: true, pipes, tables: tables.map(t => ({rows: rows(t), head: head(t)}))};
}"""

# Every element of the Verdicts section lies inside the section's box, unless an ancestor (inside the section)
# scrolls it (overflow-x auto or scroll); an element inside a visually hidden ancestor (1 px, e.g. the cards' table
# head) is not seen. The section itself must lie inside the page's article.
_VERDICT_FIT = """() => {
  const section = document.querySelector('section#verdicts');
  const box = section.getBoundingClientRect();
  const article = (section.closest('article') || document.body).getBoundingClientRect();
  const name = el => el.tagName.toLowerCase() + (el.className && typeof el.className === 'string'
    ? '.' + el.className.trim().split(/\\s+/).join('.') : '') + ' "' + (el.textContent || '').trim().slice(0, 40) + '"';
  const excused = el => {
    for (let a = el.parentElement; a && a !== section; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll') return true;
      const r = a.getBoundingClientRect();
      if (r.width <= 1 || r.height <= 1) return true;
    }
    return false;
  };
  const wide = [];
  for (const el of section.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if ((r.right > box.right + 1 || r.left < box.left - 1) && !excused(el)) {
      wide.push(`${name(el)}: ${Math.round(r.left)}..${Math.round(r.right)} px, section ${Math.round(box.left)}..` +
                `${Math.round(box.right)} px`);
    }
  }
  return {wide, section: [box.left, box.right], article: [article.left, article.right]};
}"""


_SECTION_BOX = """() => {
  const r = document.querySelector('section#verdicts').getBoundingClientRect();
  return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height};
}"""


def _recorded_per_page(site: Path) -> dict[str, int]:
    """Chapter page -> how many verdicts the site's ``verdicts/<claim>.json`` link to it (one per claim and kind of
    evidence, each recorded by the chapter that made it: a central claim's kinds may come from two chapters)."""
    counts: dict[str, int] = {}
    ids = {c.id for c in CLAIMS}
    for path in sorted((site / "verdicts").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf8"))
        if data["claim"] not in ids:
            continue
        for v in data["verdicts"]:
            page = v["link"].partition("#")[0]
            counts[page] = counts.get(page, 0) + 1
    return counts


@contextlib.contextmanager
def _chapter(context, url: str, width: int) -> Iterator[object]:
    """The page at ``url`` in a ``width`` x 1000 window, loaded and its math typeset."""
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": 1000})
    try:
        goto_quiet(page, url)
        page.evaluate(_MATHJAX)
        yield page
    finally:
        page.close()


def test_every_chapter_is_checked_for_its_verdicts() -> None:
    assert len(CHAPTER_PAGES) == 9, f"{SITE}: expected the nine chapter pages, found {CHAPTER_PAGES}"
    assert (SITE / "verdicts").is_dir(), f"{SITE} publishes no verdicts/ (the chapters record them)"


@pytest.mark.parametrize("path", CHAPTER_PAGES)
def test_chapter_verdicts_are_a_table(browser, site_url: str, path: str) -> None:
    """The chapter's Verdicts section holds one HTML table with a header row and one row per verdict its claims
    have (the site's ``verdicts/*.json``), and no paragraph of the page starts with ``|`` (a pipe table that
    CommonMark left as text)."""
    want = _recorded_per_page(SITE).get(path, 0)
    assert want, f"{path}: the site records no verdict of this chapter's claims"
    with _chapter(browser, urljoin(site_url, path), 1300) as page:
        found = page.evaluate(_VERDICT_SECTION)
    problems = [f"a paragraph starts with '|': {p!r}" for p in found["pipes"]]
    if not found["section"]:
        problems.append("no section#verdicts")
    elif len(found["tables"]) != 1:
        problems.append(f"the Verdicts section holds {len(found['tables'])} tables, not 1")
    else:
        (table,) = found["tables"]
        if table["head"] != 1 or table["rows"] != want:
            problems.append(f"the verdict table has {table['head']} header rows and {table['rows']} rows; "
                            f"the site records {want} verdicts of this chapter's claims")
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("width", VERDICT_WIDTHS)
@pytest.mark.parametrize("path", CHAPTER_PAGES)
def test_chapter_verdicts_fit_the_column(browser, site_url: str, path: str, width: int) -> None:
    """At 1300 and 400 px nothing of the Verdicts section is wider than the section (unless it scrolls in its own
    box) and the section lies inside the article. Screenshot of the section:
    ``_build/screenshots/verdicts-<chapter>-<width>.png``."""
    stem = Path(path).stem
    with _chapter(browser, urljoin(site_url, path), width) as page:
        assert page.locator("section#verdicts").count() == 1, f"{path}: no section#verdicts"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        # the whole page, clipped to the section: an element screenshot scrolls, and the theme's sticky header
        # would then cover part of the section
        box = page.evaluate(_SECTION_BOX)
        page.screenshot(path=str(SCREENSHOTS / f"verdicts-{stem}-{width}.png"), full_page=True, clip=box)
        fit = page.evaluate(_VERDICT_FIT)
    problems = [f"wider than the section: {w}" for w in fit["wide"][:12]]
    (left, right), (a_left, a_right) = fit["section"], fit["article"]
    if left < a_left - 1 or right > a_right + 1:
        problems.append(f"the section ({left:.0f}..{right:.0f} px) leaves the article ({a_left:.0f}..{a_right:.0f})")
    assert not problems, f"{path} at {width} px ({len(fit['wide'])} elements too wide):\n  " + "\n  ".join(problems)


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

