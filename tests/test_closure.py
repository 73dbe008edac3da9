"""scansnap.closure: a page runs the experiment modules of its own chapter, and of no other chapter."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_ext import MINI_PAGE

from scansnap import manifest
from scansnap.closure import library_closure

ROOT = Path(__file__).resolve().parent.parent


def _closure(chapter: int) -> list[str]:
    doc = manifest.docname(chapter)
    return library_closure(ROOT, (ROOT / f"{doc}.md").read_text(), doc)


@pytest.mark.parametrize("chapter", sorted(manifest.CHAPTERS))
def test_a_chapter_runs_its_experiments_and_no_other_chapters(chapter: int) -> None:
    closure = _closure(chapter)
    mine = set(manifest.modules_of(chapter))
    others = {manifest.module_name(m) for m in manifest.MODULES if m.chapter != chapter}
    print(f"chapter {chapter}: {len(closure)} library modules, "
          f"{sum(m.startswith(manifest.PACKAGE + '.') for m in closure)} of scansnap.experiments")
    assert mine <= set(closure), f"chapter {chapter} does not depend on its own experiments: {mine - set(closure)}"
    assert not others & set(closure), f"chapter {chapter} runs other chapters' experiments: {others & set(closure)}"


def test_pages_that_read_every_experiment_depend_on_all_of_them() -> None:
    every = {manifest.module_name(m) for m in manifest.MODULES}
    for page in ("book/claims", "book/figures", "book/found", "book/intro"):
        assert every <= set(library_closure(ROOT, (ROOT / f"{page}.md").read_text(), page)), page


def test_a_quoted_experiment_or_figure_id_brings_its_module(tmp_path: Path) -> None:
    page = "```{code-cell} ipython3\nfrom scansnap import experiments\nexperiments.make('fig-paper-6')\n```\n"
    assert "scansnap.experiments.ch07_syn_medium" in library_closure(ROOT, page)
    assert "scansnap.experiments.ch07_syn_medium" not in library_closure(ROOT, page.replace("fig-paper-6", "x"))


def test_imports_for_type_checking_only_are_not_run(tmp_path: Path) -> None:
    pkg = tmp_path / "scansnap"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from scansnap import b\n")
    (pkg / "b.py").write_text("")
    assert library_closure(tmp_path, "from scansnap import a\n") == ["scansnap", "scansnap.a"]


PAGE = MINI_PAGE.split("# page")[0] + """# {title}

```{{code-cell}} ipython3
import time
from scansnap import experiments
{call}print("{title} ran at", time.time())
```
"""


def _stamps(book: Path) -> dict[str, str]:
    import re

    jb = Path(sys.executable).parent / "jupyter-book"
    done = subprocess.run([str(jb), "build", str(book), "-W", "-n", "-q"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    html = {p: (book / "_build" / "html" / f"{p}.html").read_text() for p in ("book/chapters/06-phase-transition",
                                                                           "book/chapters/07-syn-medium", "gallery")}
    return {p: re.search(r"ran at [\d.]+", text).group(0) for p, text in html.items()}


def test_editing_chapter_7s_experiment_module_reexecutes_chapter_7_only(tmp_path: Path) -> None:
    """End to end with jupyter-book and its execution cache, on a tiny ``scansnap`` whose experiment modules carry
    the manifest's names: an edit of ``experiments/ch07_syn_medium.py`` re-executes the Chapter 7 page and the page
    that reads every experiment, and serves Chapter 6 from the cache."""
    book = tmp_path / "book"
    (book / "_ext").mkdir(parents=True)
    (book / "_ext" / "scansnap_book.py").write_text((ROOT / "_ext" / "scansnap_book.py").read_text())
    exp = book / "scansnap" / "experiments"
    exp.mkdir(parents=True)
    (book / "scansnap" / "__init__.py").write_text("")
    (exp / "__init__.py").write_text(  # loads modules by name, as the real one does (from the manifest)
        "import importlib\n\n\ndef get(name):\n    return importlib.import_module(name)\n\n\n"
        "def all_rules():\n    return []\n")
    for module in ("ch06_trained", "ch07_syn_medium"):
        (exp / f"{module}.py").write_text("X = 1\n")
    (book / "_config.yml").write_text("title: mini\nexecute:\n  execute_notebooks: cache\n  raise_on_error: true\n"
                                      "sphinx:\n  local_extensions:\n    scansnap_book: _ext\n"
                                      "exclude_patterns: [_build, _ext, scansnap]\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n"
                                   "  - file: book/chapters/06-phase-transition\n"
                                   "  - file: book/chapters/07-syn-medium\n  - file: gallery\n")
    (book / "intro.md").write_text("# intro\n")
    (book / "book" / "chapters").mkdir(parents=True)
    for doc in ("06-phase-transition", "07-syn-medium"):
        (book / "book" / "chapters" / f"{doc}.md").write_text(PAGE.format(title=doc, call=""))
    (book / "gallery.md").write_text(PAGE.format(title="gallery", call="experiments.all_rules()\n"))
    first = _stamps(book)
    time.sleep(0.01)
    (exp / "ch07_syn_medium.py").write_text("X = 2\n")
    second = _stamps(book)
    assert second["book/chapters/06-phase-transition"] == first["book/chapters/06-phase-transition"]  # cached
    assert second["book/chapters/07-syn-medium"] != first["book/chapters/07-syn-medium"]  # re-executed
    assert second["gallery"] != first["gallery"]  # it reads every experiment
