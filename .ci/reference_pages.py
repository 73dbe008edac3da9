"""Write the "Library reference" part of the book: one page per public module of ``scansnap``.

``python .ci/reference_pages.py`` (``make reference``) writes ``book/reference/<module>.md`` for every public
module (``automodule`` with its members, from the docstrings: Sphinx autodoc) and ``book/reference/index.md``
(a summary table of the modules), and removes the page of a module that is gone. ``_toc.yml`` takes the
pages with a glob, so a new module needs no edit there; ``tests/test_reference.py`` fails when the pages
are out of date. Public: every module under ``scansnap`` whose dotted name has no part starting with ``_``,
except the legacy ``scansnap.recipes`` (being replaced by ``scansnap.experiments``).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "book" / "reference"
LEGACY = ("scansnap.recipes",)
HEADER = "<!-- Written by .ci/reference_pages.py (make reference): edit the docstrings, not this page. -->\n"


def public_modules() -> list[str]:
    """Dotted names of the public modules of ``scansnap``, sorted."""
    sys.path.insert(0, str(ROOT))
    import scansnap

    names = ["scansnap"]
    for info in pkgutil.walk_packages(scansnap.__path__, "scansnap.", onerror=lambda _name: None):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts) or info.name.startswith(LEGACY):
            continue
        names.append(info.name)
    return sorted(names)


def summary(name: str) -> str:
    """The first paragraph of a module's docstring (for the index table), read without importing it."""
    doc = (ast.get_docstring(ast.parse(_source(name).read_text())) or "").strip()
    first = " ".join(doc.split("\n\n", 1)[0].split())
    return first.replace("|", "\\|")


def _source(name: str) -> Path:
    base = ROOT.joinpath(*name.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def constants(name: str) -> list[str]:
    """Public UPPERCASE module-level names (``EXPERIMENTS``, ``RULES``, ``LEMMA1``, ...) assigned in the module.
    They get an entry of their own: autodoc takes an instance of a class defined elsewhere (an
    :class:`~scansnap.experiments.base.Experiment`, a :class:`~scansnap.verdicts.Rule`) for an imported name."""
    names: list[str] = []
    for node in ast.parse(_source(name).read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        names += [t.id for t in targets if isinstance(t, ast.Name) and re.fullmatch(r"[A-Z][A-Z0-9_]*", t.id)
                  and t.id not in names]
    return names


def describe(name: str, const: str) -> str:
    """One line on a constant, from its value (imported; ``""`` if the module does not import)."""
    try:
        value = getattr(importlib.import_module(name), const)
    except Exception:  # noqa: BLE001 - a module that does not import yet gets a bare entry
        return ""
    kind = type(value).__name__
    if kind == "Experiment":
        figs = ", ".join(f"``{f.id}``" for f in value.figures) or "none"
        return f"The experiment ``{value.id}`` (figures: {figs}); run it with :func:`scansnap.experiments.make`."
    if kind == "Rule":
        return (f"The verdict rule of claim {value.claim} on *{value.evidence}* evidence "
                f"(:class:`scansnap.verdicts.Rule`).")
    if isinstance(value, int | float | str | bool) and len(repr(value)) <= 60:
        return f"``{value!r}``"
    size = f" of {len(value)}" if isinstance(value, list | tuple | dict) else ""
    return f"A ``{kind}``{size}."


def page(name: str) -> str:
    """The reference page of module ``name``: its docstring and every public member defined in it (autodoc,
    inside eval-rst: autodoc writes reStructuredText, which a MyST directive would parse as Markdown), and an
    entry per module-level constant."""
    consts = constants(name)
    lines = [f".. automodule:: {name}", "   :members:", "   :undoc-members:", "   :ignore-module-all:"]
    lines += [f"   :exclude-members: {', '.join(consts)}"] if consts else []
    for const in consts:
        lines += ["", f".. py:data:: {const}", f"   :module: {name}", ""]
        text = describe(name, const)
        lines += [f"   {text}"] if text else []
    body = "\n".join(lines)
    return f"{HEADER}\n({name})=\n# `{name}`\n\n```{{eval-rst}}\n{body}\n```\n"


def index(names: list[str]) -> str:
    rows = "\n".join(f"| {{py:mod}}`{n}` | {summary(n)} |" for n in names)
    return f"""{HEADER}
(library-reference)=
# Library reference

The public API of the `scansnap` package, one page per module, generated from the docstrings (Sphinx
autodoc). Each docstring names the theorem, lemma or figure of the paper the function implements, and
gives the shapes of its arrays. Names in the chapters' code cells link to their entries here, and each
entry lists, under "Used in the book", the chapter cells that call it. `pip install .` from the repository
installs the package; `python -m scansnap reproduce <figure id>` re-makes a figure of the book.

| module | what it holds |
|---|---|
{rows}
"""


def expected() -> dict[Path, str]:
    """Every page this script writes, with its text."""
    names = public_modules()
    return {PAGES / "index.md": index(names), **{PAGES / f"{n}.md": page(n) for n in names}}


def stale() -> list[Path]:
    """Pages of modules that are gone."""
    want = expected()
    return [p for p in PAGES.glob("scansnap*.md") if p not in want]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report pages that are out of date (exit 1)")
    args = parser.parse_args()
    want, gone = expected(), stale()
    changed = [p for p, text in want.items() if not p.is_file() or p.read_text() != text]
    for p in changed + gone:
        print(f"{'remove' if p in gone else 'write'} {p.relative_to(ROOT)}")
    if args.check:
        return 1 if changed or gone else 0
    PAGES.mkdir(parents=True, exist_ok=True)
    for p in changed:
        p.write_text(want[p])
    for p in gone:
        p.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
