"""Execute the book's notebook pages in parallel into the execution cache, before ``jupyter-book build``.

Jupyter Book executes pages one after another while Sphinx reads them; on a 2-core machine the chapters then take
most of a build, one core idle. This script executes every notebook page of ``_toc.yml`` that the cache does not
already hold, ``--jobs`` at a time (each kernel on one intra-op thread when more than one runs, so they do not
fight over the cores), and stores each result in the cache exactly as myst-nb would (jupyter-cache, keyed by the
page's code cells and its kernelspec, which ``_ext/scansnap_book.py`` stamps with the hash of the library code the
page can run). The build that follows finds every page in the cache and only renders it. A page whose key this
script gets wrong is simply executed again by the build: the cache can make a build faster, never staler.

Pages that execute with ``execution_mode: force`` (the claims ledger and the figure gallery: they read what the
chapters wrote) are left to the build, which reads them after the chapters. A failing page stops the script with
its traceback, last on the screen, and a non-zero exit (pages that succeeded stay cached).

Usage: ``python .ci/execute_pages.py --cache _build/.jupyter_cache [--jobs N]`` (run by ``make book``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "_ext"), str(ROOT / ".ci")]

from check_build import toc_files  # noqa: E402
from scansnap_book import page_hash, stamped  # noqa: E402


def toc_pages(root: Path = ROOT) -> list[Path]:
    """Every page file of ``_toc.yml`` (root first; :func:`check_build.toc_files`), as paths of existing ``.md``
    files."""
    paths = [root / f"{f}.md" for f in dict.fromkeys(toc_files(yaml.safe_load((root / "_toc.yml").read_text())))]
    return [p for p in paths if p.is_file()]


def _front_matter(text: str) -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    return yaml.safe_load(match[1]) or {} if match else {}


def notebook(path: Path, root: Path = ROOT):
    """The page as the build reads it: its kernelspec stamped with its library hash, parsed by myst-nb."""
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    text = path.read_text()
    digest = page_hash(root, text, path.resolve().relative_to(root.resolve()).with_suffix("").as_posix())
    config = _config(root)
    extensions = set(config.get("parse", {}).get("myst_enable_extensions", []))
    return read_myst_markdown_notebook(stamped(text, digest) if digest else text,
                                       config=MdParserConfig(enable_extensions=extensions), add_source_map=True,
                                       path=str(path))


def _config(root: Path) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text())


def _execute(path: str, nb, timeout: int, one_thread: bool):
    from jupyter_cache.executors.utils import single_nb_execution

    if one_thread:  # inherited by the kernel: torch then starts with one intra-op thread
        os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    result = single_nb_execution(nb, cwd=str(Path(path).parent), allow_errors=False, timeout=timeout,
                                 meta_override=True)
    return path, nb, result.time, (result.exc_string if result.err is not None else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True, help="the execution cache folder of the build")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="pages executed at once")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs: must be at least 1; got {args.jobs}")

    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    config = _config(ROOT)
    default_timeout = int(config.get("execute", {}).get("timeout", 30))
    cache = get_cache(str(args.cache))
    before = {r.uri: (r.data or {}).get("execution_seconds", 0.0) for r in cache.list_cache_records()}
    todo = []
    for path in toc_pages():
        front = _front_matter(path.read_text())
        if "kernelspec" not in front or (front.get("mystnb") or {}).get("execution_mode") == "force":
            continue
        nb = notebook(path)
        try:
            cache.match_cache_notebook(nb)
            continue  # already cached: the build merges it
        except KeyError:
            pass
        timeout = int((front.get("mystnb") or {}).get("execution_timeout", default_timeout))
        todo.append((str(path), nb, timeout))
    todo.sort(key=lambda job: -before.get(job[0], float("inf")))  # longest (or never timed) first
    if not todo:
        print("execute_pages: every notebook page is in the cache")
        return 0
    jobs = min(args.jobs, len(todo))
    print(f"execute_pages: {len(todo)} page(s), {jobs} at a time ({'one thread each' if jobs > 1 else 'one kernel'})",
          flush=True)
    start, failed = time.perf_counter(), []
    with ProcessPoolExecutor(jobs) as pool:
        futures = [pool.submit(_execute, path, nb, timeout, jobs > 1) for path, nb, timeout in todo]
        for future in as_completed(futures):
            path, nb, seconds, error = future.result()
            rel = Path(path).relative_to(ROOT)
            if error is not None:
                failed.append((rel, error))
                print(f"  FAILED {rel} after {seconds:.1f} s", flush=True)
                continue
            record = cache.add_nb_to_project(path)
            cache.cache_notebook_bundle(CacheBundleIn(nb, record.uri, data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            print(f"  {rel}: {seconds:.1f} s", flush=True)
    print(f"execute_pages: done in {time.perf_counter() - start:.1f} s", flush=True)
    for rel, error in failed:
        print(f"\n=== {rel} failed:\n{error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
