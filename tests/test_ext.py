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
from scansnap import data
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
    assert _build(book).startswith("X = 2")  # re-executed against the new code
