"""Local Sphinx extension: serve Plotly's JavaScript once, from the site, to the pages with an explorable figure.

The explorable figures (:mod:`scansnap.explore`) are written into the pages without ``plotly.min.js``
(``include_plotlyjs=False``). This extension

* copies the ``plotly.min.js`` that the installed ``plotly`` package ships (:func:`scansnap.explore.plotly_js`) to
  ``_static/plotly/plotly.min.js`` of the HTML output, once per build (no CDN, no outside request), and
* adds ``<script src="_static/plotly/plotly.min.js">`` (synchronous, in the page head, so the figures' inline
  scripts find ``Plotly``) to exactly the pages whose body holds a Plotly figure (``plotly-graph-div``): every
  other page is left as it was.

It is not under the source ``_static/`` folder on purpose: Jupyter Book adds every ``.js`` file there to every page.

An explorable's output also holds Plotly's own ``application/vnd.plotly.v1+json`` (for JupyterLab). myst-nb renders
every type of an output while it reads a page and only then keeps the one the builder prefers (``text/html`` here:
``nb_mime_priority_overrides`` in ``_config.yml`` leaves the Plotly type out), and warns on the way that it skips a
type it has no renderer for; the strict build (``-W``) would fail on that. This extension adds that warning
(``mystnb.unknown_mime_type``) to ``suppress_warnings``. An output with no type the site can show still fails the
build: myst-nb's ``mystnb.mime_priority`` warning ("No mime type available in priority list") stays on.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx

TARGET = "plotly/plotly.min.js"  # under _static/
MARKER = "plotly-graph-div"


def _add_plotly(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if MARKER in (context.get("body") or ""):
        app.add_js_file(TARGET, priority=200)  # before the theme's scripts; for this page only


def _copy_plotly(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from scansnap.explore import plotly_js

    out = Path(app.outdir) / "_static" / TARGET
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(plotly_js(), out)


SKIPPED_TYPE = "mystnb.unknown_mime_type"


def _allow_notebook_types(app: Sphinx, config) -> None:
    if SKIPPED_TYPE not in config.suppress_warnings:
        config.suppress_warnings = [*config.suppress_warnings, SKIPPED_TYPE]


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _allow_notebook_types)
    app.connect("html-page-context", _add_plotly)
    app.connect("build-finished", _copy_plotly)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
