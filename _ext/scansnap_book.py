"""Local Sphinx extension for the scansnap book (loaded from ``_config.yml``: ``sphinx.local_extensions``).

Sphinx 7.4 adds sphinx-thebe's inline configuration script twice to every page, and the
browser then reports ``Identifier 'THEBE_JS_URL' has already been declared``. The book does
not use Thebe (the Binder launch button does not need it), so this extension disconnects
``sphinx_thebe.init_thebe_core``, the handler that adds those scripts.
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


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _drop_thebe_scripts)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
