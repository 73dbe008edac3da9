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
