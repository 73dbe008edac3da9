"""Files the book publishes: where they go, and writing them so that nothing is half-written."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

__all__ = ["INSTALLED_DEFAULT", "artifacts_dir", "atomic_write", "dump_json", "jsonable", "source_checkout"]

ROOT = Path(__file__).resolve().parent.parent
INSTALLED_DEFAULT = "scansnap-artifacts"
"""The artifacts folder, under the current directory, of a pip-installed package."""


def source_checkout() -> Path | None:
    """The book's source checkout this package runs from (the folder holding ``_config.yml``,
    ``pyproject.toml`` and ``scansnap/``), or ``None`` for an installed package (``ROOT`` is then
    ``site-packages``)."""
    return ROOT if (ROOT / "_config.yml").is_file() and (ROOT / "pyproject.toml").is_file() else None


def artifacts_dir() -> Path:
    """Where figures, results and verdicts are written: ``$SCANSNAP_ARTIFACTS`` if set; else, in the
    book's source checkout, ``<checkout>/_extra`` (Sphinx's ``html_extra_path`` publishes it at the
    root of the site); else (an installed package) ``./scansnap-artifacts`` under the current
    directory, never a folder inside ``site-packages``."""
    if os.environ.get("SCANSNAP_ARTIFACTS"):
        return Path(os.environ["SCANSNAP_ARTIFACTS"])
    checkout = source_checkout()
    return checkout / "_extra" if checkout is not None else Path.cwd() / INSTALLED_DEFAULT


def atomic_write(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a published file gets the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dump_json(obj: object) -> bytes:
    """``obj`` as indented, key-sorted JSON bytes ending in a newline."""
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


def jsonable(obj: object) -> object:
    """``obj`` made JSON-ready: mappings with string keys, arrays, tuples and tensors as lists, numpy scalars
    as Python numbers."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray | list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if hasattr(obj, "tolist"):  # torch tensors
        return obj.tolist()
    return obj


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
