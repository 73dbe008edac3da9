"""Which library sources a page can run: the ``scansnap`` modules it imports, theirs, transitively.

Its user is the book's page cache (``_ext/scansnap_book.py``: a page is re-executed when a source it can run
changes). A stored run does not use it: it is stale only when a function it executes changes
(:mod:`scansnap.codehash`). Import statements are read with ``ast`` (modules) and a regular expression (a page's code
cells), never executed. A package whose ``__init__`` loads its submodules by name (``importlib.import_module``,
as ``scansnap.theory`` and ``scansnap.experiments`` do) is taken to run all of them.
"""

from __future__ import annotations

import ast
import hashlib
import re
from functools import cache
from pathlib import Path

__all__ = ["library_closure", "library_hash"]

LIBRARY = "scansnap"
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(scansnap[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[\w \t,]+)"
                     r"|import[ \t]+(scansnap[\w.]*))", re.M)


def module_file(root: Path, name: str) -> Path | None:
    base = root.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _imports_of_source(root: Path, source: str) -> set[str]:
    """The ``scansnap`` modules named by the import statements in ``source`` (``from scansnap import data``
    names ``scansnap.data`` when that is a module)."""
    found: set[str] = set()
    for frm, names, plain in _IMPORT.findall(source):
        module = frm or plain
        found.add(module)
        for name in re.split(r"[\s,()]+", names):
            name = name.split(" as ")[0].strip()
            if name and module_file(root, f"{module}.{name}"):
                found.add(f"{module}.{name}")
    return {m for m in found if module_file(root, m)}


@cache
def _imports_of_module(root: Path, name: str) -> frozenset[str]:
    path = module_file(root, name)
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [module]).strip(".")
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names}
    if path.name == "__init__.py" and "import_module(" in path.read_text():
        found |= set(_submodules(root, name))
    return frozenset(m for m in found if m.split(".")[0] == LIBRARY and module_file(root, m))


def _submodules(root: Path, package: str) -> list[str]:
    """Every module and subpackage directly inside ``package``: a package ``__init__`` that loads its
    submodules by name (``importlib.import_module``, as ``scansnap.theory`` and ``scansnap.experiments`` do)
    runs all of them, though no import statement names them."""
    folder = root.joinpath(*package.split("."))
    found = [f"{package}.{p.stem}" for p in folder.glob("*.py") if p.name != "__init__.py"]
    found += [f"{package}.{p.parent.name}" for p in folder.glob("*/__init__.py")]
    return sorted(found)


def library_closure(root: Path, source: str) -> list[str]:
    """Every ``scansnap`` module a page with code ``source`` can run: its imports, theirs, transitively, and
    the packages (``__init__``) above each. ``root``: the folder holding ``scansnap/``."""
    todo, seen = list(_imports_of_source(root, source)), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += sorted(_imports_of_module(root, name))
    return sorted(seen)


def library_hash(root: Path, source: str) -> str:
    """sha256 over the files of :func:`library_closure` (their paths and bytes); ``""`` for a page
    that imports nothing from the library."""
    h = hashlib.sha256()
    modules = library_closure(root, source)
    for name in modules:
        path = module_file(root, name)
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16] if modules else ""
