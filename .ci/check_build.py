"""Check a Jupyter Book build: the site exists, every page of ``_toc.yml`` was built, the built
pages load nothing from the network, no figure was rendered as text, and no command shows an en dash for ``--``.

Jupyter Book 2 ignores ``_config.yml``/``_toc.yml`` and can "succeed" while building nothing, and
an old page can linger in ``_build/html``; this script catches both. Sphinx never deletes the page of a source it no
longer has (a module's reference page after the module was renamed): such a page under ``book/`` is an error, and
``--prune`` (``make book``) deletes it first. Usage::

    python .ci/check_build.py [--html _build/html] [--toc _toc.yml] [--prune]

Exit status 0 when every check passes, 1 otherwise (each problem is printed).
"""

from __future__ import annotations

import argparse
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# How a figure renders when matplotlib has no inline backend (e.g. MPLBACKEND=Agg): a glued
# figure then silently becomes this text and the strict build does not notice.
FIGURE_AS_TEXT = "&lt;Figure size "
# A command of the library's whose "--option" smart quotes turned into an en dash ("–profile"): copied, it fails.
DASHED_OPTION = re.compile("python -m scansnap [^<\n]*?\u2013[a-z]")


def toc_files(toc: dict) -> list[str]:
    """Every ``file:`` of a jb-book/jb-article ``_toc.yml`` (root first), without suffix."""
    files = [toc["root"]]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return [str(Path(f).with_suffix("")) if Path(f).suffix in {".md", ".ipynb"} else f for f in files]


class RemoteRefs(HTMLParser):
    """Collects scripts, stylesheets, images and iframes that a page loads from another host."""

    def __init__(self) -> None:
        super().__init__()
        self.remote: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "link" and "stylesheet" in (a.get("rel") or "").split():
            url = a.get("href")
        elif tag in {"script", "img", "iframe"}:
            url = a.get("src")
        else:
            return
        if url and url.strip().lower().startswith(("http://", "https://", "//")):
            self.remote.append(f"<{tag}> {url}")


def orphans(html_dir: Path, root: Path | None = None) -> list[Path]:
    """The built pages under ``book/`` whose source (``.md``, ``.ipynb``, under ``root``: the checkout) is gone,
    sorted."""
    root = root or ROOT
    return [page for page in sorted((html_dir / "book").rglob("*.html"))
            if not any((root / page.relative_to(html_dir)).with_suffix(s).is_file() for s in (".md", ".ipynb"))]


def check(html_dir: Path, toc_path: Path) -> list[str]:
    problems = [f"{page.relative_to(html_dir)} has no source page any more (a page of an earlier build: "
                "--prune deletes it)" for page in orphans(html_dir)]
    if not (html_dir / "index.html").is_file():
        problems.append(f"missing {html_dir / 'index.html'}")
    toc = yaml.safe_load(toc_path.read_text(encoding="utf8"))
    pages = toc_files(toc)
    for page in pages:
        if not (html_dir / f"{page}.html").is_file():
            problems.append(f"page {page!r} of {toc_path.name} was not built: no {page}.html")
    for page in sorted(html_dir.rglob("*.html")):
        text = page.read_text(encoding="utf8", errors="replace")
        if FIGURE_AS_TEXT in text:
            problems.append(
                f"{page.relative_to(html_dir)} shows a matplotlib figure as text ({FIGURE_AS_TEXT}...): "
                "was MPLBACKEND set, or matplotlib.use() called in a chapter?"
            )
        if found := DASHED_OPTION.search(text):
            problems.append(f"{page.relative_to(html_dir)} shows a command with an en dash for '--': "
                            f"{found.group()!r} (Sphinx's smartquotes_action must leave dashes alone)")
        parser = RemoteRefs()
        parser.feed(text)
        for ref in parser.remote:
            problems.append(f"{page.relative_to(html_dir)} loads {ref} from the network")
    print(f"check_build: {len(pages)} pages in {toc_path.name}, html in {html_dir}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", type=Path, default=ROOT / "_build" / "html", help="built HTML folder")
    ap.add_argument("--toc", type=Path, default=ROOT / "_toc.yml", help="table of contents")
    ap.add_argument("--prune", action="store_true", help="first delete built pages whose source is gone")
    args = ap.parse_args(argv)
    for page in orphans(args.html) if args.prune else []:
        page.unlink()
        print(f"check_build: deleted {page.relative_to(args.html)} (its source is gone)")
    problems = check(args.html, args.toc)
    for p in problems:
        print(f"check_build: ERROR: {p}", file=sys.stderr)
    if problems:
        return 1
    print("check_build: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
