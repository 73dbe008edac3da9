"""The package as a researcher installs it: a wheel built from the source tree, installed into a fresh
virtual environment outside the repository (no editable install, no system site-packages), and the
command line run from there.

Slow (about a minute: the fresh environment installs torch, scipy, matplotlib ... from pip's local
cache and the CPU torch wheel on local disk), but part of ``make test`` and so of CI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import scansnap

ROOT = Path(__file__).resolve().parent.parent
FIGURE = "fig-ch1-synsmall"  # the fastest figure of the book (Chapter 1)


def source_modules() -> set[str]:
    """Every file of the package in the source tree, as a wheel names it (``scansnap/theory/fates.py``)."""
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "scansnap").rglob("*.py") if "__pycache__" not in p.parts}


def wheel_modules(wheel: Path) -> set[str]:
    """The package's files in a wheel (its ``.dist-info`` left out)."""
    with zipfile.ZipFile(wheel) as zf:
        return {n for n in zf.namelist() if not n.split("/")[0].endswith(".dist-info")}


def constraints(path: Path) -> Path:
    """The pins of ``requirements.txt`` (without the editable install of the checkout) as a constraints file,
    so the fresh environment gets the versions the book is tested with (and pip's cache has)."""
    pins = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
            if re.match(r"^[A-Za-z0-9_.-]+==", line)]
    path.write_text("\n".join(pins) + "\n")
    return path


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-3000:]}"
    return proc


def _clean_env(home: Path) -> dict[str, str]:
    """The environment without anything that points Python at this checkout or its artifacts."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "VIRTUAL_ENV", "SCANSNAP_ARTIFACTS", "SCANSNAP_PROFILE", "PYTHONHOME"}}
    env.update(MPLBACKEND="Agg", MPLCONFIGDIR=str(home / "mpl"), OMP_NUM_THREADS="1")
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built (``pip wheel --no-deps``) from a copy of the package's source, so nothing is written
    into the checkout (no ``build/`` folder)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "scansnap", src / "scansnap", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    env = _clean_env(tmp)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp / "dist"),
          str(src)], cwd=tmp, env=env)
    (found,) = (tmp / "dist").glob("scansnap-*.whl")
    return found


def test_wheel_holds_every_module_of_the_source_tree(wheel: Path) -> None:
    """Package discovery: every subpackage (``theory``, ``experiments``, ...) is in the wheel, and nothing else
    (no tests, no book pages)."""
    assert wheel_modules(wheel) == source_modules()
    assert {"scansnap/theory/__init__.py", "scansnap/experiments/__init__.py"} <= wheel_modules(wheel)


@pytest.mark.slow
def test_installed_wheel_reproduces_a_figure(wheel: Path, tmp_path: Path) -> None:
    """Installed into a fresh venv outside the repository, the package imports from ``site-packages``,
    ``python -m scansnap reproduce`` writes under ``--out``, a library call without ``out`` writes under
    ``./scansnap-artifacts`` of the current directory, nothing is written inside the installed package, and
    the figure's data equal those made from the checkout byte for byte."""
    env = _clean_env(tmp_path)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=env)
    python = venv / "bin" / "python"
    pins = constraints(tmp_path / "constraints.txt")
    _run([str(python), "-m", "pip", "install", "-q", "--no-compile", "-c", str(pins), str(wheel)],
         cwd=tmp_path, env=env)
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "out"
    _run([str(python), "-m", "scansnap", "reproduce", FIGURE, "--profile", "smoke", "--out", str(out), "--quiet"],
         cwd=work, env=env)
    probe = _run([str(python), "-c", (
        "import scansnap, scansnap.theory, scansnap.experiments as e\n"
        "from scansnap import _io, provenance\n"
        f"e.make({FIGURE!r}, profile='smoke')\n"
        "print(scansnap.__file__); print(_io.artifacts_dir()); print(provenance.describe())")], cwd=work, env=env)
    package_file, artifacts, described = probe.stdout.strip().splitlines()[-3:]
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert Path(package_file).parent == site / "scansnap", "the package must come from the fresh venv"
    assert Path(artifacts) == work / "scansnap-artifacts"
    assert described == f"scansnap {scansnap.__version__}, commit unknown", "no checkout to ask git"
    made = sorted(p.name for p in (out / "figures").iterdir())
    assert made == sorted(f"{FIGURE}.{ext}" for ext in ("png", "svg", "csv", "json")), made
    assert (work / "scansnap-artifacts" / "figures" / f"{FIGURE}.csv").read_bytes() == \
        (out / "figures" / f"{FIGURE}.csv").read_bytes()
    assert not [p for p in (site / "scansnap").rglob("*") if p.suffix not in {".py", ".pyc"} and p.is_file()]

    here = tmp_path / "checkout"
    _run([sys.executable, "-m", "scansnap", "reproduce", FIGURE, "--profile", "smoke", "--out", str(here), "--quiet"],
         cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)})
    assert (here / "figures" / f"{FIGURE}.csv").read_bytes() == (out / "figures" / f"{FIGURE}.csv").read_bytes()
