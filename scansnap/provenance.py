"""Which code made a result: the scansnap version and the git commit of the working tree."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from scansnap._io import source_checkout

__all__ = ["Checkout", "checkout", "describe", "git_commit", "version"]


@dataclass(frozen=True)
class Checkout:
    """The state of the book's git checkout (the one reader of git in the library).

    Attributes:
        head: the full commit hash of ``HEAD`` (``"unknown"`` outside a git checkout).
        dirty: whether tracked files have uncommitted changes.
    """

    head: str
    dirty: bool = False

    def __str__(self) -> str:
        """The commit as provenance records it: ``<hash>``, ``<hash>+dirty`` or ``"unknown"``."""
        return self.head + ("+dirty" if self.dirty else "")


def checkout(root: Path | None = None) -> Checkout:
    """The :class:`Checkout` of ``root`` (default: the book's source checkout this package runs from; an installed
    package has none and gives ``Checkout("unknown")``, even inside some other git repository)."""
    root = source_checkout() if root is None else root
    if root is None:
        return Checkout("unknown")
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return Checkout("unknown")
    return Checkout(head, bool(dirty))


def git_commit(root: Path | None = None) -> str:
    """The commit hash of ``root``'s checkout, with ``+dirty`` if tracked files changed; ``"unknown"``
    outside a git checkout (``str`` of :func:`checkout`)."""
    return str(checkout(root))


def version() -> str:
    """The installed scansnap version."""
    from scansnap import __version__

    return __version__


def describe() -> str:
    """One line for a chapter's first output: ``scansnap <version>, commit <hash>``."""
    return f"scansnap {version()}, commit {git_commit()}"
