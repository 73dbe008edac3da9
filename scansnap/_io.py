"""Files the book publishes: where they go, and writing them so that nothing is half-written."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

__all__ = ["artifacts_dir", "atomic_write", "dump_json"]

ROOT = Path(__file__).resolve().parent.parent


def artifacts_dir() -> Path:
    """Where figures and verdicts are written: ``$SCANSNAP_ARTIFACTS`` or ``<repo>/_extra``, which
    Sphinx's ``html_extra_path`` publishes at the root of the site."""
    return Path(os.environ.get("SCANSNAP_ARTIFACTS", ROOT / "_extra"))


def atomic_write(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dump_json(obj: object) -> bytes:
    """``obj`` as indented, key-sorted JSON bytes ending in a newline."""
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()
