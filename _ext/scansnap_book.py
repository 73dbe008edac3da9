"""Local Sphinx extension for the scansnap book (loaded from ``_config.yml``: ``sphinx.local_extensions``).

Sphinx 7.4 adds sphinx-thebe's inline configuration script twice to every page, and the
browser then reports ``Identifier 'THEBE_JS_URL' has already been declared``. The book does
not use Thebe (the Binder launch button does not need it), so this extension disconnects
``sphinx_thebe.init_thebe_core``, the handler that adds those scripts.

The claims ledger, the figure gallery, "What this book found" and the intro (which shows the ledger's picture) read
the verdicts and figures that the chapters write while they execute. Sphinx reads pages in sorted order
(``book/chapters/*`` before ``book/claims``, ``book/figures``, ``book/found`` and ``book/intro``), but re-reads only
pages whose source changed: this extension marks the four pages as always outdated, so they are re-read (and, with
``execution_mode: force``, re-executed) on every build, after the chapters.

sphinx-book-theme 1.3.0 hides its right sidebar (``div.bd-sidebar-secondary``) while a ``full-width``
or margin element is in view, but a page with no section headings (the ledger, the gallery) has
no right sidebar, and its script then throws ``Cannot read properties of null (reading
'classList')`` (a page error in the browser test, ``tests/test_site.py``). On such pages this
extension adds a tiny script that puts an empty, hidden ``div.bd-sidebar-secondary`` in the page
for the theme's script to find.

**No page is served from an execution against other library code.** jupyter-cache re-executes a notebook only
when its code cells (or its kernelspec) change, and Sphinx re-reads a page only when its source changes; neither
sees an edit under ``scansnap/``. This extension computes, for each notebook page, a hash of the library sources
that page can run (:func:`library_closure`: the ``scansnap`` modules its code cells import, and everything those
import, transitively, with their packages' ``__init__`` files, and the experiment modules
:mod:`scansnap.manifest` gives its chapter), and (1) writes it into the page's kernelspec (``scansnap_sources``)
when Sphinx reads the page, so the cache key changes with the library, and (2) reports the page as outdated when
its hash differs from the one of the last build. An edit to ``scansnap/experiments/ch07_syn_medium.py``
re-executes Chapter 7 and the pages that read every experiment (the ledger, the gallery), no other chapter; an edit
to ``scansnap/data.py`` re-executes every page that (transitively) imports it.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx

from scansnap.closure import _imports_of_module, library_closure, library_hash  # noqa: F401 (re-exported)

EVENT = "env-before-read-docs"


def _drop_thebe_scripts(app: Sphinx) -> None:
    try:
        import sphinx_thebe
    except ImportError:  # sphinx-thebe not installed: nothing to disconnect
        return
    for listener in list(app.events.listeners.get(EVENT, [])):
        if listener.handler is sphinx_thebe.init_thebe_core:
            app.disconnect(listener.id)


ALWAYS_REREAD = ("book/claims", "book/figures", "book/found", "book/intro")  # found, intro: the ledger's tallies


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


def _page_hash(app: Sphinx, docname: str) -> str:
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".md" or not path.is_file():
        return ""
    return page_hash(Path(app.srcdir), path.read_text(), docname)


def stamped(text: str, digest: str) -> str:
    """A page's source with ``digest`` (its library hash) written into its kernelspec: part of the cache key."""
    return re.sub(r"^kernelspec:\n", f"kernelspec:\n  scansnap_sources: {digest}\n", text, count=1, flags=re.M)


def page_hash(root: Path, text: str, docname: str | None = None) -> str:
    """The library hash of a notebook page with source ``text`` (``""`` for a page that is not a notebook);
    ``docname`` (``"book/chapters/07-syn-medium"``) adds the modules of that chapter's experiments
    (:mod:`scansnap.manifest`)."""
    return library_hash(root, text, docname) if re.search(r"^kernelspec:", text, re.M) else ""


def _stamp_kernelspec(app: Sphinx, docname: str, source: list[str]) -> None:
    digest = _page_hash(app, docname)
    if digest:
        source[0] = stamped(source[0], digest)
        app.env.scansnap_hashes = {**getattr(app.env, "scansnap_hashes", {}), docname: digest}


def _library_outdated(app: Sphinx, env, added: set, changed: set, removed: set) -> list[str]:
    _imports_of_module.cache_clear()
    old = getattr(env, "scansnap_hashes", {})
    return [d for d in env.found_docs if d in old and old[d] != _page_hash(app, d)]


def setup(app: Sphinx) -> dict:
    app.connect("source-read", _stamp_kernelspec)
    app.connect("env-get-outdated", _library_outdated)
    app.connect("builder-inited", _drop_thebe_scripts)
    app.connect("html-page-context", _add_sidebar_shim, priority=900)
    app.connect("env-get-outdated", _always_reread)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
