"""Local Sphinx extension for the scansnap book (loaded from ``_config.yml``: ``sphinx.local_extensions``).

Sphinx 7.4 adds sphinx-thebe's inline configuration script twice to every page, and the
browser then reports ``Identifier 'THEBE_JS_URL' has already been declared``. The book does
not use Thebe (the Binder launch button does not need it), so this extension disconnects
``sphinx_thebe.init_thebe_core``, the handler that adds those scripts.

The claims ledger and the figure gallery read the verdicts and figures that the chapters write
while they execute. Sphinx reads pages in sorted order (``book/chapters/*`` before ``book/claims``
and ``book/figures``), but re-reads only pages whose source changed: this extension marks the two
pages as always outdated, so they are re-read (and, with ``execution_mode: force``, re-executed)
on every build, after the chapters.

sphinx-book-theme 1.3.0 hides its right sidebar (``div.bd-sidebar-secondary``) while a ``full-width``
or margin element is in view, but a page with no section headings (the ledger, the gallery) has
no right sidebar, and its script then throws ``Cannot read properties of null (reading
'classList')`` (a page error in the browser test, ``tests/test_site.py``). On such pages this
extension adds a tiny script that puts an empty, hidden ``div.bd-sidebar-secondary`` in the page
for the theme's script to find.
"""

from __future__ import annotations

from sphinx.application import Sphinx

EVENT = "env-before-read-docs"


def _drop_thebe_scripts(app: Sphinx) -> None:
    try:
        import sphinx_thebe
    except ImportError:  # sphinx-thebe not installed: nothing to disconnect
        return
    for listener in list(app.events.listeners.get(EVENT, [])):
        if listener.handler is sphinx_thebe.init_thebe_core:
            app.disconnect(listener.id)


ALWAYS_REREAD = ("book/claims", "book/figures")


def _always_reread(app: Sphinx, env, added: set, changed: set, removed: set) -> list[str]:
    return [d for d in ALWAYS_REREAD if d in env.found_docs]


# Runs before the theme's DOMContentLoaded handlers fire their IntersectionObserver callbacks.
_SIDEBAR_SHIM = """document.addEventListener("DOMContentLoaded", () => {
  if (!document.querySelector("div.bd-sidebar-secondary")) {
    const d = document.createElement("div");
    d.className = "bd-sidebar-secondary";
    d.style.display = "none";
    d.setAttribute("aria-hidden", "true");
    document.body.appendChild(d);
  }
});"""


def _add_sidebar_shim(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    # pydata-sphinx-theme's html-page-context handler (priority 500) has computed the page's
    # right-sidebar templates; an empty list means the page is rendered without that sidebar.
    if "secondary_sidebar_items" in context and not context["secondary_sidebar_items"]:
        app.add_js_file(None, body=_SIDEBAR_SHIM)


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _drop_thebe_scripts)
    app.connect("html-page-context", _add_sidebar_shim, priority=900)
    app.connect("env-get-outdated", _always_reread)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
