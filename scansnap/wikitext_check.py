"""Whether Chapter 8 can run here: its WikiText-2 files, checked in seconds before a build executes anything.

``make book`` runs ``python -m scansnap data check`` (:func:`check`) before Jupyter Book: when the files Chapter 8
cannot run without (:data:`NEEDED`) are neither in their folder (:func:`scansnap.wikitext.data_dir`) nor
downloadable now, the build stops at once, and the last thing on the screen is :meth:`DataCheck.message`: the files,
where they were looked for (the folder ``$SCANSNAP_WIKITEXT`` names, or the per-user cache folder), why they cannot
be used, and the two ways to get them (``python -m scansnap data download``, or a copy named by
``$SCANSNAP_WIKITEXT``). The tests that read WikiText-2 ask the same question to decide whether to run or to skip.

Only the per-user cache folder is filled by a download on its own (as :func:`scansnap.wikitext.verified_text`
does); a folder that ``$SCANSNAP_WIKITEXT`` names is only read. Each file is verified by its digests
(:func:`scansnap.wikitext.verified_text`), so a truncated or altered copy counts as missing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from scansnap import wikitext

__all__ = ["NEEDED", "DataCheck", "check"]

NEEDED = ("valid", "test")
"""The splits Chapter 8 cannot run without: it trains on ``valid`` and evaluates on ``test``; ``train.txt`` is read
only by the ``paper`` profile, which falls back to held-out articles of the two without it."""


@dataclass(frozen=True)
class DataCheck:
    """What :func:`check` found about Chapter 8's WikiText-2 (the data of the paper's Figures 7 and 10).

    Attributes:
        folder: the folder looked in (:func:`scansnap.wikitext.data_dir`).
        origin: how it was chosen: ``"argument"``, ``"$SCANSNAP_WIKITEXT"`` or ``"cache"`` (the per-user cache
            folder, :func:`scansnap.wikitext.cache_dir`).
        missing: the needed files (``"<split>.txt"``) neither there and verified nor downloaded now.
        problem: why (not there, a digest error, the download error); ``""`` when nothing is missing.
    """

    folder: Path
    origin: str
    missing: tuple[str, ...] = ()
    problem: str = ""

    @property
    def ok(self) -> bool:
        """Whether every needed file is in :attr:`folder`, verified."""
        return not self.missing

    def message(self) -> str:
        """One line when :attr:`ok`; otherwise what is missing, where it was looked for, why, and the two ways to
        get it, in words for someone who typed ``make book``."""
        files = " and ".join(f"{s}.txt" for s in NEEDED)
        if self.ok:
            return f"WikiText-2 for Chapter 8: {files} verified in {self.folder}"
        env = f"${wikitext.ENV}"
        where = {"cache": f"the per-user cache folder {self.folder} ({env} is not set)",
                 env: f"{self.folder}, the folder {env} names (without {env}: the per-user cache folder "
                      f"{wikitext.cache_dir()}, filled by a download on first use)"}.get(self.origin, str(self.folder))
        return "\n".join([
            f"Chapter 8 needs the WikiText-2 files {files} (from the pytorch/examples repository, "
            f"word_language_model/data/wikitext-2/), and {' and '.join(self.missing)} cannot be used here.",
            f"  Looked in: {where}.",
            f"  Why: {self.problem}.",
            "Nothing was executed. Do one of these, then run the same command again:",
            "  1. on a machine with internet, download and verify them into that folder:",
            "       .venv/bin/python -m scansnap data download      (or: make data)",
            f"  2. copy {files} from {wikitext.BASE_URL}",
            f"     into a folder, and name that folder with {env}:",
            f"       {wikitext.ENV}=/path/to/wikitext-2 make book",
            "Every file is checked against its known digests before a word of it is read."])


def _reason(exc: BaseException) -> str:
    """The cause of a failed download, in a line: the innermost error of the HTTP library (e.g. "Failed to resolve
    'raw.githubusercontent.com' ([Errno -2] Name or service not known)") rather than the whole chain of wrappers."""
    chain: list[BaseException] = [exc]
    while True:
        inner = chain[-1].__cause__ or getattr(chain[-1], "reason", None)
        if inner is None and chain[-1].args and isinstance(chain[-1].args[0], BaseException):
            inner = chain[-1].args[0]
        if not isinstance(inner, BaseException) or inner in chain:
            break
        chain.append(inner)
    http = [e for e in chain if type(e).__module__.startswith("urllib3") and type(e).__name__ != "MaxRetryError"]
    text = str((http or chain)[-1])
    return text.split("): ", 1)[-1] if text.startswith(("HTTPConnection(", "HTTPSConnection(")) else text


def check(root: str | os.PathLike | None = None, *, fetch: bool = True, timeout: float = 10.0,
          base_url: str | None = None) -> DataCheck:
    """Whether Chapter 8 can read its WikiText-2 files (:data:`NEEDED`) from :func:`scansnap.wikitext.data_dir`:
    each is there and verifies or, in the per-user cache folder (the one folder filled by a download on its own),
    ``fetch`` downloads it now (one try, ``timeout`` seconds per request, from ``base_url``, default
    :data:`scansnap.wikitext.BASE_URL`: :func:`scansnap.wikitext.download`). It takes seconds."""
    folder = wikitext.data_dir(root)
    env = f"${wikitext.ENV}"
    origin = "argument" if root is not None and str(root) else (env if os.environ.get(wikitext.ENV) else "cache")
    found: dict[str, str] = {}
    for split in NEEDED:
        if not (folder / f"{split}.txt").is_file():  # checked first: verified_text would download into the cache
            found[split] = f"{split}.txt is not there"
            continue
        try:
            wikitext.verified_text(split, folder)
        except (ValueError, OSError) as exc:
            found[split] = str(exc)
    bad, why = tuple(found), list(found.values())
    if bad and fetch and origin == "cache":
        try:
            wikitext.download(folder, bad, base_url=wikitext.BASE_URL if base_url is None else base_url, retries=0,
                              timeout=timeout)
            return DataCheck(folder, origin)
        except (ConnectionError, ValueError, OSError) as exc:
            why.append(f"downloading them from {base_url or wikitext.BASE_URL} failed: {_reason(exc)}")
    elif bad:
        why.append(f"a folder that {env} names is never filled by a download on its own")
    return DataCheck(folder, origin, tuple(f"{s}.txt" for s in bad), "; ".join(why))
