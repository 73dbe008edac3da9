"""Which code made a result: the scansnap version and the git commit of the working tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

from scansnap._io import source_checkout

__all__ = ["describe", "git_commit", "version"]


def git_commit(root: Path | None = None) -> str:
    """The commit hash of ``root``'s checkout, with ``+dirty`` if tracked files changed; ``"unknown"``
    outside a git checkout. ``root`` defaults to the book's source checkout this package runs from;
    an installed package has none and gives ``"unknown"`` (even inside some other git repository)."""
    root = source_checkout() if root is None else root
    if root is None:
        return "unknown"
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def version() -> str:
    """The installed scansnap version."""
    from scansnap import __version__

    return __version__


def describe() -> str:
    """One line for a chapter's first output: ``scansnap <version>, commit <hash>``."""
    return f"scansnap {version()}, commit {git_commit()}"
