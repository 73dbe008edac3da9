"""The Library reference part of the book (``book/reference/``): one page per public module, up to date with
the package, and its docstrings build strictly.

The strict build here is Sphinx on the reference pages alone (autodoc + napoleon with the book's own settings,
read from ``_config.yml``; no notebook is executed), about half a minute: a docstring that Sphinx cannot
parse, or a cross-reference to a name of ``scansnap`` that does not exist, fails here before it fails the
book build (``-W -n``). The links between chapter cells and the reference (sphinx-codeautolink) are checked
in the built site by ``tests/test_site.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("reference_pages", ROOT / ".ci" / "reference_pages.py")
reference_pages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference_pages)

# The Sphinx settings of _config.yml that concern docstrings (the rest needs the whole book).
DOCSTRING_EXTENSIONS = ("sphinx.ext.autodoc", "sphinx.ext.napoleon")


def test_every_public_module_has_a_page() -> None:
    names = reference_pages.public_modules()
    assert {"scansnap.data", "scansnap.theory", "scansnap.experiments.ch01_setting"} <= set(names)
    assert not any(n.startswith("scansnap.recipes") or "._" in n for n in names)
    want = reference_pages.expected()
    stale = [p.name for p, text in want.items() if not p.is_file() or p.read_text() != text]
    stale += [p.name for p in reference_pages.stale()]
    assert not stale, f"book/reference is out of date ({stale}): run `make reference`"


def test_toc_takes_the_reference_pages() -> None:
    toc = (ROOT / "_toc.yml").read_text()
    assert "file: book/reference/index" in toc and "glob: book/reference/scansnap*" in toc


@pytest.mark.book_stage  # the book build renders these pages with the same extensions, as strictly
def test_reference_builds_strictly(tmp_path: Path) -> None:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    extensions = [e for e in config["extra_extensions"] if e in DOCSTRING_EXTENSIONS]
    assert extensions == list(DOCSTRING_EXTENSIONS), "_config.yml must load autodoc and napoleon"
    settings = {k: v for k, v in config["config"].items() if k.startswith(("autodoc_", "napoleon_", "nitpick"))}
    src = tmp_path / "src"
    shutil.copytree(ROOT / "book" / "reference", src)
    (src / "root.md").write_text("# Reference\n\n```{toctree}\n:glob:\n\nindex\nscansnap*\n```\n")
    assert config["local_extensions"].get("scansnap_reference") == "_ext"
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / '_ext')!r})\n"
        f"extensions = {['myst_parser', *extensions, 'scansnap_reference']!r}\nroot_doc = 'root'\n"
        + "".join(f"{k} = {v!r}\n" for k, v in settings.items()))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "-n", "--keep-going", "-q",
                           str(src), str(tmp_path / "html")], capture_output=True, text=True, env=env, cwd=tmp_path)
    problems = [line for line in proc.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert proc.returncode == 0, f"{len(problems)} problems:\n" + "\n".join(problems[:60]) + proc.stderr[-2000:]
    page = (tmp_path / "html" / "scansnap.data.html").read_text()
    assert 'id="scansnap.data.syn_small"' in page, "autodoc wrote no entries"


def _codeautolink_cache(tmp_path: Path) -> Path:
    """A sphinx-codeautolink cache of two pages, ``book/chapter`` (a Markdown source) and ``gone`` (no source)."""
    from dataclasses import asdict

    from sphinx_codeautolink.extension.block import CodeExample, Name, SourceTransform

    (tmp_path / "src" / "book").mkdir(parents=True)
    (tmp_path / "src" / "book" / "chapter.md").write_text("# chapter\n")
    example = CodeExample(document="book/chapter", ref_id="c1", headings=["chapter"])
    name = Name(import_components=["scansnap", "book"], code_str="book", lineno=1, end_lineno=1, context=None,
                resolved_location="scansnap.book")
    transform = asdict(SourceTransform(source="import scansnap", names=[name], example=example, doc_lineno=3))
    (tmp_path / "doctrees").mkdir()
    (tmp_path / "doctrees" / "codeautolink-cache.json").write_text(
        json.dumps({"book/chapter": [transform], "gone": [transform]}))
    return tmp_path


def test_an_incremental_build_keeps_a_markdown_pages_code_links(tmp_path: Path) -> None:
    """sphinx-codeautolink 0.19.0 reads a cached page back only when ``<page>.rst`` exists; the book's extension
    keeps a Markdown page's (a chapter's code-cell links) and still drops a page whose source is gone."""
    import sphinx_codeautolink
    from sphinx_codeautolink.extension.cache import DataCache

    sys.path.insert(0, str(ROOT / "_ext"))
    import scansnap_reference

    assert sphinx_codeautolink.__version__ == scansnap_reference.CODEAUTOLINK, (
        "sphinx-codeautolink changed: check whether DataCache.read still needs _read_codeautolink_cache")
    root = _codeautolink_cache(tmp_path)
    if DataCache.read is not scansnap_reference._read_codeautolink_cache:  # not yet mended in this process
        upstream = DataCache(root / "doctrees", root / "src")
        upstream.read()
        assert upstream.transforms == {}  # the bug: the chapter's links are dropped
    mended = DataCache(root / "doctrees", root / "src")
    scansnap_reference._read_codeautolink_cache(mended)
    assert list(mended.transforms) == ["book/chapter"]
    assert mended.transforms["book/chapter"][0].names[0].resolved_location == "scansnap.book"
