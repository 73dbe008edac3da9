"""``.ci/check_build.py``: the checks of a built site, on small sites written here (the real build is checked by
``make book`` and CI's book stage)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_build", ROOT / ".ci" / "check_build.py")
check_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_build)


def _site(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A source tree with ``intro.md`` and one reference page, its toc, and a built site that also holds the page
    of a reference source that is gone (``book/reference/old.html``)."""
    src, html = tmp_path / "src", tmp_path / "html"
    for page in ("book/intro.md", "book/reference/kept.md"):
        (src / page).parent.mkdir(parents=True, exist_ok=True)
        (src / page).write_text("# page\n")
    for page in ("index.html", "book/intro.html", "book/reference/kept.html", "book/reference/old.html"):
        (html / page).parent.mkdir(parents=True, exist_ok=True)
        (html / page).write_text("<html><body><p>page</p></body></html>")
    toc = tmp_path / "_toc.yml"
    toc.write_text("format: jb-book\nroot: book/intro\nparts:\n  - chapters:\n      - glob: book/reference/*\n")
    return src, html, toc


def test_a_page_whose_source_is_gone_is_an_error(tmp_path: Path, monkeypatch) -> None:
    src, html, toc = _site(tmp_path)
    monkeypatch.setattr(check_build, "ROOT", src)
    assert check_build.orphans(html, src) == [html / "book/reference/old.html"]
    problems = check_build.check(html, toc)
    assert problems == ["book/reference/old.html has no source page any more (a page of an earlier build: "
                        "--prune deletes it)"]


def test_prune_deletes_only_the_pages_whose_source_is_gone(tmp_path: Path, monkeypatch, capsys) -> None:
    src, html, toc = _site(tmp_path)
    monkeypatch.setattr(check_build, "ROOT", src)
    assert check_build.main(["--html", str(html), "--toc", str(toc)]) == 1  # without --prune: an error, kept
    assert (html / "book/reference/old.html").is_file()
    assert check_build.main(["--html", str(html), "--toc", str(toc), "--prune"]) == 0
    assert not (html / "book/reference/old.html").exists()
    assert (html / "book/reference/kept.html").is_file() and (html / "book/intro.html").is_file()
    assert "deleted book/reference/old.html" in capsys.readouterr().out
