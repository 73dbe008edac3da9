"""Explorable figures: the data behind a re-made paper figure, with sliders and menus, in the rendered book.

The four explorables of the book (Figures 3 and 9 in Chapter 6, Figure 4 in Chapter 5, Figure 6 in Chapter 7,
Figure 7 in Chapter 8) are built by :mod:`scansnap.explore_figures` from results the chapters already compute; this
module holds what they share: :class:`Control` (a slider or a menu), :class:`Explorable` (a Plotly figure plus one
precomputed state per combination of its controls) and the HTML that makes it respond.

**Why Plotly.** Its JavaScript, ``plotly.min.js``, ships inside the Python package (:func:`plotly_js`), so the book
serves it from its own files (``_static/plotly/plotly.min.js``, copied once per build by the ``scansnap_plotly``
Sphinx extension, and loaded only by pages that hold an explorable): no CDN, no outside request, no server.
Sliders and menus (``layout.sliders``, ``layout.updatemenus``) are part of the figure itself; each control here uses
Plotly's ``"skip"`` method and a few lines of page script (:data:`SCRIPT`) that track every control's position and
apply the precomputed state of their combination (``Plotly.update``): two controls (e.g. ``eta_Y`` and
``eta_Z``) act together, which Plotly's own per-step updates cannot express. The page never embeds
``plotly.min.js`` (``include_plotlyjs=False``); the static PNG/SVG beside each explorable stays the citable figure.

**Width.** An explorable takes the width of the text column (Plotly's ``autosize`` and ``responsive``); below
:attr:`Explorable.min_px` (a phone) it keeps that width and scrolls sideways inside its own box, so nothing is
squeezed or cut.

**In a notebook** (Binder, JupyterLab) an explorable is displayed as Plotly's own figure: its MIME bundle
(``Explorable._repr_mimebundle_``) holds ``application/vnd.plotly.v1+json`` (JupyterLab draws it natively:
:meth:`Explorable.notebook_figure`, one control over every combination of the controls, so it works without the
page script) beside the site's ``text/html``; the book's build takes the ``text/html``
(``nb_mime_priority_overrides`` in ``_config.yml`` leaves the Plotly type out).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["MIME", "SCRIPT", "Control", "Explorable", "plotly_js", "rounded"]

MIME = "application/vnd.plotly.v1+json"
"""The MIME type of Plotly's own output, which JupyterLab draws natively (plotly's ``jupyterlab-plotly`` extension)."""

SCRIPT = """(function () {
  var gd = document.getElementById('{plot_id}');
  var spec = %s;
  var pos = spec.active.slice();
  function apply() {
    var k = 0;
    for (var i = 0; i < pos.length; i++) { k = k * spec.sizes[i] + pos[i]; }
    var s = spec.states[k], data = {};
    for (var a in s.data) {  // null: this trace keeps its value (undefined: Plotly.update leaves it as it is)
      data[a] = s.data[a].map(function (v) { return v === null ? undefined : v; });
    }
    gd.dataset.state = String(k);
    return Plotly.update(gd, data, s.layout || {}, s.traces);
  }
  gd.on('plotly_sliderchange', function (e) { pos[spec.index[e.slider.name]] = parseInt(e.step.value, 10); apply(); });
  gd.on('plotly_buttonclicked', function (e) { pos[spec.index[e.menu.name]] = e.active; apply(); });
  gd.explorable = {spec: spec, position: pos, apply: apply};
})();"""
"""The page script of every explorable (``%s``: its :meth:`Explorable.spec` as JSON; ``{plot_id}``: the plot's
``div``, filled by Plotly). It keeps each control's position, applies the state of their combination (row-major
over the controls, the first slowest) and exposes ``gd.explorable`` (the spec, the positions, ``apply()``) and
``gd.dataset.state`` (the index of the state shown) for the book's browser tests."""


def plotly_js() -> Path:
    """The ``plotly.min.js`` that the installed Plotly package ships (what the book serves, once, for Figures 3-9's
    explorables)."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"the plotly package has no {path}: reinstall plotly (requirements.txt)")
    return path


def rounded(x: object, digits: int = 4) -> list:
    """``x`` (any shape) as nested lists of floats rounded to ``digits`` significant digits, ``nan``/``inf`` as
    ``None`` (JSON has no nan): how the explorables of Figures 3-9 keep their page size small."""
    a = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(a)
    finite = np.isfinite(a) & (a != 0)
    mag = np.floor(np.log10(np.abs(a[finite])))
    scale = 10.0 ** (digits - 1 - mag)
    out[finite] = np.round(a[finite] * scale) / scale
    listed = out.tolist()
    bad = ~np.isfinite(a)
    if not bad.any():
        return listed
    return _none_where(listed, bad.tolist())


def _none_where(values, bad):
    if isinstance(values, list):
        return [_none_where(v, b) for v, b in zip(values, bad, strict=True)]
    return None if bad else values


@dataclass(frozen=True)
class Control:
    """One control of an explorable figure (Figures 3-9's explorables): a ``"slider"`` or a ``"menu"`` (a row of
    buttons) named ``name``, whose positions are ``labels`` (``(P,)``), shown first at ``active``."""

    name: str
    title: str
    labels: tuple[str, ...]
    kind: str = "slider"
    active: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("slider", "menu"):
            raise ValueError(f"kind: must be 'slider' or 'menu'; got {self.kind!r}")
        if not self.labels:
            raise ValueError(f"labels of {self.name!r}: must not be empty")
        if not 0 <= self.active < len(self.labels):
            raise ValueError(f"active: must be in [0, {len(self.labels)}); got {self.active}")


@dataclass(frozen=True)
class Explorable:
    """An explorable figure (Figures 3, 4, 6, 7 and 9 of the paper, Chapters 5-8): a Plotly ``figure`` whose
    ``controls`` pick one of ``states``.

    Attributes:
        name: the figure's anchor in its chapter (e.g. ``explore-fig3``); the plot's ``div`` is ``<name>-plot``.
        figure: a ``plotly.graph_objects.Figure`` drawn in the first state (the controls' ``active`` positions).
        controls: ``(C,)`` the sliders and menus, in the order of the state index.
        states: ``prod(len(c.labels))`` states, row-major over ``controls`` (the first slowest); each a dict with
            ``traces`` (trace indices), ``data`` (attribute -> one value per listed trace, as
            ``Plotly.update`` takes it; ``None``: that trace keeps its value, e.g. an ``x`` that every state
            shares, set once in :attr:`figure`) and optionally ``layout`` (a ``Plotly.update`` layout dict).
        axis_px, legend_px: pixels below the plot for the axes' ticks and titles, then for the legend.
        min_px: the narrowest the figure is drawn (px); a narrower column scrolls it sideways.
    """

    name: str
    figure: object
    controls: tuple[Control, ...]
    states: tuple[dict, ...] = field(repr=False)
    axis_px: int = 60
    legend_px: int = 60
    min_px: int = 600

    def __post_init__(self) -> None:
        n = math.prod(len(c.labels) for c in self.controls)
        if len(self.states) != n:
            raise ValueError(f"{self.name}: {len(self.states)} states for controls of {n} combinations")
        if len({c.name for c in self.controls}) != len(self.controls):
            raise ValueError(f"{self.name}: control names must be distinct")

    def index(self, positions: Sequence[int]) -> int:
        """The state index of one position per control (row-major, the first control slowest)."""
        k = 0
        for c, p in zip(self.controls, positions, strict=True):
            if not 0 <= p < len(c.labels):
                raise ValueError(f"{c.name}: position {p} outside [0, {len(c.labels)})")
            k = k * len(c.labels) + p
        return k

    def spec(self) -> dict:
        """What :data:`SCRIPT` reads: control sizes, names -> index, first positions and the states."""
        return {"sizes": [len(c.labels) for c in self.controls],
                "index": {c.name: i for i, c in enumerate(self.controls)},
                "active": [c.active for c in self.controls], "states": list(self.states)}

    def _lines(self) -> tuple[int, int]:
        """Lines (``<br>``) of the longest title, over the figure and every state, and of the longest subplot
        title (0: no subplot titles)."""
        titles = [self.figure.layout.title.text or ""] + [s.get("layout", {}).get("title.text", "") for s in
                                                           self.states]
        subs = [a.text or "" for a in self.figure.layout.annotations]
        return (1 + max(t.count("<br>") for t in titles),
                1 + max(t.count("<br>") for t in subs) if subs else 0)

    def plotly_figure(self):
        """A copy of :attr:`figure` laid out for the page: :attr:`figure`'s ``layout.height`` is the plot's own
        height (px); above it the title (as many lines as the longest state's), a row of menus (each with its
        title on its left) and the subplot titles; below it the axes' ticks and titles (:attr:`axis_px`), the
        legend (:attr:`legend_px`) and the sliders, one under another. The width follows the page."""
        import plotly.graph_objects as go

        fig = go.Figure(self.figure)
        plot = fig.layout.height or 400
        n_sliders = sum(c.kind == "slider" for c in self.controls)
        n_menus = len(self.controls) - n_sliders
        title_lines, sub_lines = self._lines()
        sub = 8 + 17 * sub_lines if sub_lines else 0  # subplot titles, just above the plot
        menu_y = sub + 10  # the menus' row: its bottom, px above the plot
        title_px = 36 + 22 * (title_lines - 1)  # Plotly draws a title's first line at its anchor, the rest below
        top = title_px + (menu_y + 40 if n_menus else sub + 10)
        below = self.axis_px + self.legend_px
        bottom = below + 100 * n_sliders + 10
        px = 1.0 / plot  # paper units per pixel, vertically
        fig.update_annotations(font=dict(size=13))  # the subplot titles
        sliders, menus = [], []
        for c in self.controls:
            if c.kind == "slider":
                sliders.append(dict(
                    name=c.name, active=c.active, currentvalue=dict(prefix=f"{c.title}: ", font=dict(size=13)),
                    pad=dict(t=30, b=5), len=0.9, x=0.05, y=-(below + 100 * len(sliders)) * px, yanchor="top",
                    steps=[dict(method="skip", label=lab, value=str(i), args=[None])
                           for i, lab in enumerate(c.labels)]))
            else:
                x = 0.13 + 0.5 * len(menus)
                menus.append(dict(
                    name=c.name, type="buttons", direction="right", active=c.active, showactive=True,
                    x=x, xanchor="left", y=1 + menu_y * px, yanchor="bottom", pad=dict(l=4, r=4, t=0, b=0),
                    buttons=[dict(method="skip", label=lab, args=[None]) for lab in c.labels]))
                fig.add_annotation(text=f"<b>{c.title}</b>", x=x, y=1 + (menu_y + 14) * px, xref="paper",
                                   yref="paper", xanchor="right", yanchor="middle", showarrow=False)
        fig.update_layout(sliders=sliders, updatemenus=menus, height=plot + top + bottom, width=None, autosize=True,
                          margin=dict(t=top, b=bottom, l=80, r=40),
                          title=dict(y=1 - 25 / (plot + top + bottom), yanchor="bottom", yref="container", x=0.01,
                                     xanchor="left"),  # first line 10-29 px from the top
                          legend=dict(orientation="h", x=0.0, xanchor="left", y=-self.axis_px * px, yanchor="top"))
        return fig

    def notebook_figure(self):
        """The figure a notebook shows (JupyterLab draws Plotly's bundle natively, without the page script): the
        controls of :meth:`plotly_figure` become one control over every combination of their positions (a slider
        whose steps read e.g. ``eta_Y 0.5, eta_Z 0.25``, or a menu when every control is a menu), each step applying
        its state with Plotly's own ``update``; it starts at the controls' ``active`` positions."""
        fig = self.plotly_figure()
        labels = [""]
        for c in self.controls:
            name = c.title.split(" (")[0]  # "eta_Y", not "eta_Y (log scale, ...)"
            labels = [f"{head}, {name} {lab}".lstrip(", ") for head in labels for lab in c.labels]
        steps = [dict(method="update", label=lab, args=self._native(state))
                 for lab, state in zip(labels, self.states, strict=True)]
        active = self.index([c.active for c in self.controls])
        fig.layout.annotations = [a for a in fig.layout.annotations if not (a.text or "").startswith("<b>")]
        if fig.layout.sliders:  # one slider, where the first was; the others' room is given back
            dropped = len(fig.layout.sliders) - 1
            first = fig.layout.sliders[0].to_plotly_json()
            fig.layout.updatemenus = ()
            fig.layout.sliders = [dict(first, name="state", active=active, steps=steps,
                                       currentvalue=dict(prefix="", font=dict(size=13)))]
            fig.update_layout(margin=dict(b=fig.layout.margin.b - 100 * dropped),
                              height=fig.layout.height - 100 * dropped)
        else:  # one drop-down menu, where the first menu was
            first = fig.layout.updatemenus[0].to_plotly_json()
            fig.layout.updatemenus = [dict(first, name="state", type="dropdown", active=active, x=0.0, buttons=[
                dict(method=s["method"], label=s["label"], args=s["args"]) for s in steps])]
        return fig

    def _native(self, state: dict) -> list:
        """``state`` as the arguments of Plotly's ``update`` (data, layout, traces): a ``None`` value (this trace
        keeps its value) becomes the value :attr:`figure` holds, which Plotly's ``update`` would otherwise reset."""
        data = {attr: [self.figure.data[t].to_plotly_json().get(attr) if v is None else v
                       for t, v in zip(state["traces"], values, strict=True)] for attr, values in state["data"].items()}
        return [data, dict(state.get("layout", {})), list(state["traces"])]

    def html(self) -> str:
        """The HTML fragment for the book: the plot's ``div`` and its script, without ``plotly.min.js`` (the page
        loads the site's one copy: the ``scansnap_plotly`` extension), in a box as wide as the text column that
        scrolls sideways below :attr:`min_px`. Where no Plotly is loaded (a notebook that renders HTML only), a
        short note says so instead; the script removes it once the figure is drawn."""
        spec = json.dumps(self.spec(), separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
        note = (f'<p id="{self.name}-note" class="explorable-note"><em>Explorable figure: it responds in the built '
                f"book, which serves Plotly's JavaScript, and in JupyterLab, which draws Plotly's own output of "
                f"this cell.</em></p>")
        script = f"var note = document.getElementById('{self.name}-note'); if (note) note.remove();\n" + SCRIPT % spec
        plot = self.plotly_figure().to_html(
            full_html=False, include_plotlyjs=False, include_mathjax=False, div_id=f"{self.name}-plot",
            default_width="100%", config=dict(responsive=True, displaylogo=False), post_script=script)
        return (f'<div class="scansnap-explorable" style="max-width: 100%; overflow-x: auto">{note}'
                f'<div style="min-width: {self.min_px}px">{plot}</div></div>')

    def _repr_html_(self) -> str:
        """:meth:`html`: what the book's page shows (myst-nb takes ``text/html``)."""
        return self.html()

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict:
        """What a notebook receives: the site's ``text/html`` (:meth:`html`), Plotly's own
        ``application/vnd.plotly.v1+json`` (:meth:`notebook_figure`, drawn natively by JupyterLab) and a
        ``text/plain`` line. The book's build takes the ``text/html`` (``nb_mime_priority_overrides`` in
        ``_config.yml``)."""
        fig = json.loads(self.notebook_figure().to_json())  # plain JSON: numpy arrays as lists
        fig["config"] = {"responsive": True, "displaylogo": False}
        return {"text/html": self.html(), MIME: fig, "text/plain": repr(self)}

    def __repr__(self) -> str:
        return f"<explorable figure {self.name}: {len(self.controls)} controls, {len(self.states)} states>"
