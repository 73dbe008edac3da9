"""Local Sphinx extension for the Library reference: a cross-reference to a name as a module sees it resolves
to the entry of the object it names.

``scansnap`` re-exports names (``scansnap.theory.gamma`` is ``scansnap.theory.decoder.gamma``) and docstrings
refer to names imported into their module (``:func:`modal_set``` in a module that imports it). The reference
documents each object once, where it is defined; on a ``missing-reference``, this extension imports the target
(absolute, or relative to the module of the docstring), takes the object's ``__module__`` and ``__qualname__``,
and links to that entry when it exists. A target that names no object of ``scansnap`` stays unresolved, so
``-n`` still fails on it.

It also mends sphinx-codeautolink 0.19.0's cache (:func:`_read_codeautolink_cache`), so that an incremental build
keeps the links from the chapters' code cells to the reference.
"""

from __future__ import annotations

import importlib
import json
import re

from sphinx.application import Sphinx
from sphinx.util.nodes import make_refnode


def _lookup(dotted: str) -> object | None:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:  # noqa: BLE001 - not a module (or one that fails to import): try a shorter prefix
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _canonical(obj: object) -> str | None:
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(obj, type(importlib)):
        return obj.__name__
    return f"{module}.{qualname}" if module and qualname else None


def _data_entry(domain, obj: object) -> str | None:
    """The documented module-level constant that is ``obj`` (an instance has no ``__qualname__``)."""
    for name, entry in domain.objects.items():
        if entry.objtype == "data" and name.startswith("scansnap.") and _lookup(name) is obj:
            return name
    return None


def _resolve(app: Sphinx, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    module = node.get("py:module")
    candidates = [f"{module}.{target}", target] if module else [target]
    domain = env.get_domain("py")
    for dotted in candidates:
        if not dotted.startswith("scansnap"):
            continue
        obj = _lookup(dotted)
        name = _canonical(obj) if obj is not None else None
        if obj is not None and (name is None or name not in domain.objects) and not callable(obj):
            name = _data_entry(domain, obj) or name
        if name and name in domain.objects:
            entry = domain.objects[name]
            return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, name)
        if name and name in domain.modules:
            entry = domain.modules[name]
            return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, name)
    return None


_SECTION_FIRST = re.compile(r"^(Attributes|Args|Arguments|Returns|Raises|Yields)( \(.*\))?:$")


def _indent_first_line_section(app: Sphinx, what: str, name: str, obj: object, options, lines: list[str]) -> None:
    """A docstring that opens with its section (``\"\"\"Attributes:``) loses the section's indentation to
    ``inspect.cleandoc``; indent its body again so that napoleon reads the section (runs before napoleon)."""
    if lines and _SECTION_FIRST.match(lines[0]) and len(lines) > 1 and lines[1] and not lines[1].startswith(" "):
        end = next((i for i, line in enumerate(lines) if i and not line.strip()), len(lines))
        lines[1:end] = ["    " + line for line in lines[1:end]]


CODEAUTOLINK = "0.19.0"
"""The sphinx-codeautolink whose cache :func:`_read_codeautolink_cache` mends (``requirements.txt`` pins it)."""


def _read_codeautolink_cache(self) -> None:
    """``DataCache.read`` of sphinx-codeautolink 0.19.0, keeping a cached page whose source is ``.md``/``.ipynb``.

    Upstream keeps a page's cached code-cell links only when ``<page>.rst`` exists. Every page of this book is
    Markdown, so an incremental build dropped them all, and a chapter Sphinx wrote again without reading it (its
    HTML was older than a page it depends on, or missing) lost every link from its code cells to the reference
    (seen locally: no link in any chapter). The rest is upstream's code, unchanged."""
    from sphinx_codeautolink.extension.block import CodeExample, Name, SourceTransform

    cache = self.cache_dir / self.cache_filename
    if not cache.exists():
        return
    for file, transforms in json.loads(cache.read_text("utf-8")).items():
        if not any((self.src_dir / (file + suffix)).exists() for suffix in (".rst", ".md", ".ipynb")):
            continue
        for transform in transforms:
            transform["example"] = CodeExample(**transform["example"])
            transform["names"] = [Name(**n) for n in transform["names"]]
        self.transforms[file] = [SourceTransform(**t) for t in transforms]


def setup(app: Sphinx) -> dict:
    import sphinx_codeautolink
    from sphinx_codeautolink.extension.cache import DataCache

    if sphinx_codeautolink.__version__ == CODEAUTOLINK:
        DataCache.read = _read_codeautolink_cache
    app.connect("missing-reference", _resolve)
    app.connect("autodoc-process-docstring", _indent_first_line_section, priority=400)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
