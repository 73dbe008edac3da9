"""_ext/scansnap_book.py: a page's cache key follows the library code the page can run."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "_ext"))

import scansnap_book as ext  # noqa: E402


def _tree(tmp_path: Path) -> Path:
    pkg = tmp_path / "scansnap"
    (pkg / "experiments").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "data.py").write_text("X = 1\n")
    (pkg / "model.py").write_text("from scansnap import data\n")
    (pkg / "other.py").write_text("Y = 2\n")
    (pkg / "experiments" / "__init__.py").write_text("from scansnap.experiments.base import B\n")
    (pkg / "experiments" / "base.py").write_text("B = 0\n")
    (pkg / "experiments" / "ch01_a.py").write_text("from scansnap import model\nfrom .base import B\n")
    (pkg / "experiments" / "ch02_b.py").write_text("import scansnap.other\n")
    return tmp_path


PAGE = "```{code-cell} ipython3\nfrom scansnap.experiments import ch01_a as ch1\n```\n"


def test_closure_is_transitive_and_includes_packages(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert ext.library_closure(root, PAGE) == [
        "scansnap", "scansnap.data", "scansnap.experiments", "scansnap.experiments.base",
        "scansnap.experiments.ch01_a", "scansnap.model"]
    assert ext.library_closure(root, "import numpy\n") == [] and ext.library_hash(root, "import numpy\n") == ""


def test_hash_changes_with_code_the_page_runs_and_only_with_it(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    before = ext.library_hash(root, PAGE)
    (root / "scansnap" / "other.py").write_text("Y = 3\n")  # not imported by the page
    (root / "scansnap" / "experiments" / "ch02_b.py").write_text("Z = 0\n")
    assert ext.library_hash(root, PAGE) == before
    ext._imports_of_module.cache_clear()
    (root / "scansnap" / "data.py").write_text("X = 2\n")  # imported through model
    assert ext.library_hash(root, PAGE) != before


def test_real_chapters_depend_on_their_experiment_module() -> None:
    src = (ROOT / "book" / "chapters" / "01-setting.md").read_text()
    closure = ext.library_closure(ROOT, src)
    assert "scansnap.experiments.ch01_setting" in closure and "scansnap.data" in closure


def test_a_package_that_loads_its_submodules_by_name_depends_on_all_of_them(tmp_path: Path) -> None:
    """``scansnap.theory`` re-exports its submodules through ``importlib.import_module``: no import statement
    names them, yet a page that imports the package runs every one."""
    root = _tree(tmp_path)
    (root / "scansnap" / "theory").mkdir()
    (root / "scansnap" / "theory" / "__init__.py").write_text(
        "import importlib\nimport pkgutil\nfor m in pkgutil.iter_modules(__path__):\n"
        "    importlib.import_module(f'{__name__}.{m.name}')\n")
    (root / "scansnap" / "theory" / "phase.py").write_text("P = 1\n")
    page = "```{code-cell} ipython3\nfrom scansnap import theory\n```\n"
    assert "scansnap.theory.phase" in ext.library_closure(root, page)
    before = ext.library_hash(root, page)
    (root / "scansnap" / "theory" / "phase.py").write_text("P = 2\n")
    assert ext.library_hash(root, page) != before


def test_chapter_6_depends_on_every_theory_module_it_runs() -> None:
    """Editing ``scansnap/theory/phase.py`` (loaded by ``scansnap.theory`` by name) changes Chapter 6's cache key,
    so ``make book`` re-executes it; likewise Chapters 2 and 3 depend on ``long_sequences`` and ``overlaps``."""
    def closure(stem: str) -> list[str]:
        return ext.library_closure(ROOT, (ROOT / "book" / "chapters" / f"{stem}.md").read_text())

    assert {"scansnap.theory.phase", "scansnap.theory.regimes", "scansnap.theory.snapping"} <= set(
        closure("06-phase-transition"))
    assert "scansnap.theory.long_sequences" in closure("02-long-sequences")
    assert "scansnap.theory.overlaps" in closure("03-decoder-dynamics")


def test_editing_theory_phase_changes_chapter_6s_key(tmp_path: Path) -> None:
    """The hash itself, on a copy of the real library: one added line in ``theory/phase.py`` changes it."""
    import shutil

    shutil.copytree(ROOT / "scansnap", tmp_path / "scansnap", ignore=shutil.ignore_patterns("__pycache__"))
    page = (ROOT / "book" / "chapters" / "06-phase-transition.md").read_text()
    before = ext.library_hash(tmp_path, page)
    ext._imports_of_module.cache_clear()
    with (tmp_path / "scansnap" / "theory" / "phase.py").open("a") as fh:
        fh.write("\n# an edit\n")
    assert ext.library_hash(tmp_path, page) != before
    ext._imports_of_module.cache_clear()


MINI_PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
# page

```{code-cell} ipython3
import time
from scansnap import data, theory
print("X =", data.X, "at", time.time())
```
"""


def _build(book: Path) -> str:
    import re
    import subprocess

    jb = Path(sys.executable).parent / "jupyter-book"
    done = subprocess.run([str(jb), "build", str(book), "-W", "-n", "-q"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return re.search(r"X = \d+ at [\d.]+", (book / "_build/html/page.html").read_text()).group(0)


def test_a_library_edit_reexecutes_the_pages_that_import_it_and_only_those(tmp_path: Path) -> None:
    """End to end with jupyter-book and the execution cache: a tiny book whose page imports a tiny
    ``scansnap`` package (found first on the kernel's path: the page's folder)."""
    book = tmp_path / "book"
    (book / "_ext").mkdir(parents=True)
    (book / "_ext" / "scansnap_book.py").write_text((ROOT / "_ext" / "scansnap_book.py").read_text())
    _tree(book)
    (book / "scansnap" / "theory").mkdir()
    (book / "scansnap" / "theory" / "__init__.py").write_text(
        "import importlib\nimport pkgutil\nfor m in pkgutil.iter_modules(__path__):\n"
        "    importlib.import_module(f'{__name__}.{m.name}')\n")
    (book / "scansnap" / "theory" / "phase.py").write_text("P = 1\n")
    (book / "_config.yml").write_text("title: mini\nexecute:\n  execute_notebooks: cache\n  raise_on_error: true\n"
                                      "sphinx:\n  local_extensions:\n    scansnap_book: _ext\n"
                                      "exclude_patterns: [_build, _ext, scansnap]\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: page\n")
    (book / "intro.md").write_text("# intro\n")
    (book / "page.md").write_text(MINI_PAGE)
    first = _build(book)
    assert first.startswith("X = 1")
    (book / "scansnap" / "other.py").write_text("Y = 99\n")  # the page does not import it
    assert _build(book) == first  # served from the cache: same output, same time stamp
    (book / "scansnap" / "data.py").write_text("X = 2\n")  # the page imports it
    second = _build(book)
    assert second.startswith("X = 2")  # re-executed against the new code
    (book / "scansnap" / "theory" / "phase.py").write_text("P = 2\n")  # loaded by name, as theory.phase is
    assert _build(book) != second  # re-executed: a new time stamp
