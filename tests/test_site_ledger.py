"""The claims ledger of the built site in a real browser (issue 20, part 2): it sorts, filters, links every claim
by a stable anchor (``claims.html#C24``), shows the picture of claims by chapter, and fits a 1300-pixel and a
400-pixel wide window without cutting a column off; no console error and no outside request while a reader uses it.

Marked ``site`` like ``tests/test_site.py`` (Debian's Chromium through Playwright; the site built by ``make book``,
``$SCANSNAP_SITE`` or ``_build/html``). Screenshots: ``_build/screenshots/claims-ledger-<width>-top.png`` (picture
and controls) and ``claims-ledger-<width>-table.png`` (the table), and ``claims-ledger-400-filtered.png``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from site_browser import _MATHJAX, HOST, goto_quiet, serve
from test_site import PAGES, SCREENSHOTS, SITE

from scansnap.claims import CLAIMS, VERDICTS

pytestmark = pytest.mark.site

LEDGER = "book/claims.html"
GALLERY = "book/figures.html"
WIDTHS = (1300, 400)
SWEEP = (1920, 1024, 900, 768, 740, 720, 700, 640, 500, 360)
"""Window widths around the switch from table to cards (the ledger's box at 43.5em), where a column was once cut."""
IDS = [c.id for c in CLAIMS]
needs_ledger = pytest.mark.skipif(LEDGER not in PAGES, reason=f"no built {LEDGER} (run make book)")


@pytest.fixture(scope="module")
def ledger_url() -> Iterator[str]:
    if not (SITE / LEDGER).is_file():
        pytest.fail(f"no built ledger at {SITE / LEDGER}: run `make book` first, or set SCANSNAP_SITE")
    with serve(SITE) as base:
        yield urljoin(base, LEDGER)


@contextlib.contextmanager
def _open(context, url: str, width: int) -> Iterator[tuple[object, list[str]]]:
    """The ledger in a ``width`` x 900 window, math typeset; yields the page and the problems seen while it is
    open (a request off 127.0.0.1, which is aborted, a console error, a page error, an HTTP status >= 400)."""
    problems: list[str] = []
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": 900})

    def route(r) -> None:
        parts = urlsplit(r.request.url)
        if parts.scheme in {"data", "blob", "about"} or parts.hostname == HOST:
            r.continue_()
        else:
            problems.append(f"off-host request (aborted): {r.request.url}")
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: problems.append(f"console error: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    try:
        goto_quiet(page, url)
        mathjax = page.evaluate(_MATHJAX)
        assert mathjax["loaded"] and mathjax["containers"] > 0 and not mathjax["errors"], mathjax
        yield page, problems
    finally:
        page.close()


_VISIBLE = """() => Array.from(document.querySelectorAll('#ledger table.lp-table tbody tr.lp-row'))
  .filter(r => !r.hidden && r.getBoundingClientRect().height > 0)
  .map(r => ({id: r.id, chapter: r.dataset.chapter, verdict: r.dataset.verdict, evidence: r.dataset.evidence,
              origin: r.dataset.origin, rank: Number(r.dataset.sortVerdict)}))"""

_FIT = """() => {
  const root = document.getElementById('ledger');
  const box = root.querySelector('.lp-scroll');
  const b = box.getBoundingClientRect();
  const seen = {left: 0, right: document.documentElement.clientWidth};
  for (let el = root.parentElement; el && el !== document.documentElement; el = el.parentElement) {
    if (getComputedStyle(el).overflowX !== 'visible') {  // an ancestor that clips (or scrolls) what passes its edge
      const r = el.getBoundingClientRect();
      seen.left = Math.max(seen.left, r.left + el.clientLeft);
      seen.right = Math.min(seen.right, r.left + el.clientLeft + el.clientWidth);
    }
  }
  const cells = Array.from(box.querySelectorAll('tr:not([hidden]) > td, thead th'));
  const cut = cells.filter(c => {
    const r = c.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && (r.right > b.right + 1 || r.left < b.left - 1);
  }).map(c => (c.closest('tr').id || 'head') + ':' + (c.dataset.label || c.textContent.trim().slice(0, 20)));
  const rr = root.getBoundingClientRect();
  return {
    viewport: document.documentElement.clientWidth,
    page: document.documentElement.scrollWidth,
    seen: seen, left: Math.min(b.left, rr.left), right: Math.max(b.right, rr.right),
    table: box.scrollWidth - box.clientWidth,
    root: root.scrollWidth - root.clientWidth,
    cards: getComputedStyle(box.querySelector('tr')).display === 'block',
    cut: cut,
  };
}"""


@needs_ledger
@pytest.mark.parametrize("width", WIDTHS)
def test_ledger_fits_the_window(browser, ledger_url: str, width: int) -> None:
    """At 1300 and 400 pixels the ledger's box lies inside the window, the page does not scroll sideways, and no
    cell of the table reaches past its box (at 400 pixels each row is a card); screenshots of the top (picture and
    controls) and of the table."""
    with _open(browser, ledger_url, width) as (page, problems):
        fit = page.evaluate(_FIT)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"claims-ledger-{width}-top.png"))
        page.evaluate("() => document.querySelector('#ledger .lp-scroll').scrollIntoView()")
        page.screenshot(path=str(SCREENSHOTS / f"claims-ledger-{width}-table.png"))
        assert not problems, "\n".join(problems)
    assert fit["seen"]["left"] - 1 <= fit["left"] and fit["right"] <= fit["seen"]["right"] + 1, \
        f"the ledger reaches past the window or a box that clips it at {width} px: {fit}"
    assert fit["page"] <= fit["viewport"] + 1, f"the page scrolls sideways at {width} px: {fit}"
    assert fit["root"] <= 1, f"the picture or the controls overflow the ledger at {width} px: {fit}"
    assert fit["table"] <= 1 and not fit["cut"], f"cells cut off at {width} px: {fit}"
    assert fit["cards"] == (width < 600), f"rows should be cards only on a narrow window: {fit}"


@needs_ledger
def test_ledger_cuts_no_column_at_any_common_width(browser, ledger_url: str) -> None:
    """From 360 to 1920 pixels wide the table fits its box or its rows are cards: no cell is cut off."""
    bad = {}
    for width in SWEEP:
        with _open(browser, ledger_url, width) as (page, problems):
            fit = page.evaluate(_FIT)
            assert not problems, "\n".join(problems)
        if fit["table"] > 1 or fit["cut"] or fit["page"] > fit["viewport"] + 1:
            bad[width] = {k: fit[k] for k in ("table", "page", "cards")} | {"cut": fit["cut"][:3]}
    assert not bad, f"cells cut off or the page scrolls sideways: {bad}"


@needs_ledger
def test_ledger_sorts(browser, ledger_url: str) -> None:
    """Sorting by verdict (the column's button) changes the order of the rows to best-first, again to worst-first;
    the sort menu (used on narrow screens) sorts by chapter; "show all" restores the claims' order."""
    with _open(browser, ledger_url, 1300) as (page, problems):
        before = [r["id"] for r in page.evaluate(_VISIBLE)]
        assert before == IDS
        page.click("#ledger th[data-sort=verdict] button")
        after = page.evaluate(_VISIBLE)
        ranks = [r["rank"] for r in after]
        assert [r["id"] for r in after] != before and ranks == sorted(ranks), ranks
        assert page.get_attribute("#ledger th[data-sort=verdict]", "aria-sort") == "ascending"
        page.click("#ledger th[data-sort=verdict] button")
        ranks = [r["rank"] for r in page.evaluate(_VISIBLE)]
        assert ranks == sorted(ranks, reverse=True), ranks
        page.select_option("#ledger select[data-sort-select]", "chapter:asc")
        chapters = [int(r["chapter"]) for r in page.evaluate(_VISIBLE)]
        assert chapters == sorted(chapters) and chapters != [int(c.chapter.rsplit("/", 1)[-1][:2]) for c in CLAIMS]
        page.click("#ledger button[data-reset]")
        assert [r["id"] for r in page.evaluate(_VISIBLE)] == IDS
        assert not problems, "\n".join(problems)


def _select(page, name: str, value: str) -> list[dict]:
    page.select_option(f"#ledger select[data-filter={name}]", value)
    return page.evaluate(_VISIBLE)


@needs_ledger
def test_ledger_filters(browser, ledger_url: str) -> None:
    """Each filter (chapter, verdict, evidence kind, origin, words) leaves only the rows that match it, and the count
    says how many; filters combine; "show all" shows every row again. Screenshot of a filtered narrow window."""
    with _open(browser, ledger_url, 400) as (page, problems):
        every = page.evaluate(_VISIBLE)
        assert len(every) == len(IDS)
        rows = _select(page, "chapter", "8")
        assert rows and len(rows) < len(IDS) and {r["chapter"] for r in rows} == {"8"}
        assert page.text_content("#ledger .lp-count").startswith(f"{len(rows)} of {len(IDS)}")
        _select(page, "chapter", "")
        present = {r["verdict"] for r in every}
        for verdict in (v.replace(" ", "-") for v in VERDICTS if v.replace(" ", "-") in present):
            rows = _select(page, "verdict", verdict)
            assert rows and {r["verdict"] for r in rows} == {verdict}
        _select(page, "verdict", "")
        kinds = {k for r in every for k in r["evidence"].split()}
        for kind in kinds:
            rows = _select(page, "evidence", kind)
            assert rows and all(kind in r["evidence"].split() for r in rows), kind
        _select(page, "evidence", "")
        rows = _select(page, "origin", "book")
        assert rows and len(rows) < len(IDS) and {r["origin"] for r in rows} == {"book"}
        rows = _select(page, "chapter", "9")
        assert rows and {(r["origin"], r["chapter"]) for r in rows} == {("book", "9")}
        page.evaluate("() => document.querySelector('#ledger .lp-controls').scrollIntoView()")
        page.screenshot(path=str(SCREENSHOTS / "claims-ledger-400-filtered.png"))
        page.click("#ledger button[data-reset]")
        page.fill("#ledger input[data-filter=text]", "WikiText")
        rows = page.evaluate(_VISIBLE)
        assert rows and len(rows) < len(IDS) and "C40b" in {r["id"] for r in rows}
        page.click("#ledger button[data-reset]")
        assert len(page.evaluate(_VISIBLE)) == len(IDS)
        assert not problems, "\n".join(problems)


@needs_ledger
def test_every_claim_anchor_resolves(browser, ledger_url: str) -> None:
    """Every claim id of ``scansnap.claims.CLAIMS`` is the id of its row; the picture has one chip per claim,
    coloured by the row's verdict and linking to it; following ``claims.html#<id>`` to a row a filter hides shows
    it again; each row holds its rules' history and its verdict changes."""
    with _open(browser, ledger_url, 1300) as (page, problems):
        rows = page.evaluate("""(ids) => ids.map(id => {
          const el = document.getElementById(id);
          return el && el.tagName === 'TR' && el.closest('#ledger') ? el.dataset.verdict : null; })""", IDS)
        assert None not in rows, [i for i, r in zip(IDS, rows, strict=True) if r is None]
        chips = page.evaluate("""() => Array.from(document.querySelectorAll('#ledger a.lp-chip'))
          .map(a => [a.getAttribute('href'), a.className])""")
        assert [h for h, _ in chips] == [f"#{i}" for i in IDS] or sorted(h for h, _ in chips) == sorted(
            f"#{i}" for i in IDS)
        colours = {h[1:]: re.search(r"v-([\w-]+)", cls).group(1) for h, cls in chips}
        assert colours == dict(zip(IDS, rows, strict=True))
        details = page.evaluate("""() => Array.from(document.querySelectorAll('#ledger table.lp-table tbody'))
          .map(g => [g.rows[0].id, (g.querySelector('tr.lp-detail details.lp-more') || {}).textContent || ''])""")
        assert [i for i, _ in details] == IDS or sorted(i for i, _ in details) == sorted(IDS)
        assert all("verdict changes" in text for _, text in details)
        assert any("rule history" in text and "Why:" in text for _, text in details)
        _select(page, "chapter", "1")
        assert page.is_hidden("#C40b")
        page.evaluate("() => { window.location.hash = 'C40b'; }")
        page.wait_for_function("() => !document.getElementById('C40b').hidden")
        assert page.evaluate("() => document.getElementById('C40b').getBoundingClientRect().top") < 900
        assert not problems, "\n".join(problems)


class _Hrefs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href and "claims.html#" in href:
            self.hrefs.append(href)


def test_gallery_and_chapters_link_claims_by_their_anchor() -> None:
    """The gallery's claim cells and the chapters' verdict tables link ``claims.html#<id>`` with an id of
    ``CLAIMS`` (the row's anchor), and point at the ledger page."""
    pages = [p for p in PAGES if p == GALLERY or p.startswith("book/chapters/")]
    if GALLERY not in pages:
        pytest.skip(f"no built {GALLERY}")
    found: dict[str, list[str]] = {}
    for path in pages:
        parser = _Hrefs()
        parser.feed((SITE / path).read_text(encoding="utf8"))
        found[path] = parser.hrefs
    assert found[GALLERY], f"{GALLERY} links no claim"
    assert any(found[p] for p in pages if p != GALLERY), "no chapter links a claim of the ledger"
    bad = [(p, h) for p, hrefs in found.items() for h in hrefs
           if urljoin(p, h).split("#")[0] != LEDGER or h.split("#")[1] not in IDS]
    assert not bad, bad
