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
