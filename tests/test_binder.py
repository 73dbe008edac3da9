"""Binder: ``binder/`` holds a runtime-only environment, and repo2docker (what Binder runs) builds the image
from it.

repo2docker itself (``jupyter-repo2docker`` from PyPI) prints the Dockerfile Binder would build with
``--no-build --no-run --debug``, without Docker. It is installed into a throwaway virtual environment
(about 6 s with pip's cache), not into the book's environment: it pins its own versions of Jinja2,
traitlets, docker-py and others, which the book's environment has no use for and must not have to
agree with. The emulation of the image (a fresh environment, postBuild, JupyterLab, every chapter run in
a kernel pinned to one core) is ``make binder-check`` (``.ci/binder_check.py``): minutes, not a unit test.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
REPO2DOCKER = "jupyter-repo2docker==2026.4.0"
# What the chapters and the library import at run time (besides the standard library), and the notebook UI.
RUNTIME = {"torch", "numpy", "scipy", "sympy", "matplotlib", "seaborn", "tqdm", "pooch", "joblib", "myst-nb",
           "jupyterlab", "jupytext", "ipykernel"}
# The book build and the development tools: never in Binder's image.
BUILD_ONLY = {"jupyter-book", "playwright", "pytest", "ruff", "sphinx-proof", "sphinxcontrib-bibtex",
              "sphinx-mathjax-offline", "sphinx-codeautolink"}


def pins(path: Path) -> dict[str, str]:
    """``name -> version`` of the ``name==version`` lines of a requirements file (local labels kept)."""
    return {m.group(1).lower(): m.group(2)
            for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)", path.read_text(), re.M)}


def test_binder_folder_replaces_the_root_files() -> None:
    assert {p.name for p in BINDER.iterdir()} >= {"requirements.txt", "postBuild", "runtime.txt"}
    assert not (ROOT / "postBuild").exists() and not (ROOT / "runtime.txt").exists()
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"
    assert (BINDER / "postBuild").stat().st_mode & 0o111, "postBuild must be executable"


def test_binder_requirements_are_the_runtime_only_with_the_cpu_torch() -> None:
    text = (BINDER / "requirements.txt").read_text()
    found = pins(BINDER / "requirements.txt")
    assert found.keys() >= RUNTIME, f"missing {sorted(RUNTIME - found.keys())}"
    assert not BUILD_ONLY & found.keys(), f"build-only packages in Binder's image: {sorted(BUILD_ONLY & found.keys())}"
    assert re.search(r"^--extra-index-url https://download\.pytorch\.org/whl/cpu$", text, re.M)
    assert found["torch"].endswith("+cpu"), "a torch pin without +cpu can resolve to the CUDA build on PyPI"
    assert re.search(r"^-e \.$", text, re.M), "the package itself (editable, from the repository root)"
    book = pins(ROOT / "requirements.txt")
    differ = {k: (v, book[k]) for k, v in found.items() if k in book and v.split("+")[0] != book[k].split("+")[0]}
    assert not differ, f"Binder must run the versions the book is built and tested with: {differ}"


@pytest.fixture(scope="module")
def repo2docker(tmp_path_factory) -> Path:
    """``repo2docker`` from PyPI, in a throwaway venv."""
    venv = tmp_path_factory.mktemp("r2d") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", REPO2DOCKER],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return venv / "bin" / "repo2docker"


def clean_copy(dest: Path) -> Path:
    """The working tree as a clean clone would have it (tracked and not ignored files, no ``.venv``,
    ``_build`` or caches), so the test sees uncommitted edits to ``binder/`` too."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def test_repo2docker_installs_binder_requirements_and_runs_postbuild(repo2docker: Path, tmp_path: Path) -> None:
    repo = clean_copy(tmp_path / "repo")
    proc = subprocess.run([str(repo2docker), "--no-build", "--no-run", "--debug", str(repo)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    dockerfile = proc.stdout + proc.stderr
    install = re.search(r'^RUN \S*pip install --no-cache-dir -r "binder/requirements\.txt"$', dockerfile, re.M)
    post = re.search(r"^RUN \./binder/postBuild$", dockerfile, re.M)
    assert install and post, dockerfile[-4000:]
    assert install.start() < post.start(), "postBuild runs after the requirements are installed"
    assert not re.search(r'-r "requirements\.txt"', dockerfile), "the root requirements.txt must not be installed"
    assert "python=3.11" in dockerfile, "runtime.txt's Python 3.11"
