"""The explorable figures of the built site in a real browser (issue 20): each renders, each control moves the
plotted data, the pages make no outside request and log no console error, and Plotly's JavaScript is served once
from the site, never embedded in a page.

Same machinery as ``tests/test_site.py`` (``tests/site_browser.py``: Debian's Chromium through Playwright, the site
served on 127.0.0.1); marked ``site``, so ``make test`` deselects it and ``make site-test`` runs it. Controls are
moved the way a reader moves them: a mouse click on a slider's rail or on a menu button; the test reads
``gd.data`` (the plot's data) before and after. Screenshots of every explorable at two positions of its controls
are saved as ``_build/screenshots/explore-fig<N>-a.png`` and ``-b.png``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import pytest
from site_browser import check_page, serve, site_pages

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parent.parent
SITE = Path(os.environ.get("SCANSNAP_SITE", "_build/html"))
SITE = SITE if SITE.is_absolute() else ROOT / SITE
SCREENSHOTS = ROOT / "_build" / "screenshots"
PLOTLY = "_static/plotly/plotly.min.js"
# anchor -> (page, the controls moved in turn: (name, kind, position to move to: a fraction of a slider's rail or
# a menu's button index)). The first move is the one of the "-b" screenshot.
EXPLORABLES = {
    "explore-fig3": ("book/chapters/06-phase-transition.html", (("eta_Y", "slider", 0.85), ("eta_Z", "slider", 0.1))),
    "explore-fig4": ("book/chapters/05-scanning.html", (("step", "slider", 0.3), ("ratio", "menu", -1))),
    "explore-fig6": ("book/chapters/07-syn-medium.html", (("num_query", "menu", -1), ("eta_Z", "menu", -1))),
    "explore-fig7": ("book/chapters/08-wikitext.html", (("checkpoint", "slider", 1.0), ("window", "menu", 1))),
}
PAGES = site_pages(SITE)

_READY = """async (id) => {
  const deadline = Date.now() + 20000;
  let gd = document.getElementById(id);
  while (!(gd && gd._fullLayout && gd.explorable && window.Plotly)) {
    if (Date.now() > deadline) return false;
    await new Promise(r => setTimeout(r, 100));
    gd = document.getElementById(id);
  }
  return true;
}"""

_DATA = """(id) => {
  const gd = document.getElementById(id);
  return {state: gd.dataset.state || null, position: gd.explorable.position.slice(),
          title: (gd.layout.title && gd.layout.title.text) || '',
          data: JSON.stringify(gd.data.map(t => [t.x, t.y, t.z])),
          paths: Array.from(gd.querySelectorAll('.scatterlayer path.js-line, .barlayer path, .heatmaplayer image'))
            .map(p => p.getAttribute('d') || p.getAttribute('href') || '').join('|').length};
}"""

# The bounding box of slider k's rail, or of button j of menu k (Plotly draws sliders and menus in order).
_CONTROL_BOX = """([id, kind, k, j]) => {
  const gd = document.getElementById(id);
  let el;
  if (kind === 'slider') {
    el = gd.querySelectorAll('.slider-group')[k].querySelector('.slider-rail-touch-rect');
  } else {  // the button group whose labels are menu k's (type "buttons": one header group per menu)
    const labels = gd.layout.updatemenus[k].buttons.map(b => b.label).join('|');
    const group = Array.from(gd.querySelectorAll('.updatemenu-container > g.updatemenu-header-group')).find(g =>
      Array.from(g.querySelectorAll('.updatemenu-button')).map(b => b.textContent).join('|') === labels);
    const all = group.querySelectorAll('.updatemenu-button');
    el = all[(j + all.length) % all.length];
  }
  const r = el.getBoundingClientRect();
  return {x: r.x, y: r.y, width: r.width, height: r.height};
}"""


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE} (index.html missing): run `make book` first, or set SCANSNAP_SITE")
    with serve(SITE) as base:
        yield base


def _order(anchor: str, kind: str, name: str, page) -> int:
    names = page.evaluate("""([id, kind]) => {
      const gd = document.getElementById(id);
      const list = kind === 'slider' ? (gd.layout.sliders || []) : (gd.layout.updatemenus || []);
      return list.map(c => c.name);
    }""", [f"{anchor}-plot", kind])
    return names.index(name)


def _move(page, anchor: str, name: str, kind: str, where: float) -> None:
    k = _order(anchor, kind, name, page)
    box = page.evaluate(_CONTROL_BOX, [f"{anchor}-plot", kind, k, int(where) if kind == "menu" else 0])
    page.mouse.click(box["x"] + (box["width"] * where if kind == "slider" else box["width"] / 2),
                     box["y"] + box["height"] / 2)
    page.wait_for_timeout(400)


def test_plotly_is_served_once_and_only_where_needed() -> None:
    """One ``plotly.min.js``, under ``_static/plotly/``; no page embeds Plotly's source; exactly the pages with an
    explorable load it; none loads it from another host."""
    js = SITE / PLOTLY
    assert js.is_file() and js.stat().st_size > 1_000_000, f"no {PLOTLY} in {SITE}"
    copies = [p for p in SITE.rglob("plotly*.js") if p != js]
    assert not copies, f"more than one copy of Plotly's JavaScript: {copies}"
    pages = {p: (SITE / p).read_text(encoding="utf8") for p in PAGES}
    embedded = [p for p, text in pages.items() if "plotly.js v" in text]
    assert not embedded, f"pages that embed plotly.js: {embedded}"
    loading = {p for p, text in pages.items() if "plotly/plotly.min.js" in text}
    holding = {p for p, text in pages.items() if "plotly-graph-div" in text}
    assert {v[0] for v in EXPLORABLES.values()} <= holding
    assert loading == holding, f"load Plotly without a figure: {loading - holding}; need it: {holding - loading}"
    for p in loading:
        assert "cdn.plot.ly" not in pages[p] and "cdn.jsdelivr" not in pages[p]


@pytest.mark.parametrize("anchor", list(EXPLORABLES))
def test_explorable_page_is_clean(browser, site_url: str, anchor: str) -> None:
    """The page of the explorable: no outside request, console error, page error or failed request."""
    path = EXPLORABLES[anchor][0]
    assert path in PAGES, f"{path} was not built"
    problems = check_page(browser, urljoin(site_url, path))
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("anchor", list(EXPLORABLES))
def test_controls_change_the_plotted_data(browser, site_url: str, anchor: str) -> None:
    """Each control, clicked like a reader clicks it, changes the figure's data (``gd.data``) to the state of the
    new positions; screenshots of the figure before (``-a``) and after (``-b``) the first move."""
    path, controls = EXPLORABLES[anchor]
    page = browser.new_page()
    page.set_viewport_size({"width": 1300, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(urljoin(site_url, f"{path}#{anchor}"), wait_until="load")
        assert page.evaluate(_READY, f"{anchor}-plot"), f"{anchor}: the figure did not render (no Plotly?)"
        plot = page.locator(f"#{anchor}-plot")
        plot.scroll_into_view_if_needed()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        plot.screenshot(path=str(SCREENSHOTS / f"{anchor}-a.png"))
        for i, (name, kind, where) in enumerate(controls):
            before = page.evaluate(_DATA, f"{anchor}-plot")
            _move(page, anchor, name, kind, where)
            after = page.evaluate(_DATA, f"{anchor}-plot")
            assert after["position"] != before["position"], f"{anchor}: {kind} {name!r} did not move"
            assert after["state"] is not None and after["state"] != before["state"]
            assert after["data"] != before["data"], f"{anchor}: moving {name!r} left the plotted data unchanged"
            spec = json.loads(page.evaluate("(id) => JSON.stringify(document.getElementById(id).explorable.spec)",
                                            f"{anchor}-plot"))
            k = 0
            for size, p in zip(spec["sizes"], after["position"], strict=True):
                k = k * size + p
            assert int(after["state"]) == k, f"{anchor}: shows state {after['state']}, positions give {k}"
            shown = json.loads(after["data"])
            state = spec["states"][k]
            for j, t in enumerate(state["traces"]):
                for attr, col in (("x", 0), ("y", 1), ("z", 2)):
                    value = state["data"].get(attr, [None] * len(state["traces"]))[j]
                    if value is not None:
                        assert shown[t][col] == value, f"{anchor}: trace {t}'s {attr} is not the state's"
            if "title.text" in state.get("layout", {}):
                assert after["title"] == state["layout"]["title.text"]
            if i == 0:
                plot.screenshot(path=str(SCREENSHOTS / f"{anchor}-b.png"))
        assert not errors, f"{anchor}: console or page errors: {errors}"
    finally:
        page.close()
