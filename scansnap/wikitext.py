"""WikiText-2 (tokenized release): verified local files, a verified atomic download, tokens, batches.

The language-model experiments of Chapter 8 (the paper's Figures 7 and 10) read the tokenized
WikiText-2 of the public ``pytorch/examples`` repository (``word_language_model/data/wikitext-2/``):
``train.txt``, ``valid.txt``, ``test.txt``. Every file is verified before a single token is read from
it: the bytes are read once, their SHA-256 (where known) and their **git blob id** (the SHA-1 of
``b"blob <size>\\0" + bytes``, the id under which that repository stores the file) are compared with
the digests below, and only those verified bytes are decoded.

* The folder: an argument, else ``$SCANSNAP_WIKITEXT``, else a per-user cache folder
  (``pooch.os_cache("scansnap") / "wikitext-2"``, e.g. ``~/.cache/scansnap/wikitext-2`` on Linux) that
  :func:`verified_text` fills on first use with the verified :func:`download` (:func:`data_dir`).
* :func:`verified_text` / :func:`tokens`: a missing file raises ``FileNotFoundError`` (in the default cache
  folder only after a download failed: the message names the cache, the variable and the download error);
  a truncated or altered one raises ``ValueError``; each message names the file, the expected and the found
  digest, and how to get a good copy.
* :func:`download`: fetches files with `pooch` (retries, a temporary file, a move), verifies them with
  the same check, and moves them into the folder only when they pass; nothing partial or unverified is
  ever left there.
* :func:`articles` cuts a split into whole articles (a line `` = Title = `` starts one) and :func:`article_split`
  holds out every ``every``-th of them: Chapter 8's held-out text when ``train.txt`` is missing.
* :func:`tokens` splits the classic way (whitespace, ``<eos>`` at every line end, blank lines
  included); :class:`Vocabulary` numbers the words in order of first appearance; :func:`batchify` and
  :func:`chunks` make the ``batch x bptt`` training chunks of the PyTorch word-level examples.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from scansnap._checks import check_choice, check_int

__all__ = [
    "BASE_URL",
    "GIT_BLOB",
    "SHA256",
    "SPLITS",
    "Vocabulary",
    "batchify",
    "cache_dir",
    "chunks",
    "data_dir",
    "download",
    "article_split",
    "articles",
    "git_blob_id",
    "has_split",
    "tokens",
    "verified_text",
]

SPLITS = ("train", "valid", "test")
SHA256 = {
    "valid": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
    "test": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
}
"""Known SHA-256 digests (none is known here for ``train.txt``: its git blob id verifies it)."""
GIT_BLOB = {
    "train": "2d84b35af79e411d73ea7cae83c73964c6ac83b4",
    "valid": "eec944eb2d9e46061cd34a6913528797db6842fc",
    "test": "6f3fc88e4cd88456ea892971f9f12243e8428624",
}
"""Git blob ids of the files in ``pytorch/examples`` (``word_language_model/data/wikitext-2/<split>.txt``)."""
BASE_URL = "https://raw.githubusercontent.com/pytorch/examples/main/word_language_model/data/wikitext-2/"
ENV = "SCANSNAP_WIKITEXT"
EOS = "<eos>"
_HOW = (f"get a good copy with scansnap.wikitext.download(root) on a machine with internet, or copy the file "
        f"from {BASE_URL}")


def cache_dir() -> Path:
    """The per-user cache folder of Chapter 8's WikiText-2 when neither an argument nor ``$SCANSNAP_WIKITEXT``
    names one: ``pooch.os_cache("scansnap") / "wikitext-2"`` (``$XDG_CACHE_HOME/scansnap/wikitext-2`` or
    ``~/.cache/scansnap/wikitext-2`` on Linux)."""
    import pooch

    return Path(pooch.os_cache("scansnap")) / "wikitext-2"


def data_dir(root: str | os.PathLike | None = None) -> Path:
    """The WikiText-2 folder (Chapter 8): ``root``, else ``$SCANSNAP_WIKITEXT``, else :func:`cache_dir`."""
    if root is not None and str(root):
        return Path(root)
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    return cache_dir()


def has_split(split: str, root: str | os.PathLike | None = None) -> bool:
    """Whether the folder holds ``<split>.txt`` (present, not yet verified); Chapter 8 checks which splits are
    there."""
    return (data_dir(root) / f"{check_choice('split', split, SPLITS)}.txt").is_file()


def git_blob_id(payload: bytes) -> str:
    """The git blob id of ``payload``: SHA-1 of ``b"blob <size>\\0" + payload`` (``git hash-object``), the digest
    by which Chapter 8's WikiText-2 files are verified."""
    return hashlib.sha1(b"blob %d\0" % len(payload) + payload).hexdigest()


def _check(payload: bytes, split: str, path: Path) -> None:
    """Raise ``ValueError`` unless ``payload`` has the known digests of ``split``."""
    found = {"sha256": hashlib.sha256(payload).hexdigest(), "git blob id": git_blob_id(payload)}
    expected = {"git blob id": GIT_BLOB[split]} | ({"sha256": SHA256[split]} if split in SHA256 else {})
    for kind, digest in expected.items():
        if found[kind] != digest:
            raise ValueError(f"{split}: {path} is truncated or altered ({len(payload):,} bytes): expected {kind} "
                             f"{digest}, found {found[kind]}; nothing was read from it. To fix it, {_HOW}")


def verified_text(split: str, root: str | os.PathLike | None = None) -> str:
    """The text of ``<root>/<split>.txt`` (Chapter 8's WikiText-2), decoded only after its bytes pass the digest
    check.

    Raises:
        FileNotFoundError: the file is missing (the message says how to get it).
        ValueError: its bytes do not match the known digests (truncated or altered).
    """
    check_choice("split", split, SPLITS)
    path = data_dir(root) / f"{split}.txt"
    if not path.is_file() and path.parent == cache_dir():
        try:  # first use of the default cache: fetch the verified file (nothing partial is ever left)
            download(path.parent, [split], base_url=BASE_URL)
        except (ConnectionError, ValueError, OSError) as exc:
            raise FileNotFoundError(f"{split}: no file {path} in the cache folder, and downloading it failed ({exc}). "
                                    f"Set ${ENV} to a folder holding {split}.txt, or pass root=; to fix it, "
                                    f"{_HOW}") from exc
    if not path.is_file():
        raise FileNotFoundError(f"{split}: no file {path} (expected git blob id {GIT_BLOB[split]}"
                                f"{', sha256 ' + SHA256[split] if split in SHA256 else ''}); to fix it, {_HOW}")
    payload = path.read_bytes()
    _check(payload, split, path)
    return payload.decode("utf-8")


def tokens(split: str, root: str | os.PathLike | None = None) -> list[str]:
    """The words of a verified split the classic way: ``line.split() + ["<eos>"]`` for every line: the text
    on which the book re-makes the paper's Figures 7 and 10.

    WikiText-2 gives 217,646 tokens for ``valid`` and 245,569 for ``test``.
    """
    lines = verified_text(split, root).split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no new line
    return _words(lines)


def _words(lines: Iterable[str]) -> list[str]:
    return [word for line in lines for word in (*line.split(), EOS)]


def _is_title(line: str) -> bool:
    """A WikiText article title: `` = Title = `` (one ``=`` on each side; sections have ``= =`` or more)."""
    s = line.strip()
    return s.startswith("= ") and s.endswith(" =") and not s.startswith("= =") and not s.endswith("= =")


def articles(text: str) -> list[list[str]]:
    """The words of each article of a WikiText text, in order (:func:`tokens`' tokenization, article by article):
    Chapter 8's held-out articles when ``train.txt`` is missing.

    An article starts at a title line `` = Title = `` and runs to the line before the next title; lines before
    the first title (a blank line in the release) belong to the first article. Concatenated, the articles give
    :func:`tokens` of the text.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    starts = [i for i, line in enumerate(lines) if _is_title(line)]
    bounds = [0, *starts[1:], len(lines)] if starts else [0, len(lines)]
    return [_words(lines[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def article_split(texts: Sequence[str], every: int = 10) -> tuple[list[str], list[str], int, int]:
    """Hold out every ``every``-th article of ``texts`` (their articles numbered across the texts in order,
    articles ``every - 1, 2 every - 1, ...``): the training and held-out text of Chapter 8's ``paper`` profile
    when ``train.txt`` is missing. Deterministic; articles are kept whole and the two parts are disjoint.

    Returns:
        (training words, held-out words, number of training articles, number of held-out articles).
    """
    check_int("every", every, low=2)
    train: list[str] = []
    held: list[str] = []
    n = [0, 0]
    for i, words in enumerate(a for text in texts for a in articles(text)):
        out = i % every == every - 1
        (held if out else train).extend(words)
        n[out] += 1
    return train, held, n[0], n[1]


@dataclass(frozen=True)
class Vocabulary:
    """Words numbered in order of first appearance (the PyTorch word-level example's ``Dictionary``), the
    vocabulary of the models of Figures 7 and 10.

    Attributes:
        words: ``(V,)`` the words; id ``i`` is ``words[i]``.
        unk: the word that stands for every word outside the vocabulary (``"<unk>"``), or ``""`` for none.
    """

    words: tuple[str, ...]
    unk: str = ""

    def __post_init__(self) -> None:
        if len(set(self.words)) != len(self.words):
            raise ValueError("words: must be unique")
        if self.unk and self.unk not in self.words:
            raise ValueError(f"unk: must be one of the words; got {self.unk!r}")

    @classmethod
    def build(cls, *texts: Iterable[str], cap: int = 0, unk: str = "<unk>") -> Vocabulary:
        """The words of ``texts`` in order of first appearance; with ``cap > 0`` only the ``cap`` most
        frequent (ties: first appearance), ``unk`` and ``<eos>`` always among them, the rest mapped to ``unk``."""
        check_int("cap", cap, low=0)
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(text)
        words = list(counts)  # first appearance (Counter keeps insertion order)
        if cap and cap < len(words):
            if cap < 2:
                raise ValueError(f"cap: must be 0 (no cap) or >= 2; got {cap}")
            ranked = [w for w in sorted(words, key=lambda w: -counts[w]) if w not in (unk, EOS)]
            keep = {unk, EOS, *ranked[: cap - 2]}
            return cls(tuple(w for w in dict.fromkeys([*words, unk]) if w in keep), unk)
        return cls(tuple(words), unk if unk in counts else "")

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, words: Sequence[str]) -> torch.Tensor:
        """``(N,)`` long ids of ``words``; a word outside the vocabulary becomes ``unk`` (an error without one)."""
        index = {w: i for i, w in enumerate(self.words)}
        fallback = index.get(self.unk) if self.unk else None
        ids = [index.get(w, fallback) for w in words]
        if fallback is None and any(i is None for i in ids):
            missing = next(w for w, i in zip(words, ids, strict=True) if i is None)
            raise ValueError(f"words: {missing!r} is not in the vocabulary, which has no unk word")
        return torch.tensor(ids, dtype=torch.long)


def batchify(ids: torch.Tensor, batch: int) -> torch.Tensor:
    """``(batch, L)``: ``ids`` ``(N,)`` cut into ``batch`` contiguous streams (the tail that does not fill
    a row is dropped), row ``b`` holding ``ids[b L : (b + 1) L]`` with ``L = N // batch`` (the training
    batches of Figures 7 and 10)."""
    check_int("batch", batch, low=1)
    if ids.ndim != 1 or len(ids) < 2 * batch:
        raise ValueError(f"ids: must be 1-D with at least 2 * batch = {2 * batch} tokens; got shape "
                         f"{tuple(ids.shape)}")
    length = len(ids) // batch
    return ids[: batch * length].reshape(batch, length)


def chunks(streams: torch.Tensor, bptt: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Consecutive ``(inputs, targets)`` of ``streams`` ``(B, L)``: inputs ``(B, t)`` with ``t <= bptt``,
    targets the inputs shifted by one token (the PyTorch examples' ``get_batch``; the training chunks of
    Figures 7 and 10)."""
    check_int("bptt", bptt, low=1)
    for start in range(0, streams.shape[1] - 1, bptt):
        t = min(bptt, streams.shape[1] - 1 - start)
        yield streams[:, start: start + t], streams[:, start + 1: start + 1 + t]


def download(root: str | os.PathLike, splits: Sequence[str] = SPLITS, *, base_url: str | None = None,
             retries: int = 2, timeout: float = 60.0) -> dict[str, Path]:
    """Fetch ``splits`` of Chapter 8's WikiText-2 into ``root`` and verify them; return the verified files by
    split.

    A file already in ``root`` that verifies is kept. Otherwise ``pooch`` downloads ``<base_url><split>.txt``
    (retrying ``retries`` times) into a temporary folder inside ``root``; the file is checked against the
    known SHA-256 and git blob id (:func:`verified_text`'s check: pooch's own hashes are plain digests and
    cannot express a git blob id) and only then renamed into ``root``. On any failure the temporary folder
    is removed, so ``root`` never holds a partial or unverified file.

    Raises:
        ConnectionError: the server answered with an error (e.g. 404) or the transfer broke off.
        ValueError: the downloaded bytes do not match the known digests (truncated or wrong file).
    """
    import pooch
    import requests

    check_int("retries", retries, low=0)
    base_url = BASE_URL if base_url is None else base_url
    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    done: dict[str, Path] = {}
    for split in splits:
        check_choice("splits", split, SPLITS)
        target = folder / f"{split}.txt"
        if target.is_file():
            try:
                _check(target.read_bytes(), split, target)
                done[split] = target
                continue
            except ValueError:
                pass  # a bad copy: replaced below by a verified one
        tmp = Path(tempfile.mkdtemp(dir=folder, prefix=f".{split}-download-"))
        try:
            fetcher = pooch.create(path=tmp, base_url=base_url, registry={target.name: None},
                                   retry_if_failed=retries)
            try:
                got = Path(fetcher.fetch(target.name, downloader=pooch.HTTPDownloader(progressbar=False,
                                                                                       timeout=timeout)))
            except requests.exceptions.RequestException as exc:
                raise ConnectionError(f"{split}: could not download {base_url}{target.name} ({exc}); nothing "
                                      f"was written to {folder}") from exc
            _check(got.read_bytes(), split, got)
            os.replace(got, target)
            done[split] = target
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return done
