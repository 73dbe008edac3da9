"""The explorable figures of the built site in a real browser (issue 20): each renders, each control moves the
plotted data, the pages make no outside request and log no console error, and Plotly's JavaScript is served once
from the site, never embedded in a page.

Same machinery as ``tests/test_site.py`` (``tests/site_browser.py``: Debian's Chromium through Playwright, the site
served on 127.0.0.1); marked ``site``, so ``make test`` deselects it and ``make site-test`` runs it. Controls are
moved the way a reader moves them: a mouse click on a slider's rail or on a menu button; the test reads
``gd.data`` (the plot's data) before and after. Screenshots of every explorable at two positions of its controls
are saved as ``_build/screenshots/explore-fig<N>-a.png`` and ``-b.png``. Each explorable fits the text column at 1300
px and scrolls inside its own box at 400 px, with no two of its texts overlapping and none cut (issue 25); screenshots
``explore-fig<N>-1300.png`` and ``-400.png``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urljoin

import pytest
from site_browser import SITE, check_page, site_pages

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "_build" / "screenshots"
PLOTLY = "_static/plotly/plotly.min.js"
# anchor -> (page, the controls moved in turn: (name, kind, where to: a slider's step as a fraction of its steps, a
# menu's button index, -1 the last, or "trained")). The "-b" screenshot is taken after the last move. Figures 3 and
# 9 end on the first rate pair that the trained grid has ("trained": read from the figure's states), so the trained
# model's curve must appear.
EXPLORABLES = {
    "explore-fig3": ("book/chapters/06-phase-transition.html",
                     (("eta_Y", "slider", "trained"), ("eta_Z", "slider", "trained"))),
    "explore-fig4": ("book/chapters/05-scanning.html", (("step", "slider", 0.3), ("ratio", "menu", -1))),
    "explore-fig6": ("book/chapters/07-syn-medium.html", (("num_query", "menu", -1), ("eta_Z", "menu", -1))),
    "explore-fig7": ("book/chapters/08-wikitext.html", (("window", "menu", 1), ("checkpoint", "slider", 0.33))),
}
PAGES = site_pages(SITE)
# Sphinx adds "?v=<checksum>" to a static file that the output folder already holds (a rebuild)
SCRIPT_TAG = re.compile(r"""<script[^>]*\ssrc=["'][^"']*_static/plotly/plotly\.min\.js(\?v=\w+)?["']""")

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
_CONTROL_BOX = """([id, kind, k, where]) => {
  const gd = document.getElementById(id);
  if (kind === 'slider') {  // the rail, at the tick of step `where` (Plotly draws a tick for every step)
    const group = gd.querySelectorAll('.slider-group')[k];
    const rail = group.querySelector('.slider-rail-touch-rect').getBoundingClientRect();
    const ticks = group.querySelectorAll('.slider-tick-rect');
    if (ticks.length !== gd.layout.sliders[k].steps.length) return null;
    const t = ticks[where].getBoundingClientRect();
    return {x: t.x + t.width / 2, y: rail.y + rail.height / 2};
  }
  const labels = gd.layout.updatemenus[k].buttons.map(b => b.label).join('|');
  const group = Array.from(gd.querySelectorAll('.updatemenu-container > g.updatemenu-header-group')).find(g =>
    Array.from(g.querySelectorAll('.updatemenu-button')).map(b => b.textContent).join('|') === labels);
  const all = group.querySelectorAll('.updatemenu-button');
  const r = all[(where + all.length) % all.length].getBoundingClientRect();
  return {x: r.x + r.width / 2, y: r.y + r.height / 2};
}"""


# Every visible text of a plot as its turned box on the screen (getBBox's corners through getScreenCTM: tick labels
# turned by 60 degrees are judged by their own box), and what overlaps (separating axes, by more than 1 px) or leaves
# the plot; the explorable's box and the text column's widths.
_LAYOUT = """(id) => {
  const gd = document.getElementById(id), plot = gd.getBoundingClientRect();
  const shown = Array.from(gd.querySelectorAll('svg text')).filter(t => t.textContent.trim()
    && t.getClientRects().length && getComputedStyle(t).visibility !== 'hidden' && +getComputedStyle(t).opacity > 0);
  const boxes = shown.map(t => { const b = t.getBBox(), m = t.getScreenCTM();
    const corners = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]];
    return {text: t.textContent.trim().slice(0, 50),
            p: corners.map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f])}; })
    .filter(q => q.p[0][0] !== q.p[2][0] && q.p[0][1] !== q.p[2][1]);
  const depth = (a, b) => { let d = Infinity;
    for (const q of [a, b]) for (const j of [1, 3]) {
      const ex = q[j][0] - q[0][0], ey = q[j][1] - q[0][1], n = Math.hypot(ex, ey), nx = ex / n, ny = ey / n;
      const pa = a.map(p => p[0] * nx + p[1] * ny), pb = b.map(p => p[0] * nx + p[1] * ny);
      d = Math.min(d, Math.min(Math.max(...pa), Math.max(...pb)) - Math.max(Math.min(...pa), Math.min(...pb))); }
    return d; };
  const problems = [];
  for (const q of boxes) { const xs = q.p.map(p => p[0]), ys = q.p.map(p => p[1]);
    if (Math.min(...xs) < plot.left - 1 || Math.max(...xs) > plot.right + 1 || Math.min(...ys) < plot.top - 1
        || Math.max(...ys) > plot.bottom + 1) problems.push(`cut: ${q.text}`); }
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const d = depth(boxes[i].p, boxes[j].p);
    if (d > 1) problems.push(`overlap: ${boxes[i].text} | ${boxes[j].text} (${Math.round(d)} px)`); }
  const box = gd.closest('.scansnap-explorable'), column = gd.closest('section');
  return {texts: boxes.length, problems: problems, plot: Math.round(plot.width),
          overflow: box && getComputedStyle(box).overflowX, box: box && [box.clientWidth, box.scrollWidth],
          column: [column.clientWidth, column.scrollWidth], top: plot.top + window.scrollY};
}"""


def _order(anchor: str, kind: str, name: str, page) -> int:
    names = page.evaluate("""([id, kind]) => {
      const gd = document.getElementById(id);
      const list = kind === 'slider' ? (gd.layout.sliders || []) : (gd.layout.updatemenus || []);
      return list.map(c => c.name);
    }""", [f"{anchor}-plot", kind])
    return names.index(name)


def _spec(page, anchor: str) -> dict:
    return json.loads(page.evaluate("(id) => JSON.stringify(document.getElementById(id).explorable.spec)",
                                    f"{anchor}-plot"))


def _target(spec: dict, name: str, where) -> int:
    """The position a control is moved to: a button index, a fraction of a slider's steps, or "trained": the
    position of the first state with a trained run (Figures 3 and 9)."""
    i, size = spec["index"][name], spec["sizes"][spec["index"][name]]
    if where == "trained":
        k = next(k for k, st in enumerate(spec["states"]) if "no trained run" not in st["layout"]["title.text"])
        for s in reversed(spec["sizes"][i + 1:]):
            k //= s
        return k % size
    return round(where * (size - 1)) if isinstance(where, float) else where % size


def _move(page, anchor: str, name: str, kind: str, where) -> int:
    """Click the control like a reader; returns the position it was moved to."""
    k, target = _order(anchor, kind, name, page), _target(_spec(page, anchor), name, where)
    at = page.evaluate(_CONTROL_BOX, [f"{anchor}-plot", kind, k, target])
    assert at is not None, f"{anchor}: slider {name!r} has not one tick per step"
    page.mouse.click(at["x"], at["y"])
    page.wait_for_timeout(400)
    return target


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
    loading = {p for p, text in pages.items() if SCRIPT_TAG.search(text)}
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
        for name, kind, where in controls:
            before = page.evaluate(_DATA, f"{anchor}-plot")
            target = _move(page, anchor, name, kind, where)
            after = page.evaluate(_DATA, f"{anchor}-plot")
            assert after["position"] != before["position"], f"{anchor}: {kind} {name!r} did not move"
            assert after["state"] is not None and after["state"] != before["state"]
            assert after["data"] != before["data"], f"{anchor}: moving {name!r} left the plotted data unchanged"
            spec = _spec(page, anchor)
            assert after["position"][spec["index"][name]] == target, f"{anchor}: {name} is not at {target}"
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
        plot.screenshot(path=str(SCREENSHOTS / f"{anchor}-b.png"))
        if anchor == "explore-fig3":  # on the trained grid: the trained model's B_n is drawn beside Eqn 14
            assert "no trained run" not in after["title"], after["title"]
            trained = page.evaluate("(id) => document.getElementById(id).data.find(t => t.name.includes('trained'))"
                                    ".y.length", f"{anchor}-plot")
            assert trained > 10
        assert not errors, f"{anchor}: console or page errors: {errors}"
    finally:
        page.close()


@pytest.mark.parametrize("width", [1300, 400])
@pytest.mark.parametrize("anchor", list(EXPLORABLES))
def test_explorable_fits_its_column_and_nothing_is_cut(browser, site_url: str, anchor: str, width: int) -> None:
    """At 1300 px the explorable is as wide as the text column (it was 957 px in the 704-px column, the theme's
    full-width cell reaching past the page); at 400 px it keeps its least width and scrolls inside its own box,
    the column itself never wider than the window; at both, no two texts of the figure overlap and none is cut."""
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": 1000})
    try:
        page.goto(urljoin(site_url, f"{EXPLORABLES[anchor][0]}#{anchor}"), wait_until="load")
        assert page.evaluate(_READY, f"{anchor}-plot"), f"{anchor}: the figure did not render (no Plotly?)"
        page.evaluate("(id) => document.getElementById(id).scrollIntoView()", f"{anchor}-plot")
        page.wait_for_timeout(300)
        got = page.evaluate(_LAYOUT, f"{anchor}-plot")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)  # the window's width, from the figure's top
        page.screenshot(path=str(SCREENSHOTS / f"{anchor}-{width}.png"), full_page=True,
                        clip={"x": 0, "y": got["top"], "width": width, "height": 1000})
        col_w, col_scroll = got["column"]
        assert col_scroll <= col_w, f"{anchor} at {width} px: the column holds {col_scroll} px in {col_w} px"
        if width == 1300:
            assert got["plot"] == col_w, f"{anchor}: {got['plot']} px wide in a {col_w}-px column"
        assert got["box"] is not None and got["overflow"] == "auto", f"{anchor}: not in a box that scrolls sideways"
        box_w, box_scroll = got["box"]
        assert box_w == col_w and (box_scroll > box_w) == (width == 400), \
            f"{anchor} at {width} px: box {box_w} px holding {box_scroll} px (scrolls only below its least width)"
        assert got["texts"] > 10 and not got["problems"], f"{anchor} at {width} px:\n  " + "\n  ".join(got["problems"])
    finally:
        page.close()
