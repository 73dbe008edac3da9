"""scansnap.provenance: version and commit line."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from scansnap import __version__, provenance


def test_describe_format() -> None:
    line = provenance.describe()
    assert re.fullmatch(r"scansnap \S+, commit \S+", line), line
    assert line.startswith(f"scansnap {__version__}, commit ")


def test_git_commit_in_checkout() -> None:
    root = Path(provenance.__file__).resolve().parent.parent
    if shutil.which("git") is None or subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                                     capture_output=True).returncode != 0:
        pytest.skip("not a git checkout with a commit")
    commit = provenance.git_commit()
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", commit), commit
    assert provenance.git_commit(root) == commit


def test_git_commit_outside_checkout(tmp_path: Path) -> None:
    assert provenance.git_commit(tmp_path) == "unknown"


def test_the_checkout_is_read_once_typed() -> None:
    """One git reader: the commit string of a store or figure and the ledger's short commit come from one
    :class:`provenance.Checkout`; a dirty checkout is a flag, not a suffix to search for."""
    assert str(provenance.Checkout("0123abc", dirty=True)) == "0123abc+dirty"
    assert str(provenance.Checkout("0123abc")) == "0123abc" and str(provenance.Checkout("unknown")) == "unknown"
    state = provenance.checkout()
    assert str(state) == provenance.git_commit() and (state.dirty is False or str(state).endswith("+dirty"))
