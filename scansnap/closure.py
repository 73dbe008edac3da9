"""Which library sources a page can run: the ``scansnap`` modules it imports, theirs, transitively, and the
experiment modules of the experiments it shows.

Its user is the book's page cache (``_ext/scansnap_book.py``: a page is re-executed when a source it can run
changes). Stored runs do not use it: a stored run is stale only when a function it executes changes
(:mod:`scansnap.codehash`). Import statements are read with ``ast`` (modules) and a regular expression (a page's code
cells), never executed; an import under ``if TYPE_CHECKING:`` does not run and is not counted.

Experiment modules are imported lazily, by :mod:`scansnap.experiments`, from :mod:`scansnap.manifest` (the one
registry), so no import statement names them. A page runs the modules of:

* the experiments of its own chapter (the manifest's ``chapter``, when ``page`` names a chapter);
* every experiment or figure id quoted in its code (``experiments.make("fig-paper-6")``);
* every experiment, when a module it runs reads them all (calls ``all_rules()``, ``all_experiments()`` or
  ``experiments.modules()``: the ledger, the gallery, the command line).

So editing ``scansnap/experiments/ch07_syn_medium.py`` re-executes Chapter 7 and the pages that read every
experiment, and no other chapter. Any other package whose ``__init__`` loads its submodules by name
(``importlib.import_module``, as ``scansnap.theory`` does) is taken to run all of them.
"""

from __future__ import annotations

import ast
import hashlib
import re
from functools import cache
from pathlib import Path

from scansnap import manifest

__all__ = ["library_closure", "library_hash"]

LIBRARY = "scansnap"
LAZY = manifest.PACKAGE
"""The package whose submodules are imported from the manifest, on demand (not all at once)."""
READS_ALL = frozenset({"all_rules", "all_experiments"})
"""Calls that import every experiment module (and ``experiments.modules()``)."""
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


def _type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _run_nodes(tree: ast.AST):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        todo += [child for child in ast.iter_child_nodes(node) if not _type_checking(child)]


def _reads_all(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id in READS_ALL) or (isinstance(f, ast.Attribute) and (
        f.attr in READS_ALL or (f.attr == "modules" and isinstance(f.value, ast.Name) and f.value.id == "experiments")))


@cache
def _imports_of_module(root: Path, name: str) -> frozenset[str]:
    path = module_file(root, name)
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _run_nodes(tree):
        if name != LAZY and _reads_all(node):
            found |= _all_experiment_modules()
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [module]).strip(".")
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names}
    if path.name == "__init__.py" and name != LAZY and "import_module(" in path.read_text():
        found |= set(_submodules(root, name))
    return frozenset(m for m in found if m.split(".")[0] == LIBRARY and module_file(root, m))


def _all_experiment_modules() -> set[str]:
    return {manifest.module_name(m) for m in manifest.MODULES}


def _asked_for(source: str, page: str | None) -> set[str]:
    """The experiment modules a page runs though it imports none of them by name: those of its chapter's
    experiments, and of every experiment or figure id quoted in its code."""
    chapter = manifest.chapter_of(page) if page else None
    found = set(manifest.modules_of(chapter)) if chapter else set()
    for quoted in re.findall(r"""["']([\w.-]+)["']""", source):
        if quoted in manifest.entries():
            found.add(manifest.entries()[quoted].module)
        elif quoted in manifest.figure_ids():
            found.add(manifest.owner(quoted).module)
    return found


def _submodules(root: Path, package: str) -> list[str]:
    """Every module and subpackage directly inside ``package``: a package ``__init__`` that loads its
    submodules by name (``importlib.import_module``, as ``scansnap.theory`` does) runs all of them, though no
    import statement names them."""
    folder = root.joinpath(*package.split("."))
    found = [f"{package}.{p.stem}" for p in folder.glob("*.py") if p.name != "__init__.py"]
    found += [f"{package}.{p.parent.name}" for p in folder.glob("*/__init__.py")]
    return sorted(found)


def library_closure(root: Path, source: str, page: str | None = None) -> list[str]:
    """Every ``scansnap`` module a page with code ``source`` can run: its imports, theirs, transitively, the
    packages (``__init__``) above each, and the experiment modules it runs through the manifest (those of its
    chapter, when ``page`` (a docname or path) is a chapter, and of the ids its code quotes). ``root``: the folder
    holding ``scansnap/``."""
    imports = _imports_of_source(root, source)
    asked = _asked_for(source, page) if imports else set()
    if imports and re.search(r"\b(all_rules|all_experiments)\(|\bexperiments\.modules\(", source):
        asked |= _all_experiment_modules()
    todo, seen = [m for m in sorted(imports | asked) if module_file(root, m)], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += sorted(_imports_of_module(root, name))
    return sorted(seen)


def library_hash(root: Path, source: str, page: str | None = None) -> str:
    """sha256 over the files of :func:`library_closure` (their paths and bytes); ``""`` for a page
    that imports nothing from the library."""
    h = hashlib.sha256()
    modules = library_closure(root, source, page)
    for name in modules:
        path = module_file(root, name)
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16] if modules else ""
